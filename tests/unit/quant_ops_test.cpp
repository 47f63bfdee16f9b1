// Quantization ops and helpers on their own terms (the PyTorch comparison is quant_torch_test.cpp):
//   - hand-checked rounding, STE mask boundaries, scales, zero points and observer updates;
//   - the u8×s8 GEMM: every kernel this CPU can run (AVX2, NEON, NEON dot product) vs the scalar
//     loops, and the cpu backend vs the scalar reference, bit-exact over sweeps of odd sizes, the
//     saturation case (255 × 127 pairs: vpmaddubsw's int16 pair sums would clip) and the longest
//     K allowed, where sums reach ±2^31;
//   - consistency of the deployment path with QAT: the int8 weight's integers times its scales ARE
//     the fake-quantized weight, quantize_u8 gives the fake-quantized activation's integers, and
//     the int8 Linear equals fq(x)·fq(W)ᵀ + b up to fp32 GEMM rounding;
//   - per-row embedding fake-quant is local to a row (gathered rows == rows of the whole table);
// (the int8 Linear's throughput next to OpenBLAS sgemm is a benchmark: bench/kernel_bench.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/q8_gemm.h"
#include "backends/reference/reference_backend.h"
#include "core/error.h"
#include "op_test_util.h"
#include "quant/fake_quant.h"
#include "quant/int8_weight.h"
#include "quant/observer.h"
#include "quant/qparams.h"
#include "quant_op_cases.h"

namespace bertrt {
namespace {

using test::all_close;
using test::all_equal;
using test::kEps;
using test::randn;

std::vector<std::unique_ptr<Backend>> both() {
  std::vector<std::unique_ptr<Backend>> v;
  v.push_back(std::make_unique<ReferenceBackend>());
  v.push_back(std::make_unique<CpuBackend>(2));
  return v;
}

// --- rounding and the straight-through mask, by hand -------------------------------------------

TEST(FakeQuant, TiesToEvenAndMaskAtTheClampBoundaries) {
  // scale 1, zero point 0, [0, 255]: q = nearbyint(x); mask = 0 ≤ q ≤ 255 on the ROUNDED value
  // (ATen: quant_min <= qval && qval <= quant_max), so 255.4 passes and 255.5 (→ 256) does not.
  const std::vector<float> x = {255.4f, 255.5f, 256.5f, 254.5f, -0.5f, -0.6f, -1.5f, 0.5f, 1.5f, 2.5f};
  const std::vector<float> want = {255, 255, 255, 254, 0, 0, 0, 0, 2, 2};
  const std::vector<uint8_t> want_mask = {1, 0, 0, 1, 1, 0, 0, 1, 1, 1};
  for (auto& be : both()) {
    std::vector<float> out(x.size());
    std::vector<uint8_t> mask(x.size()), q(x.size());
    be->fake_quant_per_tensor(out.data(), mask.data(), x.data(), x.size(), 1.0f, 0, 0, 255);
    EXPECT_TRUE(all_close(want, out, {0.0})) << be->name();
    EXPECT_TRUE(all_equal(want_mask, mask)) << be->name();
    be->quantize_u8(q.data(), x.data(), x.size(), 1.0f, 0);
    EXPECT_TRUE(all_equal(std::vector<uint8_t>{255, 255, 255, 254, 0, 0, 0, 0, 2, 2}, q));
    // Backward: dout where the mask is 1, accumulated onto what dinp held.
    std::vector<float> dx(x.size(), 1.0f), dy(x.size(), 0.25f);
    be->fake_quant_backward(dx.data(), mask.data(), dy.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(dx[i], want_mask[i] ? 1.25f : 1.0f) << i;
  }
}

TEST(FakeQuant, ZeroPointShiftsTheGridAndHugeValuesSaturate) {
  // scale 0.5, zero point 3, [0, 255]: representable values are (q − 3)·0.5 ∈ [−1.5, 126].
  //   −1.75·2 = −3.5 → −4 (even), q = −1: clamped, mask 0;  126.25·2 = 252.5 → 252, q = 255: in;
  //   126.5·2 = 253, q = 256: out. ±1e30 saturate to the ends (torch's int64 cast wraps there).
  const std::vector<float> x = {-1.5f, -1.75f, -2.0f, 126.0f, 126.25f, 126.5f, 1e30f, -1e30f};
  const std::vector<float> want = {-1.5f, -1.5f, -1.5f, 126.0f, 126.0f, 126.0f, 126.0f, -1.5f};
  const std::vector<uint8_t> want_mask = {1, 0, 0, 1, 1, 0, 0, 0};
  for (auto& be : both()) {
    std::vector<float> out(x.size());
    std::vector<uint8_t> mask(x.size());
    be->fake_quant_per_tensor(out.data(), mask.data(), x.data(), x.size(), 0.5f, 3, 0, 255);
    EXPECT_TRUE(all_close(want, out, {0.0})) << be->name();
    EXPECT_TRUE(all_equal(want_mask, mask)) << be->name();
  }
}

// --- scales and zero points ---------------------------------------------------------------------

TEST(QParams, AffineHandChecked) {
  auto qp = affine_qparams(0.0f, 255.0f);
  EXPECT_EQ(qp.scale, 1.0f);
  EXPECT_EQ(qp.zero_point, 0);
  qp = affine_qparams(-255.0f, 0.0f);
  EXPECT_EQ(qp.scale, 1.0f);
  EXPECT_EQ(qp.zero_point, 255);
  qp = affine_qparams(-10.0f, 245.0f);
  EXPECT_EQ(qp.scale, 1.0f);
  EXPECT_EQ(qp.zero_point, 10);
  qp = affine_qparams(1.0f, 3.0f);  // the range is widened to include 0: [0, 3]
  EXPECT_EQ(qp.scale, 3.0f / 255.0f);
  EXPECT_EQ(qp.zero_point, 0);
  qp = affine_qparams(0.0f, 0.0f);  // empty range: eps, as torch (never a zero scale)
  EXPECT_EQ(qp.scale, FLT_EPSILON);
  EXPECT_EQ(qp.zero_point, 0);
  // GELU output range [−0.17, 5]: zero point 0 − round(−0.17 / (5.17/255)) = −round(−8.385) = 8.
  qp = affine_qparams(-0.17f, 5.0f);
  EXPECT_EQ(qp.zero_point, 8);
  EXPECT_THROW(affine_qparams(1.0f, 0.0f), Error);
  EXPECT_THROW(affine_qparams(std::nanf(""), 1.0f), Error);
}

TEST(QParams, SymmetricWeightScale) {
  EXPECT_EQ(symmetric_scale(127.0f), 1.0f);
  EXPECT_EQ(symmetric_scale(254.0f), 2.0f);
  EXPECT_EQ(symmetric_scale(0.0f), FLT_EPSILON);  // all-zero row: codes 0, dequantizes to 0
  EXPECT_EQ(symmetric_scale(1.0f), 1.0f / 127.0f);
  EXPECT_EQ(symmetric_scale(1.0f, -128, 127), 1.0f / 127.5f);  // torch's default range, for contrast
}

TEST(Observer, MovingAverageHandChecked) {
  ActivationObserver obs(0.5f);
  EXPECT_FALSE(obs.initialized());
  EXPECT_EQ(obs.qparams().scale, 1.0f);  // torch FakeQuantize's initial buffers
  EXPECT_EQ(obs.qparams().zero_point, 0);
  obs.observe(-2.0f, 4.0f);  // the first batch sets the range
  EXPECT_EQ(obs.min(), -2.0f);
  EXPECT_EQ(obs.max(), 4.0f);
  obs.observe(0.0f, 8.0f);  // min −2 + 0.5·(0 + 2) = −1, max 4 + 0.5·(8 − 4) = 6
  EXPECT_EQ(obs.min(), -1.0f);
  EXPECT_EQ(obs.max(), 6.0f);
  obs.set_frozen(true);
  obs.observe(-100.0f, 100.0f);
  EXPECT_EQ(obs.min(), -1.0f);
  EXPECT_EQ(obs.max(), 6.0f);
  EXPECT_EQ(obs.updates(), 2);
  // scale 7/255, zero point 0 − round(−1 / (7/255)) = round(36.43) = 36.
  EXPECT_EQ(obs.qparams().scale, 7.0f / 255.0f);
  EXPECT_EQ(obs.qparams().zero_point, 36);
  obs.set_frozen(false);
  EXPECT_THROW(obs.observe(std::nanf(""), 1.0f), Error);
  EXPECT_THROW(ActivationObserver(0.0f), Error);
  EXPECT_THROW(ActivationObserver(1.5f), Error);
  ActivationObserver restored(0.01f);
  restored.restore(-1.0f, 6.0f, 2, true);
  EXPECT_EQ(restored.qparams().zero_point, 36);
  EXPECT_TRUE(restored.frozen());
  EXPECT_THROW(restored.restore(2.0f, 1.0f, 3, false), Error);
}

TEST(FakeQuantActivation, StridedRowsEqualContiguousRows) {
  // The pooler reads the [CLS] rows of [B, T, C] (row stride T·C): same range, same output.
  const int rows = 3, cols = 17, ld = 5 * cols;
  auto x = randn(static_cast<size_t>(rows) * ld, 31, 2.0f);
  std::vector<float> packed;
  for (int r = 0; r < rows; ++r)
    packed.insert(packed.end(), x.begin() + r * ld, x.begin() + r * ld + cols);
  for (auto& be : both()) {
    ActivationObserver a(0.01f), b(0.01f);
    std::vector<float> o1(rows * cols), o2(rows * cols);
    std::vector<uint8_t> m1(rows * cols), m2(rows * cols);
    DeviceArray<float> ranges;
    for (int step = 0; step < 2; ++step) {
      fake_quant_activation(*be, a, ranges, o1.data(), m1.data(), packed.data(), rows, cols);
      fake_quant_activation(*be, b, ranges, o2.data(), m2.data(), x.data(), rows, cols, ld);
      const QParams q1 = a.qparams(), q2 = b.qparams();  // the qparams the ops used
      EXPECT_EQ(q1.scale, q2.scale);
      EXPECT_EQ(q1.zero_point, q2.zero_point);
      EXPECT_TRUE(all_close(o1, o2, {0.0}));
      EXPECT_TRUE(all_equal(m1, m2));
    }
  }
}

// --- the int8 GEMM ------------------------------------------------------------------------------

TEST(GemmU8S8, SweepOfOddSizesBitExact) {
  ReferenceBackend ref;
  CpuBackend cpu(2);
  for (int M : {1, 2, 3, 4, 5, 7, 8, 13})
    for (int N : {1, 2, 3, 5, 17, 33})
      for (int K : {1, 2, 7, 15, 16, 17, 31, 32, 33, 47, 64, 127, 768})
        ASSERT_TRUE(test::compare_gemm_u8s8(ref, cpu, M, N, K, 1000 + M * 131 + N * 17 + K));
}

// Every u8×s8 kernel this CPU can run (scalar, AVX2, the AVX-512 VNNI zmm and ymm kernels and
// AVX-VNNI on x86-64; NEON, NEON dot product and the int8 matrix multiply on aarch64, which CI
// runs under qemu, whose CPU has all three) called directly against the scalar loops: raw int32
// sums and the dequantized epilogue, strided rows, K tails, W packed per call and packed once
// (q8_pack_w), and the extremes, including the longest K with a = 0, w = −128, where the
// dot-product kernel's shifted sum (+2^30) and its correction (−2^30) must cancel exactly.
TEST(GemmU8S8, EveryKernelOfThisCpuEqualsTheScalarLoops) {
  using cpu::Q8Kernel;
  auto run = [](Q8Kernel k, int M, int N, int K, int pad, const std::vector<uint8_t>& A,
                const std::vector<int8_t>& W, bool prepack) {
    const int lda = K + pad, ldw = K + pad / 2;
    std::vector<int16_t> a16;
    cpu::Q8PackedA pa;
    if (cpu::q8_kernel_packs_a(k)) {
      pa.stride = cpu::q8_a16_stride(K);
      a16.resize(static_cast<size_t>(M) * pa.stride);
      cpu::q8_pack_a(a16.data(), A.data(), lda, M, K);
      pa.a16 = a16.data();
    }
    std::vector<int8_t> wp(prepack ? cpu::q8_packed_w_bytes(k, N, K) : 0);
    if (!wp.empty()) cpu::q8_pack_w(k, wp.data(), W.data(), ldw, N, K);
    std::vector<int32_t> c(static_cast<size_t>(M) * N), wsum(N);
    for (int n = 0; n < N; ++n)
      for (int kk = 0; kk < K; ++kk) wsum[n] += W[static_cast<size_t>(n) * ldw + kk];
    std::vector<float> out(static_cast<size_t>(M) * N), ws(N), bias(N);
    for (int n = 0; n < N; ++n) ws[n] = 1e-3f * static_cast<float>(n + 1), bias[n] = 0.5f - n;
    cpu::Q8Epilogue epi;
    epi.c = c.data(), epi.ldc = N, epi.out = out.data(), epi.ldo = N, epi.a_scale = 0.02f;
    epi.a_zero_point = 117, epi.w_scale = ws.data(), epi.w_sum = wsum.data(), epi.bias = bias.data();
    // Two calls over column ranges, as the thread pool splits them (whole tiles of the kernel).
    const int tile = cpu::q8_kernel_tile_n(k);
    const int split = std::min(N, tile * ((N / tile + 1) / 2));
    const int8_t* p = wp.empty() ? nullptr : wp.data();
    cpu::qu8s8_gemm(k, M, 0, split, K, A.data(), lda, pa, W.data(), ldw, p, epi);
    cpu::qu8s8_gemm(k, M, split, N, K, A.data(), lda, pa, W.data(), ldw, p, epi);
    return std::pair{c, out};
  };
  std::string tested, skipped;
  for (Q8Kernel k : cpu::kAllQ8Kernels) {
    if (k == Q8Kernel::kScalar) continue;
    if (!cpu::q8_kernel_available(k)) {
      skipped += std::string(skipped.empty() ? "" : ", ") + cpu::q8_kernel_name(k);
      continue;
    }
    tested += std::string(tested.empty() ? "" : ", ") + cpu::q8_kernel_name(k);
    const bool packs = cpu::q8_packed_w_bytes(k, 1, 1) > 0;
    for (bool prepack : {false, true}) {
      if (prepack && !packs) continue;
      for (int M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 17})
        for (int N : {1, 3, 4, 5, 9, 16, 17, 33, 65})
          for (int K : {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 33, 64, 100})
            for (int pad : {0, 6}) {
              const uint32_t seed = 7000 + M * 131 + N * 17 + K + pad;
              const auto A = test::random_u8(static_cast<size_t>(M) * (K + pad), seed);
              const auto W = test::random_s8(static_cast<size_t>(N) * (K + pad / 2), seed + 1, -128, 127);
              const auto want = run(Q8Kernel::kScalar, M, N, K, pad, A, W, false);
              const auto got = run(k, M, N, K, pad, A, W, prepack);
              ASSERT_TRUE(all_equal(want.first, got.first))
                  << cpu::q8_kernel_name(k) << " M=" << M << " N=" << N << " K=" << K << " pad=" << pad
                  << " prepacked=" << prepack;
              ASSERT_EQ(0, std::memcmp(want.second.data(), got.second.data(), want.second.size() * sizeof(float)))
                  << cpu::q8_kernel_name(k) << " dequantized, M=" << M << " N=" << N << " K=" << K
                  << " prepacked=" << prepack;
            }
    }
    // A taller than one of the panel loop's row blocks (256 KB of A, W prepacked): blocks of 80
    // rows at K = 3,000 (42 for the AVX2 kernel's int16 A), the last cut short inside a tile.
    if (packs) {
      const int M = 203, N = 37, K = 3000, pad = 6;
      const auto A = test::random_u8(static_cast<size_t>(M) * (K + pad), 71);
      const auto W = test::random_s8(static_cast<size_t>(N) * (K + pad / 2), 72, -128, 127);
      const auto want = run(Q8Kernel::kScalar, M, N, K, pad, A, W, false);
      const auto got = run(k, M, N, K, pad, A, W, true);
      ASSERT_TRUE(all_equal(want.first, got.first)) << cpu::q8_kernel_name(k) << " tall A";
      ASSERT_EQ(
          0, std::memcmp(want.second.data(), got.second.data(), want.second.size() * sizeof(float)))
          << cpu::q8_kernel_name(k) << " tall A, dequantized";
    }
    for (auto [a, w] :
         {std::pair{0, -128}, std::pair{255, -128}, std::pair{255, 127}, std::pair{0, 127}}) {
      const int M = 3, N = 5, K = kMaxQ8K;
      const std::vector<uint8_t> A(static_cast<size_t>(M) * K, static_cast<uint8_t>(a));
      const std::vector<int8_t> W(static_cast<size_t>(N) * K, static_cast<int8_t>(w));
      const auto got = run(k, M, N, K, 0, A, W, packs);
      EXPECT_TRUE(all_equal(std::vector<int32_t>(got.first.size(), int32_t{a} * w * K), got.first))
          << cpu::q8_kernel_name(k) << " a=" << a << " w=" << w;
    }
  }
  std::cout << "kernels checked against the scalar loops: " << (tested.empty() ? "none (scalar only)" : tested)
            << "; not runnable on this CPU: " << (skipped.empty() ? "none" : skipped)
            << "; chosen for this CPU: " << cpu::q8_kernel_name(cpu::q8_best_kernel()) << "\n";
  RecordProperty("kernels", tested);
}

TEST(GemmU8S8, SaturationOfInt16PairSumsWouldChangeTheAnswer) {
  // A = 255, B = 127 (and −128): each pair a0·b0 + a1·b1 = 64770 (−65280) is outside int16, so
  // vpmaddubsw would clip it to 32767 (−32768). Hand values: K·255·127 and K·255·(−128).
  const int M = 5, N = 3, K = 64;
  std::vector<uint8_t> A(static_cast<size_t>(M) * K, 255);
  for (int8_t b : {int8_t{127}, int8_t{-128}}) {
    std::vector<int8_t> B(static_cast<size_t>(N) * K, b);
    const int32_t exact = K * 255 * b;
    const int32_t pair = 2 * 255 * b;
    const int32_t clipped = (K / 2) * std::max(-32768, std::min(32767, pair));
    ASSERT_NE(exact, clipped) << "the case must be one where saturation matters";
    for (auto& be : both()) {
      std::vector<int32_t> C(static_cast<size_t>(M) * N);
      be->gemm_u8s8_s32(M, N, K, A.data(), K, B.data(), K, C.data(), N);
      EXPECT_TRUE(all_equal(std::vector<int32_t>(C.size(), exact), C)) << be->name() << " b=" << int{b};
    }
  }
  // Random values near the extremes, odd sizes: cpu vs reference.
  ReferenceBackend ref;
  CpuBackend cpu(2);
  for (int K : {33, 255, 1001})
    EXPECT_TRUE(test::compare_gemm_u8s8(ref, cpu, 7, 5, K, 77 + K, /*a_lo=*/200, -128, 127));
}

TEST(GemmU8S8, LongestKReachesTheInt32LimitExactly) {
  const int M = 5, N = 3, K = kMaxQ8K;
  std::vector<uint8_t> A(static_cast<size_t>(M) * K, 255);
  std::vector<int8_t> B(static_cast<size_t>(N) * K, -128);
  B[static_cast<size_t>(K)] = 127;  // row 1 starts with one positive weight
  const int64_t low = -int64_t{K} * 255 * 128;  // −2147483520, just above INT32_MIN
  ASSERT_GE(low, std::numeric_limits<int32_t>::min());
  for (auto& be : both()) {
    std::vector<int32_t> C(static_cast<size_t>(M) * N);
    be->gemm_u8s8_s32(M, N, K, A.data(), K, B.data(), K, C.data(), N);
    for (int m = 0; m < M; ++m) {
      EXPECT_EQ(C[m * N + 0], low) << be->name();
      EXPECT_EQ(C[m * N + 1], low + 255 * (127 + 128)) << be->name();
    }
    EXPECT_THROW(be->gemm_u8s8_s32(1, 1, K + 1, A.data(), K + 1, B.data(), K + 1, C.data(), 1), Error);
  }
}

// Random operands of an int8 Linear [M, N, K] (per-row weight scales in [1e-4, ws_max]) and W
// packed for be's kernel (empty where the kernel reads W as it is).
struct Int8LinearCase {
  std::vector<uint8_t> A;
  std::vector<int8_t> W, packed;
  std::vector<int32_t> wsum;
  std::vector<float> ws, bias;
  // The packed W, or null: the two ways a caller passes W.
  std::vector<const int8_t*> packings() const {
    return {nullptr, packed.empty() ? nullptr : packed.data()};
  }
};

Int8LinearCase int8_linear_case(CpuBackend& be, int M, int N, int K, uint32_t seed, float ws_max) {
  Int8LinearCase c;
  c.A = test::random_u8(static_cast<size_t>(M) * K, seed);
  c.W = test::random_s8(static_cast<size_t>(N) * K, seed + 1);
  c.wsum = row_sums_s8(c.W.data(), N, K);
  c.ws = test::uniform(N, seed + 2, 1e-4f, ws_max);
  c.bias = randn(N, seed + 3);
  c.packed.resize(be.q8_packed_weight_bytes(N, K));
  if (!c.packed.empty()) be.pack_q8_weight(c.packed.data(), c.W.data(), N, K);
  return c;
}

// The int8 Linear splits its rows between the threads where W is small (≤ 512 KB, at least 16
// rows a thread) and its columns elsewhere (cpu_quant.cpp, run_q8): both give the one-thread
// floats on every kernel, W packed and not. Shapes: rows split (96 × 768 W; 131 rows, the last
// group cut), columns split (768 × 768 W = 576 KB; 20 rows, too few for three threads).
TEST(GemmU8S8, ThreadCountDoesNotChangeTheInt8Linear) {
  std::string tested;
  for (cpu::Q8Kernel k : cpu::kAllQ8Kernels) {
    if (!cpu::q8_kernel_available(k)) continue;
    tested += std::string(tested.empty() ? "" : ", ") + cpu::q8_kernel_name(k);
    CpuBackend one(1), three(3);
    one.set_q8_kernel(k);
    three.set_q8_kernel(k);
    for (auto [M, N, K] : {std::tuple{128, 96, 768}, std::tuple{131, 40, 100},
                           std::tuple{128, 768, 768}, std::tuple{20, 96, 768}}) {
      SCOPED_TRACE(std::string(cpu::q8_kernel_name(k)) + " M=" + std::to_string(M) +
                   " N=" + std::to_string(N) + " K=" + std::to_string(K));
      const Int8LinearCase c = int8_linear_case(one, M, N, K, 300 + M + N + K, 1e-2f);
      for (const int8_t* packed : c.packings()) {
        std::vector<float> o1(static_cast<size_t>(M) * N, 7.0f), o3 = o1;
        one.linear_u8s8_packed(o1.data(), N, c.A.data(), K, 0.02f, 100, c.W.data(), packed,
                               c.ws.data(), c.wsum.data(), c.bias.data(), M, N, K);
        three.linear_u8s8_packed(o3.data(), N, c.A.data(), K, 0.02f, 100, c.W.data(), packed,
                                 c.ws.data(), c.wsum.data(), c.bias.data(), M, N, K);
        EXPECT_TRUE(all_close(o1, o3, {0.0}));
        EXPECT_NE(o1[0], 7.0f);  // written
      }
    }
  }
  std::printf("[ kernels  ] %s\n", tested.c_str());
}

// The fused inter Linear of inference (GELU and quantization in the GEMM's tasks) on every int8
// kernel this CPU can run, with the weight packed and not, at 1 and 3 threads, both GELUs: the
// integers are those of linear_u8s8_packed + gelu_forward + quantize_u8, bit for bit (its fp32
// pre-activation is scratch: the cpu backend keeps it in a block of each thread).
TEST(Int8LinearGelu, FusedEqualsTheThreeOpsOnEveryKernelAndThreadCount) {
  std::string tested;
  for (cpu::Q8Kernel k : cpu::kAllQ8Kernels) {
    if (!cpu::q8_kernel_available(k)) continue;
    tested += std::string(tested.empty() ? "" : ", ") + cpu::q8_kernel_name(k);
    for (int threads : {1, 3}) {
      CpuBackend be(threads);
      be.set_q8_kernel(k);  // (the environment is read once per process: it cannot switch)
      // 130 × 200 × 64 and 64 × 1024 × 256 split their rows at 3 threads, 40 × 1030 × 520 (W
      // over 512 KB) its columns (run_q8).
      for (auto [M, N, K] : {std::tuple{1, 1, 16}, std::tuple{9, 65, 33}, std::tuple{130, 200, 64},
                             std::tuple{64, 1024, 256}, std::tuple{40, 1030, 520}}) {
        const size_t MN = static_cast<size_t>(M) * N;
        const Int8LinearCase c = int8_linear_case(be, M, N, K, 900 + M + N + K, 2e-3f);
        const auto& [A, W, wp, wsum, ws, bias] = c;
        for (const int8_t* packed : c.packings()) {
          for (const Gelu kind : {Gelu::kErf, Gelu::kTanh}) {
            std::vector<float> pre(MN), act(MN), pre3(MN), act3(MN);
            std::vector<uint8_t> q(MN), q3(MN);
            be.linear_u8s8_gelu_u8(q.data(), pre.data(), act.data(), A.data(), K, 0.04f, 120,
                                   W.data(), packed, ws.data(), wsum.data(), bias.data(), M, N, K,
                                   kind, 0.02f, 8);
            be.linear_u8s8_packed(pre3.data(), N, A.data(), K, 0.04f, 120, W.data(), packed,
                                  ws.data(), wsum.data(), bias.data(), M, N, K);
            be.gelu_forward(act3.data(), pre3.data(), MN, kind);
            be.quantize_u8(q3.data(), act3.data(), MN, 0.02f, 8);
            EXPECT_TRUE(all_equal(q, q3))
                << cpu::q8_kernel_name(k) << " threads " << threads << " M=" << M << " N=" << N
                << " K=" << K << (packed ? " packed" : "") << (kind == Gelu::kErf ? "" : " tanh");
            // Not a degenerate case: the codes span most of the range.
            const auto [lo, hi] = std::minmax_element(q.begin(), q.end());
            if (MN > 1000) {
              EXPECT_GT(*hi - *lo, 100) << cpu::q8_kernel_name(k);
            }
          }
        }
      }
    }
  }
  std::cout << "kernels tested: " << tested << "\n";
}

// --- deployment vs QAT --------------------------------------------------------------------------

TEST(Int8Linear, SameIntegersAsFakeQuantAndSameOutputUpToGemmRounding) {
  const int M = 37, K = 77, N = 29;
  auto x = randn(static_cast<size_t>(M) * K, 11, 1.0f, 0.3f);  // LayerNorm-like, shifted
  auto W = randn(static_cast<size_t>(N) * K, 12, 0.05f);
  auto bias = randn(N, 13, 0.1f);
  for (auto& be : both()) {
    SCOPED_TRACE(be->name());
    ActivationObserver obs;
    std::vector<float> xq(x.size()), wq(W.size()), wscale(N);
    DeviceArray<float> ranges;
    fake_quant_activation(*be, obs, ranges, xq.data(), nullptr, x.data(), M, K);
    const QParams act = obs.qparams();
    fake_quant_weight(*be, wq.data(), nullptr, wscale.data(), W.data(), N, K);

    // Export: integers × scale reproduce the fake-quantized weight exactly.
    const Int8Weight w8 = quantize_weight_s8(W.data(), N, K);
    EXPECT_TRUE(all_close(wscale, w8.scale, {0.0}));
    std::vector<float> deq(W.size());
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) deq[n * K + k] = static_cast<float>(w8.q[n * K + k]) * w8.scale[n];
    EXPECT_TRUE(all_close(wq, deq, {0.0})) << "int8 weight vs fake-quant weight";
    // The activation integers: (q − zp)·scale is the fake-quantized activation exactly.
    std::vector<uint8_t> qa(x.size());
    be->quantize_u8(qa.data(), x.data(), x.size(), act.scale, act.zero_point);
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ((static_cast<float>(qa[i]) - static_cast<float>(act.zero_point)) * act.scale, xq[i]) << i;

    // QAT Linear in fp32 (reference GEMM, double sums) vs the int8 Linear.
    ReferenceBackend oracle;
    std::vector<float> y_fq(static_cast<size_t>(M) * N), y_8(y_fq.size());
    oracle.gemm(false, true, M, N, K, 1.0f, xq.data(), K, wq.data(), K, 0.0f, y_fq.data(), N);
    oracle.bias_add(y_fq.data(), bias.data(), M, N);
    DeviceArray<uint8_t> scratch;
    int8_linear_forward(*be, y_8.data(), x.data(), M, 0, w8.view(), act, bias.data(), scratch);
    // Both compute Σ (q_a − z)·s_a·q_w·s_w: the fp32 path rounds each factor and the sum, the int8
    // path rounds s_a·s_w, the product and the bias add; a few eps of Σ|x̂||ŵ| + |b| covers both.
    std::vector<float> ax(xq.size()), aw(wq.size()), bound(y_fq.size());
    for (size_t i = 0; i < xq.size(); ++i) ax[i] = std::fabs(xq[i]);
    for (size_t i = 0; i < wq.size(); ++i) aw[i] = std::fabs(wq[i]);
    oracle.gemm(false, true, M, N, K, 1.0f, ax.data(), K, aw.data(), K, 0.0f, bound.data(), N);
    std::vector<double> tol(bound.size());
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) tol[m * N + n] = 4 * kEps * (bound[m * N + n] + std::fabs(bias[n]));
    EXPECT_TRUE(all_close(y_fq, y_8, tol));
    // Strided input rows (lda > K) give the same result.
    std::vector<float> xs(static_cast<size_t>(M) * (K + 4));
    for (int m = 0; m < M; ++m)
      for (int k = 0; k < K; ++k) xs[m * (K + 4) + k] = x[m * K + k];
    std::vector<float> y_s(y_8.size());
    int8_linear_forward(*be, y_s.data(), xs.data(), M, K + 4, w8.view(), act, bias.data(), scratch);
    EXPECT_TRUE(all_close(y_8, y_s, {0.0}));
  }
}

TEST(Int8Embedding, PerRowFakeQuantIsLocalAndMatchesTheInt8Lookup) {
  const int V = 11, C = 19;
  auto table = randn(static_cast<size_t>(V) * C, 21, 0.02f);
  for (int c = 0; c < C; ++c) table[3 * C + c] = 0.0f;  // an all-zero row
  const std::vector<int32_t> ids = {3, 0, 10, 3, 7};
  const int n = static_cast<int>(ids.size());
  for (auto& be : both()) {
    std::vector<float> whole(table.size()), scale(V);
    fake_quant_weight(*be, whole.data(), nullptr, scale.data(), table.data(), V, C);
    std::vector<float> gathered(static_cast<size_t>(n) * C, 0.0f), fq(gathered.size()), s(n);
    be->embedding_forward(gathered.data(), ids.data(), table.data(), n, C);
    fake_quant_weight(*be, fq.data(), nullptr, s.data(), gathered.data(), n, C);
    std::vector<float> want(gathered.size(), 0.0f);
    be->embedding_forward(want.data(), ids.data(), whole.data(), n, C);
    EXPECT_TRUE(all_close(want, fq, {0.0})) << be->name();
    const Int8Weight t8 = quantize_weight_s8(table.data(), V, C);
    std::vector<float> looked_up(gathered.size(), 0.0f);
    be->embedding_forward_s8(looked_up.data(), ids.data(), t8.q.data(), t8.scale.data(), n, C, V);
    EXPECT_TRUE(all_close(want, looked_up, {0.0})) << be->name();
    std::vector<float> out(C);
    const int32_t bad = V;
    EXPECT_THROW(be->embedding_forward_s8(out.data(), &bad, t8.q.data(), t8.scale.data(), 1, C, V),
                 Error);
  }
}

}  // namespace
}  // namespace bertrt
