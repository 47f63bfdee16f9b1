// The quantization ops' rows of the op table (ops_test.cpp): cpu vs the scalar reference over
// awkward sizes (1, primes, non-multiples of the 8-float / 16-byte SIMD widths, 2-column GEMM
// tiles and 4-row tiles). Everything is BIT-EXACT except linear_u8s8's float epilogue: the
// rounding ops are the same float operations in the same order and the GEMM sums are integers.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/backend.h"
#include "backends/quant_rules.h"
#include "op_test_util.h"

namespace bertrt::test {

struct QuantOpCase {
  Op op;
  std::string label;
  std::function<::testing::AssertionResult(Backend& ref, Backend& cpu)> check;
};

inline std::vector<uint8_t> random_u8(size_t n, uint32_t seed, int lo = 0, int hi = 255) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(d(rng));
  return v;
}

inline std::vector<int8_t> random_s8(size_t n, uint32_t seed, int lo = -127, int hi = 127) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(d(rng));
  return v;
}

// Bit-exact comparison of two integer or byte vectors, naming the first few differences.
template <class T>
::testing::AssertionResult all_equal(const std::vector<T>& want, const std::vector<T>& got) {
  if (want.size() != got.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(want[i] == got[i])) {
      if (bad < 5)
        first += "\n  [" + std::to_string(i) + "] want " + std::to_string(+want[i]) + " got " +
                 std::to_string(+got[i]);
      ++bad;
    }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << want.size() << " differ" << first;
}

// gemm_u8s8_s32 on both backends with padded strides (A [M, K+3], B [N, K+5], C [M, N+2] with
// its padding pre-filled, so it must come back untouched), bit-exact.
inline ::testing::AssertionResult compare_gemm_u8s8(Backend& r, Backend& c, int M, int N, int K,
                                                    uint32_t seed, int a_lo = 0, int b_lo = -128,
                                                    int b_hi = 127) {
  const int lda = K + 3, ldb = K + 5, ldc = N + 2;
  auto A = random_u8(static_cast<size_t>(M) * lda, seed, a_lo, 255);
  auto B = random_s8(static_cast<size_t>(N) * ldb, seed + 1, b_lo, b_hi);
  std::vector<int32_t> c1(static_cast<size_t>(M) * ldc, -7), c2 = c1;
  r.gemm_u8s8_s32(M, N, K, A.data(), lda, B.data(), ldb, c1.data(), ldc);
  c.gemm_u8s8_s32(M, N, K, A.data(), lda, B.data(), ldb, c2.data(), ldc);
  return all_equal(c1, c2) << " (" << M << "x" << N << "x" << K << ")";
}

// Activations around a grid of scale 2^-4 (so x·inv is exact): ties (k + 0.5)·s, values beyond
// both ends of [qmin, qmax] and plain normals.
inline std::vector<float> fake_quant_inputs(size_t n, uint32_t seed) {
  auto v = randn(n, seed, 6.0f);
  for (size_t i = 0; i < n; i += 3) v[i] = (static_cast<float>(static_cast<int>(i % 300) - 150) + 0.5f) / 16.0f;
  return v;
}

inline std::vector<QuantOpCase> quant_op_cases() {
  std::vector<QuantOpCase> cases;
  const std::vector<int> sizes = {1, 2, 3, 7, 13, 17, 31, 33, 65, 127};
  for (int n : {1, 7, 8, 9, 33, 127, 16384 * 3 + 5}) {
    const std::string sz = std::to_string(n);
    cases.push_back({Op::kMinMax, "min_max_" + sz, [n](Backend& r, Backend& c) {
                       auto x = randn(n, 200 + n, 3.0f);
                       float l1, h1, l2, h2;
                       r.min_max(&l1, &h1, x.data(), n);
                       c.min_max(&l2, &h2, x.data(), n);
                       return all_close({l1, h1}, {l2, h2}, {0.0});
                     }});
  }
  for (int n : sizes) {
    const std::string sz = std::to_string(n);
    cases.push_back({Op::kAbsMaxRows, "absmax_rows_5x" + sz, [n](Backend& r, Backend& c) {
                       auto x = randn(5 * n, 210 + n);
                       std::vector<float> o1(5), o2(5);
                       r.absmax_rows(o1.data(), x.data(), 5, n);
                       c.absmax_rows(o2.data(), x.data(), 5, n);
                       return all_close(o1, o2, {0.0});
                     }});
    cases.push_back(
        {Op::kSymmetricScaleRows, "symmetric_scale_rows_5x" + sz, [n](Backend& r, Backend& c) {
           auto x = randn(5 * n, 215 + n);
           for (int j = 0; j < n; ++j) x[3 * n + j] = 0.0f;  // → FLT_EPSILON
           std::vector<float> o1(5), o2(5), want(5);
           r.symmetric_scale_rows(o1.data(), x.data(), 5, n, -127, 127);
           c.symmetric_scale_rows(o2.data(), x.data(), 5, n, -127, 127);
           for (int i = 0; i < 5; ++i) {
             float m = 0.0f;
             for (int j = 0; j < n; ++j) m = std::fmax(m, std::fabs(x[i * n + j]));
             want[i] = std::fmax(m / 127.0f, FLT_EPSILON);  // torch: / ((127+127)/2)
           }
           auto ok = all_close(want, o1, {0.0});
           if (!ok) return ok;
           return all_close(want, o2, {0.0});
         }});
    cases.push_back(
        {Op::kEmbeddingForwardS8, "embedding_forward_s8_" + sz, [n](Backend& r, Backend& c) {
           const int V = 7, C = n;
           const auto q = random_s8(size_t(V) * C, 216 + n);
           const auto s = uniform(V, 217 + n, 0.001f, 0.1f);
           const std::vector<int32_t> ids = {6, 0, 2, 2};
           auto o1 = randn(ids.size() * C, 218), o2 = o1, want = o1;
           r.embedding_forward_s8(o1.data(), ids.data(), q.data(), s.data(), 4, C, V);
           c.embedding_forward_s8(o2.data(), ids.data(), q.data(), s.data(), 4, C, V);
           // out += s·q. The library's backends round the product on its own on every target
           // (core/fp_contract.h); this file's loop may be contracted into one fma where the ISA
           // has it (GCC does on aarch64): the two differ by the product's rounding, u·|s·q|,
           // plus a rounding of the sum.
           std::vector<double> tol(want.size());
           for (size_t i = 0; i < ids.size(); ++i)
             for (int j = 0; j < C; ++j) {
               const float sq = s[ids[i]] * float(q[ids[i] * C + j]);
               want[i * C + j] += sq;
               tol[i * C + j] = kEps * (std::fabs(sq) + std::fabs(want[i * C + j]));
             }
           auto ok = all_close(want, o1, tol);
           if (!ok) return ok;
           return all_close(o1, o2, {0.0});  // the library's two backends: the same roundings
         }});
    cases.push_back({Op::kFakeQuantPerTensor, "fake_quant_per_tensor_" + sz,
                     [n](Backend& r, Backend& c) {
                       auto x = fake_quant_inputs(n, 220 + n);
                       std::vector<float> o1(n), o2 = x;  // cpu in place
                       std::vector<uint8_t> m1(n), m2(n);
                       r.fake_quant_per_tensor(o1.data(), m1.data(), x.data(), n, 0.0625f, 77, 0, 255);
                       c.fake_quant_per_tensor(o2.data(), m2.data(), o2.data(), n, 0.0625f, 77, 0, 255);
                       std::vector<float> o3(n);
                       c.fake_quant_per_tensor(o3.data(), nullptr, x.data(), n, 0.0625f, 77, 0, 255);
                       auto ok = all_close(o1, o2, {0.0});
                       if (!ok) return ok;
                       ok = all_close(o1, o3, {0.0});
                       if (!ok) return ok << " (no mask)";
                       return all_equal(m1, m2) << " (mask)";
                     }});
    cases.push_back({Op::kFakeQuantPerRow, "fake_quant_per_row_5x" + sz,
                     [n](Backend& r, Backend& c) {
                       auto x = fake_quant_inputs(5 * n, 230 + n);
                       // Row scales: exact powers of two, a float scale and a tiny one (eps).
                       const std::vector<float> s = {0.0625f, 0.1f, 0.03f, 1.1920929e-07f, 2.0f};
                       std::vector<float> o1(5 * n), o2(5 * n);
                       std::vector<uint8_t> m1(5 * n), m2(5 * n);
                       r.fake_quant_per_row(o1.data(), m1.data(), x.data(), s.data(), 5, n, -127, 127);
                       c.fake_quant_per_row(o2.data(), m2.data(), x.data(), s.data(), 5, n, -127, 127);
                       auto ok = all_close(o1, o2, {0.0});
                       if (!ok) return ok;
                       return all_equal(m1, m2) << " (mask)";
                     }});
    cases.push_back({Op::kFakeQuantBackward, "fake_quant_backward_" + sz,
                     [n](Backend& r, Backend& c) {
                       auto d0 = randn(n, 240 + n), dy = randn(n, 250 + n);
                       auto m = random_u8(n, 260 + n, 0, 1);
                       auto d1 = d0, d2 = d0;
                       r.fake_quant_backward(d1.data(), m.data(), dy.data(), n);
                       c.fake_quant_backward(d2.data(), m.data(), dy.data(), n);
                       return all_close(d1, d2, {0.0});
                     }});
    cases.push_back({Op::kQuantizeU8, "quantize_u8_" + sz, [n](Backend& r, Backend& c) {
                       auto x = fake_quant_inputs(n, 270 + n);
                       std::vector<uint8_t> q1(n), q2(n);
                       r.quantize_u8(q1.data(), x.data(), n, 0.0625f, 77);
                       c.quantize_u8(q2.data(), x.data(), n, 0.0625f, 77);
                       return all_equal(q1, q2);
                     }});
  }
  // A few GEMM shapes here (tile edges: 4 rows, 2 columns, K blocks of 16); quant_ops_test.cpp
  // sweeps many more. Padded strides, so reads or writes past a row would show.
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, std::tuple{5, 3, 17}, std::tuple{13, 17, 127}}) {
    const std::string tag = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    cases.push_back({Op::kGemmU8S8, "gemm_u8s8_" + tag, [M = M, N = N, K = K](Backend& r, Backend& c) {
                       return compare_gemm_u8s8(r, c, M, N, K, 300 + M * 7 + K);
                     }});
  }
  // The int8 Linear: the integers are exact; the float epilogue float(acc)·s + b is the same two
  // operations on both, up to an FMA contraction (ARM): 2 eps of |float(acc)·s| + |b|.
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, std::tuple{5, 3, 17}, std::tuple{128, 64, 768}}) {
        const std::string tag = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
        cases.push_back({Op::kLinearU8S8, "linear_u8s8_" + tag, [M = M, N = N, K = K](Backend& r, Backend& c) {
                           auto A = random_u8(static_cast<size_t>(M) * K, 500 + M + K);
                           auto W = random_s8(static_cast<size_t>(N) * K, 600 + N + K);
                           std::vector<int32_t> wsum(N, 0);
                           for (int n = 0; n < N; ++n)
                             for (int k = 0; k < K; ++k) wsum[n] += W[static_cast<size_t>(n) * K + k];
                           auto ws = uniform(N, 700 + N, 1e-4f, 1e-2f), bias = randn(N, 710 + N);
                           const int ldo = N + 1;
                           std::vector<float> o1(static_cast<size_t>(M) * ldo, 3.0f), o2 = o1;
                           r.linear_u8s8(o1.data(), ldo, A.data(), K, 0.05f, 113, W.data(), ws.data(),
                                         wsum.data(), bias.data(), M, N, K);
                           c.linear_u8s8(o2.data(), ldo, A.data(), K, 0.05f, 113, W.data(), ws.data(),
                                         wsum.data(), bias.data(), M, N, K);
                           std::vector<double> tol(o1.size(), 0.0);
                           for (int m = 0; m < M; ++m)
                             for (int n = 0; n < N; ++n) {
                               const size_t i = static_cast<size_t>(m) * ldo + n;
                               tol[i] = 2 * kEps * (std::fabs(o1[i] - bias[n]) + 2 * std::fabs(bias[n]));
                             }
                           return all_close(o1, o2, tol);
                         }});
  }
  // The fused int8 Linear + GELU + quantize: the same integers as the candidate's own three ops
  // (bit-exact: a fusion must not move a value across a rounding boundary), and within one code of
  // the reference's (pre and act are scratch a fused backend need not write; the candidate's
  // Linear is within linear_u8s8's tolerance of the reference's, so GELU's output moves by far less
  // than a step of 0.03 and can cross at most one rounding boundary).
  for (auto [M, N, K, kind] :
       {std::tuple{1, 1, 1, Gelu::kErf}, std::tuple{5, 3, 17, Gelu::kTanh},
        std::tuple{37, 100, 64, Gelu::kErf}, std::tuple{130, 67, 40, Gelu::kErf}}) {
    const std::string tag = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                            (kind == Gelu::kErf ? "_erf" : "_tanh");
    cases.push_back(
        {Op::kLinearU8S8GeluU8, "linear_u8s8_gelu_u8_" + tag,
         [M = M, N = N, K = K, kind = kind](Backend& r, Backend& c) {
           const size_t MN = static_cast<size_t>(M) * N;
           auto A = random_u8(static_cast<size_t>(M) * K, 800 + M + K);
           auto W = random_s8(static_cast<size_t>(N) * K, 810 + N + K);
           std::vector<int32_t> wsum(N, 0);
           for (int n = 0; n < N; ++n)
             for (int k = 0; k < K; ++k) wsum[n] += W[static_cast<size_t>(n) * K + k];
           auto ws = uniform(N, 820 + N, 1e-4f, 2e-3f), bias = randn(N, 830 + N);
           // The next Linear's input range: GELU's output is ≥ −0.17.
           const float qs = 0.03f;
           const int qzp = 9;
           std::vector<float> pre(MN), act(MN), pre3(MN), act3(MN), pre_r(MN), act_r(MN);
           std::vector<uint8_t> q(MN), q3(MN), q_r(MN);
           c.linear_u8s8_gelu_u8(q.data(), pre.data(), act.data(), A.data(), K, 0.05f, 113,
                                 W.data(), nullptr, ws.data(), wsum.data(), bias.data(), M, N, K,
                                 kind, qs, qzp);
           c.linear_u8s8(pre3.data(), N, A.data(), K, 0.05f, 113, W.data(), ws.data(), wsum.data(),
                         bias.data(), M, N, K);
           c.gelu_forward(act3.data(), pre3.data(), MN, kind);
           c.quantize_u8(q3.data(), act3.data(), MN, qs, qzp);
           r.linear_u8s8_gelu_u8(q_r.data(), pre_r.data(), act_r.data(), A.data(), K, 0.05f, 113,
                                 W.data(), nullptr, ws.data(), wsum.data(), bias.data(), M, N, K,
                                 kind, qs, qzp);
           auto ok = all_equal(q, q3);
           if (!ok) return ok << " (q: fused vs the three ops)";
           for (size_t i = 0; i < MN; ++i)
             if (std::abs(int(q[i]) - int(q_r[i])) > 1)
               return ::testing::AssertionFailure()
                      << "q[" << i << "] = " << int(q[i]) << ", the reference's " << int(q_r[i]);
           return ::testing::AssertionSuccess();
         }});
  }
  // The observer ops against the host formulas: affine_qparams_rule then fake_quant_per_tensor,
  // and the moving average in float with the product rounded first.
  for (auto [lo, hi, label] : {std::tuple{-1.3f, 4.7f, "mixed"}, {0.2f, 3.1f, "positive"},
                                {-2.0f, -0.5f, "negative"}}) {
    const std::string name = std::string("fake_quant_observed_") + label;
    cases.push_back({Op::kFakeQuantObserved, name, [lo = lo, hi = hi](Backend& r, Backend& c) {
                       const size_t n = 301;
                       auto x = fake_quant_inputs(n, 260);
                       const std::vector<float> range = {lo, hi};
                       float scale;
                       int zp;
                       affine_qparams_rule(lo, hi, 0, 255, &scale, &zp);
                       std::vector<float> want(n), o1(n), o2(n);
                       std::vector<uint8_t> mw(n), m1(n), m2(n);
                       r.fake_quant_per_tensor(want.data(), mw.data(), x.data(), n, scale, zp, 0, 255);
                       r.fake_quant_observed(o1.data(), m1.data(), x.data(), n, range.data(), 0, 255);
                       c.fake_quant_observed(o2.data(), m2.data(), x.data(), n, range.data(), 0, 255);
                       auto ok = all_close(want, o1, {0.0});
                       if (!ok) return ok;
                       ok = all_close(want, o2, {0.0});
                       if (!ok) return ok;
                       return all_equal(mw, m2) << " (mask)";
                     }});
  }
  for (int parts : {1, 3}) {
    cases.push_back(
        {Op::kObserveMinMax, "observe_min_max_" + std::to_string(parts), [parts](Backend& r, Backend& c) {
           std::vector<float> r1(2), r2(2), want(2);
           for (int step = 0; step < 4; ++step) {
             auto batch = randn(2 * size_t(parts), uint32_t(270 + step), 2.0f);
             for (int p = 0; p < parts; ++p)
               if (batch[2 * p] > batch[2 * p + 1]) std::swap(batch[2 * p], batch[2 * p + 1]);
             float lo = batch[0], hi = batch[1];
             for (int p = 1; p < parts; ++p) lo = std::min(lo, batch[2 * p]), hi = std::max(hi, batch[2 * p + 1]);
             if (step == 0) {
               want = {lo, hi};
             } else {
               volatile float d0 = 0.1f * (lo - want[0]), d1 = 0.1f * (hi - want[1]);
               want = {want[0] + d0, want[1] + d1};
             }
             r.observe_min_max(r1.data(), batch.data(), parts, step == 0, 0.1f);
             c.observe_min_max(r2.data(), batch.data(), parts, step == 0, 0.1f);
           }
           auto ok = all_close(want, r1, {0.0});
           if (!ok) return ok;
           return all_close(want, r2, {0.0});
         }});
  }
  return cases;
}

}  // namespace bertrt::test
