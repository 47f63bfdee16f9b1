// The model a PyTorch reference file (tests/reference/*.py → build/reference/*.safetensors)
// describes: its config from the "config" metadata (Hugging Face names), its heads, and its
// parameters stored as "param/<HF name>". Shared by the tests that check against those files.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "io/safetensors.h"
#include "model/bert_model.h"

namespace bertrt::test {

inline BertConfig reference_config(const SafetensorsFile& f) {
  const auto j = nlohmann::json::parse(f.metadata().at("config"));
  BertConfig c;
  c.vocab_size = j["vocab_size"], c.hidden_size = j["hidden_size"];
  c.num_hidden_layers = j["num_hidden_layers"], c.num_attention_heads = j["num_attention_heads"];
  c.intermediate_size = j["intermediate_size"], c.hidden_act = j["hidden_act"];
  c.max_position_embeddings = j["max_position_embeddings"], c.type_vocab_size = j["type_vocab_size"];
  c.layer_norm_eps = j["layer_norm_eps"], c.pad_token_id = j["pad_token_id"];
  return c;
}

// MLM + NSP and a sequence classifier with the file's num_labels.
inline HeadsConfig reference_pretraining_heads(const SafetensorsFile& f) {
  HeadsConfig heads;
  heads.mlm = heads.nsp = true;
  for (int i = 0; i < std::stoi(f.metadata().at("num_labels")); ++i)
    heads.labels.push_back("label_" + std::to_string(i));
  return heads;
}

// Copies every parameter of `model` from the file (a fatal test failure on a size mismatch).
inline void load_reference_params(BertModel& model, const SafetensorsFile& f) {
  for (const ParamInfo& p : model.layout().params()) {
    const auto v = f.to_f32("param/" + p.name);
    ASSERT_EQ(v.size(), p.numel) << p.name;
    std::copy(v.begin(), v.end(), model.params() + p.offset);
  }
}

}  // namespace bertrt::test
