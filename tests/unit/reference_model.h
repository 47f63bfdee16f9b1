// The model a PyTorch reference file (tests/reference/*.py → build/reference/*.safetensors)
// describes: its config from the "config" metadata (Hugging Face names), its heads, and its
// parameters stored as "param/<HF name>". Shared by the tests that check against those files.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/bert_model.h"
#include "test_util.h"

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

// A forward pass of the file's model on `be` (its "input/*" batch, the MLM positions as targets,
// inference) checked output by output against the file's "output/*" within `tol` of each
// tensor's largest magnitude (rel_close): the providers' tests' check, on whichever kernels `be`
// was set to run.
inline void expect_forward_matches_reference(const SafetensorsFile& f, Backend& be, double tol,
                                             const std::string& what) {
  const BertConfig c = reference_config(f);
  BertModel model(c, reference_pretraining_heads(f));
  load_reference_params(model, f);
  auto ints = [&](const char* name) {
    const auto v = f.to_i64(name);
    return std::vector<int32_t>(v.begin(), v.end());
  };
  const auto ids = ints("input/input_ids"), types = ints("input/token_type_ids"),
             mask = ints("input/attention_mask"), positions = ints("input/mlm_positions");
  const auto shape = f.at("input/input_ids").shape;
  const EncoderInputs in{int(shape[0]), int(shape[1]), ids.data(), types.data(), mask.data()};
  Targets t;
  t.mlm_positions = positions.data(), t.num_masked = int(positions.size());
  model.forward(be, in, t, /*training=*/false);
  EXPECT_TRUE(rel_close(model.last_hidden_state(), f.to_f32("output/last_hidden_state"), tol))
      << what;
  EXPECT_TRUE(rel_close(model.pooler_output(), f.to_f32("output/pooler_output"), tol)) << what;
  EXPECT_TRUE(rel_close(model.prediction_logits(), f.to_f32("output/prediction_logits"), tol))
      << what;
  EXPECT_TRUE(rel_close(model.seq_relationship_logits().data(),
                        f.to_f32("output/seq_relationship_logits"), tol))
      << what;
  EXPECT_TRUE(rel_close(model.logits().data(), f.to_f32("output/logits"), tol)) << what;
}

}  // namespace bertrt::test
