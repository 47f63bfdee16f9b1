// Backend::linear_forward_inference (a Linear with its epilogue: bias, GELU, residual): the cpu
// backend's fused version against the ops it replaces (gemm, bias_add, gelu_forward, add) on the
// same backend, bit for bit, on every fully-connected provider and fp32 kernel this host runs, 1
// and 2 threads, over odd sizes (around the GEMM split and the kernels' tiles) and every subset of
// the epilogue; and against the scalar reference backend within the GEMM's rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference_backend.h"
#include "op_test_util.h"
#include "test_util.h"

namespace bertrt {
namespace {

struct Shape {
  int M, N, K;
};

// Small (run on the caller), split by columns (M < N: BERT at B1) and by rows, odd everywhere;
// the last in three blocks of rows for a training backend that prefers memory (cpu_backend.cpp).
constexpr Shape kShapes[] = {{1, 1, 1},      {3, 13, 7},     {33, 50, 17},  {5, 300, 64},
                             {128, 257, 96}, {200, 130, 45}, {97, 768, 33}, {600, 40, 1100}};

struct Epilogue {
  bool bias, residual;
  std::optional<Gelu> gelu;
};

std::string describe(const Shape& s, const Epilogue& e) {
  return "M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K) +
         (e.bias ? " bias" : "") + (e.residual ? " residual" : "") +
         (e.gelu ? (*e.gelu == Gelu::kErf ? " gelu" : " gelu_tanh") : "");
}

// Every (provider, kernel, threads) backend to test: OpenBLAS always; bertrt's kernel for each
// f32 kernel the CPU runs, the weights declared constant (as inference does) or not (training's
// forward, in blocks of rows).
std::vector<std::pair<std::string, std::unique_ptr<CpuBackend>>> backends() {
  std::vector<std::pair<std::string, std::unique_ptr<CpuBackend>>> out;
  for (int threads : {1, 2}) {
    {
      test::ScopedEnv env("BERTRT_FC_PROVIDER", "openblas");
      auto be = std::make_unique<CpuBackend>(threads);
      be->set_constant_weights(true);
      out.emplace_back("openblas/" + std::to_string(threads), std::move(be));
    }
    for (cpu::F32Kernel k : cpu::kAllF32Kernels) {
      if (!cpu::f32_kernel_available(k)) continue;
      for (bool constant : {true, false}) {
        test::ScopedEnv env("BERTRT_FC_PROVIDER", "bertrt");
        auto be = std::make_unique<CpuBackend>(threads);
        be->set_constant_weights(constant);
        be->prefer_memory(!constant);  // training's blocks of rows
        be->set_f32_kernel(k);
        out.emplace_back(std::string("bertrt-") + cpu::f32_kernel_name(k) +
                             (constant ? "" : "-training") + "/" + std::to_string(threads),
                         std::move(be));
      }
    }
  }
  return out;
}

TEST(LinearInference, FusedEqualsTheOpsItReplacesOnEveryProviderAndKernel) {
  ReferenceBackend ref;
  int cases = 0;
  auto bes = backends();
  int shape_index = 0;
  for (const Shape& s : kShapes) {
    const size_t MN = size_t(s.M) * s.N;
    const uint32_t seed = 7 + s.M * 3 + s.N * 5 + s.K;
    const auto x = test::randn(size_t(s.M) * s.K, seed), w = test::randn(size_t(s.N) * s.K, seed + 1);
    const auto bias = test::randn(s.N, seed + 2), residual = test::randn(MN, seed + 3);
    std::vector<double> abs_xw(MN, 0.0);  // Σ_k |x·w|, for the tolerance below
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n)
        for (int k = 0; k < s.K; ++k)
          abs_xw[size_t(m) * s.N + n] += std::fabs(double(x[size_t(m) * s.K + k]) * w[size_t(n) * s.K + k]);
    // A sparse run (an emulator, a sanitizer) takes every third epilogue, starting at a different
    // one for each shape: every epilogue still meets every kernel, on some of the shapes.
    const int first = test::sparse() ? shape_index++ % 3 : 0, stride = test::sparse() ? 3 : 1;
    for (int mask = first; mask < 12; mask += stride) {
      const Epilogue e{(mask & 1) != 0, (mask & 2) != 0,
                       mask < 4 ? std::nullopt : std::optional<Gelu>(mask < 8 ? Gelu::kErf : Gelu::kTanh)};
      const float* b = e.bias ? bias.data() : nullptr;
      const float* r = e.residual ? residual.data() : nullptr;
      // The scalar reference: float64-free, but another order of the K-term sums.
      std::vector<float> want(MN, -3.0f), want_pre(MN);
      ref.linear_forward_inference(want.data(), want_pre.data(), x.data(), s.K, w.data(), b, r, s.M,
                                   s.N, s.K, e.gelu);
      // Both sums of K products carry at most (K + 1)·u·(Σ_k |x·w| + |bias|) of rounding error
      // (u = 2⁻²⁴, the bias add included); GELU's slope is below 1.13, and GELU and the residual
      // add round once or a few times more (4 ulps of the result).
      std::vector<double> tol(MN);
      for (int m = 0; m < s.M; ++m)
        for (int n = 0; n < s.N; ++n) {
          const size_t i = size_t(m) * s.N + n;
          const double abs_sum = abs_xw[i] + (b ? std::fabs(b[n]) : 0.0);
          tol[i] = 2 * 1.13 * (s.K + 1) * 0x1p-24 * abs_sum + 4 * 0x1p-24 * std::fabs(want[i]) + 1e-30;
        }
      for (auto& [name, be] : bes) {
        std::vector<float> fused(MN, -1.0f), unfused(MN, -2.0f), pre(MN, -4.0f);
        be->linear_forward_inference(fused.data(), pre.data(), x.data(), s.K, w.data(), b, r, s.M,
                                     s.N, s.K, e.gelu);
        be->Backend::linear_forward_inference(unfused.data(), pre.data(), x.data(), s.K, w.data(),
                                              b, r, s.M, s.N, s.K, e.gelu);
        ASSERT_EQ(0, std::memcmp(fused.data(), unfused.data(), MN * sizeof(float)))
            << name << " " << describe(s, e);
        EXPECT_TRUE(test::all_close(want, fused, tol)) << name << " " << describe(s, e);
        ++cases;
      }
    }
  }
  RecordProperty("cases", cases);
}

}  // namespace
}  // namespace bertrt
