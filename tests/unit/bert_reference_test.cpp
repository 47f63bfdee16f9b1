// Replays the PyTorch reference (tests/reference/bert_reference.py, float64, Hugging Face module
// structure and names): forward outputs, the head losses, the gradient of EVERY parameter, then 3
// clipped AdamW steps, on both backends: MLM + NSP + sequence classification in one model, then
// regression, token classification and span extraction (question answering) each on its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "backends/backend.h"
#include "backends/device_array.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "model/bert_model.h"
#include "reference_model.h"
#include "test_util.h"
#include "train/clip.h"

namespace bertrt {
namespace {

// The reference runs in float64, so the difference is bertrt's fp32 rounding alone. Relative to
// the tensor's largest magnitude: fp32 unit roundoff is 6e-8, and sums over ≤ 40 terms through two
// layers, LayerNorm backward's cancellations and softmax bring it to ~1e-6 here (measured max
// 4e-6 over both backends and GELUs); 2e-5 leaves 5× headroom while any wrong term (≥ 1e-3
// relative) still fails. The fine-tuning heads measure the same (< 4.2e-6 on forward, losses and
// gradients). AdamW loss trajectories: Adam's first steps move each weight by about lr·sign(g),
// so a weight whose exact gradient is ~1e-9 of the largest moves in the direction fp32 rounding
// picks. Both sides therefore zero gradients below 1e-5 of the largest before each step
// (bert_reference.py drop_tiny_grads); with that, ≤ 1.2e-6 everywhere (gcc and clang-ASan builds,
// all backends). Without it, token classification on the cpu backend with erf GELU measured
// 9.6e-6 after step 2 (gcc) and 2.9e-5 (clang -O2 + ASan on an AVX-512 host).
constexpr double kTol = 2e-5;

struct Ref {
  SafetensorsFile file;
  BertConfig config;
  int num_labels = 0, num_token_labels = 0;
};

Ref load_ref(const std::string& act) {
  const std::string path = test::build_dir() + "/reference/bert_" + act + ".safetensors";
  Ref r{SafetensorsFile::open(path), {}, 0};
  r.config = test::reference_config(r.file);
  r.num_labels = std::stoi(r.file.metadata().at("num_labels"));
  r.num_token_labels = std::stoi(r.file.metadata().at("num_token_labels"));
  return r;
}

// max |got − want| / max |want|, with the worst value printed on failure. `floor` bounds the
// denominator from below: a gradient that is exactly zero in exact arithmetic (the key bias: adding
// a constant to every score of a softmax row changes nothing) is fp32 rounding noise of order
// eps × the gradients summed into it, so it is measured against the model's gradient scale.
void expect_close(const std::string& what, const float* got, const std::vector<float>& want,
                  double floor = 1e-30) {
  EXPECT_TRUE(test::rel_close(got, want, kTol, floor)) << what;
}

std::vector<int32_t> ints(const SafetensorsFile& f, const std::string& name) {
  auto v = f.to_i64(name);
  return std::vector<int32_t>(v.begin(), v.end());
}

// Every reference parameter under `prefix` maps onto one of ours with its shape, and the counts
// agree; copies the values in.
void load_params(BertModel& model, const SafetensorsFile& f, const std::string& prefix) {
  size_t ref_params = 0;
  for (const auto& t : f.tensors()) ref_params += t.name.rfind(prefix + "param/", 0) == 0;
  ASSERT_EQ(ref_params, model.layout().params().size());
  for (const ParamInfo& p : model.layout().params()) {
    const auto& t = f.at(prefix + "param/" + p.name);
    ASSERT_EQ(t.shape, p.shape) << p.name;
    auto v = f.to_f32(t.name);
    std::copy(v.begin(), v.end(), model.params() + p.offset);
  }
}

// After a training forward: backward, then every gradient against the reference's "grad/".
// The parameters whose name contains one of `zero_in_exact_math` must be, and only they are, zero
// to float64 rounding in the reference; with pooler_unreached the pooler's gradient must be
// exactly zero (no head feeds it), not just small.
void expect_gradients(BertModel& model, Backend& be, const SafetensorsFile& f,
                      const std::string& prefix, bool pooler_unreached,
                      const std::vector<std::string>& zero_in_exact_math) {
  model.grads();
  model.zero_grad();
  model.backward(be);
  double grad_scale = 0;
  for (const ParamInfo& p : model.layout().params())
    for (float g : f.to_f32(prefix + "grad/" + p.name)) grad_scale = std::max(grad_scale, std::fabs(double(g)));
  for (const ParamInfo& p : model.layout().params()) {
    const auto want = f.to_f32(prefix + "grad/" + p.name);
    const float* got = model.grads() + p.offset;
    if (pooler_unreached && p.name.rfind("bert.pooler.", 0) == 0) {
      EXPECT_TRUE(std::all_of(got, got + p.numel, [](float g) { return g == 0.0f; })) << p.name;
      continue;
    }
    double max_want = 0;
    for (float g : want) max_want = std::max(max_want, std::fabs(double(g)));
    const bool zero = max_want < 1e-12 * grad_scale;
    const bool expected_zero =
        std::any_of(zero_in_exact_math.begin(), zero_in_exact_math.end(),
                    [&](const std::string& n) { return p.name.find(n) != std::string::npos; });
    EXPECT_EQ(zero, expected_zero) << p.name;
    expect_close("grad " + p.name, got, want, zero ? grad_scale : 1e-30);
  }
}

// After expect_gradients (grads() hold the gradient of the forward whose loss is `first_loss`;
// backward() runs once per forward, it consumes the head gradients): 3 steps of
// clip_grad_norm_(1.0) + AdamW(lr 1e-3, wd 0.01 except LayerNorm/bias), each loss compared with
// the reference's `trajectory`.
void expect_adamw_trajectory(BertModel& model, Backend& be, const EncoderInputs& in,
                             const Targets& targets, double first_loss,
                             const std::vector<float>& trajectory) {
  // Everything on `be` (its memory): the product's clip (torch's formula) and AdamW moments.
  const size_t total = model.layout().total();
  DeviceArray<float> m(be, total), v(be, total);
  be.fill(m.data(), 0.0f, total);
  be.fill(v.data(), 0.0f, total);
  std::vector<double> losses{first_loss};
  std::vector<float> host(total);
  for (int step = 1; step <= 3; ++step) {
    float* params = model.params(be);
    float* grads = model.grads(be);
    // As the reference (bert_reference.py drop_tiny_grads): gradients below 1e-5 of the largest
    // are zeroed, so fp32 rounding noise on a ~zero gradient cannot pick an Adam step's sign.
    be.download(host.data(), grads, total * sizeof(float));
    be.sync();  // a download lands at the next sync
    float largest = 0;
    for (float g : host) largest = std::max(largest, std::fabs(g));
    for (float& g : host)
      if (std::fabs(g) < 1e-5f * largest) g = 0.0f;
    be.upload(grads, host.data(), total * sizeof(float));
    clip_grad_norm(be, grads, total, 1.0);
    for (const ParamInfo& p : model.layout().params()) {
      AdamWHyper h;
      h.weight_decay = p.decay ? 0.01f : 0.0f;
      be.adamw_step(params + p.offset, m.data() + p.offset, v.data() + p.offset, grads + p.offset,
                    p.numel, h, step);
    }
    model.zero_grad(be);
    losses.push_back(model.forward(be, in, targets, true).loss);
    model.backward(be);
  }
  ASSERT_EQ(losses.size(), trajectory.size());
  double worst = 0;
  for (size_t i = 0; i < losses.size(); ++i) {
    worst = std::max(worst, std::fabs(losses[i] - trajectory[i]) / trajectory[i]);
    EXPECT_NEAR(losses[i], trajectory[i], kTol * trajectory[i]) << "loss after step " << i;
  }
  std::printf("AdamW trajectory: largest relative difference %.2g\n", worst);
}

// The backends this reference runs on: the host ones, and vulkan where it is built (on Mesa's
// lavapipe in CI). fp32 in other summation orders: the same kTol holds.
std::vector<std::string> reference_backends() {
  std::vector<std::string> out{"reference", "cpu"};
#ifdef BERTRT_HAVE_VULKAN
  out.push_back("vulkan");
#endif
  return out;
}

// make_backend, or nullptr for a vulkan backend on a machine without a Vulkan device (the test
// then skips, unless BERTRT_REQUIRE_VULKAN=1).
std::unique_ptr<Backend> backend_or_skip(const std::string& name) {
  try {
    return make_backend(name);
  } catch (const Error& e) {
    const char* req = std::getenv("BERTRT_REQUIRE_VULKAN");
    if (name != "vulkan" || (req && std::string(req) == "1")) throw;
    std::printf("skipped: %s\n", e.what());
    return nullptr;
  }
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

  load_params(model, f, "");
  const auto input_ids = ints(f, "input/input_ids"), token_type_ids = ints(f, "input/token_type_ids"),
             attention_mask = ints(f, "input/attention_mask"), positions = ints(f, "input/mlm_positions"),
             mlm_labels = ints(f, "input/mlm_labels"), nsp_labels = ints(f, "input/nsp_labels"),
             labels = ints(f, "input/labels");
  const auto shape = f.at("input/input_ids").shape;
  EncoderInputs in{int(shape[0]), int(shape[1]), input_ids.data(), token_type_ids.data(),
                   attention_mask.data()};
  Targets targets{positions.data(), mlm_labels.data(), int(positions.size()), nsp_labels.data(),
                  labels.data()};
  auto be = backend_or_skip(backend_name);
  if (!be) GTEST_SKIP() << "no Vulkan device";

  // The MLM logits of an eval forward: a training one overwrites them with their gradient.
  model.forward(*be, in, targets, /*training=*/false);
  expect_close("prediction_logits", model.prediction_logits(), f.to_f32("output/prediction_logits"));
  ForwardResult r = model.forward(*be, in, targets, /*training=*/true);
  EXPECT_THROW(model.prediction_logits(), Error);
  expect_close("last_hidden_state", model.last_hidden_state(), f.to_f32("output/last_hidden_state"));
  expect_close("pooler_output", model.pooler_output(), f.to_f32("output/pooler_output"));
  expect_close("seq_relationship_logits", model.seq_relationship_logits().data(),
               f.to_f32("output/seq_relationship_logits"));
  expect_close("logits", model.logits().data(), f.to_f32("output/logits"));
  EXPECT_EQ(r.logits, model.logits().data());
  EXPECT_EQ(r.start_logits, nullptr);
  EXPECT_NEAR(r.mlm.loss, f.to_f32("output/mlm_loss")[0], kTol * r.mlm.loss);
  EXPECT_NEAR(r.nsp.loss, f.to_f32("output/nsp_loss")[0], kTol * r.nsp.loss);
  EXPECT_NEAR(r.cls.loss, f.to_f32("output/cls_loss")[0], kTol * r.cls.loss);
  EXPECT_EQ(r.mlm.count, int(positions.size()) - 1);  // one position carries -100

  // The key bias adds a constant to every score of a softmax row: no gradient reaches it.
  expect_gradients(model, *be, f, "", /*pooler_unreached=*/false, {"attention.self.key.bias"});

  expect_adamw_trajectory(model, *be, in, targets, r.loss, f.to_f32("trajectory"));
}

// The fine-tuning heads that are models of their own in the reference ("<kind>/" keys).
class BertHeadsReferenceTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string, HeadKind>> {};

TEST_P(BertHeadsReferenceTest, ForwardLossGradientsAndAdamWSteps) {
  const auto& [backend_name, act, kind] = GetParam();
  Ref ref = load_ref(act);
  const SafetensorsFile& f = ref.file;
  const std::string prefix = std::string(head_kind_name(kind)) + "/";
  HeadsConfig heads;
  heads.kind = kind;
  if (kind == HeadKind::kTokenClassification)
    for (int i = 0; i < ref.num_token_labels; ++i) heads.labels.push_back("tag_" + std::to_string(i));
  BertModel model(ref.config, heads);
  load_params(model, f, prefix);

  const auto input_ids = ints(f, "input/input_ids"), token_type_ids = ints(f, "input/token_type_ids"),
             attention_mask = ints(f, "input/attention_mask");
  const auto shape = f.at("input/input_ids").shape;
  const int B = int(shape[0]), T = int(shape[1]);
  EncoderInputs in{B, T, input_ids.data(), token_type_ids.data(), attention_mask.data()};
  std::vector<float> scores;
  std::vector<int32_t> token_labels, starts, ends;
  Targets targets;
  switch (kind) {
    case HeadKind::kRegression:
      scores = f.to_f32(prefix + "input/scores");
      targets.scores = scores.data();
      break;
    case HeadKind::kTokenClassification:
      token_labels = ints(f, prefix + "input/token_labels");
      targets.token_labels = token_labels.data();
      break;
    case HeadKind::kQuestionAnswering:
      starts = ints(f, prefix + "input/start_positions");
      ends = ints(f, prefix + "input/end_positions");
      targets.start_positions = starts.data();
      targets.end_positions = ends.data();
      break;
    default:
      FAIL() << "no reference for " << head_kind_name(kind);
  }
  auto be = backend_or_skip(backend_name);
  if (!be) GTEST_SKIP() << "no Vulkan device";

  ForwardResult r = model.forward(*be, in, targets, /*training=*/true);
  const double want_loss = f.to_f32(prefix + "output/loss")[0];
  EXPECT_NEAR(r.loss, want_loss, kTol * want_loss);
  EXPECT_EQ(r.cls.loss, r.loss);  // the only head
  if (kind == HeadKind::kQuestionAnswering) {
    ASSERT_TRUE(r.start_logits && r.end_logits);
    EXPECT_EQ(r.logits, nullptr);
    expect_close("start_logits", r.start_logits, f.to_f32(prefix + "output/start_logits"));
    expect_close("end_logits", r.end_logits, f.to_f32(prefix + "output/end_logits"));
    EXPECT_EQ(model.start_logits().size(), size_t(B) * T);
    EXPECT_EQ(r.cls.count, 2);  // row 1's start is clamped to T (ignored), row 2's to 0 (counted)
  } else {
    ASSERT_NE(r.logits, nullptr);
    EXPECT_EQ(r.logits, model.logits().data());
    const auto want = f.to_f32(prefix + "output/logits");
    EXPECT_EQ(model.logits().size(), want.size());
    expect_close("logits", r.logits, want);
    if (kind == HeadKind::kTokenClassification)
      EXPECT_EQ(r.cls.count, int(std::count_if(token_labels.begin(), token_labels.end(),
                                               [](int32_t l) { return l >= 0; })));
    else
      EXPECT_EQ(r.cls.count, B);
  }

  // Heads on last_hidden_state never reach the pooler (HF drops it; bertrt keeps it for the
  // other heads).
  std::vector<std::string> zero{"attention.self.key.bias"};
  if (kind == HeadKind::kQuestionAnswering) {
    // The start (end) logits of a sequence are one softmax over T: qa_outputs.bias shifts the
    // whole row, and so does the last LayerNorm bias (Σ_t ∂loss/∂logit_t = 0 per sequence and end).
    zero.push_back("qa_outputs.bias");
    zero.push_back("layer." + std::to_string(ref.config.num_hidden_layers - 1) +
                   ".output.LayerNorm.bias");
  }
  expect_gradients(model, *be, f, prefix, /*pooler_unreached=*/kind != HeadKind::kRegression, zero);

  expect_adamw_trajectory(model, *be, in, targets, r.loss, f.to_f32(prefix + "trajectory"));
}

INSTANTIATE_TEST_SUITE_P(
    Backends, BertReferenceTest,
    ::testing::Combine(::testing::ValuesIn(reference_backends()), ::testing::Values("gelu", "gelu_new")),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" +
             (std::get<1>(info.param) == "gelu" ? std::string("erf") : std::string("tanh"));
    });

INSTANTIATE_TEST_SUITE_P(
    Backends, BertHeadsReferenceTest,
    ::testing::Combine(::testing::ValuesIn(reference_backends()), ::testing::Values("gelu", "gelu_new"),
                       ::testing::Values(HeadKind::kRegression, HeadKind::kTokenClassification,
                                         HeadKind::kQuestionAnswering)),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" +
             (std::get<1>(info.param) == "gelu" ? std::string("erf") : std::string("tanh")) + "_" +
             head_kind_name(std::get<2>(info.param));
    });

}  // namespace
}  // namespace bertrt
