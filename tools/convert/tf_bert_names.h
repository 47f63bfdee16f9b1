// Google's original TensorFlow 1 BERT checkpoints (bert_model.ckpt + bert_config.json) → the
// Hugging Face state-dict names and layouts bertrt uses, following transformers'
// load_tf_weights_in_bert (convert_bert_original_tf_checkpoint_to_pytorch.py):
//   layer_N → layer.N; kernel → weight, TRANSPOSED ([in, out] → nn.Linear's [out, in]);
//   output_weights → weight, NOT transposed (already [out, in]); gamma/beta → LayerNorm
//   weight/bias; output_bias → bias; *_embeddings → *_embeddings.weight;
//   cls/predictions/output_bias → cls.predictions.bias; run_classifier.py's top-level
//   output_weights/output_bias → classifier.weight/bias; run_squad.py's
//   cls/squad/output_weights [2, H] / output_bias [2] → the span head qa_outputs.weight/bias
//   (not transposed: row 0 gives the start logits, row 1 the end logits, as in HF);
//   optimizer slots (adam_m, adam_v, AdamWeightDecayOptimizer*, Adam*, Momentum, …) and
//   global_step are skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "convert/checkpoint.h"
#include "model/config.h"

namespace bertrt::convert {

// The translation of one TF variable name, without checking it against a config.
struct TfNameMapping {
  bool skip = false;
  std::string skip_reason;  // e.g. "optimizer slot (adam_m)", "training step counter"
  std::string hf_name;      // when !skip
  bool transpose = false;   // a 2-D `kernel`
};
// Throws bertrt::Error for names that are neither a BERT weight nor a known optimizer variable
// (e.g. cls/squad/other: not one of run_squad.py's two variables).
TfNameMapping map_tf_bert_name(const std::string& tf_name);

struct MappedTensor {
  std::string tf_name;
  std::string hf_name;
  size_t source_index = 0;        // into reader.tensors()
  bool transpose = false;         // the 2-D source is [in, out]; hf_shape is [out, in]
  std::vector<int64_t> hf_shape;  // = bert_param_layout(config, heads) shape of hf_name
};

struct TfBertCheckpoint {
  BertConfig config;
  HeadsConfig heads;                                         // from the variables present
  std::vector<MappedTensor> tensors;                         // in bert_param_layout order
  std::vector<std::pair<std::string, std::string>> skipped;  // (TF name, reason), index order
  // HF weights of the layout that the checkpoint lacks. Only the pooler may be absent: graphs
  // pre-trained with MLM alone never build bert/pooler (real example: news_text_class). The
  // caller initializes them (HF: normal(0, initializer_range) weight, zero bias) and says so.
  std::vector<std::string> absent;
};

// bert_config.json (Google's names = HF names). The original code's "gelu" is the tanh
// approximation (modeling.py gelu), recorded as hidden_act "gelu_new"; layer_norm_eps is TF's
// 1e-12. Throws bertrt::Error naming the file and field when missing or malformed.
BertConfig read_bert_config_json(const std::string& path);

// Maps every variable of `reader` (a TF1 BERT bundle): each must be skipped or be one weight of
// bert_param_layout(config, heads), with a float dtype and the config's shape. Heads: mlm when
// cls/predictions/* is present, nsp when cls/seq_relationship/*, a classifier with labels
// "0".."n-1" when output_weights [n, H] / output_bias [n] are, the span head (question answering)
// when cls/squad/* are (not together with a classifier). Throws bertrt::Error naming the
// variable for an unknown name, a wrong shape (both shapes), a non-float dtype, or a weight the
// config requires that is absent (except the pooler, listed in `absent`). The config is first
// checked against the variables present (io/config_check.h); `where` names it in those errors.
TfBertCheckpoint map_tf_bert(const CheckpointReader& reader, const BertConfig& config,
                             const std::string& where = "bert_config.json");
TfBertCheckpoint map_tf_bert(const CheckpointReader& reader, const std::string& bert_config_json);

// Tensor `t` as f32 in the HF layout (read, converted, transposed when t.transpose).
std::vector<float> read_mapped_f32(const CheckpointReader& reader, const MappedTensor& t);

}  // namespace bertrt::convert
