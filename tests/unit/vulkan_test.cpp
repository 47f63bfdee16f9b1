// The Vulkan backend (backends/vulkan/) on whatever Vulkan device the machine has — Mesa's
// lavapipe in CI — with the Khronos validation layer on (the suite sets BERTRT_VULKAN_VALIDATION=1
// unless the environment says otherwise; any validation message fails the test): every op that has
// a shader against the scalar reference on odd sizes, the pointer checks, and the whole model
// (every head, fp32 / QAT / int8, every op on the device) against the cpu backend; ctest runs it on
// both memory paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

#include <time.h>
#include <unistd.h>

#ifdef BERTRT_HAVE_VULKAN
#include "backends/cpu/cpu_backend.h"
#include "backends/device_array.h"
#include "backends/reference/reference_backend.h"
#include "backends/vulkan/vk_host_wait.h"
#include "backends/vulkan/vulkan_backend.h"
#include "core/error.h"
#include "model_runs.h"
#include "op_test_util.h"
#include "quant_op_cases.h"
#include "test_util.h"
#endif

namespace bertrt {
namespace {

#ifndef BERTRT_HAVE_VULKAN
TEST(Vulkan, NotBuilt) { GTEST_SKIP() << "this build has no Vulkan backend (BERTRT_VULKAN=OFF)"; }
#else

using test::randn;

// Defaults the suite sets itself (ctest passes one environment variable only): every test runs
// under the Khronos validation layer, and any message it prints fails the test; the pipeline
// cache stays in the build tree.
const bool kEnvironmentDefaults = [] {
  setenv("BERTRT_VULKAN_VALIDATION", "1", 0);
  setenv("BERTRT_VULKAN_PIPELINE_CACHE", BERTRT_BUILD_DIR_DEFAULT "/vulkan_pipeline_cache.bin", 0);
  return true;
}();

// One backend for the whole suite (pipelines are created once), made and destroyed by a gtest
// environment: a Vulkan device torn down by a static destructor at exit may outlive the loader's
// and the validation layer's own state. nullptr when there is no device.
std::unique_ptr<VulkanBackend> g_backend;
bool g_tried = false;

VulkanBackend* device() {
  if (!g_tried) {
    g_tried = true;
    try {
      g_backend = std::make_unique<VulkanBackend>();
    } catch (const Error& e) {
      std::fprintf(stderr, "no Vulkan device: %s\n", e.what());
    }
  }
  return g_backend.get();
}

class VulkanEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { g_backend.reset(); }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new VulkanEnvironment);

class Vulkan : public ::testing::Test {
 protected:
  void SetUp() override {
    be_ = device();
    if (!be_) {
      const char* req = std::getenv("BERTRT_REQUIRE_VULKAN");
      if (req && std::string(req) == "1") {
        FAIL() << "BERTRT_REQUIRE_VULKAN=1 and no Vulkan device";
      }
      GTEST_SKIP() << "no Vulkan device (install mesa-vulkan-drivers for lavapipe)";
    }
    messages_ = vk::Context::validation_messages();
  }
  void TearDown() override {
    if (be_) {
      EXPECT_EQ(vk::Context::validation_messages(), messages_) << "validation messages";
    }
  }
  // Host data into backend memory and back.
  template <class T>
  T* put(DeviceArray<T>& d, const std::vector<T>& h) {
    d.ensure(*be_, h.size());
    be_->upload(d.data(), h.data(), h.size() * sizeof(T));
    return d.data();
  }
  template <class T>
  std::vector<T> get(const DeviceArray<T>& d, size_t n) {
    return read_back(*be_, d.data(), n);
  }
  // The message of the bertrt::Error that sync() raises ("" when it raises none).
  std::string sync_error() {
    try {
      be_->sync();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  VulkanBackend* be_ = nullptr;
  int64_t messages_ = 0;
};

// No dropout shader yet: supports() says so and the op throws, naming the backend, instead of
// running a host loop on device memory.
TEST_F(Vulkan, DropoutIsNotSupportedAndSaysSo) {
  EXPECT_FALSE(be_->supports(Op::kDropout));
  DeviceArray<float> x;
  put(x, std::vector<float>(16, 1.0f));
  try {
    be_->dropout(x.data(), 16, 0.1f, 1);
    FAIL() << "dropout did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dropout: the vulkan backend has none"), std::string::npos)
        << e.what();
  }
}

TEST_F(Vulkan, ElementwiseOpsMatchTheReferenceExactly) {
  ReferenceBackend ref;
  // 70000 > 256 · 65535 / 256: exercises the grid folded into y only above 16.7 M; these sizes
  // cover one partial workgroup, several, and non-multiples of the workgroup size.
  for (size_t n : {1, 3, 17, 255, 257, 1000, 70001}) {
    SCOPED_TRACE(n);
    const auto a = randn(n, 1), b = randn(n, 2);
    DeviceArray<float> da, db, dout;
    put(da, a), put(db, b);
    dout.ensure(*be_, n);
    be_->add(dout.data(), da.data(), db.data(), n);
    std::vector<float> want(n);
    ref.add(want.data(), a.data(), b.data(), n);
    EXPECT_EQ(get(dout, n), want) << "add";
    be_->scale(da.data(), 0.37f, n);
    want = a;
    ref.scale(want.data(), 0.37f, n);
    EXPECT_EQ(get(da, n), want) << "scale";
    be_->fill(db.data(), -2.5f, n);
    EXPECT_EQ(get(db, n), std::vector<float>(n, -2.5f)) << "fill";
    be_->copy(da.data(), dout.data(), n * sizeof(float));
    ref.add(want.data(), a.data(), b.data(), n);
    EXPECT_EQ(get(da, n), want) << "copy";
  }
  for (int cols : {1, 7, 33, 300}) {
    const int rows = 5;
    auto out = randn(size_t(rows) * cols, 3);
    const auto bias = randn(cols, 4);
    DeviceArray<float> dout, dbias;
    put(dout, out), put(dbias, bias);
    be_->bias_add(dout.data(), dbias.data(), rows, cols);
    ref.bias_add(out.data(), bias.data(), rows, cols);
    EXPECT_EQ(get(dout, out.size()), out) << "bias_add " << cols;
  }
}

// GEMM: fp32 sums of K terms in another order than the reference's double sums: within
// γ_K·Σ|a||b| (Higham §3.1) plus the alpha and beta roundings, as ops_test bounds OpenBLAS.
TEST_F(Vulkan, GemmAllTransposesStridesAndBatchesWithinTheFloatBound) {
  ReferenceBackend ref;
  struct Shape {
    int M, N, K;
  };
  for (Shape s : {Shape{1, 1, 1}, Shape{3, 17, 31}, Shape{33, 5, 129}, Shape{65, 66, 16},
                  Shape{17, 16, 0}, Shape{128, 31, 77}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int batch : {1, 3}) {
          SCOPED_TRACE(::testing::Message() << s.M << "x" << s.N << "x" << s.K << " ta " << ta
                                            << " tb " << tb << " batch " << batch);
          const int lda = (ta ? s.M : s.K) + 3, ldb = (tb ? s.K : s.N) + 5, ldc = s.N + 2;
          const int64_t sa = int64_t(ta ? s.K : s.M) * lda + 11,
                        sb = int64_t(tb ? s.N : s.K) * ldb + 7, sc = int64_t(s.M) * ldc + 5;
          const auto A = randn(size_t(sa * batch + 1), 10), B = randn(size_t(sb * batch + 1), 11);
          auto C = randn(size_t(sc * batch), 12);
          const float alpha = 0.75f, beta = batch == 1 ? 0.0f : 0.5f;
          DeviceArray<float> dA, dB, dC;
          put(dA, A), put(dB, B), put(dC, C);
          be_->gemm_batched(batch, ta, tb, s.M, s.N, s.K, alpha, dA.data(), lda, sa, dB.data(), ldb,
                            sb, beta, dC.data(), ldc, sc);
          std::vector<float> want = C, absA(A.size()), absB(B.size()), bound = C;
          ref.gemm_batched(batch, ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, sa, B.data(), ldb,
                           sb, beta, want.data(), ldc, sc);
          for (size_t i = 0; i < A.size(); ++i) absA[i] = std::fabs(A[i]);
          for (size_t i = 0; i < B.size(); ++i) absB[i] = std::fabs(B[i]);
          for (float& x : bound) x = std::fabs(x);
          ref.gemm_batched(batch, ta, tb, s.M, s.N, s.K, std::fabs(alpha), absA.data(), lda, sa,
                           absB.data(), ldb, sb, std::fabs(beta), bound.data(), ldc, sc);
          std::vector<double> tol(bound.size());
          for (size_t i = 0; i < bound.size(); ++i)
            tol[i] = (s.K + 3) * test::kEps * bound[i] + 1e-30;
          const std::vector<float> got = get(dC, C.size());
          // Padding between rows and batches is untouched (compared exactly by a zero tolerance
          // where the bound is just |C|: the reference leaves it as is).
          EXPECT_TRUE(test::all_close(want, got, tol));
        }
}

// GELU: the erfc fit's fractional error (< 1.2e-7) plus ~10 float roundings in the polynomial
// and exp: |Δ| ≤ 1e-6·|gelu(x)| + 1e-7·|x| (the second term where gelu(x) ≈ 0 for x ≪ 0). The
// tanh form: the device's tanh (Vulkan: ≤ 5e-4 absolute in the spec, a few ulps on lavapipe):
// 1e-6·|x| + 1e-7 measured bound, checked.
TEST_F(Vulkan, GeluForwardWithinTheApproximationBound) {
  ReferenceBackend ref;
  auto x = randn(4099, 20, 3.0f);
  x[0] = 0.0f, x[1] = -9.0f, x[2] = 9.0f, x[3] = -1e-20f;
  for (Gelu kind : {Gelu::kErf, Gelu::kTanh}) {
    DeviceArray<float> dx, dout;
    put(dx, x);
    dout.ensure(*be_, x.size());
    be_->gelu_forward(dout.data(), dx.data(), x.size(), kind);
    std::vector<float> want(x.size());
    ref.gelu_forward(want.data(), x.data(), x.size(), kind);
    std::vector<double> tol(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      tol[i] = 1e-6 * std::fabs(want[i]) + 1e-7 * std::fabs(x[i]) + 1e-30;
    EXPECT_TRUE(test::all_close(want, get(dout, x.size()), tol))
        << (kind == Gelu::kErf ? "erf" : "tanh");
  }
}

// LayerNorm: fp32 tree sums of C terms for the mean and the variance (γ_log2 C ≈ 12 eps
// relative at C = 1000) against the reference's double sums; through rstd and the affine map
// |Δ| ≤ 32·eps·(|x̂·w| + |b|) with x̂ the normalised value.
TEST_F(Vulkan, LayerNormForwardWithinTheFloatBound) {
  ReferenceBackend ref;
  for (int C : {1, 3, 31, 256, 257, 1000}) {
    SCOPED_TRACE(C);
    const int rows = 7;
    const auto x = randn(size_t(rows) * C, 30, 2.0f, 0.5f), w = randn(C, 31), b = randn(C, 32);
    DeviceArray<float> dx, dw, db, dout, dmean, drstd;
    put(dx, x), put(dw, w), put(db, b);
    dout.ensure(*be_, x.size()), dmean.ensure(*be_, rows), drstd.ensure(*be_, rows);
    be_->layernorm_forward(dout.data(), dmean.data(), drstd.data(), dx.data(), dw.data(), db.data(),
                           rows, C, 1e-12f);
    std::vector<float> want(x.size()), mean(rows), rstd(rows);
    ref.layernorm_forward(want.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows,
                          C, 1e-12f);
    std::vector<double> tol(x.size());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < C; ++c) {
        const double xn = (x[r * C + c] - mean[r]) * rstd[r];
        tol[r * C + c] = 32 * test::kEps * (std::fabs(xn * w[c]) + std::fabs(b[c])) + 1e-30;
      }
    EXPECT_TRUE(test::all_close(want, get(dout, x.size()), tol));
    std::vector<double> mtol(rows), rtol(rows);
    for (int r = 0; r < rows; ++r) rtol[r] = 32 * test::kEps * rstd[r];
    EXPECT_TRUE(test::all_close(rstd, get(drstd, rows), rtol)) << "rstd";
    // mean: the tree sum's error is γ·Σ|x| / C.
    for (int r = 0; r < rows; ++r) {
      double a = 0;
      for (int c = 0; c < C; ++c) a += std::fabs(x[r * C + c]);
      mtol[r] = 16 * test::kEps * a / C + 1e-30;
    }
    EXPECT_TRUE(test::all_close(mean, get(dmean, rows), mtol)) << "mean";
  }
}

// Softmax: exp and the division to a few ulps and a tree sum of T terms: |Δp| ≤ 16·eps·p + the
// sum's relative error; the edge cases exactly (uniform rows).
TEST_F(Vulkan, SoftmaxForwardWithinTheFloatBoundAndItsEdges) {
  ReferenceBackend ref;
  for (int T : {1, 5, 17, 128, 300}) {
    SCOPED_TRACE(T);
    const int B = 2, NH = 3;
    const auto s = randn(size_t(B) * NH * T * T, 40, 3.0f);
    std::vector<float> mask(size_t(B) * T, 0.0f);
    for (int j = T / 2; j < T; ++j) mask[T + j] = -10000.0f;  // batch 1 padded
    for (bool masked : {false, true}) {
      DeviceArray<float> ds, dm, dp;
      put(ds, s), put(dm, mask);
      dp.ensure(*be_, s.size());
      be_->softmax_forward(dp.data(), ds.data(), masked ? dm.data() : nullptr, B, NH, T, 0.125f);
      std::vector<float> want(s.size());
      ref.softmax_forward(want.data(), s.data(), masked ? mask.data() : nullptr, B, NH, T, 0.125f);
      std::vector<double> tol(s.size());
      for (size_t i = 0; i < s.size(); ++i)
        tol[i] = (16 + std::log2(double(T))) * test::kEps * want[i] + 1e-30;
      EXPECT_TRUE(test::all_close(want, get(dp, s.size()), tol)) << (masked ? "masked" : "");
    }
  }
  // 12 × −200 (exp would underflow without the max shift) and a row fully masked by −inf.
  const int T = 12;
  std::vector<float> s(T * T, -200.0f), mask(T, -std::numeric_limits<float>::infinity());
  DeviceArray<float> ds, dm, dp;
  put(ds, s), put(dm, mask);
  dp.ensure(*be_, s.size());
  for (const float* m : {(const float*)nullptr, (const float*)dm.data()}) {
    be_->softmax_forward(dp.data(), ds.data(), m, 1, 1, T, 1.0f);
    for (float p : get(dp, s.size())) EXPECT_NEAR(p, 1.0 / T, 1e-7);
  }
}

// Packed attention: Backend's default (one attention per sequence, on offsets into the packed
// rows) on device memory; supports the packed batches, though packed_attention() steers callers
// to padded ones (one chain of dispatches per sequence). Against the scalar reference: the same
// bound as the gemm and softmax cases, a convex combination of V rows (|v| ≲ 4).
TEST_F(Vulkan, PackedAttentionRunsEachSequenceWithinTheFloatBound) {
  EXPECT_FALSE(be_->packed_attention());
  ReferenceBackend ref;
  const int NH = 2, HS = 9, C = NH * HS;
  const std::vector<int32_t> cu = {0, 3, 4, 21, 38};
  const int S = 4, N = cu.back(), Tmax = 17;
  const auto q = randn(size_t(N) * C, 51), k = randn(size_t(N) * C, 52), v = randn(size_t(N) * C, 53);
  DeviceArray<float> dq, dk, dv, dctx, dp, ds;
  put(dq, q), put(dk, k), put(dv, v);
  dctx.ensure(*be_, size_t(N) * C);
  dp.ensure(*be_, size_t(NH) * Tmax * Tmax);
  ds.ensure(*be_, size_t(NH) * Tmax * Tmax);
  const float scale = 1.0f / std::sqrt(float(HS));
  be_->attention_forward_varlen(dctx.data(), dp.data(), ds.data(), dq.data(), dk.data(), dv.data(),
                                cu.data(), S, NH, HS, scale);
  std::vector<float> want(size_t(N) * C), probs(size_t(NH) * Tmax * Tmax), scores(probs.size());
  ref.attention_forward_varlen(want.data(), probs.data(), scores.data(), q.data(), k.data(),
                               v.data(), cu.data(), S, NH, HS, scale);
  std::vector<double> tol(want.size(), 1e-5 * (1 + std::sqrt(double(Tmax))));
  EXPECT_TRUE(test::all_close(want, get(dctx, want.size()), tol));
}

// AdamW: the cpu backend's float operations in its order (precise: no contraction); only sqrt
// and the divisions may differ (Vulkan allows 2.5 ulp for division, lavapipe rounds correctly):
// a few eps of |p| and of the step, as ops_test bounds cpu vs reference.
TEST_F(Vulkan, AdamWMatchesTheCpuBackend) {
  CpuBackend cpu(1);
  for (bool bc : {true, false})
    for (size_t n : {1, 7, 257, 5000}) {
      SCOPED_TRACE(::testing::Message() << (bc ? "torch " : "bert ") << n);
      AdamWHyper h;
      h.lr = 1e-2f, h.weight_decay = 0.01f, h.bias_correction = bc, h.eps = bc ? 1e-8f : 1e-6f;
      auto p = randn(n, 50), m = std::vector<float>(n, 0.0f), v = m;
      DeviceArray<float> dp, dm, dv, dg;
      put(dp, p), put(dm, m), put(dv, v);
      // The cpu backend's AVX2 clone may contract m·β1 + g·(1 − β1) into an FMA: one rounding of
      // the terms' size per step, not of m's (which can cancel).
      std::vector<double> terms(n, 0.0);
      for (int t = 1; t <= 3; ++t) {
        const auto g = randn(n, 50 + t, 0.1f);
        for (size_t i = 0; i < n; ++i)
          terms[i] += std::fabs(m[i]) * h.beta1 + std::fabs(g[i]) * (1 - h.beta1);
        put(dg, g);
        be_->adamw_step(dp.data(), dm.data(), dv.data(), dg.data(), n, h, t);
        cpu.adamw_step(p.data(), m.data(), v.data(), g.data(), n, h, t);
      }
      std::vector<double> tp(n), tm(n);
      for (size_t i = 0; i < n; ++i)
        tp[i] = 16 * test::kEps * (std::fabs(p[i]) + 10 * h.lr), tm[i] = 4 * test::kEps * terms[i];
      EXPECT_TRUE(test::all_close(p, get(dp, n), tp)) << "param";
      EXPECT_TRUE(test::all_close(m, get(dm, n), tm)) << "m";
    }
}

// The backward activations and tanh: the same fit / device tanh as the forwards (bounds there),
// times dout, accumulated into a non-zero dinp (one more rounding of |dinp|).
TEST_F(Vulkan, ActivationBackwardsAndTanhWithinTheirBounds) {
  ReferenceBackend ref;
  const size_t n = 3001;
  const auto x = randn(n, 60, 3.0f), dout = randn(n, 61), dinp0 = randn(n, 62);
  DeviceArray<float> dx, dd, dg;
  put(dx, x), put(dd, dout);
  for (Gelu kind : {Gelu::kErf, Gelu::kTanh}) {
    put(dg, dinp0);
    be_->gelu_backward(dg.data(), dx.data(), dd.data(), n, kind);
    std::vector<float> want = dinp0;
    ref.gelu_backward(want.data(), x.data(), dout.data(), n, kind);
    std::vector<double> tol(n);
    for (size_t i = 0; i < n; ++i)
      tol[i] =
          2e-6 * std::fabs(dout[i]) * (1 + std::fabs(x[i])) + 2 * test::kEps * std::fabs(want[i]);
    EXPECT_TRUE(test::all_close(want, get(dg, n), tol)) << "gelu_backward";
  }
  DeviceArray<float> dy;
  dy.ensure(*be_, n);
  be_->tanh_forward(dy.data(), dx.data(), n);
  std::vector<float> y(n);
  ref.tanh_forward(y.data(), x.data(), n);
  EXPECT_TRUE(test::all_close(y, get(dy, n), {4 * test::kEps})) << "tanh_forward";
  put(dg, dinp0);
  put(dy, y);
  be_->tanh_backward(dg.data(), dy.data(), dd.data(), n);
  std::vector<float> want = dinp0;
  ref.tanh_backward(want.data(), y.data(), dout.data(), n);
  std::vector<double> tol(n);
  for (size_t i = 0; i < n; ++i)
    tol[i] = 4 * test::kEps * (std::fabs(dout[i]) + std::fabs(want[i]));
  EXPECT_TRUE(test::all_close(want, get(dg, n), tol)) << "tanh_backward";
}

// bias_backward: a float sum of `rows` terms in order (γ_rows·Σ|dout|) against double sums;
// softmax_backward: the dot product's tree sum and three roundings, relative to p·(|dp| + Σ|p dp|).
TEST_F(Vulkan, ReductionBackwardsWithinTheFloatBound) {
  ReferenceBackend ref;
  for (int rows : {1, 7, 300})
    for (int cols : {1, 17, 257}) {
      const auto dout = randn(size_t(rows) * cols, 70), db0 = randn(cols, 71);
      DeviceArray<float> dd, db;
      put(dd, dout), put(db, db0);
      be_->bias_backward(db.data(), dd.data(), rows, cols);
      std::vector<float> want = db0;
      ref.bias_backward(want.data(), dout.data(), rows, cols);
      std::vector<double> tol(cols);
      for (int c = 0; c < cols; ++c) {
        double a = std::fabs(db0[c]);
        for (int r = 0; r < rows; ++r) a += std::fabs(dout[size_t(r) * cols + c]);
        tol[c] = (rows + 2) * test::kEps * a;
      }
      EXPECT_TRUE(test::all_close(want, get(db, cols), tol)) << rows << "x" << cols;
    }
  for (int T : {1, 5, 128, 300}) {
    const int rows = 9;
    std::vector<float> probs = test::uniform(size_t(rows) * T, 80, 0.01f, 1.0f);
    for (int r = 0; r < rows; ++r) {  // rows of probabilities
      double sum = 0;
      for (int j = 0; j < T; ++j) sum += probs[r * T + j];
      for (int j = 0; j < T; ++j) probs[r * T + j] = float(probs[r * T + j] / sum);
    }
    const auto dprobs = randn(probs.size(), 81), ds0 = randn(probs.size(), 82);
    DeviceArray<float> dp, ddp, dds;
    put(dp, probs), put(ddp, dprobs), put(dds, ds0);
    be_->softmax_backward(dds.data(), dp.data(), ddp.data(), rows, T, 0.125f);
    std::vector<float> want = ds0;
    ref.softmax_backward(want.data(), probs.data(), dprobs.data(), rows, T, 0.125f);
    std::vector<double> tol(probs.size());
    for (int r = 0; r < rows; ++r) {
      double dot = 0;
      for (int j = 0; j < T; ++j) dot += std::fabs(double(probs[r * T + j]) * dprobs[r * T + j]);
      for (int j = 0; j < T; ++j) {
        const size_t i = size_t(r) * T + j;
        tol[i] = (8 + std::log2(double(T))) * test::kEps *
                     (0.125 * probs[i] * (std::fabs(dprobs[i]) + dot) + std::fabs(want[i])) +
                 1e-30;
      }
    }
    EXPECT_TRUE(test::all_close(want, get(dds, probs.size()), tol)) << "softmax_backward " << T;
  }
}

// Row moves: exact (one add for embedding_forward, copies for the others).
TEST_F(Vulkan, RowMovesAreExact) {
  ReferenceBackend ref;
  const int V = 13, C = 37, n = 6;
  const auto table = randn(size_t(V) * C, 90), out0 = randn(size_t(n) * C, 91);
  const std::vector<int32_t> ids = {11, 0, 5, 5, 3, 11};  // < V − 1: gathered from row 1 on
  DeviceArray<float> dt, dout;
  DeviceArray<int32_t> di(*be_, ids.size());
  be_->upload(di.data(), ids.data(), ids.size() * 4);
  put(dt, table), put(dout, out0);
  be_->embedding_forward(dout.data(), di.data(), dt.data(), n, C);
  std::vector<float> want = out0;
  ref.embedding_forward(want.data(), ids.data(), table.data(), n, C);
  EXPECT_EQ(get(dout, want.size()), want) << "embedding_forward";
  be_->gather_rows(dout.data(), dt.data() + C, di.data(), n - 1, C);  // an interior source
  ref.gather_rows(want.data(), table.data() + C, ids.data(), n - 1, C);
  EXPECT_EQ(get(dout, want.size()), want) << "gather_rows";
  be_->copy_2d(dout.data() + 1, 7, dt.data() + 2, 11, 4, 5);
  ref.copy_2d(want.data() + 1, 7, table.data() + 2, 11, 4, 5);
  EXPECT_EQ(get(dout, want.size()), want) << "copy_2d";
}

// LayerNorm backward: fp32 tree sums of C terms per row (dinp) and in-order sums of `rows` terms
// per column (dweight, dbias) against double sums: (log2 C + 8)·eps of rstd·(|dn| + mean|dn| +
// |n|·mean|dn n|) for dinp, (rows + 4)·eps of Σ|n·dout| (Σ|dout|) for the parameters.
TEST_F(Vulkan, LayerNormBackwardWithinTheFloatBound) {
  ReferenceBackend ref;
  for (int C : {1, 7, 256, 1000})
    for (int rows : {1, 9}) {
      SCOPED_TRACE(::testing::Message() << rows << "x" << C);
      const auto x = randn(size_t(rows) * C, 100, 2.0f), w = randn(C, 101), b = randn(C, 102);
      std::vector<float> y(x.size()), mean(rows), rstd(rows);
      ref.layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows,
                            C, 1e-5f);
      const auto dout = randn(x.size(), 103), di0 = randn(x.size(), 104), dw0 = randn(C, 105),
                 db0 = randn(C, 106);
      DeviceArray<float> dx, dw, dmean, drstd, dd, ddi, ddw, ddb;
      put(dx, x), put(dw, w), put(dmean, mean), put(drstd, rstd), put(dd, dout);
      put(ddi, di0), put(ddw, dw0), put(ddb, db0);
      be_->layernorm_backward(ddi.data(), ddw.data(), ddb.data(), dd.data(), dx.data(), dw.data(),
                              dmean.data(), drstd.data(), rows, C);
      std::vector<float> di = di0, dwt = dw0, dbt = db0;
      ref.layernorm_backward(di.data(), dwt.data(), dbt.data(), dout.data(), x.data(), w.data(),
                             mean.data(), rstd.data(), rows, C);
      std::vector<double> ti(x.size()), tw(C), tb(C);
      for (int r = 0; r < rows; ++r) {
        double a = 0, bb = 0;
        for (int c = 0; c < C; ++c) {
          const double xn = (x[r * C + c] - mean[r]) * rstd[r], dn = double(w[c]) * dout[r * C + c];
          a += std::fabs(dn), bb += std::fabs(dn * xn);
        }
        for (int c = 0; c < C; ++c) {
          const size_t i = size_t(r) * C + c;
          const double xn = (x[i] - mean[r]) * rstd[r], dn = double(w[c]) * dout[i];
          ti[i] =
              (std::log2(double(C)) + 8) * test::kEps *
                  (rstd[r] * (std::fabs(dn) + a / C + std::fabs(xn) * bb / C) + std::fabs(di[i])) +
              1e-30;
        }
      }
      for (int c = 0; c < C; ++c) {
        double sw = std::fabs(dw0[c]), sb = std::fabs(db0[c]);
        for (int r = 0; r < rows; ++r) {
          const double xn = (x[r * C + c] - mean[r]) * rstd[r];
          sw += std::fabs(xn * dout[r * C + c]), sb += std::fabs(dout[r * C + c]);
        }
        tw[c] = (rows + 4) * test::kEps * sw, tb[c] = (rows + 4) * test::kEps * sb;
      }
      EXPECT_TRUE(test::all_close(di, get(ddi, x.size()), ti)) << "dinp";
      EXPECT_TRUE(test::all_close(dwt, get(ddw, C), tw)) << "dweight";
      EXPECT_TRUE(test::all_close(dbt, get(ddb, C), tb)) << "dbias";
    }
}

// sum_squares and the loss sums: fp32 pairwise sums (reduce.comp: 16 terms per thread, a tree of
// ≤ 8 levels, the partials ≤ n/(16·64²) per thread, a tree again) against the reference's double
// sum: ≤ (33 + n/65536 + 1)·u·Σx². min_max: exact.
TEST_F(Vulkan, SumSquaresAndMinMaxOfOddSizes) {
  ReferenceBackend ref;
  for (size_t n : {0, 1, 3, 255, 4097, 70001, 1000003}) {
    SCOPED_TRACE(n);
    const auto x = randn(std::max<size_t>(n, 1), uint32_t(100 + n), 2.0f);
    DeviceArray<float> dx;
    put(dx, x);
    DeviceArray<double> out(*be_, 1);
    be_->sum_squares(out.data(), dx.data(), n);
    double want = 0;
    ref.sum_squares(&want, x.data(), n);
    const double got = get(out, 1)[0];
    EXPECT_NEAR(got, want, (34 + n / 65536.0) * test::kEps / 2 * want);
    if (n == 0) continue;
    DeviceArray<float> mm(*be_, 2);
    be_->min_max(mm.data(), mm.data() + 1, dx.data(), n);
    float lo, hi;
    ref.min_max(&lo, &hi, x.data(), n);
    EXPECT_EQ(get(mm, 2), (std::vector<float>{lo, hi}));
  }
}

// Per-row reductions are exact: argmax keeps the FIRST maximum (rows with repeated maxima),
// symmetric scales divide correctly rounded (2000 rows of 3: many quotients), a zero row gives
// FLT_EPSILON.
TEST_F(Vulkan, ArgmaxAbsmaxAndSymmetricScalesAreExact) {
  ReferenceBackend ref;
  for (auto [rows, cols] : {std::pair{7, 1}, {7, 3}, {9, 300}, {5, 1000}, {2000, 3}}) {
    SCOPED_TRACE(::testing::Message() << rows << "x" << cols);
    auto x = randn(size_t(rows) * cols, uint32_t(rows * 7 + cols), 3.0f);
    for (int r = 0; r < rows; r += 2) {  // repeated maxima, at odd and even columns
      float* row = x.data() + size_t(r) * cols;
      const float m = *std::max_element(row, row + cols) + 1.0f;
      for (int c = cols / 3; c < cols; c += 1 + cols / 5) row[c] = r % 4 ? m : -m;
    }
    std::fill_n(x.data() + size_t(rows - 1) * cols, cols, 0.0f);
    DeviceArray<float> dx, ds;
    put(dx, x);
    DeviceArray<int32_t> di(*be_, size_t(rows));
    be_->argmax_rows(di.data(), dx.data(), rows, cols);
    std::vector<int32_t> want_i(rows);
    ref.argmax_rows(want_i.data(), x.data(), rows, cols);
    EXPECT_TRUE(test::all_equal(want_i, get(di, rows))) << "argmax_rows";
    ds.ensure(*be_, size_t(rows));
    std::vector<float> want(rows);
    be_->absmax_rows(ds.data(), dx.data(), rows, cols);
    ref.absmax_rows(want.data(), x.data(), rows, cols);
    EXPECT_EQ(get(ds, rows), want) << "absmax_rows";
    for (auto [qmin, qmax] : {std::pair{-128, 127}, {-127, 127}}) {
      be_->symmetric_scale_rows(ds.data(), dx.data(), rows, cols, qmin, qmax);
      ref.symmetric_scale_rows(want.data(), x.data(), rows, cols, qmin, qmax);
      EXPECT_EQ(get(ds, rows), want) << "symmetric_scale_rows " << qmin;
    }
  }
}

// Cross-entropy in fp32 against the reference's double: with u = 2^-23, Vulkan's exp within
// (3 + 2|x|) ulp and log within 2^-21 absolute (its precision table), and a sum of V terms
// ≤ (log2 V + V/64 + 1)·u: lse is off by δ ≤ 2^-21 + (3 + 2·range + log2 V + V/64 + 1)·u,
// p = exp(z − lse) by p·(δ + (4 + 3|z − lse|)·u), dlogits by |g|·(that + u·|p − onehot|).
TEST_F(Vulkan, CrossEntropyWithinTheFloatBoundAndItsErrors) {
  ReferenceBackend ref;
  for (int V : {1, 2, 7, 257, 3001}) {
    SCOPED_TRACE(V);
    const int rows = 9;
    const auto z = randn(size_t(rows) * V, uint32_t(300 + V), 3.0f);
    std::vector<int32_t> t(rows);
    for (int r = 0; r < rows; ++r) t[r] = r % 4 == 1 ? -100 : (r * 7919) % V;
    DeviceArray<float> dz, dd;
    DeviceArray<int32_t> dt;
    put(dz, z), put(dt, t);
    dd.ensure(*be_, z.size());
    DeviceArray<double> loss(*be_, 1);
    const float g = 0.25f;
    be_->cross_entropy(dd.data(), loss.data(), dz.data(), dt.data(), rows, V, g);
    std::vector<float> want(z.size());
    double want_loss = 0;
    ref.cross_entropy(want.data(), &want_loss, z.data(), t.data(), rows, V, g);
    std::vector<double> tol(z.size());
    double loss_tol = 0;
    for (int r = 0; r < rows; ++r) {
      const float* zr = z.data() + size_t(r) * V;
      const double mx = *std::max_element(zr, zr + V), mn = *std::min_element(zr, zr + V);
      double sum = 0;
      for (int j = 0; j < V; ++j) sum += std::exp(double(zr[j]) - mx);
      const double lse = mx + std::log(sum), u = test::kEps;
      const double delta =
          std::ldexp(1.0, -21) + (3 + 2 * (mx - mn) + std::log2(double(V)) + V / 64.0 + 1) * u;
      for (int j = 0; j < V; ++j) {
        const double p = std::exp(zr[j] - lse), x = std::fabs(zr[j] - lse);
        const double onehot = j == t[r] ? 1.0 : 0.0;
        tol[size_t(r) * V + j] =
            t[r] < 0 ? 0.0 : g * (p * (delta + (4 + 3 * x) * u) + u * std::fabs(p - onehot));
      }
      if (t[r] >= 0) loss_tol += delta + 2 * u * (std::fabs(lse) + std::fabs(zr[t[r]]));
    }
    EXPECT_TRUE(test::all_close(want, get(dd, z.size()), tol)) << "dlogits";
    EXPECT_NEAR(get(loss, 1)[0], want_loss, loss_tol + 16 * test::kEps * want_loss) << "loss";
    const double got_loss = get(loss, 1)[0];
    be_->cross_entropy(nullptr, loss.data(), dz.data(), dt.data(), rows, V, g);  // loss only
    EXPECT_NEAR(get(loss, 1)[0], want_loss, loss_tol + 16 * test::kEps * want_loss) << "no grad";
    // In place (dlogits = logits, as the MLM head calls it): the same loss and bits.
    DeviceArray<float> inplace;
    put(inplace, z);
    be_->cross_entropy(inplace.data(), loss.data(), inplace.data(), dt.data(), rows, V, g);
    EXPECT_EQ(get(loss, 1)[0], got_loss) << "in place";
    const auto a = get(inplace, z.size()), b = get(dd, z.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "in place";
  }
  // A target ≥ V is an error at sync, worded as the cpu backend words it; the backend goes on.
  DeviceArray<float> dz;
  put(dz, randn(12, 5));
  DeviceArray<int32_t> dt;
  put(dt, std::vector<int32_t>{1, 0, 4});
  DeviceArray<double> loss(*be_, 1);
  be_->cross_entropy(nullptr, loss.data(), dz.data(), dt.data(), 3, 4, 1.0f);
  EXPECT_EQ(sync_error(), "cross_entropy: row 2: target 4 is outside the vocabulary [0, 4)");
  EXPECT_EQ(sync_error(), "");
}

// MSE: the difference, square and scaling in float (the reference: double) — dpred within
// 6 roundings (the division: 2.5 ulp), the sum within (36 + 2)·u/2 of Σ d².
TEST_F(Vulkan, MseLossWithinTheFloatBound) {
  ReferenceBackend ref;
  for (int n : {1, 7, 300, 5000}) {
    SCOPED_TRACE(n);
    const auto pred = randn(n, uint32_t(400 + n)), target = randn(n, uint32_t(401 + n));
    DeviceArray<float> dp, dt, dd;
    put(dp, pred), put(dt, target);
    dd.ensure(*be_, size_t(n));
    DeviceArray<double> loss(*be_, 1);
    be_->mse_loss(dd.data(), loss.data(), dp.data(), dt.data(), n, 0.7f);
    std::vector<float> want(n);
    double want_loss = 0;
    ref.mse_loss(want.data(), &want_loss, pred.data(), target.data(), n, 0.7f);
    std::vector<double> tol(n);
    for (int i = 0; i < n; ++i) tol[i] = 6 * test::kEps / 2 * std::fabs(want[i]);
    EXPECT_TRUE(test::all_close(want, get(dd, n), tol)) << "dpred";
    EXPECT_NEAR(get(loss, 1)[0], want_loss, 38 * test::kEps / 2 * want_loss) << "loss";
  }
}

// Embedding backward without atomics adds each id's rows in index order: the reference's bits,
// with heavy repetition and more positions than a workgroup scans at once.
TEST_F(Vulkan, EmbeddingBackwardIsExactWithRepeatedIds) {
  ReferenceBackend ref;
  const int V = 50;
  for (int C : {1, 37, 300})
    for (int n : {1, 6, 700}) {
      SCOPED_TRACE(::testing::Message() << "C " << C << " n " << n);
      std::vector<int32_t> ids(n);
      for (int i = 0; i < n; ++i) ids[i] = (i * i * 7 + 3 * i) % (i % 3 ? V : 5);
      const auto dout = randn(size_t(n) * C, uint32_t(500 + n)),
                 table = randn(size_t(V) * C, uint32_t(501 + C));
      DeviceArray<float> dt, dd;
      DeviceArray<int32_t> di;
      put(dt, table), put(dd, dout), put(di, ids);
      be_->embedding_backward(dt.data(), di.data(), dd.data(), n, C);
      std::vector<float> want = table;
      ref.embedding_backward(want.data(), ids.data(), dout.data(), n, C);
      EXPECT_EQ(get(dt, want.size()), want);
    }
}

// The fake-quant ops round exactly as the reference (and PyTorch): ties, clamps, a scale whose
// reciprocal needs the correctly rounded division; masks and q at every byte offset of a word,
// the bytes around them untouched.
TEST_F(Vulkan, FakeQuantOpsAreBitExactAtEveryByteOffset) {
  ReferenceBackend ref;
  constexpr uint8_t kSentinel = 0xab;
  for (size_t n : {1, 3, 4, 5, 1001})
    for (size_t lead : {0, 1, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " lead " << lead);
      const auto x = test::fake_quant_inputs(n, uint32_t(600 + n));
      DeviceArray<float> dx, dout;
      DeviceArray<uint8_t> bytes;
      put(dx, x);
      dout.ensure(*be_, n);
      const std::vector<uint8_t> fence(n + 8, kSentinel);
      for (auto [scale, zp, qmin, qmax] :
           {std::tuple{0.0625f, 3, 0, 255}, {0.037f, 0, -128, 127}, {0.3f, 128, 0, 255}}) {
        put(bytes, fence);
        be_->fake_quant_per_tensor(dout.data(), bytes.data() + lead, dx.data(), n, scale, zp, qmin,
                                   qmax);
        std::vector<float> want(n);
        std::vector<uint8_t> want_mask = fence;
        ref.fake_quant_per_tensor(want.data(), want_mask.data() + lead, x.data(), n, scale, zp,
                                  qmin, qmax);
        EXPECT_EQ(get(dout, n), want) << "fake_quant_per_tensor " << scale;
        EXPECT_TRUE(test::all_equal(want_mask, get(bytes, fence.size()))) << "mask " << scale;
        put(bytes, fence);
        be_->quantize_u8(bytes.data() + lead, dx.data(), n, scale, zp);
        std::vector<uint8_t> want_q = fence;
        ref.quantize_u8(want_q.data() + lead, x.data(), n, scale, zp);
        EXPECT_TRUE(test::all_equal(want_q, get(bytes, fence.size()))) << "quantize_u8 " << scale;
      }
      // The STE backward from the last mask; dinp holds −0 where the mask drops dout.
      put(bytes, fence);
      be_->fake_quant_per_tensor(dout.data(), bytes.data() + lead, dx.data(), n, 0.0625f, 0, -8, 7);
      std::vector<uint8_t> mask(n + 8, kSentinel);
      std::vector<float> scratch(n);
      ref.fake_quant_per_tensor(scratch.data(), mask.data() + lead, x.data(), n, 0.0625f, 0, -8, 7);
      std::vector<float> d0(n, -0.0f);
      const auto dy = randn(n, uint32_t(601 + n));
      DeviceArray<float> dd, ddy;
      put(dd, d0), put(ddy, dy);
      be_->fake_quant_backward(dd.data(), bytes.data() + lead, ddy.data(), n);
      ref.fake_quant_backward(d0.data(), mask.data() + lead, dy.data(), n);
      const auto got = get(dd, n);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(std::signbit(got[i]), std::signbit(d0[i])) << i;
      EXPECT_EQ(got, d0) << "fake_quant_backward";
    }
  // Per row: the scales of symmetric_scale_rows, masks at an odd offset.
  for (auto [rows, cols] : {std::pair{1, 1}, {5, 7}, {33, 129}}) {
    const auto x = test::fake_quant_inputs(size_t(rows) * cols, uint32_t(700 + cols));
    std::vector<float> scale(rows);
    ref.symmetric_scale_rows(scale.data(), x.data(), rows, cols, -128, 127);
    DeviceArray<float> dx, ds, dout;
    DeviceArray<uint8_t> bytes;
    put(dx, x), put(ds, scale);
    dout.ensure(*be_, x.size());
    const std::vector<uint8_t> fence(x.size() + 4, kSentinel);
    put(bytes, fence);
    be_->fake_quant_per_row(dout.data(), bytes.data() + 1, dx.data(), ds.data(), rows, cols, -128,
                            127);
    std::vector<float> want(x.size());
    std::vector<uint8_t> want_mask = fence;
    ref.fake_quant_per_row(want.data(), want_mask.data() + 1, x.data(), scale.data(), rows, cols,
                           -128, 127);
    EXPECT_EQ(get(dout, x.size()), want) << "fake_quant_per_row " << rows;
    EXPECT_TRUE(test::all_equal(want_mask, get(bytes, fence.size()))) << "mask " << rows;
  }
  // A scale the device finds invalid is an error at sync naming the row.
  DeviceArray<float> dx, ds, dout(*be_, 6);
  put(dx, randn(6, 9)), put(ds, std::vector<float>{0.1f, 0.1f, 0.0f});
  be_->fake_quant_per_row(dout.data(), nullptr, dx.data(), ds.data(), 3, 2, -128, 127);
  EXPECT_EQ(sync_error(), "fake_quant_per_row: row 2: scale 0 must be positive and finite");
}

// The observer ops on the device: the moving average and the qparams it implies, bit for bit; a
// non-finite batch range is an error at sync.
TEST_F(Vulkan, ObserverOpsAreBitExact) {
  ReferenceBackend ref;
  DeviceArray<float> dr(*be_, 2), db, dx, dout;
  std::vector<float> want(2);
  const size_t n = 1001;
  const auto x = test::fake_quant_inputs(n, 900);
  put(dx, x);
  dout.ensure(*be_, n);
  DeviceArray<uint8_t> mask(*be_, n + 3);
  for (int step = 0; step < 5; ++step) {
    auto batch = randn(6, uint32_t(901 + step), 3.0f);
    for (int p = 0; p < 3; ++p)
      if (batch[2 * p] > batch[2 * p + 1]) std::swap(batch[2 * p], batch[2 * p + 1]);
    put(db, batch);
    be_->observe_min_max(dr.data(), db.data(), 3, step == 0, 0.01f);
    ref.observe_min_max(want.data(), batch.data(), 3, step == 0, 0.01f);
    EXPECT_EQ(get(dr, 2), want) << "step " << step;
    be_->fake_quant_observed(dout.data(), mask.data() + 3, dx.data(), n, dr.data(), 0, 255);
    std::vector<float> wo(n);
    std::vector<uint8_t> wm(n);
    ref.fake_quant_observed(wo.data(), wm.data(), x.data(), n, want.data(), 0, 255);
    EXPECT_EQ(get(dout, n), wo) << "step " << step;
    const auto gm = get(mask, n + 3);
    EXPECT_TRUE(test::all_equal(wm, std::vector<uint8_t>(gm.begin() + 3, gm.end())));
  }
  put(db, std::vector<float>{0.0f, std::numeric_limits<float>::infinity()});
  be_->observe_min_max(dr.data(), db.data(), 1, false, 0.01f);
  EXPECT_EQ(sync_error(),
            "activation observer: batch range [0, inf] is not finite (NaN or Inf in the "
            "activations?)");
}

// The int8 GEMM and Linear: integer sums and the float epilogue are the reference's bits, with
// padded strides, A starting at an odd byte, C's padding untouched.
TEST_F(Vulkan, Int8GemmAndLinearAreBitExact) {
  ReferenceBackend ref;
  struct Shape {
    int M, N, K;
  };
  for (Shape s : {Shape{1, 1, 1}, Shape{3, 17, 31}, Shape{33, 5, 129}, Shape{17, 16, 0},
                  Shape{65, 66, 300}}) {
    SCOPED_TRACE(::testing::Message() << s.M << "x" << s.N << "x" << s.K);
    const int lda = s.K + 3, ldb = s.K + 5, ldc = s.N + 2;
    const auto A = test::random_u8(size_t(s.M) * lda + 1, uint32_t(s.M + s.K));
    const auto B = test::random_s8(size_t(s.N) * ldb, uint32_t(s.N + s.K), -128, 127);
    DeviceArray<uint8_t> da;
    DeviceArray<int8_t> db, dw;
    DeviceArray<int32_t> dc;
    put(da, A), put(db, B);
    const std::vector<int32_t> c0(size_t(s.M) * ldc, -7);
    put(dc, c0);
    be_->gemm_u8s8_s32(s.M, s.N, s.K, da.data() + 1, lda, db.data(), ldb, dc.data(), ldc);
    std::vector<int32_t> want = c0;
    ref.gemm_u8s8_s32(s.M, s.N, s.K, A.data() + 1, lda, B.data(), ldb, want.data(), ldc);
    EXPECT_TRUE(test::all_equal(want, get(dc, want.size()))) << "gemm_u8s8_s32";
    // The Linear: W [N, K] dense, its scales and sums, with and without bias.
    const auto W = test::random_s8(size_t(s.N) * s.K, uint32_t(s.N * 3 + s.K));
    const auto ws = test::uniform(s.N, uint32_t(s.N), 1e-3f, 2e-2f), bias = randn(s.N, 7);
    std::vector<int32_t> wsum(s.N, 0);
    for (int n = 0; n < s.N; ++n)
      for (int k = 0; k < s.K; ++k) wsum[n] += W[size_t(n) * s.K + k];
    DeviceArray<float> dws, dbias, dout;
    DeviceArray<int32_t> dsum;
    put(dw, W), put(dws, ws), put(dbias, bias), put(dsum, wsum);
    for (bool with_bias : {true, false}) {
      const std::vector<float> o0(size_t(s.M) * ldc, 3.5f);
      put(dout, o0);
      be_->linear_u8s8(dout.data(), ldc, da.data() + 1, lda, 0.021f, 131, dw.data(), dws.data(),
                       dsum.data(), with_bias ? dbias.data() : nullptr, s.M, s.N, s.K);
      std::vector<float> wo = o0;
      ref.linear_u8s8(wo.data(), ldc, A.data() + 1, lda, 0.021f, 131, W.data(), ws.data(),
                      wsum.data(), with_bias ? bias.data() : nullptr, s.M, s.N, s.K);
      EXPECT_EQ(get(dout, wo.size()), wo) << "linear_u8s8 bias " << with_bias;
    }
  }
}

TEST_F(Vulkan, Int8EmbeddingIsExactAndAnIdOutsideTheTableIsAnError) {
  ReferenceBackend ref;
  for (int C : {1, 5, 129}) {
    const int V = 9;
    const auto q = test::random_s8(size_t(V) * C, uint32_t(800 + C));
    const auto scale = test::uniform(V, uint32_t(801 + C), 1e-3f, 0.1f);
    const std::vector<int32_t> ids = {8, 0, 3, 3, 7};
    const auto out0 = randn(ids.size() * C, uint32_t(802 + C));
    DeviceArray<int8_t> dq;
    DeviceArray<float> ds, dout;
    DeviceArray<int32_t> di;
    put(dq, q), put(ds, scale), put(dout, out0), put(di, ids);
    be_->embedding_forward_s8(dout.data(), di.data(), dq.data(), ds.data(), int(ids.size()), C, V);
    std::vector<float> want = out0;
    ref.embedding_forward_s8(want.data(), ids.data(), q.data(), scale.data(), int(ids.size()), C,
                             V);
    EXPECT_EQ(get(dout, want.size()), want) << C;
    put(di, std::vector<int32_t>{0, 9, 1, 0, 0});
    be_->embedding_forward_s8(dout.data(), di.data(), dq.data(), ds.data(), 5, C, V);
    EXPECT_EQ(sync_error(), "embedding_forward_s8: position 1: id 9 is outside the table [0, 9)");
  }
}

TEST_F(Vulkan, AnArgumentOutsideItsMemoryIsAnErrorNamingOpAndArgument) {
  DeviceArray<float> x(*be_, 8);
  std::vector<float> host(8);
  try {
    be_->add(x.data(), x.data(), host.data(), 8);
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("add: argument 'b'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(be_->scale(x.data() + 1, 2.0f, 8), Error);  // one past the block
}

// Transfers are copies, not shader bindings: a block larger than the device binds at once
// (lavapipe and phones: 128 MiB; BERT-base's weights are one 440 MB block) uploads, copies and
// downloads whole, while an op binding all of it is refused by name.
TEST_F(Vulkan, TransfersAreNotLimitedToTheBindingRange) {
  const uint64_t range = be_->device_info().max_storage_buffer_range;
  if (range > (uint64_t(256) << 20))
    GTEST_SKIP() << "binds " << range << " bytes at once: a larger block would not fit the test";
  const size_t n = size_t(range / 4) + 1000;  // just past the limit, element count odd-even mixed
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = float(i % 8191) - 4095.5f;
  DeviceArray<float> a, b(*be_, n);
  put(a, host);
  be_->copy(b.data(), a.data(), n * 4);
  std::vector<float> back(n);
  be_->download(back.data(), b.data(), n * 4);
  be_->sync();
  EXPECT_EQ(back, host);
  // An interior piece of it at an odd offset too.
  be_->download(back.data(), b.data() + 12345, 777 * 4);
  be_->sync();
  EXPECT_TRUE(std::equal(back.begin(), back.begin() + 777, host.begin() + 12345));
  try {
    be_->tanh_forward(b.data(), a.data(), n);
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tanh_forward: argument 'out' spans"), std::string::npos)
        << e.what();
  }
}

// The ops of training over whole arrays (AdamW over every parameter; zeroing, clipping and
// summing the gradients) run a piece at a time past the binding limit. Elementwise ops give each
// element the bits the device gives it in a small array (a sample, every 97th element, on both
// sides of every piece boundary); Σx² and min/max are exact on values whose sums are exact in
// float (squares of 0 and ±1 summing to < 2^24), wherever the pieces fall.
TEST_F(Vulkan, WholeArrayOpsRunPastTheBindingRange) {
  const uint64_t range = be_->device_info().max_storage_buffer_range;
  if (range > (uint64_t(256) << 20))
    GTEST_SKIP() << "binds " << range << " bytes at once: a larger array would not fit the test";
  const size_t n = size_t(range / 4) + 4099;  // two pieces, the second one short
  const auto g = randn(n, 11), p = randn(n, 12);
  const std::vector<float> m(n, 0.01f), v(n, 0.02f);
  AdamWHyper h;
  h.weight_decay = 0.01f;
  auto adamw_twice = [&](const std::vector<float>& p0, const std::vector<float>& g0) {
    DeviceArray<float> dp, dm, dv, dg;
    put(dp, p0), put(dm, std::vector<float>(p0.size(), 0.01f));
    put(dv, std::vector<float>(p0.size(), 0.02f)), put(dg, g0);
    for (int64_t t = 1; t <= 2; ++t)
      be_->adamw_step(dp.data(), dm.data(), dv.data(), dg.data(), p0.size(), h, t);
    be_->add(dm.data(), dp.data(), dg.data(), p0.size());  // m := (p + g) / 2
    be_->scale(dm.data(), 0.5f, p0.size());
    return std::make_pair(get(dp, p0.size()), get(dm, p0.size()));
  };
  const auto [big_p, big_m] = adamw_twice(p, g);
  std::vector<float> ps, gs;
  for (size_t i = 0; i < n; i += 97) ps.push_back(p[i]), gs.push_back(g[i]);
  const auto [small_p, small_m] = adamw_twice(ps, gs);
  for (size_t i = 0, j = 0; i < n; i += 97, ++j) {
    ASSERT_EQ(big_p[i], small_p[j]) << i;
    ASSERT_EQ(big_m[i], small_m[j]) << i;
  }

  std::vector<float> x(n, 0.0f);
  size_t ones = 0;
  for (size_t i = 0; i < n; i += 4, ++ones) x[i] = (i / 4) % 3 ? 1.0f : -1.0f;
  ASSERT_TRUE(x[n - 1] == 0.0f && x[n / 2 + 1] == 0.0f);
  x[n - 1] = -2.0f, x[n / 2 + 1] = 3.0f;  // the extremes, in the last and the first piece
  DeviceArray<float> dv;
  put(dv, x);
  DeviceArray<double> sum(*be_, 1);
  DeviceArray<float> lo(*be_, 1), hi(*be_, 1);
  be_->sum_squares(sum.data(), dv.data(), n);
  be_->min_max(lo.data(), hi.data(), dv.data(), n);
  EXPECT_EQ(get(sum, 1)[0], double(ones) + 4.0 + 9.0);
  EXPECT_EQ(get(lo, 1)[0], -2.0f);
  EXPECT_EQ(get(hi, 1)[0], 3.0f);
  be_->fill(dv.data(), 0.0f, n);
  be_->sum_squares(sum.data(), dv.data(), n);
  EXPECT_EQ(get(sum, 1)[0], 0.0);
}

// A table indexed by ids is bound from its first row up to the device's limit: rows inside it are
// looked up and scattered into as usual; a row past it (a table larger than the device binds at
// once) is an error at sync() naming the position, the row and the limit, never a stray access.
TEST_F(Vulkan, TableRowsPastTheBindingRangeAreAnError) {
  const uint64_t range = be_->device_info().max_storage_buffer_range;
  if (range > (uint64_t(256) << 20))
    GTEST_SKIP() << "binds " << range << " bytes at once: a larger table would not fit the test";
  const int C = 64, V = int(range / (4 * C)) + 7;  // 7 rows past what one binding reaches
  std::vector<float> table(size_t(V) * C);
  for (size_t i = 0; i < table.size(); ++i) table[i] = float(i % 1021) * 0.25f;
  DeviceArray<float> dt, dout, dgrad;
  DeviceArray<int32_t> dids;
  put(dt, table);
  const int reach = int(range / (4 * C));
  const std::vector<int32_t> ok{0, reach - 1, 5};
  put(dids, ok);
  put(dout, std::vector<float>(ok.size() * C, 0.0f));
  be_->embedding_forward(dout.data(), dids.data(), dt.data(), int(ok.size()), C);
  const auto got = get(dout, ok.size() * C);
  for (size_t i = 0; i < ok.size(); ++i)
    for (int c = 0; c < C; ++c)
      ASSERT_EQ(got[i * C + c], table[size_t(ok[i]) * C + c]) << i << " " << c;
  put(dids, std::vector<int32_t>{1, reach + 2});
  be_->embedding_forward(dout.data(), dids.data(), dt.data(), 2, C);
  const std::string e = sync_error();
  EXPECT_NE(e.find("position 1: table row " + std::to_string(reach + 2) + " lies past the " +
                   std::to_string(reach) + " rows"),
            std::string::npos)
      << e;
  put(dgrad, std::vector<float>(2 * C, 1.0f));
  be_->embedding_backward(dt.data(), dids.data(), dgrad.data(), 2, C);
  EXPECT_NE(sync_error().find("lies past the"), std::string::npos);
  // Row 1 got its gradient; the rows past the window are untouched.
  const auto after = get(dt, table.size());
  EXPECT_EQ(after[C], table[C] + 1.0f);
  EXPECT_TRUE(std::equal(after.end() - 10 * C, after.end(), table.end() - 10 * C));
}

// The whole model, part on the device, the rest on the cpu fallback. Other summation orders only
// (fp32 sums of ≤ 97 terms, ~1e-6 relative): fp32 losses, outputs and parameters within 1e-5
// relative of the cpu run. QAT/int8: a value can cross a rounding tie, which moves it by one
// quantization step, 1/127 of its tensor's range (< 1e-2).
class VulkanModel : public Vulkan,
                    public ::testing::WithParamInterface<std::tuple<std::string, test::Mode> > {};

TEST_P(VulkanModel, MatchesTheCpuBackend) {
  const auto [kind, mode] = GetParam();
  CpuBackend cpu(1);
  const test::Outcome want = test::run_model(cpu, kind, mode);
  const test::Outcome got = test::run_model(*be_, kind, mode);
  const double tol = mode == test::Mode::kFloat ? 1e-5 : 1e-2;
  test::expect_close(want, got, tol, tol);
  EXPECT_EQ(want.counts, got.counts);
  // Every op of the model ran on the device: none fell back to the cpu.
  EXPECT_TRUE(be_->fallbacks().empty()) << *be_->fallbacks().begin();
  // Deterministic: a second run gives the same bits (no atomics, fixed reduction trees).
  test::expect_same(got, test::run_model(*be_, kind, mode));
}

INSTANTIATE_TEST_SUITE_P(
    Heads, VulkanModel,
    ::testing::Combine(::testing::Values("pretraining", "sequence", "regression", "token", "span"),
                       ::testing::Values(test::Mode::kFloat, test::Mode::kQat, test::Mode::kInt8)),
    [](const auto& info) {
      const test::Mode m = std::get<1>(info.param);
      return std::get<0>(info.param) + "_" +
             (m == test::Mode::kFloat ? "fp32"
              : m == test::Mode::kQat ? "qat"
                                      : "int8");
    });

// Out of memory is an error naming the size and the device, and the backend goes on.
TEST_F(Vulkan, OutOfDeviceMemoryIsAnError) {
  try {
    be_->alloc(size_t(1) << 50);
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory allocating 1125899906842624 bytes"),
              std::string::npos)
        << e.what();
  }
  DeviceArray<float> x(*be_, 3);
  be_->fill(x.data(), 1.5f, 3);
  EXPECT_EQ(get(x, 3), std::vector<float>(3, 1.5f));
}

// BERTRT_VULKAN_MEMORY picks the memory path (ctest runs this suite once per path on lavapipe);
// device memory is not host-visible and its addresses are not readable by the host.
TEST_F(Vulkan, MemoryPathFollowsTheDeviceOrTheOverride) {
  const char* mode = std::getenv("BERTRT_VULKAN_MEMORY");
  const bool mapped =
      mode && *mode ? std::string(mode) == "mapped" : be_->device_info().unified_memory;
  EXPECT_EQ(be_->host_visible(), mapped);
}

// The pipeline cache goes to disk when pipelines were made, is read back by the next backend of
// the same device, and a damaged file is ignored (and replaced), never an error.
TEST_F(Vulkan, PipelineCacheIsSavedReloadedAndSurvivesDamage) {
  const test::TempDir dir;  // per test: ctest runs this suite on both memory paths at once
  const std::string path = dir.file("cache.bin");
  const char* old = std::getenv("BERTRT_VULKAN_PIPELINE_CACHE");
  const std::string saved = old ? old : "";
  setenv("BERTRT_VULKAN_PIPELINE_CACHE", path.c_str(), 1);
  auto run_once = [&] {
    VulkanBackend be;
    DeviceArray<float> x(be, 5);
    be.fill(x.data(), 2.0f, 5);
    be.scale(x.data(), 3.0f, 5);
    EXPECT_EQ(read_back(be, x.data(), 5), std::vector<float>(5, 6.0f));
    return be.pipeline_cache_loaded_bytes();
  };
  EXPECT_EQ(run_once(), 0u);  // nothing to load; saved at exit
  const auto bytes = test::read_bytes(path);
  ASSERT_GE(bytes.size(), 32u);
  EXPECT_EQ(run_once(), bytes.size());
  test::write_bytes(path, std::string(bytes.size(), char(0x5a)));  // damaged
  EXPECT_EQ(run_once(), 0u);
  EXPECT_GE(test::read_bytes(path).size(), 32u);
  if (old)
    setenv("BERTRT_VULKAN_PIPELINE_CACHE", saved.c_str(), 1);
  else
    unsetenv("BERTRT_VULKAN_PIPELINE_CACHE");
}

TEST_F(Vulkan, DeviceIsListedWithItsLimits) {
  const auto lines = vulkan_device_lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find(be_->device_info().name), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("subgroup"), std::string::npos);
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// The host's wait for a submission (vk_host_wait.h), without a device: a driver whose wait spins
// (here a busy loop of 3 ms) is caught after kSpinningWaits such waits, and the waits after that
// poll the fence between sleeps, using little CPU time while the "device" works for 30 ms.
TEST(VulkanHostWait, ADriverThatSpinsIsReplacedByPollingWithSleeps) {
  vk::HostWait w;
  constexpr int kDone = 0, kNotReady = 1, kTimeout = 2;
  const auto busy_ms = [](int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
    }
  };
  int blocking_calls = 0;
  for (int i = 0; i < vk::HostWait::kSpinningWaits; ++i) {
    EXPECT_FALSE(w.polling());
    EXPECT_EQ(w.wait([&](uint64_t) { ++blocking_calls, busy_ms(3); return kDone; },
                     [] { return kDone; }, 1'000'000'000, kNotReady, kTimeout),
              kDone);
  }
  EXPECT_TRUE(w.polling());
  EXPECT_EQ(blocking_calls, vk::HostWait::kSpinningWaits);
  const auto ready_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
  const double cpu0 = thread_cpu_ms();
  EXPECT_EQ(w.wait([&](uint64_t) { ++blocking_calls; return kDone; },
                   [&] { return std::chrono::steady_clock::now() >= ready_at ? kDone : kNotReady; },
                   1'000'000'000, kNotReady, kTimeout),
            kDone);
  EXPECT_EQ(blocking_calls, vk::HostWait::kSpinningWaits);  // the driver's wait no longer called
  EXPECT_GE(std::chrono::steady_clock::now(), ready_at);
  EXPECT_LT(thread_cpu_ms() - cpu0, 10.0);
  // A fence that never signals: the timeout, not a hang.
  EXPECT_EQ(w.wait([](uint64_t) { return kDone; }, [] { return kNotReady; }, 5'000'000, kNotReady,
                   kTimeout),
            kTimeout);
  // A driver whose wait sleeps is left alone.
  vk::HostWait calm;
  for (int i = 0; i < 5; ++i)
    calm.wait([](uint64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(3)); return 0; },
              [] { return 0; }, 1'000'000'000, kNotReady, kTimeout);
  EXPECT_FALSE(calm.polling());
}

// On the device: the host thread sleeps while a long submission runs (a GEMM of 0.27 GFLOP:
// lavapipe takes a few hundred ms), with the driver's own wait and with the polling wait.
TEST_F(Vulkan, TheHostSleepsWhileTheDeviceWorks) {
  const int n = 512;
  const auto A = randn(size_t(n) * n, 1), B = randn(size_t(n) * n, 2);
  DeviceArray<float> dA, dB, dC;
  put(dA, A), put(dB, B);
  dC.ensure(*be_, size_t(n) * n);
  be_->sync();
  for (bool polling : {false, true}) {
    if (polling) be_->force_polling_host_waits();
    const int64_t waits0 = be_->host_waits();
    const double cpu0 = thread_cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    be_->gemm(false, false, n, n, n, 1.0f, dA.data(), n, dB.data(), n, 0.0f, dC.data(), n);
    be_->sync();
    const double wall =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = thread_cpu_ms() - cpu0;
    std::printf("gemm %d: %.1f ms, host CPU %.1f ms (polling %d)\n", n, wall, cpu, polling);
    EXPECT_GE(be_->host_waits(), waits0 + 1);
    EXPECT_EQ(be_->host_waits_poll(), polling);
    // Recording and submitting cost the host a little; the wait none. Only a long enough
    // submission says anything (a GPU may finish 2 GFLOP in a few ms).
    if (wall >= 20.0) {
      EXPECT_LT(cpu, 0.5 * wall) << "the host used " << cpu << " ms of CPU in " << wall
                                 << " ms (polling " << polling << ")";
    }
  }
}

#endif

}  // namespace
}  // namespace bertrt
