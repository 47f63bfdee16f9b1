// bertrt's own fp32 Linear kernels (backends/cpu/f32_gemm.h): the scalar reference against a
// float64 sum within the fp32 error bound; every SIMD kernel this CPU can run bit for bit equal to
// the scalar reference, swept over odd sizes (M, N, K around the 32×12 / 16×6 tiles and the
// 256-deep blocks of k), strides, bias, column splits, panel subsets and W packed once, and the
// inference broadcast form (X read in place) around its 12×32 / 6×16 tiles; the cpu
// backend's provider `bertrt` (counted, thread-count independent); training's GEMMs on it for every
// transpose case (the transposed packings, alpha and beta, blocks of rows and columns); the
// kernel choice by BERTRT_F32_KERNEL; and a BERT forward on it against the PyTorch reference.
#include "backends/cpu/f32_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "model/bert_model.h"
#include "op_test_util.h"
#include "reference_model.h"
#include "test_util.h"

namespace bertrt {
namespace {

using cpu::F32Kernel;

struct Shape {
  int M, N, K;
};

// Around every edge the kernels have: panel rows (16, 32), tile columns (6, 12), the 256-deep
// blocks of k (one block, a partial second, several), W read in place and packed per block (from
// 8 panels on: M > 112 for fma3, M > 224 for avx512f), and 1.
const Shape kShapes[] = {
    {1, 1, 1},       {1, 13, 5},    {2, 7, 3},      {15, 6, 16},    {16, 12, 255}, {17, 25, 256},
    {31, 11, 257},   {32, 24, 300}, {33, 37, 513},  {47, 5, 769},   {64, 61, 96},  {65, 130, 1},
    {100, 17, 1100}, {129, 36, 31}, {3, 1031, 260}, {257, 30, 300}, {300, 13, 40}};

// Y with row stride ldy, NaN everywhere first: what a kernel leaves unwritten stays NaN.
std::vector<float> nan_y(int M, int ldy) {
  return std::vector<float>(size_t(M) * ldy, std::numeric_limits<float>::quiet_NaN());
}

// Runs kernel k on columns [n0, n1) (X packed for it when it packs).
void run_kernel(F32Kernel k, const Shape& s, const std::vector<float>& X, int ldx,
                const std::vector<float>& W, int ldw, const float* bias, std::vector<float>& Y,
                int ldy, int n0, int n1) {
  std::vector<float> P(cpu::f32_packed_x_floats(k, s.M, s.K) + 16);
  float* p =
      reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(P.data()) + 63) & ~uintptr_t(63));
  const int pr = cpu::f32_kernel_panel_rows(k);
  const int panels = (s.M + pr - 1) / pr;
  // Packed in two halves: panels are independent (f32_pack_x's contract).
  cpu::f32_pack_x(k, p, X.data(), ldx, s.M, s.K, 0, panels / 2);
  cpu::f32_pack_x(k, p, X.data(), ldx, s.M, s.K, panels / 2, panels);
  std::vector<float> S(cpu::f32_scratch_floats(k, s.M, n0, n1, s.K) + 16);
  float* sp =
      reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(S.data()) + 63) & ~uintptr_t(63));
  cpu::f32_gemm_xwt(k, s.M, n0, n1, s.K, X.data(), ldx, p, W.data(), ldw, bias, Y.data(), ldy, sp);
}

TEST(F32Gemm, ScalarReferenceIsWithinTheFp32BoundOfAFloat64Sum) {
  for (const Shape s : kShapes)
    for (bool with_bias : {false, true}) {
      const auto X = test::randn(size_t(s.M) * s.K, 1 + s.M);
      const auto W = test::randn(size_t(s.N) * s.K, 2 + s.N, 0.1f);
      const auto b = test::randn(size_t(s.N), 3);
      std::vector<float> Y = nan_y(s.M, s.N);
      run_kernel(F32Kernel::kScalar, s, X, s.K, W, s.K, with_bias ? b.data() : nullptr, Y, s.N, 0,
                 s.N);
      // One fma chain over K terms, then + bias: γ_(K+1) · Σ|terms| (Higham §3.1), u = 2⁻²⁴.
      const double u = std::ldexp(1.0, -24), gamma = (s.K + 1) * u / (1 - (s.K + 1) * u);
      for (int m = 0; m < s.M; ++m)
        for (int n = 0; n < s.N; ++n) {
          double want = with_bias ? b[n] : 0.0, mag = std::fabs(want);
          for (int k = 0; k < s.K; ++k) {
            const double p = double(X[size_t(m) * s.K + k]) * W[size_t(n) * s.K + k];
            want += p, mag += std::fabs(p);
          }
          ASSERT_LE(std::fabs(Y[size_t(m) * s.N + n] - want), gamma * mag)
              << "M=" << s.M << " N=" << s.N << " K=" << s.K << " at (" << m << ", " << n << ")";
        }
    }
}

TEST(F32Gemm, EverySimdKernelEqualsTheScalarReferenceBitForBit) {
  std::string tested, skipped;
  for (const F32Kernel k : cpu::kAllF32Kernels) {
    if (k == F32Kernel::kScalar) continue;
    if (!cpu::f32_kernel_available(k)) {
      skipped += std::string(skipped.empty() ? "" : ", ") + cpu::f32_kernel_name(k);
      continue;
    }
    tested += std::string(tested.empty() ? "" : ", ") + cpu::f32_kernel_name(k);
    const int tn = cpu::f32_kernel_tile_n(k);
    for (const Shape s : kShapes)
      for (int pad : {0, 5})  // row strides longer than the rows: X, W and Y
        for (bool with_bias : {false, true}) {
          const int ldx = s.K + pad, ldw = s.K + pad, ldy = s.N + pad;
          const uint32_t seed = 11 + s.M * 7 + s.N * 3 + s.K + pad;
          const auto X = test::randn(size_t(s.M) * ldx, seed);
          const auto W = test::randn(size_t(s.N) * ldw, seed + 1, 0.1f);
          const auto b = test::randn(size_t(s.N), seed + 2);
          const float* bias = with_bias ? b.data() : nullptr;
          std::vector<float> want = nan_y(s.M, ldy), got = nan_y(s.M, ldy);
          run_kernel(F32Kernel::kScalar, s, X, ldx, W, ldw, bias, want, ldy, 0, s.N);
          // All columns at once, and in two parts split at a tile boundary (a thread's share).
          run_kernel(k, s, X, ldx, W, ldw, bias, got, ldy, 0, s.N);
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
              << cpu::f32_kernel_name(k) << " M=" << s.M << " N=" << s.N << " K=" << s.K
              << " pad=" << pad << " bias=" << with_bias;
          const int split = std::min(s.N, (s.N / 2 + tn - 1) / tn * tn);
          std::vector<float> parts = nan_y(s.M, ldy);
          run_kernel(k, s, X, ldx, W, ldw, bias, parts, ldy, 0, split);
          run_kernel(k, s, X, ldx, W, ldw, bias, parts, ldy, split, s.N);
          ASSERT_EQ(0, std::memcmp(want.data(), parts.data(), want.size() * sizeof(float)))
              << cpu::f32_kernel_name(k) << " split at column " << split << " M=" << s.M
              << " N=" << s.N << " K=" << s.K;
          // W packed once (f32_pack_w, read where ldw is 0), all columns and the two parts.
          std::vector<float> Wc(size_t(s.N) * s.K);
          for (int n = 0; n < s.N; ++n)
            std::memcpy(&Wc[size_t(n) * s.K], &W[size_t(n) * ldw], s.K * sizeof(float));
          std::vector<float> Wp(cpu::f32_packed_w_floats(k, s.N, s.K),
                                std::numeric_limits<float>::quiet_NaN());
          ASSERT_EQ(Wp.size(), size_t((s.N + tn - 1) / tn) * tn * s.K);
          cpu::f32_pack_w(k, Wp.data(), Wc.data(), s.N, s.K);
          std::vector<float> whole = nan_y(s.M, ldy), packed = nan_y(s.M, ldy);
          run_kernel(k, s, X, ldx, Wp, 0, bias, whole, ldy, 0, s.N);
          run_kernel(k, s, X, ldx, Wp, 0, bias, packed, ldy, 0, split);
          run_kernel(k, s, X, ldx, Wp, 0, bias, packed, ldy, split, s.N);
          ASSERT_EQ(0, std::memcmp(want.data(), whole.data(), want.size() * sizeof(float)))
              << cpu::f32_kernel_name(k) << " W packed once, M=" << s.M << " N=" << s.N
              << " K=" << s.K;
          ASSERT_EQ(0, std::memcmp(want.data(), packed.data(), want.size() * sizeof(float)))
              << cpu::f32_kernel_name(k) << " W packed once, split at " << split;
        }
  }
  std::cout << "[ f32 kernels ] tested: " << (tested.empty() ? "none" : tested)
            << "; this CPU cannot run: " << (skipped.empty() ? "none" : skipped)
            << "; chosen: " << cpu::f32_kernel_name(cpu::f32_best_kernel()) << "\n";
  if (tested.empty()) GTEST_SKIP() << "no SIMD fp32 kernel runs on this CPU";
}

// The broadcast form (static-weight inference): the shapes above and more around its 12 × 32 /
// 6 × 16 tiles (every remainder of rows), X and Y with longer strides, W packed in two halves,
// all columns and two parts split at a tile boundary, bit for bit against the scalar reference;
// nothing written past N columns (a pad wider than a tile) or M rows (a guard row of NaN).
TEST(F32Gemm, EverySimdKernelsBroadcastFormEqualsTheScalarReferenceBitForBit) {
  std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.insert(shapes.end(), {{5, 16, 7},
                               {6, 17, 256},
                               {7, 31, 512},
                               {11, 32, 257},
                               {10, 40, 33},
                               {12, 33, 100},
                               {22, 70, 300},
                               {13, 64, 769},
                               {25, 65, 255},
                               {128, 96, 64},
                               {2, 1100, 30}});
  int tested = 0;
  for (const F32Kernel k : cpu::kAllF32Kernels) {
    if (k == F32Kernel::kScalar || !cpu::f32_kernel_available(k)) continue;
    ++tested;
    const int tn = cpu::f32_bcast_tile_n(k);
    for (const Shape s : shapes)
      for (int pad : {0, 37})
        for (bool with_bias : {false, true}) {
          const int ldx = s.K + pad, ldy = s.N + pad;
          const uint32_t seed = 91 + s.M * 5 + s.N * 7 + s.K + pad;
          const auto X = test::randn(size_t(s.M) * ldx, seed);
          const auto W = test::randn(size_t(s.N) * s.K, seed + 1, 0.1f);
          const auto b = test::randn(size_t(s.N), seed + 2);
          const float* bias = with_bias ? b.data() : nullptr;
          std::vector<float> want = nan_y(s.M + 1, ldy);  // the last row: a guard
          run_kernel(F32Kernel::kScalar, s, X, ldx, W, s.K, bias, want, ldy, 0, s.N);
          const int tiles = (s.N + tn - 1) / tn;
          std::vector<float> Wp(cpu::f32_packed_wb_floats(k, s.N, s.K),
                                std::numeric_limits<float>::quiet_NaN());
          ASSERT_EQ(Wp.size(), size_t(tiles) * tn * s.K);
          cpu::f32_pack_wb(k, Wp.data(), W.data(), s.N, s.K, 0, tiles / 2);
          cpu::f32_pack_wb(k, Wp.data(), W.data(), s.N, s.K, tiles / 2, tiles);
          std::vector<float> whole = nan_y(s.M + 1, ldy), parts = nan_y(s.M + 1, ldy);
          cpu::f32_gemm_xwt_bcast(k, s.M, 0, s.N, s.K, X.data(), ldx, Wp.data(), bias,
                                  whole.data(), ldy);
          const int split = std::min(s.N, tiles / 2 * tn);
          cpu::f32_gemm_xwt_bcast(k, s.M, 0, split, s.K, X.data(), ldx, Wp.data(), bias,
                                  parts.data(), ldy);
          cpu::f32_gemm_xwt_bcast(k, s.M, split, s.N, s.K, X.data(), ldx, Wp.data(), bias,
                                  parts.data(), ldy);
          ASSERT_EQ(0, std::memcmp(want.data(), whole.data(), want.size() * sizeof(float)))
              << cpu::f32_kernel_name(k) << " M=" << s.M << " N=" << s.N << " K=" << s.K
              << " pad=" << pad << " bias=" << with_bias;
          ASSERT_EQ(0, std::memcmp(want.data(), parts.data(), want.size() * sizeof(float)))
              << cpu::f32_kernel_name(k) << " split at column " << split << " M=" << s.M
              << " N=" << s.N << " K=" << s.K;
        }
  }
  if (tested == 0) GTEST_SKIP() << "no SIMD fp32 kernel runs on this CPU";
}

// gemm as linear_forward calls it: Y[M, N] = X[M, K] · W[N, K]ᵀ.
std::vector<float> linear_gemm(CpuBackend& be, const std::vector<float>& X,
                               const std::vector<float>& W, int M, int N, int K) {
  std::vector<float> Y(size_t(M) * N);
  be.gemm(false, true, M, N, K, 1.0f, X.data(), K, W.data(), K, 0.0f, Y.data(), N);
  return Y;
}

// Big enough for the backend to split over its threads, both ways, and small: rows where each
// thread gets 256 of them (520) or, W at most 1 MB, 32 (128, 131: its last share cut, 200);
// columns below that (20 rows) or with a larger W (70 × 520 × 520: 1.03 MiB).
const Shape kBackendShapes[] = {{1, 7, 5},      {8, 2, 768},   {33, 100, 64},
                                {128, 96, 257}, {131, 64, 96}, {200, 40, 40},
                                {20, 300, 300}, {520, 24, 40}, {70, 520, 520}};

TEST(F32Gemm, CpuBackendProviderBertrtIsCountedAndThreadCountIndependent) {
  for (const F32Kernel k : cpu::kAllF32Kernels) {
    if (!cpu::f32_kernel_available(k)) continue;
    CpuBackend one(1), two(2);
    for (CpuBackend* be : {&one, &two}) {
      be->set_f32_kernel(k);
      be->set_fc_provider(cpu::FcProvider::kBertrt);
      be->set_constant_weights(true);
    }
    for (const Shape s : kBackendShapes) {
      const auto X = test::randn(size_t(s.M) * s.K, 20 + s.M);
      const auto W = test::randn(size_t(s.N) * s.K, 21 + s.N, 0.1f);
      std::vector<float> want(size_t(s.M) * s.N);
      cpu::f32_gemm_xwt(F32Kernel::kScalar, s.M, 0, s.N, s.K, X.data(), s.K, nullptr, W.data(), s.K,
                        nullptr, want.data(), s.N, nullptr);
      const auto y1 = linear_gemm(one, X, W, s.M, s.N, s.K);
      const auto y2 = linear_gemm(two, X, W, s.M, s.N, s.K);
      EXPECT_EQ(0, std::memcmp(want.data(), y1.data(), want.size() * sizeof(float)))
          << cpu::f32_kernel_name(k) << " 1 thread M=" << s.M << " N=" << s.N << " K=" << s.K;
      EXPECT_EQ(0, std::memcmp(want.data(), y2.data(), want.size() * sizeof(float)))
          << cpu::f32_kernel_name(k) << " 2 threads M=" << s.M << " N=" << s.N << " K=" << s.K;
    }
    const size_t n = std::size(kBackendShapes);
    EXPECT_EQ(two.fc_stats().bertrt_calls, n);
    EXPECT_EQ(two.fc_stats().openblas_calls + two.fc_stats().xnnpack_calls, 0u);
    EXPECT_NE(two.fc_summary().find("bertrt " + std::to_string(n)), std::string::npos)
        << two.fc_summary();
    EXPECT_NE(two.fc_summary().find(std::string("fp32 kernel ") + cpu::f32_kernel_name(k)),
              std::string::npos)
        << two.fc_summary();
  }
}

// The packings of transposed operands (training's dX = dY·W and dW = dYᵀ·X) put the same floats
// in the same places as f32_pack_x / f32_pack_w of the explicit transpose, for odd sizes and
// strides and in pieces (panels and tiles are independent).
TEST(F32Gemm, TransposedPackingsEqualThePackingOfTheTranspose) {
  for (const F32Kernel k : cpu::kAllF32Kernels) {
    if (k == F32Kernel::kScalar || !cpu::f32_kernel_available(k)) continue;
    const int pr = cpu::f32_kernel_panel_rows(k), tn = cpu::f32_kernel_tile_n(k);
    for (const Shape s : kShapes) {
      const int lda = s.M + 3, ldb = s.N + 5;  // A [K, M] and B [K, N], rows longer than needed
      const auto A = test::randn(size_t(s.K) * lda, 40 + s.M),
                 B = test::randn(size_t(s.K) * ldb, 41 + s.N);
      std::vector<float> X(size_t(s.M) * s.K), W(size_t(s.N) * s.K);  // the explicit transposes
      for (int kk = 0; kk < s.K; ++kk) {
        for (int m = 0; m < s.M; ++m) X[size_t(m) * s.K + kk] = A[size_t(kk) * lda + m];
        for (int n = 0; n < s.N; ++n) W[size_t(n) * s.K + kk] = B[size_t(kk) * ldb + n];
      }
      const int panels = (s.M + pr - 1) / pr, tiles = (s.N + tn - 1) / tn;
      std::vector<float> want_p(cpu::f32_packed_x_floats(k, s.M, s.K), -1.0f), got_p = want_p;
      cpu::f32_pack_x(k, want_p.data(), X.data(), s.K, s.M, s.K, 0, panels);
      cpu::f32_pack_x_t(k, got_p.data(), A.data(), lda, s.M, s.K, 0, panels / 2);
      cpu::f32_pack_x_t(k, got_p.data(), A.data(), lda, s.M, s.K, panels / 2, panels);
      EXPECT_EQ(0, std::memcmp(want_p.data(), got_p.data(), want_p.size() * sizeof(float)))
          << cpu::f32_kernel_name(k) << " X M=" << s.M << " K=" << s.K;
      std::vector<float> want_w(cpu::f32_packed_w_floats(k, s.N, s.K), -1.0f), got_w = want_w;
      cpu::f32_pack_w(k, want_w.data(), W.data(), s.N, s.K);
      cpu::f32_pack_w_t(k, got_w.data(), B.data(), ldb, s.N, s.K, 0, tiles / 2);
      cpu::f32_pack_w_t(k, got_w.data(), B.data(), ldb, s.N, s.K, tiles / 2, tiles);
      EXPECT_EQ(0, std::memcmp(want_w.data(), got_w.data(), want_w.size() * sizeof(float)))
          << cpu::f32_kernel_name(k) << " W N=" << s.N << " K=" << s.K;
    }
  }
}

// Training's GEMMs (weights not declared constant) run on the kernel for every transpose case:
// each output of op(A)·op(B) is the scalar reference's one fma chain, bit for bit, on 1 and 2
// threads; alpha and beta are applied after, as alpha·T + beta·C (one or two roundings: compared
// within the bound of those, 2 ulps of the largest term). Nothing is cached and the Linear
// provider counts nothing.
TEST(F32Gemm, TrainingGemmsRunOnTheKernelForEveryTransposeCase) {
  if (cpu::f32_best_kernel() == F32Kernel::kScalar) GTEST_SKIP() << "no SIMD fp32 kernel here";
  // The last in blocks of rows and (B packed) of columns where the backend prefers memory
  // (cpu_backend.cpp, kF32BoundedCopyFloats), with B's rows unpadded (ldb = K when trans_b, a
  // Linear's weight as training passes it: packed once for all blocks of rows).
  const Shape shapes[] = {{32, 12, 1},   {33, 37, 513}, {100, 17, 300},
                          {257, 30, 64}, {520, 24, 40}, {64, 300, 257}, {600, 530, 1100}};
  for (const F32Kernel k : cpu::kAllF32Kernels) {
    if (k == F32Kernel::kScalar || !cpu::f32_kernel_available(k)) continue;
    CpuBackend one(1), two(2), lean(2);
    lean.prefer_memory(true);
    for (CpuBackend* be : {&one, &two, &lean}) {
      be->set_f32_kernel(k);
      be->set_fc_provider(cpu::FcProvider::kBertrt);  // auto: avx512f only (cpu_backend.cpp)
    }
    for (const Shape& s : shapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          const int pad_b = &s == &shapes[std::size(shapes) - 1] ? 0 : 2;
          const int lda = (ta ? s.M : s.K) + 3, ldb = (tb ? s.K : s.N) + pad_b, ldc = s.N + 1;
          const uint32_t seed = 60 + s.M + s.N * 5 + s.K * 3 + ta * 2 + tb;
          const auto A = test::randn(size_t(ta ? s.K : s.M) * lda, seed);
          const auto B = test::randn(size_t(tb ? s.N : s.K) * ldb, seed + 1, 0.1f);
          const auto C0 = test::randn(size_t(s.M) * ldc, seed + 2);
          // The reference: X = op(A), W rows = op(B)ᵀ, then the scalar kernel's chains.
          std::vector<float> X(size_t(s.M) * s.K), W(size_t(s.N) * s.K);
          for (int kk = 0; kk < s.K; ++kk) {
            for (int m = 0; m < s.M; ++m)
              X[size_t(m) * s.K + kk] = ta ? A[size_t(kk) * lda + m] : A[size_t(m) * lda + kk];
            for (int n = 0; n < s.N; ++n)
              W[size_t(n) * s.K + kk] = tb ? B[size_t(n) * ldb + kk] : B[size_t(kk) * ldb + n];
          }
          std::vector<float> T(size_t(s.M) * s.N);
          cpu::f32_gemm_xwt(F32Kernel::kScalar, s.M, 0, s.N, s.K, X.data(), s.K, nullptr, W.data(),
                            s.K, nullptr, T.data(), s.N, nullptr);
          const std::string what = std::string(cpu::f32_kernel_name(k)) +
                                   " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
                                   " M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
                                   " K=" + std::to_string(s.K);
          for (CpuBackend* be : {&one, &two, &lean}) {
            std::vector<float> C(C0.size(), std::numeric_limits<float>::quiet_NaN());
            be->gemm(ta, tb, s.M, s.N, s.K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, C.data(),
                     ldc);
            for (int m = 0; m < s.M; ++m)
              ASSERT_EQ(0,
                        std::memcmp(&T[size_t(m) * s.N], &C[size_t(m) * ldc], s.N * sizeof(float)))
                  << what << " row " << m << ", " << be->num_threads() << " threads"
                  << (be == &lean ? ", bounded copies" : "");
            for (auto [alpha, beta] : {std::pair{0.5f, 1.0f}, std::pair{-2.0f, 0.0f}}) {
              C = C0;
              if (beta == 0.0f)  // C is not read where beta is 0 (BLAS)
                for (float& c : C) c = std::numeric_limits<float>::quiet_NaN();
              be->gemm(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(),
                       ldc);
              for (int m = 0; m < s.M; ++m)
                for (int n = 0; n < s.N; ++n) {
                  const float t = alpha * T[size_t(m) * s.N + n],
                              c0 = beta * C0[size_t(m) * ldc + n];
                  const float bound = 2 * std::numeric_limits<float>::epsilon() *
                                      std::max(std::abs(t), std::abs(c0));
                  ASSERT_NEAR(C[size_t(m) * ldc + n], t + c0, bound) << what << " alpha " << alpha;
                }
            }
          }
        }
    EXPECT_EQ(two.fc_stats().bertrt_calls + two.fc_stats().openblas_calls, 0u);
    EXPECT_EQ(two.fc_stats().packed_bytes, 0u);
  }
}

// alpha = 0 reads neither A nor B (BLAS): an Inf there leaves C = beta·C, not NaN.
TEST(F32Gemm, TrainingGemmWithAlphaZeroReadsNeitherAnorB) {
  CpuBackend be(2);
  be.set_fc_provider(cpu::FcProvider::kBertrt);
  const int M = 64, N = 24, K = 40;
  std::vector<float> A(size_t(M) * K, std::numeric_limits<float>::infinity()), B(size_t(K) * N, 1.0f);
  std::vector<float> C(size_t(M) * N, 3.0f);
  be.gemm(false, false, M, N, K, 0.0f, A.data(), K, B.data(), N, 0.5f, C.data(), N);
  for (float c : C) ASSERT_EQ(c, 1.5f);
}

// auto takes bertrt's kernel only for weights it can pack without a second copy (a model file's
// clean pages: release_pages_test.cpp); weights in anonymous memory, as here, stay on OpenBLAS.
TEST(F32Gemm, AutoDoesNotTakeItForWeightsInAnonymousMemory) {
  CpuBackend be(2);
  be.set_fc_provider(cpu::FcProvider::kAuto);
  be.set_constant_weights(true);
  for (const Shape s : kBackendShapes) {
    const auto X = test::randn(size_t(s.M) * s.K, 50 + s.M);
    const auto W = test::randn(size_t(s.N) * s.K, 51 + s.N, 0.1f);
    linear_gemm(be, X, W, s.M, s.N, s.K);
  }
  EXPECT_EQ(be.fc_stats().bertrt_calls, 0u);
  EXPECT_EQ(be.fc_stats().openblas_calls + be.fc_stats().xnnpack_calls, std::size(kBackendShapes));
}

TEST(F32Gemm, ProviderNamesAndTheirErrors) {
  EXPECT_STREQ(cpu::fc_provider_name(cpu::FcProvider::kBertrt), "bertrt");
  {
    test::ScopedEnv env("BERTRT_FC_PROVIDER", "bertrt");
    EXPECT_EQ(cpu::fc_provider_from_env(), cpu::FcProvider::kBertrt);
  }
  test::ScopedEnv env("BERTRT_FC_PROVIDER", "mkl");
  try {
    cpu::fc_provider_from_env();
    FAIL() << "BERTRT_FC_PROVIDER=mkl was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("BERTRT_FC_PROVIDER"), std::string::npos) << what;
    EXPECT_NE(what.find("bertrt"), std::string::npos) << what;  // names what it accepts
  }
}

// BERTRT_F32_KERNEL picks a kernel by name; a name that is no kernel, or one this CPU cannot
// run, is an error naming the variable and what the CPU can run. Unset: the best SIMD kernel.
TEST(F32Gemm, KernelChoiceByEnvironment) {
  {
    test::ScopedEnv env("BERTRT_F32_KERNEL", "");
    const F32Kernel best = cpu::f32_kernel_from_env();
    EXPECT_TRUE(cpu::f32_kernel_available(best));
    for (const F32Kernel k : cpu::kAllF32Kernels)  // nothing better is available
      if (cpu::f32_kernel_available(k)) {
        EXPECT_LE(int(k), int(best)) << cpu::f32_kernel_name(k);
      }
  }
  // Made before BERTRT_F32_KERNEL names a kernel: a backend reads the variable once per process
  // (f32_best_kernel), so one made below would throw where the named kernel cannot run (aarch64).
  CpuBackend be(1);
  for (const F32Kernel k : cpu::kAllF32Kernels) {
    test::ScopedEnv env("BERTRT_F32_KERNEL", cpu::f32_kernel_name(k));
    if (cpu::f32_kernel_available(k)) {
      EXPECT_EQ(cpu::f32_kernel_from_env(), k);
      continue;
    }
    EXPECT_THROW(cpu::f32_kernel_from_env(), Error) << cpu::f32_kernel_name(k);
    EXPECT_THROW(be.set_f32_kernel(k), Error) << cpu::f32_kernel_name(k);
  }
  test::ScopedEnv env("BERTRT_F32_KERNEL", "avx1024");
  try {
    cpu::f32_kernel_from_env();
    FAIL() << "BERTRT_F32_KERNEL=avx1024 was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("BERTRT_F32_KERNEL=avx1024"), std::string::npos) << what;
    EXPECT_NE(what.find("scalar"), std::string::npos) << what;  // what it can run
  }
}

// A BERT forward (MLM + NSP + classifier heads) with every Linear on bertrt's kernel against the
// PyTorch float64 reference within bert_reference_test's 2e-5, which the OpenBLAS path meets on
// the same file: the kernels differ from OpenBLAS in summation order only.
TEST(F32Gemm, ModelForwardOnItMatchesThePyTorchReference) {
  constexpr double kTol = 2e-5;
  for (const char* gelu : {"gelu", "gelu_new"}) {
    const SafetensorsFile f =
        SafetensorsFile::open(test::build_dir() + "/reference/bert_" + gelu + ".safetensors");
    CpuBackend be(2);
    be.set_fc_provider(cpu::FcProvider::kBertrt);
    be.set_constant_weights(true);
    test::expect_forward_matches_reference(f, be, kTol, gelu);
    const int layers = test::reference_config(f).num_hidden_layers;
    EXPECT_GT(be.fc_stats().bertrt_calls, size_t(6 * layers)) << be.fc_summary();
    EXPECT_EQ(be.fc_stats().openblas_calls, 0u) << be.fc_summary();
  }
}

}  // namespace
}  // namespace bertrt
