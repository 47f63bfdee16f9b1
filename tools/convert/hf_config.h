// Hugging Face config.json and tokenizer files → bertrt's BertConfig and TokenizerSpec.
// Field names and defaults are those of transformers' BertConfig / PretrainedConfig and
// BertTokenizer (configuration_bert.py, tokenization_bert.py).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "io/model_file.h"
#include "model/config.h"

namespace bertrt::convert {

struct HfConfig {
  BertConfig config;
  std::string architecture;     // architectures[0]; "" when the config has none (old files)
  std::vector<std::string> id2label;  // labels ordered by id: from id2label, else LABEL_i for
                                      // num_labels (PretrainedConfig's default is 2)
  bool has_id2label = false;          // id2label was given (not the LABEL_i default)
  std::string finetuning_task;        // "" when absent or null
  std::string problem_type;           // "regression", "single_label_classification", ... or ""
  std::string bertrt_task;            // "bertrt_task" (export_hf's record), JSON text, or ""
};

// Reads `path` (config.json or TF's bert_config.json). The five size fields (vocab_size,
// hidden_size, num_hidden_layers, num_attention_heads, intermediate_size) are required because
// they fix every tensor shape; the rest default as in BertConfig. hidden_act must be gelu,
// gelu_new or gelu_pytorch_tanh (gelu_python is stored as gelu: the same erf function).
// Throws bertrt::Error naming the file and the field: missing/mistyped field, a model_type other
// than bert, position_embedding_type other than absolute, is_decoder, id2label ids not 0..n-1.
HfConfig read_hf_config(const std::string& path);

struct HfTokenizer {
  TokenizerSpec spec;
  std::optional<long long> model_max_length;  // absent, or HF's "unset" sentinel (> 1e9)
};

// vocab.txt (one token a line, id = line index; trailing \n and \r stripped, as load_vocab and
// io Vocab::load do) plus, when they exist, tokenizer_config.json and special_tokens_map.json in
// `dir` (do_lower_case, strip_accents, tokenize_chinese_chars, model_max_length, the special
// tokens as strings or {"content": ...}). Absent keys keep BertTokenizer's defaults
// (do_lower_case true, strip_accents None, tokenize_chinese_chars true). Throws bertrt::Error
// naming the file for an unreadable or empty vocab, mistyped keys, or a special token missing
// from the vocab; appends to `warnings` what bertrt cannot honour (do_basic_tokenize false,
// never_split).
HfTokenizer read_hf_tokenizer(const std::string& vocab_path, const std::string& dir,
                              std::vector<std::string>& warnings);

}  // namespace bertrt::convert
