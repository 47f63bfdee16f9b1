// A .brt model file → a Hugging Face folder that transformers' from_pretrained loads:
// config.json, model.safetensors, vocab.txt, tokenizer_config.json, special_tokens_map.json.
//
// - architectures: from the heads (BertForPreTraining, BertForMaskedLM, BertForNextSentence-
//   Prediction, BertForSequenceClassification with id2label/label2id (problem_type regression for
//   a regression head), BertForTokenClassification, BertForQuestionAnswering, BertModel).
// - Tensor names as save_pretrained writes them: "bert."-prefixed under a head, bare for
//   BertModel; the tied decoder weight is not written (transformers re-ties it on load), nor the
//   pooler for the classes built without one (BertForMaskedLM, -TokenClassification,
//   -QuestionAnswering), nor tensors of other heads (with a warning). f32/f16/bf16 bytes are
//   copied unchanged, so HF → .brt → HF is bit-identical for f32; int8-quantized tensors are
//   written dequantized as f32. Optimizer state is not exported.
// - Every file is written atomically (temp + rename); `dir` is created when its parent exists.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "io/model_file.h"

namespace bertrt::convert {

// What a layout around the Hugging Face folder adds to the export (a sentence-transformers
// folder: export_st.h).
struct ExportExtras {
  // Tensors it writes itself: left out of model.safetensors, without a "not exported" warning.
  std::function<bool(const std::string& name)> owns;
  // Subfolders (relative to the folder) its files go in, created first.
  std::vector<std::string> subfolders;
  // Its files, synced and renamed into place with the Hugging Face ones, all or none.
  std::function<void(std::deque<AtomicFile>& files, const std::string& dir, const ModelContents& c)>
      add_files;
};

// Throws bertrt::Error naming the file for an unreadable .brt or an unwritable folder. Returns
// warnings (e.g. tensors dequantized).
std::vector<std::string> export_hf(const std::string& brt_path, const std::string& dir,
                                   const ExportExtras& extras = {});

}  // namespace bertrt::convert
