// A .brt with an embedding head → a sentence-transformers folder that SentenceTransformer(dir)
// loads: the Hugging Face folder of export_hf.h at the root (the Transformer module, a BertModel),
// modules.json, sentence_bert_config.json, config_sentence_transformers.json (prompts,
// default_prompt_name, similarity_fn_name), 1_Pooling/config.json, each Dense module's folder
// (config.json, model.safetensors with linear.weight / linear.bias) and, with normalization, a
// Normalize folder, numbered as SentenceTransformer.save numbers them. All files are written
// atomically together.
#pragma once

#include <string>
#include <vector>

namespace bertrt::convert {

// Throws bertrt::Error naming the file when the model has no embedding head (a plain BERT has no
// pooling to write) or the folder cannot be written. Returns warnings.
std::vector<std::string> export_sentence_transformers(const std::string& brt_path,
                                                      const std::string& dir);

}  // namespace bertrt::convert
