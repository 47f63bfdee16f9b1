// The update rule of `bertrt pretrain` (clip → schedule → optimizer) over several steps on fixed
// gradients, against tests/reference/optimizer_reference.py run by /usr/bin/python3:
//   --optimizer adamw: torch.optim.AdamW (two groups) + LambdaLR(get_linear_schedule_with_warmup)
//                      + torch.nn.utils.clip_grad_norm_;
//   --optimizer bert:  google-research/bert optimization.py in float32 numpy (its schedule,
//                      tf.clip_by_global_norm, AdamWeightDecayOptimizer).
// Skipped (visibly) when python3 with torch/numpy is missing.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>

#include "backends/backend.h"
#include "model/params.h"
#include "test_util.h"
#include "train/update_rule.h"

namespace bertrt {
namespace {

std::optional<nlohmann::json> run_reference(const nlohmann::json& input) {
  const std::string script = test::source_dir() + "/tests/reference/optimizer_reference.py";
  test::TempDir dir;
  const std::string in = dir.file("case.json"), out = dir.file("out.json");
  std::ofstream(in) << input.dump();
  const std::string cmd =
      fmt::format("/usr/bin/python3 '{}' < '{}' > '{}' 2> '{}.err'", script, in, out, out);
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream err(out + ".err");
    const std::string text((std::istreambuf_iterator<char>(err)), {});
    if (text.find("No module named") != std::string::npos) return std::nullopt;
    ADD_FAILURE() << "reference failed: " << text;
    return nlohmann::json();
  }
  return nlohmann::json::parse(std::ifstream(out));
}

// Both kinds of tensors, odd sizes (64-byte padding between them is exercised).
ParamLayout small_layout() {
  return ParamLayout({{"dense.weight", {3, 5}, 0, 0, true},
                      {"dense.bias", {3}, 0, 0, false},
                      {"LayerNorm.weight", {5}, 0, 0, false},
                      {"LayerNorm.bias", {5}, 0, 0, false},
                      {"head.weight", {2, 5}, 0, 0, true}});
}

// Deterministic values: the inputs are arbitrary, the expected outputs come from the reference.
std::vector<float> values(const ParamLayout& layout, float scale, float phase) {
  std::vector<float> buf(layout.total(), 0.f);
  for (const ParamInfo& p : layout.params())
    for (size_t i = 0; i < p.numel; ++i)
      buf[p.offset + i] = scale * float(std::sin(0.731 * (p.offset + i) + phase));
  return buf;
}

nlohmann::json tensors_json(const ParamLayout& layout, const std::vector<float>& buf) {
  nlohmann::json out = nlohmann::json::array();
  for (const ParamInfo& p : layout.params())
    out.push_back(std::vector<double>(buf.begin() + p.offset, buf.begin() + p.offset + p.numel));
  return out;
}

struct Case {
  OptimizerKind kind;
  float max_grad_norm;
};

void run_trajectory(const Case& c) {
  const ParamLayout layout = small_layout();
  OptimOptions o;
  o.optimizer = c.kind;
  o.learning_rate = 2e-2f;
  o.total_steps = 6;
  o.warmup_steps = 2;  // steps 0, 1 warm up; 2..5 decay, where the HF and BERT forms differ
  o.weight_decay = 0.01f;
  o.max_grad_norm = c.max_grad_norm;
  o.eps = c.kind == OptimizerKind::kBert ? 1e-6f : 1e-8f;
  std::vector<float> params = values(layout, 1.0f, 0.0f);
  // Gradient norms from ≈0.3 to ≈3: with max norm 1 some steps are clipped and some are not.
  std::vector<std::vector<float>> grads;
  const float scales[6] = {0.08f, 0.5f, 0.05f, 0.6f, 0.1f, 0.3f};
  for (int s = 0; s < 6; ++s) grads.push_back(values(layout, scales[s], 1.3f * (s + 1)));

  nlohmann::json in = {{"kind", optimizer_name(c.kind)}, {"lr", o.learning_rate},
                       {"warmup", o.warmup_steps}, {"total", o.total_steps},
                       {"weight_decay", o.weight_decay}, {"max_grad_norm", o.max_grad_norm},
                       {"beta1", o.beta1}, {"beta2", o.beta2}, {"eps", o.eps}};
  const nlohmann::json init = tensors_json(layout, params);
  for (size_t i = 0; i < layout.params().size(); ++i)
    in["tensors"].push_back({{"name", layout.params()[i].name},
                             {"decay", layout.params()[i].decay},
                             {"init", init[i]}});
  for (const auto& g : grads) in["grads"].push_back(tensors_json(layout, g));
  const auto want = run_reference(in);
  if (!want) GTEST_SKIP() << "needs /usr/bin/python3 with torch and numpy";
  ASSERT_TRUE(want->contains("params"));

  UpdateRule rule(layout, o);
  auto be = make_backend("reference");
  int clipped = 0;
  for (int s = 0; s < 6; ++s) {
    SCOPED_TRACE(fmt::format("step {}", s));
    std::vector<float> g = grads[s];
    const UpdateResult r = rule.apply(*be, params.data(), g.data(), s);
    ASSERT_TRUE(r.applied);
    clipped += c.max_grad_norm > 0 && r.grad_norm > c.max_grad_norm;
    // The rate: here the formula in double rounded once to float. torch computes it in double
    // too (≤ 1 float ulp apart); TF in float32, where 1 − step/total cancels (step/total = 5/6
    // loses ~2.5 bits), so up to ~4 float eps (4.8e-7) relative.
    const double lr = (*want)["lr"][s].get<double>();
    EXPECT_NEAR(r.learning_rate, lr, 5e-7 * lr) << "learning rate";
    // The norm: torch/TF sum squares in float32, here in double: a few float ulps.
    const double norm = (*want)["norm"][s].get<double>();
    EXPECT_NEAR(r.grad_norm, norm, 1e-6 * norm) << "gradient norm";
    // Parameters of magnitude ≤ 1 after the same float32 operations up to order and FMA
    // contraction: 1e-6 absolute. The effects the test must see are far larger: one update is
    // ~lr (≥ 4e-3 after warm-up), the decay lr·wd·|p| ~ 2e-4, the HF/BERT schedule gap at step 3
    // lr·0.33, a missing bias correction a factor ~3 on the update.
    size_t k = 0;
    for (const ParamInfo& p : layout.params())
      for (size_t i = 0; i < p.numel; ++i, ++k) {
        const double w = (*want)["params"][s][k].get<double>();
        EXPECT_NEAR(params[p.offset + i], w, 1e-6 * std::max(1.0, std::abs(w)))
            << p.name << "[" << i << "]";
      }
  }
  if (c.max_grad_norm > 0) {
    EXPECT_GT(clipped, 0) << "no step exercised clipping";
    EXPECT_LT(clipped, 6) << "every step was clipped";
  }
}

TEST(UpdateRule, AdamWMatchesTorchWithLambdaLRAndClipping) { run_trajectory({OptimizerKind::kAdamW, 1.0f}); }
TEST(UpdateRule, AdamWWithoutClippingMatchesTorch) { run_trajectory({OptimizerKind::kAdamW, 0.0f}); }
TEST(UpdateRule, BertMatchesOptimizationPy) { run_trajectory({OptimizerKind::kBert, 1.0f}); }

TEST(UpdateRule, FrozenTensorsStayFixedAndHaveNoMoments) {
  const ParamLayout layout = small_layout();
  OptimOptions o;
  o.learning_rate = 1e-2f;
  o.total_steps = 3;
  const std::vector<bool> trainable = {true, true, false, false, true};  // LayerNorm frozen
  UpdateRule rule(layout, o, trainable);
  EXPECT_EQ(rule.optimizer().moment_layout().params().size(), 3u);
  EXPECT_EQ(rule.optimizer().moment_layout().find("LayerNorm.weight"), nullptr);
  std::vector<float> params = values(layout, 1.0f, 0.0f);
  const std::vector<float> before = params;
  auto be = make_backend("reference");
  for (int s = 0; s < 3; ++s) {
    std::vector<float> g = values(layout, 0.5f, float(s));
    rule.apply(*be, params.data(), g.data(), s);
    for (size_t i = 0; i < layout.params().size(); ++i) {
      const ParamInfo& p = layout.params()[i];
      EXPECT_EQ(std::vector<float>(g.begin() + p.offset, g.begin() + p.offset + p.numel) ==
                    std::vector<float>(p.numel, 0.0f),
                !trainable[i])
          << "gradient of " << p.name << " zeroed iff frozen";
      const bool same = std::equal(params.begin() + p.offset, params.begin() + p.offset + p.numel,
                                   before.begin() + p.offset);
      EXPECT_EQ(same, !trainable[i]) << p.name;
    }
  }
}

TEST(UpdateRule, NonFiniteGradientChangesNothing) {
  const ParamLayout layout = small_layout();
  OptimOptions o;
  UpdateRule rule(layout, o);
  std::vector<float> params = values(layout, 1.0f, 0.0f);
  const std::vector<float> before = params;
  std::vector<float> g = values(layout, 0.5f, 1.0f);
  g[3] = std::numeric_limits<float>::infinity();
  auto be = make_backend("reference");
  const UpdateResult r = rule.apply(*be, params.data(), g.data(), 0);
  EXPECT_FALSE(r.applied);
  EXPECT_FALSE(std::isfinite(r.grad_norm));
  EXPECT_EQ(params, before);
  EXPECT_EQ(rule.optimizer().step_count(), 0);
  EXPECT_EQ(rule.optimizer().m(), std::vector<float>(layout.total(), 0.0f));
}

}  // namespace
}  // namespace bertrt
