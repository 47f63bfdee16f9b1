// A sentence-transformers folder (SentenceTransformer.save) → a .brt with an embedding head.
//
// modules.json lists the modules in order; bertrt reads the pipelines BERT embedding models use:
//   sentence_transformers.models.Transformer  the Hugging Face BERT folder at its path ("" = the
//                                             folder itself) + sentence_bert_config.json
//                                             (max_seq_length, do_lower_case)
//   sentence_transformers.models.Pooling      <path>/config.json: pooling_mode_* and include_prompt
//   sentence_transformers.models.Dense        <path>/config.json (in_features, out_features, bias,
//                                             activation_function) + model.safetensors or
//                                             pytorch_model.bin (linear.weight, linear.bias)
//   sentence_transformers.models.Normalize    last
// and config_sentence_transformers.json (prompts, default_prompt_name, similarity_fn_name). Any
// other module type, a pooling key it does not know, or modules out of this order are errors
// naming the file and the key.
#pragma once

#include <string>

#include "convert/converted_model.h"

namespace bertrt::convert {

// True when `path` is a folder holding modules.json.
bool is_sentence_transformers_folder(const std::string& path);

ConvertedModel import_sentence_transformers(const std::string& dir, const ConvertOptions& opts);

}  // namespace bertrt::convert
