// Replays the PyTorch reference (tests/reference/bert_reference.py, float64, Hugging Face module
// structure and names): forward outputs, the three head losses, the gradient of EVERY parameter,
// then 3 clipped AdamW steps, on both backends.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "backends/backend.h"
#include "io/safetensors.h"
#include "model/bert_model.h"
#include "test_util.h"

namespace bertrt {
namespace {

// The reference runs in float64, so the difference is bertrt's fp32 rounding alone. Relative to
// the tensor's largest magnitude: fp32 unit roundoff is 6e-8, and sums over ≤ 40 terms through two
// layers, LayerNorm backward's cancellations and softmax bring it to ~1e-6 here (measured max
// 4e-6 over both backends and GELUs); 2e-5 leaves 5× headroom while any wrong term (≥ 1e-3
// relative) still fails.
constexpr double kTol = 2e-5;

struct Ref {
  SafetensorsFile file;
  BertConfig config;
  int num_labels = 0;
};

Ref load_ref(const std::string& act) {
  const std::string path = test::build_dir() + "/reference/bert_" + act + ".safetensors";
  Ref r{SafetensorsFile::open(path), {}, 0};
  const auto j = nlohmann::json::parse(r.file.metadata().at("config"));
  BertConfig& c = r.config;
  c.vocab_size = j["vocab_size"], c.hidden_size = j["hidden_size"];
  c.num_hidden_layers = j["num_hidden_layers"], c.num_attention_heads = j["num_attention_heads"];
  c.intermediate_size = j["intermediate_size"], c.hidden_act = j["hidden_act"];
  c.max_position_embeddings = j["max_position_embeddings"], c.type_vocab_size = j["type_vocab_size"];
  c.layer_norm_eps = j["layer_norm_eps"], c.pad_token_id = j["pad_token_id"];
  r.num_labels = std::stoi(r.file.metadata().at("num_labels"));
  return r;
}

// max |got − want| / max |want|, with the worst value printed on failure. `floor` bounds the
// denominator from below: a gradient that is exactly zero in exact arithmetic (the key bias: adding
// a constant to every score of a softmax row changes nothing) is fp32 rounding noise of order
// eps × the gradients summed into it, so it is measured against the model's gradient scale.
void expect_close(const std::string& what, const float* got, const std::vector<float>& want,
                  double floor = 1e-30) {
  double max_want = floor, max_diff = 0;
  size_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_want = std::max(max_want, std::fabs(double(want[i])));
    const double d = std::fabs(double(got[i]) - want[i]);
    if (d > max_diff) max_diff = d, worst = i;
  }
  EXPECT_LE(max_diff / max_want, kTol) << what << ": worst at [" << worst << "] got "
                                       << got[worst] << " want " << want[worst]
                                       << " (max |want| " << max_want << ")";
}

std::vector<int32_t> ints(const SafetensorsFile& f, const std::string& name) {
  auto v = f.to_i64(name);
  return std::vector<int32_t>(v.begin(), v.end());
}

class BertReferenceTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(BertReferenceTest, ForwardLossesGradientsAndAdamWSteps) {
  const auto& [backend_name, act] = GetParam();
  Ref ref = load_ref(act);
  const SafetensorsFile& f = ref.file;
  HeadsConfig heads;
  heads.mlm = heads.nsp = true;
  for (int i = 0; i < ref.num_labels; ++i) heads.labels.push_back("label_" + std::to_string(i));
  BertModel model(ref.config, heads);

  // Every parameter of the reference maps onto one of ours, and the counts agree.
  size_t ref_params = 0;
  for (const auto& t : f.tensors()) ref_params += t.name.rfind("param/", 0) == 0;
  ASSERT_EQ(ref_params, model.layout().params().size());
  for (const ParamInfo& p : model.layout().params()) {
    const auto& t = f.at("param/" + p.name);
    ASSERT_EQ(t.shape, p.shape) << p.name;
    auto v = f.to_f32(t.name);
    std::copy(v.begin(), v.end(), model.params() + p.offset);
  }

  const auto input_ids = ints(f, "input/input_ids"), token_type_ids = ints(f, "input/token_type_ids"),
             attention_mask = ints(f, "input/attention_mask"), positions = ints(f, "input/mlm_positions"),
             mlm_labels = ints(f, "input/mlm_labels"), nsp_labels = ints(f, "input/nsp_labels"),
             labels = ints(f, "input/labels");
  const auto shape = f.at("input/input_ids").shape;
  EncoderInputs in{int(shape[0]), int(shape[1]), input_ids.data(), token_type_ids.data(),
                   attention_mask.data()};
  Targets targets{positions.data(), mlm_labels.data(), int(positions.size()), nsp_labels.data(),
                  labels.data()};
  auto be = make_backend(backend_name);

  ForwardResult r = model.forward(*be, in, targets, /*training=*/true);
  expect_close("last_hidden_state", model.last_hidden_state(), f.to_f32("output/last_hidden_state"));
  expect_close("pooler_output", model.pooler_output(), f.to_f32("output/pooler_output"));
  expect_close("prediction_logits", model.prediction_logits(), f.to_f32("output/prediction_logits"));
  expect_close("seq_relationship_logits", model.seq_relationship_logits().data(),
               f.to_f32("output/seq_relationship_logits"));
  expect_close("logits", model.logits().data(), f.to_f32("output/logits"));
  EXPECT_NEAR(r.mlm.loss, f.to_f32("output/mlm_loss")[0], kTol * r.mlm.loss);
  EXPECT_NEAR(r.nsp.loss, f.to_f32("output/nsp_loss")[0], kTol * r.nsp.loss);
  EXPECT_NEAR(r.cls.loss, f.to_f32("output/cls_loss")[0], kTol * r.cls.loss);
  EXPECT_EQ(r.mlm.count, int(positions.size()) - 1);  // one position carries -100

  model.grads();
  model.zero_grad();
  model.backward(*be);
  double grad_scale = 0;
  for (const ParamInfo& p : model.layout().params())
    for (float g : f.to_f32("grad/" + p.name)) grad_scale = std::max(grad_scale, std::fabs(double(g)));
  for (const ParamInfo& p : model.layout().params()) {
    const auto want = f.to_f32("grad/" + p.name);
    double max_want = 0;
    for (float g : want) max_want = std::max(max_want, std::fabs(double(g)));
    // Only the key biases are zero (to float64 rounding) in the reference.
    const bool zero = max_want < 1e-12 * grad_scale;
    EXPECT_EQ(zero, p.name.find("attention.self.key.bias") != std::string::npos) << p.name;
    expect_close("grad " + p.name, model.grads() + p.offset, want, zero ? grad_scale : 1e-30);
  }

  // 3 steps of clip_grad_norm_(1.0) + AdamW(lr 1e-3, wd 0.01 except LayerNorm/bias).
  const auto trajectory = f.to_f32("trajectory");
  std::vector<float> m(model.layout().total()), v(model.layout().total());
  std::vector<double> losses{r.loss};
  for (int step = 1; step <= 3; ++step) {
    double sq = 0;
    for (const ParamInfo& p : model.layout().params())
      for (size_t i = 0; i < p.numel; ++i) sq += double(model.grads()[p.offset + i]) * model.grads()[p.offset + i];
    const double coef = 1.0 / (std::sqrt(sq) + 1e-6);
    for (const ParamInfo& p : model.layout().params()) {
      float* g = model.grads() + p.offset;
      if (coef < 1) for (size_t i = 0; i < p.numel; ++i) g[i] = float(g[i] * coef);
      AdamWHyper h;
      h.weight_decay = p.decay ? 0.01f : 0.0f;
      be->adamw_step(model.params() + p.offset, m.data() + p.offset, v.data() + p.offset, g,
                     p.numel, h, step);
    }
    model.zero_grad();
    losses.push_back(model.forward(*be, in, targets, true).loss);
    model.backward(*be);
  }
  for (size_t i = 0; i < losses.size(); ++i)
    EXPECT_NEAR(losses[i], trajectory[i], kTol * trajectory[i]) << "loss after step " << i;
}

INSTANTIATE_TEST_SUITE_P(
    Backends, BertReferenceTest,
    ::testing::Combine(::testing::Values("reference", "cpu"), ::testing::Values("gelu", "gelu_new")),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" +
             (std::get<1>(info.param) == "gelu" ? std::string("erf") : std::string("tanh"));
    });

}  // namespace
}  // namespace bertrt
