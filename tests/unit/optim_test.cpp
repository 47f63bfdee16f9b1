// Optimizer pieces: the linear warm-up/decay schedule, global-norm clipping and AdamW over the flat
// parameter layout, checked against the formulas and against PyTorch (torch.optim.AdamW,
// torch.nn.utils.clip_grad_norm_) run by /usr/bin/python3.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "backends/backend.h"
#include "backends/reference/reference_backend.h"
#include "core/error.h"
#include "model/params.h"
#include "test_util.h"
#include "train/clip.h"
#include "train/optimizer.h"
#include "train/schedule.h"

#if __has_include("backends/reference/reference_backend.h")
#define BERTRT_HAVE_REFERENCE_BACKEND 1
#endif

namespace bertrt {
namespace {

// ---------------------------------------------------------------------------- helpers --------

// Runs a Python script with /usr/bin/python3 and returns its stdout; empty optional when Python or
// torch is not there (the caller skips visibly).
std::optional<std::string> run_python(const std::string& script) {
  const auto path = std::filesystem::temp_directory_path() /
                    fmt::format("bertrt_optim_test_{}.py",
                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::ofstream(path) << script;
  FILE* p = popen(("/usr/bin/python3 " + path.string() + " 2>&1").c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = pclose(p);
  std::filesystem::remove(path);
  if (rc != 0) {
    if (out.find("No module named 'torch'") != std::string::npos ||
        out.find("not found") != std::string::npos)
      return std::nullopt;
    ADD_FAILURE() << "python failed:\n" << out;
    return std::string();
  }
  return out;
}

#define REQUIRE_PYTHON(out)                                        \
  if (!(out)) GTEST_SKIP() << "needs /usr/bin/python3 with torch"; \
  if ((out)->empty()) return

std::vector<double> parse_numbers(const std::string& text) {
  std::istringstream in(text);
  std::vector<double> v;
  for (double x; in >> x;) v.push_back(x);
  return v;
}

// Python list literal of floats that round-trip float32 exactly (9 significant digits).
std::string py_list(const float* x, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:.9g},", x[i]);
  return s + "]";
}

// A small layout with both kinds of tensors: a Linear weight (decayed), its bias and a LayerNorm
// pair (not decayed, BERT recipe). Odd sizes so the 64-byte padding between tensors is exercised.
ParamLayout small_layout() {
  return ParamLayout({{"dense.weight", {3, 5}, 0, 0, true},
                      {"dense.bias", {3}, 0, 0, false},
                      {"LayerNorm.weight", {5}, 0, 0, false},
                      {"LayerNorm.bias", {5}, 0, 0, false},
                      {"head.weight", {2, 5}, 0, 0, true}});
}

// Deterministic values (sin of a hashed index): the inputs are arbitrary, the expected outputs
// come from torch on exactly these floats.
void fill(const ParamLayout& layout, std::vector<float>& buf, float scale, float phase) {
  buf.assign(layout.total(), 0.f);  // padding stays 0
  for (const ParamInfo& p : layout.params())
    for (size_t i = 0; i < p.numel; ++i)
      buf[p.offset + i] = scale * static_cast<float>(std::sin(0.731 * (p.offset + i) + phase));
}

// One "name = torch.tensor([...])" line per tensor of buf.
std::string py_tensors(const ParamLayout& layout, const std::vector<float>& buf,
                       const std::string& var) {
  std::string s = var + " = [\n";
  for (const ParamInfo& p : layout.params())
    s += "  torch.tensor(" + py_list(buf.data() + p.offset, p.numel) + ", dtype=torch.float32),\n";
  return s + "]\n";
}

// ---------------------------------------------------------------------------- schedule -------

TEST(Schedule, LinearWarmupThenDecayAtTheBoundaries) {
  // HF get_linear_schedule_with_warmup with warmup 10, total 100, lr 1e-3, by hand:
  //   step < 10: 1e-3·step/10;  step ≥ 10: 1e-3·max(0, (100 − step)/90).
  const float lr = 1e-3f;
  const std::vector<std::pair<int64_t, double>> want = {
      {0, 0.0},         {1, 1e-4},  {5, 5e-4},       {9, 9e-4},  {10, 1e-3},
      {11, 89e-3 / 90}, {55, 5e-4}, {99, 1e-3 / 90}, {100, 0.0}, {150, 0.0}};
  for (auto [step, lr_want] : want)
    EXPECT_NEAR(linear_schedule_lr(lr, step, 10, 100), lr_want, 1e-3 * 1e-6) << "step " << step;
  // No warm-up: full rate at step 0, then linear to 0.
  EXPECT_FLOAT_EQ(linear_schedule_lr(lr, 0, 0, 4), 1e-3f);
  EXPECT_FLOAT_EQ(linear_schedule_lr(lr, 3, 0, 4), 0.25e-3f);
  EXPECT_FLOAT_EQ(linear_schedule_lr(lr, 4, 0, 4), 0.f);
  // Warm-up as long as training: the denominator max(1, 0) keeps it finite; rate 0 at the end.
  EXPECT_FLOAT_EQ(linear_schedule_lr(lr, 9, 10, 10), 0.9e-3f);
  EXPECT_FLOAT_EQ(linear_schedule_lr(lr, 10, 10, 10), 0.f);
}

TEST(Schedule, WarmupStepsFromRatioRoundsUpLikePython) {
  // Python: math.ceil(total * ratio) in double; 100 * 0.07 == 7.000000000000001 → 8.
  EXPECT_EQ(warmup_steps_from_ratio(1000, 0.1), 100);
  EXPECT_EQ(warmup_steps_from_ratio(1000, 0.06), 60);
  EXPECT_EQ(warmup_steps_from_ratio(100, 0.07), 8);
  EXPECT_EQ(warmup_steps_from_ratio(7, 0.5), 4);
  EXPECT_EQ(warmup_steps_from_ratio(0, 0.1), 0);
  EXPECT_EQ(warmup_steps_from_ratio(10, 0.0), 0);
  EXPECT_THROW(warmup_steps_from_ratio(10, 1.5), Error);
  EXPECT_THROW(warmup_steps_from_ratio(10, -0.1), Error);
  EXPECT_THROW(warmup_steps_from_ratio(-1, 0.1), Error);
}

// ---------------------------------------------------------------------------- clipping -------

TEST(Clip, NormAndScaleMatchTorchClipGradNorm) {
  const ParamLayout layout = small_layout();
  std::vector<float> g;
  fill(layout, g, 0.8f, 0.3f);
  // Two max norms: one below the gradient norm (clips) and one above (leaves grads untouched).
  const auto out =
      run_python("import torch\n" + py_tensors(layout, g, "gs") +
                 "for max_norm in (1.0, 100.0):\n"
                 "    ps = [torch.nn.Parameter(torch.zeros_like(t)) for t in gs]\n"
                 "    for p, t in zip(ps, gs): p.grad = t.clone()\n"
                 "    n = torch.nn.utils.clip_grad_norm_(ps, max_norm)\n"
                 "    print(repr(n.item()))\n"
                 "    print(' '.join(repr(x) for p in ps for x in p.grad.flatten().tolist()))\n");
  REQUIRE_PYTHON(out);
  const std::vector<double> t = parse_numbers(*out);
  const size_t n_grads = 15 + 3 + 5 + 5 + 10;
  ASSERT_EQ(t.size(), 2 * (1 + n_grads)) << *out;

  for (int c = 0; c < 2; ++c) {
    const double max_norm = c == 0 ? 1.0 : 100.0;
    std::vector<float> mine = g;
    ReferenceBackend be;
    const double norm = clip_grad_norm(be, mine.data(), mine.size(), max_norm);
    // torch sums per-tensor norms in float32: agreement to a few float ulps (1e-6 relative).
    EXPECT_NEAR(norm, t[c * (1 + n_grads)], 1e-6 * norm);
    EXPECT_NEAR(global_grad_norm(be, g.data(), g.size()), norm, 1e-12);
    size_t k = c * (1 + n_grads) + 1;
    for (const ParamInfo& p : layout.params())
      for (size_t i = 0; i < p.numel; ++i, ++k) {
        // One float multiply by a coefficient that may differ by an ulp: 1e-6 relative.
        EXPECT_NEAR(mine[p.offset + i], t[k], 1e-6 * std::abs(t[k]) + 1e-9)
            << p.name << "[" << i << "] max_norm " << max_norm;
        if (c == 1) {
          EXPECT_EQ(mine[p.offset + i], g[p.offset + i]);  // unclipped: untouched
        }
      }
  }
  ReferenceBackend be;
  EXPECT_GT(global_grad_norm(be, g.data(), g.size()), 1.0);  // so case 0 really clipped
}

// ---------------------------------------------------------------------------- AdamW ----------

// Records adamw_step calls; every other op is a test failure.
// Derives from the reference so ops added later need no stub here; the ones the optimizer must
// not call fail loudly.
class RecordingBackend : public ReferenceBackend {
 public:
  struct Call {
    size_t offset, n;
    AdamWHyper h;
    int64_t t;
  };
  explicit RecordingBackend(const float* base) : base_(base) {}
  std::vector<Call> calls;

  const char* name() const override { return "recording"; }
  bool supports(Op op) const override { return op == Op::kAdamW; }
  void adamw_step(float* param, float*, float*, const float*, size_t n, const AdamWHyper& h,
                  int64_t t) override {
    calls.push_back({static_cast<size_t>(param - base_), n, h, t});
  }
#define UNEXPECTED ADD_FAILURE() << "unexpected op"
  void gemm(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*,
            int) override {
    UNEXPECTED;
  }
  void gemm_batched(int, bool, bool, int, int, int, float, const float*, int, int64_t, const float*,
                    int, int64_t, float, float*, int, int64_t) override {
    UNEXPECTED;
  }
  void add(float*, const float*, const float*, size_t) override { UNEXPECTED; }
  void bias_add(float*, const float*, int, int) override { UNEXPECTED; }
  void bias_backward(float*, const float*, int, int) override { UNEXPECTED; }
  void gelu_forward(float*, const float*, size_t, Gelu) override { UNEXPECTED; }
  void gelu_backward(float*, const float*, const float*, size_t, Gelu) override { UNEXPECTED; }
  void tanh_forward(float*, const float*, size_t) override { UNEXPECTED; }
  void tanh_backward(float*, const float*, const float*, size_t) override { UNEXPECTED; }
  void layernorm_forward(float*, float*, float*, const float*, const float*, const float*, int, int,
                         float) override {
    UNEXPECTED;
  }
  void layernorm_backward(float*, float*, float*, const float*, const float*, const float*,
                          const float*, const float*, int, int) override {
    UNEXPECTED;
  }
  void softmax_forward(float*, const float*, const float*, int, int, int, float) override {
    UNEXPECTED;
  }
  void softmax_backward(float*, const float*, const float*, int, int, float) override {
    UNEXPECTED;
  }
  void embedding_forward(float*, const int32_t*, const float*, int, int) override { UNEXPECTED; }
  void embedding_backward(float*, const int32_t*, const float*, int, int) override { UNEXPECTED; }
  void cross_entropy(float*, double*, const float*, const int32_t*, int, int, float) override {
    UNEXPECTED;
  }
  void fill(float*, float, size_t) override { UNEXPECTED; }
  void scale(float*, float, size_t) override { UNEXPECTED; }
#undef UNEXPECTED

 private:
  const float* base_;
};

TEST(AdamW, DecaysOnlyFlaggedTensorsAndCountsSteps) {
  const ParamLayout layout = small_layout();
  std::vector<float> params(layout.total()), grads(layout.total());
  AdamWHyper h;
  h.beta1 = 0.85f;
  h.beta2 = 0.99f;
  h.eps = 1e-6f;
  h.weight_decay = 0.01f;
  h.bias_correction = false;
  AdamW opt(layout, h);
  RecordingBackend be(params.data());
  opt.step(be, params.data(), grads.data(), 2e-4f);
  opt.step(be, params.data(), grads.data(), 1e-4f);
  EXPECT_EQ(opt.step_count(), 2);
  ASSERT_EQ(be.calls.size(), 2 * layout.params().size());
  for (size_t c = 0; c < be.calls.size(); ++c) {
    const ParamInfo& p = layout.params()[c % layout.params().size()];
    const auto& call = be.calls[c];
    SCOPED_TRACE(p.name);
    EXPECT_EQ(call.offset, p.offset);
    EXPECT_EQ(call.n, p.numel);
    EXPECT_EQ(call.t, c < layout.params().size() ? 1 : 2);
    EXPECT_EQ(call.h.lr, c < layout.params().size() ? 2e-4f : 1e-4f);
    EXPECT_EQ(call.h.weight_decay, p.decay ? 0.01f : 0.f);
    EXPECT_EQ(call.h.beta1, 0.85f);
    EXPECT_EQ(call.h.beta2, 0.99f);
    EXPECT_EQ(call.h.eps, 1e-6f);
    EXPECT_FALSE(call.h.bias_correction);
  }
  EXPECT_EQ(opt.m().size(), layout.total());
  EXPECT_THROW(opt.set_state(std::vector<float>(3), std::vector<float>(layout.total()), 1), Error);
  EXPECT_THROW(opt.set_state(opt.m(), opt.v(), -1), Error);
  opt.set_state(opt.m(), opt.v(), 7);
  EXPECT_EQ(opt.step_count(), 7);
}

TEST(AdamW, ThreeStepsMatchTorchWithTwoParamGroups) {
#ifndef BERTRT_HAVE_REFERENCE_BACKEND
  GTEST_SKIP() << "needs the reference backend's adamw_step (backends/reference, branch be)";
#else
  const ParamLayout layout = small_layout();
  std::vector<float> params, g[3];
  fill(layout, params, 1.0f, 0.0f);
  for (int s = 0; s < 3; ++s) fill(layout, g[s], 0.5f * (s + 1), 1.7f * (s + 1));
  const float lrs[3] = {1e-2f, 5e-3f, 2e-2f};  // the rate changes per step, as under a schedule
  std::vector<int> decayed;
  for (size_t i = 0; i < layout.params().size(); ++i) decayed.push_back(layout.params()[i].decay);

  // torch.optim.AdamW with two groups: weight_decay 0.01 for the decayed tensors, 0.0 otherwise.
  std::string script =
      "import torch\n" + py_tensors(layout, params, "init") + py_tensors(layout, g[0], "g0") +
      py_tensors(layout, g[1], "g1") + py_tensors(layout, g[2], "g2") +
      fmt::format("decay = {}\nlrs = [{:.9g}, {:.9g}, {:.9g}]\n",
                  fmt::format("[{}]", fmt::join(decayed, ",")), lrs[0], lrs[1], lrs[2]) +
      "ps = [torch.nn.Parameter(t.clone()) for t in init]\n"
      "opt = torch.optim.AdamW([\n"
      "    {'params': [p for p, d in zip(ps, decay) if d], 'weight_decay': 0.01},\n"
      "    {'params': [p for p, d in zip(ps, decay) if not d], 'weight_decay': 0.0}],\n"
      "    lr=1e-3, betas=(0.9, 0.999), eps=1e-8)\n"
      "for lr, gs in zip(lrs, (g0, g1, g2)):\n"
      "    for grp in opt.param_groups: grp['lr'] = lr\n"
      "    for p, t in zip(ps, gs): p.grad = t.clone()\n"
      "    opt.step()\n"
      "    print(' '.join(repr(x) for p in ps for x in p.detach().flatten().tolist()))\n"
      "print(' '.join(repr(x) for p in ps for x in opt.state[p]['exp_avg'].flatten().tolist()))\n"
      "print(' '.join(repr(x) for p in ps for x in "
      "opt.state[p]['exp_avg_sq'].flatten().tolist()))\n";
  const auto out = run_python(script);
  REQUIRE_PYTHON(out);
  const std::vector<double> t = parse_numbers(*out);
  const size_t n = 15 + 3 + 5 + 5 + 10;
  ASSERT_EQ(t.size(), 5 * n) << *out;

  AdamWHyper h;  // torch defaults: betas (0.9, 0.999), eps 1e-8, bias correction
  h.weight_decay = 0.01f;
  AdamW opt(layout, h);
  std::unique_ptr<Backend> backend = make_backend("reference");
  auto expect_all = [&](const std::vector<float>& mine, size_t row, double tol, const char* what) {
    size_t k = row * n;
    for (const ParamInfo& p : layout.params())
      for (size_t i = 0; i < p.numel; ++i, ++k)
        EXPECT_NEAR(mine[p.offset + i], t[k], tol * std::max(1.0, std::abs(t[k])))
            << what << " " << p.name << "[" << i << "]";
  };
  for (int s = 0; s < 3; ++s) {
    opt.step(*backend, params.data(), g[s].data(), lrs[s]);
    // Same float32 arithmetic as torch's single-tensor AdamW, up to operation order: params of
    // magnitude ≤ 1 agree to a few ulps (1e-6), while each update is ~lr ≥ 5e-3 in size, so a
    // missing bias correction or a decay on the wrong group (lr·wd·|p| ≈ 1e-4·|p|) would fail.
    expect_all(params, s, 1e-6, ("params after step " + std::to_string(s + 1)).c_str());
  }
  expect_all(opt.m(), 3, 1e-6, "exp_avg");
  expect_all(opt.v(), 4, 1e-6, "exp_avg_sq");
  EXPECT_EQ(opt.step_count(), 3);
#endif
}

}  // namespace
}  // namespace bertrt
