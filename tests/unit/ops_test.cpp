// The op table (ggml test-backend-ops style): every op of backends/backend.h run on the cpu
// backend and on the scalar reference over awkward sizes (1, primes, non-multiples of 8/16), with
// a tolerance per op derived from how the cpu code rounds; plus the softmax edge cases, the
// accuracy of the cpu backend's exp/erf, the backend factory and the support matrix (GEMM
// throughput is a benchmark: bench/kernel_bench.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/f32_math.h"
#include "backends/cpu/kernels.h"
#include "backends/dropout_rule.h"
#include "backends/reference/reference_backend.h"
#include "core/error.h"
#include "op_test_util.h"
#include "embedding_op_cases.h"
#include "quant_op_cases.h"

namespace bertrt {
namespace {

using test::all_close;
using test::ce_sum;
using test::host_backend_names;
using test::kEps;
using test::randn;
using test::uniform;

const std::vector<int> kSizes = {1, 2, 3, 7, 13, 17, 31, 33, 65, 127};

struct OpCase {
  Op op;
  std::string label;
  // Runs the op on `ref` and `cpu` with the same inputs and compares the results.
  std::function<::testing::AssertionResult(Backend& ref, Backend& cpu)> check;
};

// --- GEMM ----------------------------------------------------------------------------------------

struct GemmShape {
  int M, N, K;
};

// Tolerance: a float dot product of K terms is off by at most γ_K·Σ|a||b| with γ_K ≈ K·eps
// (Higham, Accuracy and Stability, §3.1), whatever order OpenBLAS sums in; alpha and the beta·C
// term add two more roundings. The bound |α|·(|op(A)||op(B)|) + |β||C| is itself computed with the
// reference GEMM on absolute values.
::testing::AssertionResult check_gemm(Backend& ref, Backend& cpu, int batch, bool ta, bool tb,
                                      GemmShape s, float alpha, float beta, uint32_t seed) {
  const int lda = (ta ? s.M : s.K) + 3, ldb = (tb ? s.K : s.N) + 5, ldc = s.N + 2;
  const int64_t a_rows = ta ? s.K : s.M, b_rows = tb ? s.N : s.K;
  const int64_t stride_a = a_rows * lda + 11, stride_b = b_rows * ldb + 7,
                stride_c = int64_t{s.M} * ldc + 5;
  auto A = randn(static_cast<size_t>(stride_a * batch), seed);
  auto B = randn(static_cast<size_t>(stride_b * batch), seed + 1);
  auto C0 = randn(static_cast<size_t>(stride_c * batch), seed + 2);
  auto c_ref = C0, c_cpu = C0;
  if (batch == 1) {
    ref.gemm(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, beta, c_ref.data(), ldc);
    cpu.gemm(ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, B.data(), ldb, beta, c_cpu.data(), ldc);
  } else {
    ref.gemm_batched(batch, ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, stride_a, B.data(), ldb,
                     stride_b, beta, c_ref.data(), ldc, stride_c);
    cpu.gemm_batched(batch, ta, tb, s.M, s.N, s.K, alpha, A.data(), lda, stride_a, B.data(), ldb,
                     stride_b, beta, c_cpu.data(), ldc, stride_c);
  }
  // Bound via |A|, |B|, |C0| (padding included: it must come back untouched, tolerance 0 there).
  std::vector<float> absA(A.size()), absB(B.size()), bound(C0.size(), 0.0f);
  for (size_t i = 0; i < A.size(); ++i) absA[i] = std::fabs(A[i]);
  for (size_t i = 0; i < B.size(); ++i) absB[i] = std::fabs(B[i]);
  std::vector<double> tol(C0.size(), 0.0);
  ReferenceBackend oracle;
  for (int p = 0; p < batch; ++p) {
    float* bp = bound.data() + p * stride_c;
    oracle.gemm(ta, tb, s.M, s.N, s.K, std::fabs(alpha), absA.data() + p * stride_a, lda,
                absB.data() + p * stride_b, ldb, 0.0f, bp, ldc);
    for (int i = 0; i < s.M; ++i)
      for (int j = 0; j < s.N; ++j) {
        const size_t at = static_cast<size_t>(p * stride_c) + static_cast<size_t>(i) * ldc + j;
        const double beta_c = beta == 0.0f ? 0.0 : std::fabs(beta * C0[at]);
        tol[at] = (s.K + 2) * kEps * (bound[at] + beta_c);
      }
  }
  return all_close(c_ref, c_cpu, tol);
}

void add_gemm_cases(std::vector<OpCase>& cases) {
  const std::vector<GemmShape> shapes = {{1, 1, 1},   {2, 3, 7},    {7, 1, 13},  {1, 127, 33},
                                         {13, 17, 31}, {33, 65, 127}, {65, 33, 17}, {31, 13, 2},
                                         {17, 31, 65}, {127, 7, 3}};
  uint32_t seed = 100;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const GemmShape& s : shapes) {
        const std::string tag = std::string(ta ? "T" : "N") + (tb ? "T" : "N") + "_" +
                                std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                                std::to_string(s.K);
        const uint32_t sd = seed += 3;
        cases.push_back({Op::kGemm, "gemm_" + tag, [=](Backend& r, Backend& c) {
                           return check_gemm(r, c, 1, ta, tb, s, 0.75f, -0.5f, sd);
                         }});
        cases.push_back({Op::kGemmBatched, "gemm_batched3_" + tag, [=](Backend& r, Backend& c) {
                           return check_gemm(r, c, 3, ta, tb, s, -1.25f, 0.25f, sd);
                         }});
      }
  // beta = 0 must ignore C (BLAS), alpha = 1 / beta = 1 is the accumulate-into-gradient form.
  cases.push_back({Op::kGemm, "gemm_NT_beta0", [](Backend& r, Backend& c) {
                     return check_gemm(r, c, 1, false, true, {13, 33, 65}, 1.0f, 0.0f, 7);
                   }});
  cases.push_back({Op::kGemm, "gemm_TN_beta1", [](Backend& r, Backend& c) {
                     return check_gemm(r, c, 1, true, false, {31, 17, 127}, 1.0f, 1.0f, 8);
                   }});
}

// --- elementwise ---------------------------------------------------------------------------------

void add_elementwise_cases(std::vector<OpCase>& cases) {
  for (int n : kSizes) {
    const std::string sz = std::to_string(n);
    // add, bias_add: one float addition each, the same on both backends: exact.
    cases.push_back({Op::kAdd, "add_" + sz, [n](Backend& r, Backend& c) {
                       auto a = randn(n, 1), b = randn(n, 2);
                       std::vector<float> o1(n), o2 = a;
                       r.add(o1.data(), a.data(), b.data(), n);
                       c.add(o2.data(), o2.data(), b.data(), n);  // in place (aliases a)
                       return all_close(o1, o2, {0.0});
                     }});
    cases.push_back({Op::kBiasAdd, "bias_add_5x" + sz, [n](Backend& r, Backend& c) {
                       auto out = randn(5 * n, 3), bias = randn(n, 4);
                       auto o1 = out, o2 = out;
                       r.bias_add(o1.data(), bias.data(), 5, n);
                       c.bias_add(o2.data(), bias.data(), 5, n);
                       return all_close(o1, o2, {0.0});
                     }});
    // bias_backward: a float sum over `rows` terms onto dbias: (rows + 2)·eps·(Σ|dout| + |dbias|).
    cases.push_back({Op::kBiasBackward, "bias_backward_" + sz + "x" + sz, [n](Backend& r, Backend& c) {
                       const int rows = n;
                       auto dout = randn(rows * n, 5), db0 = randn(n, 6);
                       auto d1 = db0, d2 = db0;
                       r.bias_backward(d1.data(), dout.data(), rows, n);
                       c.bias_backward(d2.data(), dout.data(), rows, n);
                       std::vector<double> tol(n);
                       for (int j = 0; j < n; ++j) {
                         double s = std::fabs(db0[j]);
                         for (int i = 0; i < rows; ++i) s += std::fabs(dout[i * n + j]);
                         tol[j] = (rows + 2) * kEps * s;
                       }
                       return all_close(d1, d2, tol);
                     }});
  }
  for (int n : {1, 7, 33, 127, 4099}) {
    const std::string sz = std::to_string(n);
    // GELU (erf): the cpu's x·Φ(x) is within 5 ulp of the exact value (GeluErfUlps below), the
    // reference's within half an ulp; below x ≈ −13.2, where e^{−x²/2} underflows, both are
    // within 1e-37 of 0.
    cases.push_back({Op::kGeluForward, "gelu_erf_forward_" + sz, [n](Backend& r, Backend& c) {
                       auto x = randn(n, 10, 3.0f);
                       std::vector<float> o1(n), o2(n);
                       r.gelu_forward(o1.data(), x.data(), n, Gelu::kErf);
                       c.gelu_forward(o2.data(), x.data(), n, Gelu::kErf);
                       std::vector<double> tol(n);
                       for (int i = 0; i < n; ++i) tol[i] = 6 * kEps * std::fabs(o1[i]) + 1e-37;
                       return all_close(o1, o2, tol);
                     }});
    // GELU (tanh) in float: u takes ~4 roundings, tanh ~1 ulp; where 1 + tanh(u) cancels (x ≪ 0)
    // the absolute error of 1 + t stays a few eps, times 0.5|x|.
    cases.push_back({Op::kGeluForward, "gelu_tanh_forward_" + sz, [n](Backend& r, Backend& c) {
                       auto x = randn(n, 11, 3.0f);
                       std::vector<float> o1(n), o2(n);
                       r.gelu_forward(o1.data(), x.data(), n, Gelu::kTanh);
                       c.gelu_forward(o2.data(), x.data(), n, Gelu::kTanh);
                       std::vector<double> tol(n);
                       for (int i = 0; i < n; ++i)
                         tol[i] = 8 * kEps * (std::fabs(o1[i]) + 0.5 * std::fabs(x[i]));
                       return all_close(o1, o2, tol);
                     }});
    // GELU backward: gelu' = Φ + xφ carries Φ's error (≤ 1e-7, NormalCdfF32Accuracy) and a few
    // roundings (φ's exp: relative eps); tanh form ~16 roundings over terms up to
    // (1 + x²); times |dout|, plus the accumulation into dinp.
    for (Gelu kind : {Gelu::kErf, Gelu::kTanh}) {
      const std::string k = kind == Gelu::kErf ? "erf" : "tanh";
      cases.push_back({Op::kGeluBackward, "gelu_" + k + "_backward_" + sz,
                       [n, kind](Backend& r, Backend& c) {
                         auto x = randn(n, 12, 3.0f), dout = randn(n, 13), d0 = randn(n, 14);
                         auto d1 = d0, d2 = d0;
                         r.gelu_backward(d1.data(), x.data(), dout.data(), n, kind);
                         c.gelu_backward(d2.data(), x.data(), dout.data(), n, kind);
                         std::vector<double> tol(n);
                         for (int i = 0; i < n; ++i) {
                           const double x2 = double{x[i]} * x[i];
                           const double g = kind == Gelu::kErf ? 1e-7 + 8 * kEps * (1 + x2)
                                                               : 16 * kEps * (1 + x2);
                           tol[i] = g * std::fabs(dout[i]) +
                                    2 * kEps * (std::fabs(d0[i]) + std::fabs(d1[i]));
                         }
                         return all_close(d1, d2, tol);
                       }});
    }
    // dropout: the same mask (dropout_rule.h) and one multiplication: exact.
    for (float p : {0.0f, 0.1f, 0.5f})
      cases.push_back({Op::kDropout, "dropout_p" + std::to_string(int(p * 10)) + "_" + sz,
                       [n, p](Backend& r, Backend& c) {
                         auto x1 = randn(n, 19), x2 = x1;
                         r.dropout(x1.data(), n, p, 0x1234567890abcdefull + n);
                         c.dropout(x2.data(), n, p, 0x1234567890abcdefull + n);
                         return all_close(x1, x2, {0.0});
                       }});
    // tanh is not overridden by the cpu backend: it runs the reference, so results are exact.
    cases.push_back({Op::kTanhForward, "tanh_forward_" + sz, [n](Backend& r, Backend& c) {
                       auto x = randn(n, 15, 2.0f);
                       std::vector<float> o1(n), o2(n);
                       r.tanh_forward(o1.data(), x.data(), n);
                       c.tanh_forward(o2.data(), x.data(), n);
                       return all_close(o1, o2, {0.0});
                     }});
    cases.push_back({Op::kTanhBackward, "tanh_backward_" + sz, [n](Backend& r, Backend& c) {
                       auto y = uniform(n, 16, -1, 1), dout = randn(n, 17), d0 = randn(n, 18);
                       auto d1 = d0, d2 = d0;
                       r.tanh_backward(d1.data(), y.data(), dout.data(), n);
                       c.tanh_backward(d2.data(), y.data(), dout.data(), n);
                       return all_close(d1, d2, {0.0});
                     }});
  }
}

// --- LayerNorm -----------------------------------------------------------------------------------

// Float two-pass statistics over C terms: μ off by ~C·eps·mean|x|, var and so rstd by ~C·eps
// relative; out = (x − μ)·rstd·w + b inherits (C + 8)·eps of |n·w|, the μ error through w·|μ|·rstd,
// and a rounding of b.
// A LayerNorm's out, mean, rstd from two backends (1: the reference): the means are float sums of
// C terms, rstd adds a variance sum and a sqrt, out a few roundings of normalized values.
::testing::AssertionResult layernorm_close(const std::vector<float>& x, const std::vector<float>& w,
                                           const std::vector<float>& b, const std::vector<float>& o1,
                                           const std::vector<float>& m1, const std::vector<float>& s1,
                                           const std::vector<float>& o2, const std::vector<float>& m2,
                                           const std::vector<float>& s2, int rows, int C) {
  std::vector<double> tol_o(rows * C), tol_m(rows), tol_s(rows);
  for (int i = 0; i < rows; ++i) {
    double abs_mean = 0;
    for (int j = 0; j < C; ++j) abs_mean += std::fabs(x[i * C + j]) / C;
    tol_m[i] = (C + 2) * kEps * abs_mean;
    tol_s[i] = (C + 8) * kEps * s1[i];
    for (int j = 0; j < C; ++j) {
      const double nw = std::fabs(o1[i * C + j] - b[j]);
      tol_o[i * C + j] = (C + 8) * kEps * (nw + std::fabs(w[j]) * (1 + abs_mean * s1[i]) + std::fabs(b[j]));
    }
  }
  auto r1 = all_close(m1, m2, tol_m);
  if (!r1) return r1 << " (mean)";
  auto r2 = all_close(s1, s2, tol_s);
  if (!r2) return r2 << " (rstd)";
  return all_close(o1, o2, tol_o) << " (out)";
}

::testing::AssertionResult check_layernorm_forward(Backend& r, Backend& c, int rows, int C) {
  auto x = randn(rows * C, 20, 1.5f, 2.0f), w = randn(C, 21, 0.1f, 1.0f), b = randn(C, 22, 0.1f);
  std::vector<float> o1(rows * C), o2(rows * C), m1(rows), m2(rows), s1(rows), s2(rows);
  r.layernorm_forward(o1.data(), m1.data(), s1.data(), x.data(), w.data(), b.data(), rows, C, 1e-12f);
  c.layernorm_forward(o2.data(), m2.data(), s2.data(), x.data(), w.data(), b.data(), rows, C, 1e-12f);
  return layernorm_close(x, w, b, o1, m1, s1, o2, m2, s2, rows, C);
}

// skip_layernorm_forward: on the candidate, bit for bit its own add, layernorm_forward and
// quantize_u8 in turn (a fusion must not move a float or cross a rounding boundary); against the
// reference, the sum exactly and the LayerNorm within the tolerances above.
::testing::AssertionResult check_skip_layernorm_forward(Backend& r, Backend& c, int rows, int C,
                                                        bool skip, bool quantize) {
  const size_t n = static_cast<size_t>(rows) * C;
  auto x0 = randn(n, 23, 1.5f, 2.0f), sk = randn(n, 24, 1.0f), w = randn(C, 25, 0.1f, 1.0f),
       b = randn(C, 26, 0.1f);
  const float qs = 0.04f;  // LayerNorm outputs of a few units: some clamp at both ends
  const int qzp = 101;
  struct Run {
    std::vector<float> x, out, mean, rstd;
    std::vector<uint8_t> q;
  };
  auto fresh = [&] {
    return Run{x0, std::vector<float>(n), std::vector<float>(rows), std::vector<float>(rows),
               std::vector<uint8_t>(n, 7)};
  };
  auto fused = [&](Backend& be) {
    Run o = fresh();
    be.skip_layernorm_forward(o.out.data(), o.mean.data(), o.rstd.data(),
                              quantize ? o.q.data() : nullptr, o.x.data(), skip ? sk.data() : nullptr,
                              w.data(), b.data(), rows, C, 1e-12f, qs, qzp);
    return o;
  };
  Run f = fused(c), s = fresh(), ref = fused(r);
  if (skip) c.add(s.x.data(), s.x.data(), sk.data(), n);
  c.layernorm_forward(s.out.data(), s.mean.data(), s.rstd.data(), s.x.data(), w.data(), b.data(),
                      rows, C, 1e-12f);
  if (quantize) c.quantize_u8(s.q.data(), s.out.data(), n, qs, qzp);
  for (auto [got, want, what] : {std::tuple{&f.x, &s.x, "x"}, {&f.out, &s.out, "out"},
                                 {&f.mean, &s.mean, "mean"}, {&f.rstd, &s.rstd, "rstd"}}) {
    auto ok = all_close(*want, *got, {0.0});
    if (!ok) return ok << " (" << what << ": fused vs the candidate's ops)";
  }
  auto okq = test::all_equal(s.q, f.q);
  if (!okq) return okq << " (q: fused vs the candidate's ops)";
  auto okx = all_close(ref.x, f.x, {0.0});
  if (!okx) return okx << " (x vs the reference)";
  return layernorm_close(ref.x, w, b, ref.out, ref.mean, ref.rstd, f.out, f.mean, f.rstd, rows, C);
}

// dbias, dweight: float sums over `rows` terms: (rows + 2)·eps·(Σ|terms| + |initial|). dinp:
// rstd·(dn − mean(dn) − n·mean(dn·n)) with the means over C float terms: (C + 8)·eps of the
// magnitudes involved.
::testing::AssertionResult check_layernorm_backward(Backend& r, Backend& c, int rows, int C) {
  auto x = randn(rows * C, 30, 1.5f, 2.0f), w = randn(C, 31, 0.1f, 1.0f), b = randn(C, 32, 0.1f);
  auto dout = randn(rows * C, 33);
  std::vector<float> out(rows * C), mean(rows), rstd(rows);
  r.layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows, C, 1e-12f);
  auto dx0 = randn(rows * C, 34), dw0 = randn(C, 35), db0 = randn(C, 36);
  auto dx1 = dx0, dx2 = dx0, dw1 = dw0, dw2 = dw0, db1 = db0, db2 = db0;
  r.layernorm_backward(dx1.data(), dw1.data(), db1.data(), dout.data(), x.data(), w.data(),
                       mean.data(), rstd.data(), rows, C);
  c.layernorm_backward(dx2.data(), dw2.data(), db2.data(), dout.data(), x.data(), w.data(),
                       mean.data(), rstd.data(), rows, C);
  std::vector<double> tol_x(rows * C), tol_w(C), tol_b(C);
  for (int j = 0; j < C; ++j) {
    double sb = std::fabs(db0[j]), sw = std::fabs(dw0[j]);
    for (int i = 0; i < rows; ++i) {
      const double n = (x[i * C + j] - mean[i]) * double{rstd[i]};
      sb += std::fabs(dout[i * C + j]);
      sw += std::fabs(n * dout[i * C + j]);
    }
    tol_b[j] = (rows + 2) * kEps * sb;
    tol_w[j] = (rows + 8) * kEps * sw;
  }
  for (int i = 0; i < rows; ++i) {
    double mag = 0;  // mean |dn| + mean |dn·n|·max|n|
    double max_n = 0;
    for (int j = 0; j < C; ++j) {
      const double n = (x[i * C + j] - mean[i]) * double{rstd[i]};
      max_n = std::max(max_n, std::fabs(n));
      mag += std::fabs(w[j] * dout[i * C + j]) * (1 + std::fabs(n)) / C;
    }
    for (int j = 0; j < C; ++j) {
      const double dn = std::fabs(w[j] * dout[i * C + j]);
      tol_x[i * C + j] = (C + 8) * kEps * rstd[i] * (dn + mag * (1 + max_n)) +
                         2 * kEps * (std::fabs(dx0[i * C + j]) + std::fabs(dx1[i * C + j]));
    }
  }
  auto r1 = all_close(db1, db2, tol_b);
  if (!r1) return r1 << " (dbias)";
  auto r2 = all_close(dw1, dw2, tol_w);
  if (!r2) return r2 << " (dweight)";
  return all_close(dx1, dx2, tol_x) << " (dinp)";
}

void add_layernorm_cases(std::vector<OpCase>& cases) {
  for (int C : kSizes)
    for (int rows : {1, 3}) {
      const std::string tag = std::to_string(rows) + "x" + std::to_string(C);
      cases.push_back({Op::kLayerNormForward, "layernorm_forward_" + tag,
                       [=](Backend& r, Backend& c) { return check_layernorm_forward(r, c, rows, C); }});
      cases.push_back({Op::kLayerNormBackward, "layernorm_backward_" + tag,
                       [=](Backend& r, Backend& c) { return check_layernorm_backward(r, c, rows, C); }});
    }
  cases.push_back({Op::kLayerNormForward, "layernorm_forward_17x256",
                   [](Backend& r, Backend& c) { return check_layernorm_forward(r, c, 17, 256); }});
  cases.push_back({Op::kLayerNormBackward, "layernorm_backward_17x256",
                   [](Backend& r, Backend& c) { return check_layernorm_backward(r, c, 17, 256); }});
  for (auto [rows, C] : {std::pair{1, 1}, std::pair{3, 31}, std::pair{5, 65}, std::pair{17, 256}})
    for (auto [skip, quantize] : {std::pair{true, true}, std::pair{true, false}, std::pair{false, true}}) {
      const std::string tag = std::to_string(rows) + "x" + std::to_string(C) +
                              (skip ? "_skip" : "") + (quantize ? "_u8" : "");
      cases.push_back({Op::kSkipLayerNormForward, "skip_layernorm_forward_" + tag,
                       [rows = rows, C = C, skip = skip, quantize = quantize](Backend& r,
                                                                              Backend& c) {
                         return check_skip_layernorm_forward(r, c, rows, C, skip, quantize);
                       }});
    }
}

// --- softmax -------------------------------------------------------------------------------------

// probs: scale·s + mask rounds (eps·|v| absolute, so a relative eps·|v| after exp), exp is within
// ~1 ulp, Σ over T float terms (T·eps), one division: (T + 16 + |v|)·eps relative to p.
::testing::AssertionResult check_softmax_forward(Backend& r, Backend& c, int T, bool masked) {
  const int B = 2, NH = 3;
  const float scale = 0.125f;
  auto s = randn(B * NH * T * T, 40, 8.0f);
  std::vector<float> mask(B * T, 0.0f);
  for (int j = 0; j < T; ++j) {
    if (j % 3 == 2) mask[j] = -10000.0f;                        // batch 0: every third key
    if (j >= (T + 1) / 2) mask[T + j] = -10000.0f;              // batch 1: right padding
  }
  std::vector<float> p1(s.size()), p2(s.size());
  const float* m = masked ? mask.data() : nullptr;
  r.softmax_forward(p1.data(), s.data(), m, B, NH, T, scale);
  c.softmax_forward(p2.data(), s.data(), m, B, NH, T, scale);
  std::vector<double> tol(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t b = i / (static_cast<size_t>(NH) * T * T), j = i % T;
    const double v = scale * s[i] + (m ? m[b * T + j] : 0.0f);
    tol[i] = (T + 16 + std::fabs(v)) * kEps * p1[i];
  }
  return all_close(p1, p2, tol);
}

// dscores += scale·p·(dp − Σ p·dp): the dot over T float terms is off by T·eps·Σ|p·dp|.
::testing::AssertionResult check_softmax_backward(Backend& r, Backend& c, int rows, int T) {
  const float scale = 0.35f;
  auto p = uniform(rows * T, 41, 0, 1), dp = randn(rows * T, 42), ds0 = randn(rows * T, 43);
  for (int i = 0; i < rows; ++i) {  // make rows sum to 1 like real probabilities
    double sum = 0;
    for (int j = 0; j < T; ++j) sum += p[i * T + j];
    for (int j = 0; j < T; ++j) p[i * T + j] = static_cast<float>(p[i * T + j] / sum);
  }
  auto d1 = ds0, d2 = ds0;
  r.softmax_backward(d1.data(), p.data(), dp.data(), rows, T, scale);
  c.softmax_backward(d2.data(), p.data(), dp.data(), rows, T, scale);
  std::vector<double> tol(rows * T);
  for (int i = 0; i < rows; ++i) {
    double dot_abs = 0, dot = 0;
    for (int j = 0; j < T; ++j) {
      dot_abs += std::fabs(p[i * T + j] * dp[i * T + j]);
      dot += double{p[i * T + j]} * dp[i * T + j];
    }
    for (int j = 0; j < T; ++j) {
      const size_t at = static_cast<size_t>(i) * T + j;
      const double sp = std::fabs(scale * p[at]);
      tol[at] = sp * (4 * kEps * (std::fabs(dp[at]) + std::fabs(dot)) + (T + 2) * kEps * dot_abs) +
                2 * kEps * (std::fabs(ds0[at]) + std::fabs(d1[at]));
    }
  }
  return all_close(d1, d2, tol);
}

void add_softmax_cases(std::vector<OpCase>& cases) {
  for (int T : kSizes) {
    const std::string sz = std::to_string(T);
    for (bool masked : {false, true})
      cases.push_back({Op::kSoftmaxForward, std::string("softmax_forward_") + (masked ? "mask_" : "") + sz,
                       [=](Backend& r, Backend& c) { return check_softmax_forward(r, c, T, masked); }});
    cases.push_back({Op::kSoftmaxBackward, "softmax_backward_" + sz,
                     [=](Backend& r, Backend& c) { return check_softmax_backward(r, c, 5, T); }});
  }
}

// --- embeddings and loss -------------------------------------------------------------------------

void add_embedding_cases(std::vector<OpCase>& cases) {
  for (int C : kSizes) {
    const std::string sz = std::to_string(C);
    // Gather/scatter-add of float rows in the same order on both backends: exact.
    const std::vector<int32_t> ids = {3, 0, 3, 6, 1, 3, 6, 2, 0};  // repeats accumulate
    const int V = 7, n = static_cast<int>(ids.size());
    cases.push_back({Op::kEmbeddingForward, "embedding_forward_" + sz, [=](Backend& r, Backend& c) {
                       auto table = randn(V * C, 50), out0 = randn(n * C, 51);
                       auto o1 = out0, o2 = out0;
                       r.embedding_forward(o1.data(), ids.data(), table.data(), n, C);
                       c.embedding_forward(o2.data(), ids.data(), table.data(), n, C);
                       return all_close(o1, o2, {0.0});
                     }});
    cases.push_back({Op::kEmbeddingBackward, "embedding_backward_" + sz, [=](Backend& r, Backend& c) {
                       auto dout = randn(n * C, 52), dt0 = randn(V * C, 53);
                       auto d1 = dt0, d2 = dt0;
                       r.embedding_backward(d1.data(), ids.data(), dout.data(), n, C);
                       c.embedding_backward(d2.data(), ids.data(), dout.data(), n, C);
                       return all_close(d1, d2, {0.0});
                     }});
  }
}

// Loss: per row, exp is ~1 ulp off plus eps·|z − max| from the rounded shift, Σ over V float
// terms adds V·eps, so lse is off by (V + 8 + range)·eps. dlogits: the same relative error on
// grad_scale·p, plus one rounding of grad_scale at the target.
::testing::AssertionResult check_cross_entropy(Backend& r, Backend& c, int V) {
  const int rows = 6;
  const float gs = 1.0f / 5;
  auto z = randn(rows * V, 60, 4.0f);
  std::vector<int32_t> t(rows);
  for (int i = 0; i < rows; ++i) t[i] = (i * 7 + 3) % V;
  t[2] = -100;  // ignored row
  std::vector<float> d1(rows * V, 123.0f), d2(rows * V, -7.0f);  // garbage: must be overwritten
  const double l1 = ce_sum(r, d1.data(), z.data(), t.data(), rows, V, gs);
  const double l2 = ce_sum(c, d2.data(), z.data(), t.data(), rows, V, gs);
  const double l2_nograd = ce_sum(c, nullptr, z.data(), t.data(), rows, V, gs);
  if (l2 != l2_nograd) return ::testing::AssertionFailure() << "loss depends on dlogits being set";
  // In place (dlogits = logits, as the MLM head calls it): the same loss and bits, both backends.
  for (auto [be, d, l] : {std::tuple{&r, &d1, l1}, std::tuple{&c, &d2, l2}}) {
    std::vector<float> zz = z;
    const double li = ce_sum(*be, zz.data(), zz.data(), t.data(), rows, V, gs);
    if (li != l || std::memcmp(zz.data(), d->data(), zz.size() * sizeof(float)) != 0)
      return ::testing::AssertionFailure() << be->name() << ": in place differs";
  }
  double loss_tol = 0;
  std::vector<double> tol(rows * V);
  for (int i = 0; i < rows; ++i) {
    const float* zi = z.data() + i * V;
    const double range = *std::max_element(zi, zi + V) - *std::min_element(zi, zi + V);
    if (t[i] >= 0) loss_tol += (V + 8 + range) * kEps * (1 + std::fabs(zi[t[i]]));
    for (int j = 0; j < V; ++j)
      tol[i * V + j] = (V + 16 + range) * kEps * std::fabs(gs * (d1[i * V + j] / gs + (j == t[i])))
                       + 2 * kEps * gs;
  }
  if (!(std::fabs(l1 - l2) <= loss_tol))
    return ::testing::AssertionFailure() << "loss " << l2 << " vs reference " << l1 << " tol " << loss_tol;
  return all_close(d1, d2, tol);
}

void add_loss_and_optimizer_cases(std::vector<OpCase>& cases) {
  for (int V : {1, 2, 3, 7, 13, 17, 31, 33, 65, 127, 1000}) {
    cases.push_back({Op::kCrossEntropy, "cross_entropy_" + std::to_string(V),
                     [=](Backend& r, Backend& c) { return check_cross_entropy(r, c, V); }});
  }
  // AdamW: both backends do the same float operations in the same order; only FMA contraction
  // (on by default for GCC on ARM) may change a rounding per operation: a few eps of |p| and of
  // the step lr/(1 − β1^t)·|m|/denom ≤ ~lr·√(1 − β2^t)/(1 − β1^t)·1/√(1 − β2) (< 10·lr here).
  for (bool bc : {true, false})
    for (int n : {1, 7, 33, 127}) {
      cases.push_back({Op::kAdamW, std::string("adamw_") + (bc ? "torch_" : "bert_") + std::to_string(n),
                       [=](Backend& r, Backend& c) {
                         AdamWHyper h;
                         h.lr = 1e-2f;
                         h.weight_decay = 0.01f;
                         h.bias_correction = bc;
                         h.eps = bc ? 1e-8f : 1e-6f;
                         auto p1 = randn(n, 70), m1 = std::vector<float>(n), v1 = m1;
                         auto p2 = p1, m2 = m1, v2 = v1;
                         for (int step = 1; step <= 3; ++step) {
                           auto g = randn(n, 70 + step, 0.1f);
                           r.adamw_step(p1.data(), m1.data(), v1.data(), g.data(), n, h, step);
                           c.adamw_step(p2.data(), m2.data(), v2.data(), g.data(), n, h, step);
                         }
                         std::vector<double> tp(n), tm(n), tv(n);
                         for (int i = 0; i < n; ++i) {
                           tp[i] = 16 * kEps * (std::fabs(p1[i]) + 10 * h.lr);
                           tm[i] = 8 * kEps * std::fabs(m1[i]);
                           tv[i] = 8 * kEps * std::fabs(v1[i]);
                         }
                         auto rm = all_close(m1, m2, tm);
                         if (!rm) return rm << " (m)";
                         auto rv = all_close(v1, v2, tv);
                         if (!rv) return rv << " (v)";
                         return all_close(p1, p2, tp) << " (param)";
                       }});
    }
}

// --- data movement and small reductions ----------------------------------------------------------
// What the host used to do between ops. Each case checks the cpu backend against the reference
// and both against the formula written out here (exact: these ops move or compare values, and
// the two sums are over doubles in index order).

::testing::AssertionResult same_and(const std::vector<float>& want, const std::vector<float>& a,
                                    const std::vector<float>& b) {
  auto ok = all_close(want, a, {0.0});
  if (!ok) return ok << " (reference vs formula)";
  return all_close(want, b, {0.0}) << " (cpu vs formula)";
}

void add_data_movement_cases(std::vector<OpCase>& cases) {
  for (int n : kSizes) {
    const std::string sz = std::to_string(n);
    cases.push_back({Op::kFill, "fill_" + sz, [n](Backend& r, Backend& c) {
                       auto a = randn(n + 2, 300), b = a;
                       r.fill(a.data() + 1, -0.0f, n);
                       c.fill(b.data() + 1, -0.0f, n);
                       auto want = randn(n + 2, 300);
                       std::fill(want.begin() + 1, want.end() - 1, -0.0f);
                       for (int i = 1; i <= n; ++i)  // the sign of zero too
                         if (!std::signbit(a[i]) || !std::signbit(b[i]))
                           return ::testing::AssertionFailure() << "fill lost -0 at " << i;
                       return same_and(want, a, b);
                     }});
    cases.push_back({Op::kCopy, "copy_" + sz, [n](Backend& r, Backend& c) {
                       const auto src = randn(n, 301);
                       std::vector<float> a(n + 1, 5.0f), b = a, want = a;
                       r.copy(a.data(), src.data(), n * sizeof(float));
                       c.copy(b.data(), src.data(), n * sizeof(float));
                       std::copy(src.begin(), src.end(), want.begin());
                       return same_and(want, a, b);
                     }});
    cases.push_back({Op::kCopy2d, "copy_2d_" + sz + "x3", [n](Backend& r, Backend& c) {
                       // Column 1..3 of [n, 5] into columns 0..2 of [n, 4]: interior pointers.
                       const auto src = randn(size_t(n) * 5, 302);
                       std::vector<float> a(size_t(n) * 4, 9.0f), b = a, want = a;
                       r.copy_2d(a.data(), 4, src.data() + 1, 5, n, 3);
                       c.copy_2d(b.data(), 4, src.data() + 1, 5, n, 3);
                       for (int i = 0; i < n; ++i)
                         for (int j = 0; j < 3; ++j) want[i * 4 + j] = src[i * 5 + 1 + j];
                       return same_and(want, a, b);
                     }});
    cases.push_back({Op::kGatherRows, "gather_rows_" + sz, [n](Backend& r, Backend& c) {
                       const int V = 11, C = n;
                       const auto table = randn(size_t(V) * C, 303);
                       const std::vector<int32_t> rows = {10, 0, 3, 3, 7};
                       std::vector<float> a(rows.size() * C, 1.0f), b = a, want = a;
                       r.gather_rows(a.data(), table.data(), rows.data(), 5, C);
                       c.gather_rows(b.data(), table.data(), rows.data(), 5, C);
                       for (size_t i = 0; i < rows.size(); ++i)
                         for (int j = 0; j < C; ++j) want[i * C + j] = table[rows[i] * C + j];
                       return same_and(want, a, b);
                     }});
    cases.push_back({Op::kScale, "scale_" + sz, [n](Backend& r, Backend& c) {
                       auto a = randn(n, 304), b = a, want = a;
                       r.scale(a.data(), 0.3f, n);
                       c.scale(b.data(), 0.3f, n);
                       for (float& x : want) x *= 0.3f;
                       return same_and(want, a, b);
                     }});
    cases.push_back({Op::kSumSquares, "sum_squares_" + sz, [n](Backend& r, Backend& c) {
                       const auto x = randn(n, 305, 7.0f);
                       double s1 = -1, s2 = -1, want = 0;
                       r.sum_squares(&s1, x.data(), n);
                       c.sum_squares(&s2, x.data(), n);
                       for (float v : x) want += double(v) * v;
                       if (s1 != want || s2 != want)
                         return ::testing::AssertionFailure()
                                << s1 << " / " << s2 << " vs " << want;
                       return ::testing::AssertionSuccess();
                     }});
    cases.push_back({Op::kArgmaxRows, "argmax_rows_4x" + sz, [n](Backend& r, Backend& c) {
                       auto x = randn(size_t(4) * n, 306);
                       if (n > 2) x[n + 2] = x[n + 1] = 100.0f;  // a tie: the first index wins
                       std::vector<int32_t> a(4, -5), b(4, -5), want(4);
                       r.argmax_rows(a.data(), x.data(), 4, n);
                       c.argmax_rows(b.data(), x.data(), 4, n);
                       for (int i = 0; i < 4; ++i) {
                         int best = 0;
                         for (int j = 1; j < n; ++j)
                           if (x[i * n + j] > x[i * n + best]) best = j;
                         want[i] = best;
                       }
                       if (a != want || b != want)
                         return ::testing::AssertionFailure() << "argmax differs";
                       return ::testing::AssertionSuccess();
                     }});
    cases.push_back({Op::kMseLoss, "mse_loss_" + sz, [n](Backend& r, Backend& c) {
                       const auto pred = randn(n, 307), target = randn(n, 308);
                       std::vector<float> d1(n), d2(n), want(n);
                       double l1 = -1, l2 = -1, loss = 0;
                       r.mse_loss(d1.data(), &l1, pred.data(), target.data(), n, 1.0f);
                       c.mse_loss(d2.data(), &l2, pred.data(), target.data(), n, 1.0f);
                       for (int i = 0; i < n; ++i) {
                         const double diff = double(pred[i]) - target[i];
                         loss += diff * diff;
                         want[i] = float(2.0 * diff / n);
                       }
                       if (l1 != loss || l2 != loss)
                         return ::testing::AssertionFailure()
                                << l1 << " / " << l2 << " vs " << loss;
                       return same_and(want, d1, d2);
                     }});
  }
}

std::vector<OpCase> all_cases() {
  std::vector<OpCase> cases;
  add_gemm_cases(cases);
  add_elementwise_cases(cases);
  add_layernorm_cases(cases);
  add_softmax_cases(cases);
  add_embedding_cases(cases);
  add_loss_and_optimizer_cases(cases);
  add_data_movement_cases(cases);
  for (auto& q : test::quant_op_cases()) cases.push_back({q.op, q.label, q.check});
  for (auto& e : test::embedding_op_cases(false)) cases.push_back({e.op, e.label, e.check});
  return cases;
}

const std::vector<OpCase>& cases() {
  static const std::vector<OpCase> all = all_cases();
  return all;
}

class CpuVsReference : public ::testing::TestWithParam<size_t> {};

TEST_P(CpuVsReference, Matches) {
  const OpCase& oc = cases()[GetParam()];
  ReferenceBackend ref;
  CpuBackend cpu;
  EXPECT_TRUE(oc.check(ref, cpu)) << oc.label;
}

INSTANTIATE_TEST_SUITE_P(Ops, CpuVsReference, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return cases()[info.param].label;
                         });

// The cpu LayerNorm runs rows in blocks of 4 (interleaved reductions); each row's floats must be
// those of the row alone (one-row calls take the 1-row block), bit for bit, at every width.
TEST(CpuLayerNorm, RowsInBlocksEqualEachRowAlone) {
  CpuBackend cpu(1);
  for (int C : {1, 7, 8, 31, 33, 256, 768}) {
    const int rows = 11;  // two blocks of 4 and 3 rows alone
    auto x = randn(rows * C, 27, 1.5f, 2.0f), w = randn(C, 28, 0.1f, 1.0f), b = randn(C, 29, 0.1f);
    std::vector<float> o1(rows * C), o2(rows * C), m1(rows), m2(rows), s1(rows), s2(rows);
    cpu.layernorm_forward(o1.data(), m1.data(), s1.data(), x.data(), w.data(), b.data(), rows, C,
                          1e-12f);
    for (int r = 0; r < rows; ++r)
      cpu.layernorm_forward(o2.data() + r * C, m2.data() + r, s2.data() + r, x.data() + r * C,
                            w.data(), b.data(), 1, C, 1e-12f);
    EXPECT_TRUE(all_close(o2, o1, {0.0})) << "out, C = " << C;
    EXPECT_TRUE(all_close(m2, m1, {0.0})) << "mean, C = " << C;
    EXPECT_TRUE(all_close(s2, s1, {0.0})) << "rstd, C = " << C;
  }
}

// Every op of the interface has at least one case in the table.
TEST(OpTable, CoversEveryOp) {
  for (int i = 0; i < static_cast<int>(Op::kCount); ++i) {
    const Op op = static_cast<Op>(i);
    const bool covered = std::any_of(cases().begin(), cases().end(),
                                     [op](const OpCase& c) { return c.op == op; });
    EXPECT_TRUE(covered) << op_name(op) << " has no case in the op table";
  }
}

// The ops × backends support matrix, generated rather than written by hand (ggml style).
TEST(OpTable, SupportMatrix) {
  std::vector<std::unique_ptr<Backend>> backends;
  for (const std::string& name : backend_names()) {
    try {
      backends.push_back(make_backend(name));
    } catch (const Error& e) {  // vulkan without a device
      std::cout << name << ": " << e.what() << "\n";
    }
  }
  // The checked backend runs the cpu backend's ops: it supports exactly what cpu does.
  std::string table = "op                         ";
  for (auto& b : backends) table += std::string(" ") + b->name();
  table += "\n";
  for (int i = 0; i < static_cast<int>(Op::kCount); ++i) {
    const Op op = static_cast<Op>(i);
    std::string line = op_name(op);
    line.resize(27, ' ');  // the longest name, l2_normalize_rows_backward, and a space
    for (auto& b : backends) {
      std::string cell = b->supports(op) ? "yes" : "ref";
      cell.resize(std::string(b->name()).size(), ' ');
      line += " " + cell;
    }
    table += line + "\n";
  }
  std::cout << table;
  EXPECT_TRUE(make_backend("reference")->supports(Op::kTanhForward));
  EXPECT_FALSE(make_backend("cpu")->supports(Op::kTanhForward));
  EXPECT_TRUE(make_backend("cpu")->supports(Op::kGemm));
}

TEST(BackendFactory, NamesAndErrors) {
#ifdef BERTRT_HAVE_VULKAN
  EXPECT_EQ(backend_names(), (std::vector<std::string>{"reference", "cpu", "checked", "vulkan"}));
#else
  EXPECT_EQ(backend_names(), (std::vector<std::string>{"reference", "cpu", "checked"}));
  EXPECT_THROW(make_backend("vulkan"), Error);
#endif
  EXPECT_STREQ(make_backend("reference")->name(), "reference");
  EXPECT_STREQ(make_backend("cpu")->name(), "cpu");
  try {
    make_backend("vulkan9");
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("vulkan9"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reference, cpu, checked"), std::string::npos) << msg;
  }
}

// --- dropout ------------------------------------------------------------------------------------

// Kept share within 5 standard errors of the binomial (a false alarm about once in 1.7 million),
// kept values scaled by exactly 1/(1 − p) in float, dropped ones 0.
TEST(Dropout, KeepsOneMinusPAndScalesTheKept) {
  const size_t n = 1 << 20;
  for (float p : {0.1f, 0.5f, 0.9f}) {
    std::vector<float> x(n, 3.0f);
    CpuBackend cpu(2);
    cpu.dropout(x.data(), n, p, 42);
    const float kept_value = 3.0f * (1.0f / (1.0f - p));
    size_t kept = 0;
    for (float v : x) {
      ASSERT_TRUE(v == 0.0f || v == kept_value) << v;
      kept += v != 0.0f;
    }
    const double q = 1.0 - p, se = std::sqrt(q * p / n);
    EXPECT_NEAR(double(kept) / n, q, 5 * se) << "p " << p;
  }
}

// The mask depends on (seed, index) only: any thread count, either backend, the same floats; and
// a second call with the same seed (the backward) applies the same mask.
TEST(Dropout, SameMaskOnEveryThreadCountAndBackend) {
  const size_t n = 300007;
  const std::vector<float> x = randn(n, 5);
  std::vector<float> want = x;
  ReferenceBackend ref;
  ref.dropout(want.data(), n, 0.1f, 7);
  for (int threads : {1, 2, 3}) {
    std::vector<float> got = x;
    CpuBackend cpu(threads);
    cpu.dropout(got.data(), n, 0.1f, 7);
    EXPECT_TRUE(all_close(want, got, {0.0})) << threads << " threads";
  }
  std::vector<float> twice = want;
  ref.dropout(twice.data(), n, 0.1f, 7);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(twice[i] == 0.0f, want[i] == 0.0f) << i;
}

// Different seeds (sites, steps) draw masks that agree only as often as independent ones would.
TEST(Dropout, SeedsDrawIndependentMasks) {
  const size_t n = 1 << 20;
  const float p = 0.5f;
  std::vector<float> a(n, 1.0f), b(n, 1.0f);
  CpuBackend cpu(1);
  cpu.dropout(a.data(), n, p, dropout_seed(1, 10, 3));
  cpu.dropout(b.data(), n, p, dropout_seed(1, 10, 4));
  size_t both = 0;
  for (size_t i = 0; i < n; ++i) both += a[i] != 0.0f && b[i] != 0.0f;
  const double q = 0.25, se = std::sqrt(q * (1 - q) / n);
  EXPECT_NEAR(double(both) / n, q, 5 * se);
  EXPECT_NE(dropout_seed(1, 10, 3), dropout_seed(1, 11, 3));
  EXPECT_NE(dropout_seed(1, 10, 3), dropout_seed(2, 10, 3));
}

TEST(Dropout, RejectsAProbabilityOutsideZeroToOne) {
  std::vector<float> x(8, 1.0f);
  CpuBackend cpu(1);
  ReferenceBackend ref;
  for (float p : {-0.1f, 1.0f, std::nanf("")}) {
    EXPECT_THROW(cpu.dropout(x.data(), x.size(), p, 1), Error) << p;
    EXPECT_THROW(ref.dropout(x.data(), x.size(), p, 1), Error) << p;
  }
}

TEST(CrossEntropy, TargetOutsideVocabularyThrows) {
  const std::vector<float> z(2 * 3, 0.0f);
  const std::vector<int32_t> t = {1, 3};
  for (const std::string& name : host_backend_names()) {
    auto b = make_backend(name);
    EXPECT_THROW(ce_sum(*b, nullptr, z.data(), t.data(), 2, 3, 1.0f), Error) << name;
  }
}

// --- softmax edges -------------------------------------------------------------------------------

// 12 equal scores of −200 (scale 1): exp(−200) underflows in float without the max shift; with it
// every key gets exactly exp(0)/12.
TEST(SoftmaxEdge, LargeNegativeRowIsUniform) {
  const int T = 12;
  std::vector<float> s(T * T, -200.0f), p(T * T);
  for (const std::string& name : host_backend_names()) {
    make_backend(name)->softmax_forward(p.data(), s.data(), nullptr, 1, 1, T, 1.0f);
    for (float x : p) EXPECT_NEAR(x, 1.0 / 12, 1e-7) << name;
  }
}

// Every key of a row masked by −10000 (Hugging Face's extended mask before v4.21): the mask
// shifts all scores of the row equally, so the max subtraction cancels it: equal scores give
// exactly uniform probabilities, random scores give softmax of the unmasked scores (to the
// precision float keeps at 10000: spacing 2^-10, so ≤ 2^-11 absolute in each score, ~1e-3
// relative in p), never NaN. torch.finfo(float32).min (newer HF) and −inf masks swallow the
// scores entirely: uniform.
TEST(SoftmaxEdge, FullyMaskedRow) {
  const int B = 2, T = 5;
  auto s = randn(B * T * T, 80);
  std::vector<float> zeros(B * T * T, 0.0f), mask(B * T, 0.0f), p(B * T * T), p_unmasked(B * T * T);
  for (int j = 0; j < T; ++j) mask[T + j] = -10000.0f;  // batch 1: every key dropped
  for (const std::string& name : host_backend_names()) {
    auto be = make_backend(name);
    be->softmax_forward(p.data(), zeros.data(), mask.data(), B, 1, T, 1.0f);
    for (int i = T * T; i < B * T * T; ++i) EXPECT_NEAR(p[i], 1.0 / T, 1e-7) << name;
    be->softmax_forward(p.data(), s.data(), mask.data(), B, 1, T, 1.0f);
    be->softmax_forward(p_unmasked.data(), s.data(), nullptr, B, 1, T, 1.0f);
    for (int i = T * T; i < B * T * T; ++i)
      EXPECT_NEAR(p[i], p_unmasked[i], 1.5e-3 * p_unmasked[i]) << name;
  }
  for (float fill : {-std::numeric_limits<float>::max(), -std::numeric_limits<float>::infinity()}) {
    for (int j = 0; j < T; ++j) mask[T + j] = fill;
    for (const std::string& name : host_backend_names()) {
      make_backend(name)->softmax_forward(p.data(), s.data(), mask.data(), B, 1, T, 1.0f);
      for (int i = T * T; i < B * T * T; ++i) EXPECT_EQ(p[i], 1.0f / T) << name << " fill " << fill;
    }
  }
}

// --- the cpu backend's approximations ------------------------------------------------------------

template <typename F>
void for_float_range(float lo, float hi, uint32_t stride, F f) {
  uint32_t a, b;
  std::memcpy(&a, &lo, 4);
  std::memcpy(&b, &hi, 4);
  for (uint32_t u = a; u <= b; u += stride) {
    float x;
    std::memcpy(&x, &u, 4);
    f(x);
  }
}

// Φ, the normal CDF of the exact GELU, against double std::erfc: to 1e-7 absolute (DESIGN.md: the
// ≤1e-7 error exact GELU needs) and 4e-7 relative (exp_nonpos_f32's 1.2e-7, the fits' 5e-8 and a
// few roundings of the polynomials and products; measured 2.8e-7) wherever Φ is a normal float,
// on every 17th float of [1e-30, 20] and of its negation (every 137th under emulation) and every
// float around the pieces' joins (|x| = 0.75 and 2.5√2).
TEST(CpuMath, NormalCdfF32Accuracy) {
  double worst_abs = 0, worst_rel = 0, at_abs = 0, at_rel = 0;
  auto probe = [&](float x) {
    for (float y : {x, -x}) {
      const double want = 0.5 * std::erfc(-double{y} / std::sqrt(2.0));
      const double err = std::fabs(static_cast<double>(cpu::normal_cdf_f32(y)) - want);
      if (err > worst_abs) worst_abs = err, at_abs = y;
      if (y > -12.5f && err / want > worst_rel) worst_rel = err / want, at_rel = y;
    }
  };
  for_float_range(1e-30f, 20.0f, test::sweep_stride(17), probe);
  for_float_range(0.74f, 0.76f, test::sweep_stride(1), probe);
  for_float_range(3.53f, 3.54f, test::sweep_stride(1), probe);
  probe(0.0f);
  probe(1e30f);
  EXPECT_EQ(cpu::normal_cdf_f32(-1e30f), 0.0f);
  EXPECT_EQ(cpu::normal_cdf_f32(1e30f), 1.0f);
  std::cout << "normal_cdf_f32 max abs error " << worst_abs << " at x = " << at_abs
            << ", max relative " << worst_rel << " at x = " << at_rel << "\n";
  EXPECT_LE(worst_abs, 1e-7);
  EXPECT_LE(worst_rel, 4e-7);
}

// The cpu backend's exact GELU x·Φ(x) in ulps of the exact value (double x·erfc/2), every 17th
// float of [1e-30, 20] and its negation: 4.4 measured, 5 allowed (Φ's relative error, plus the
// rounding of x·Φ).
TEST(CpuMath, GeluErfUlps) {
  double worst = 0, at = 0;
  std::vector<float> x, y;
  auto check = [&] {  // a chunk at a time through the kernel (its vector loop, not the scalar)
    y.resize(x.size());
    cpu::gelu_erf_forward_kernel(y.data(), x.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = double{x[i]} * 0.5 * std::erfc(-double{x[i]} / std::sqrt(2.0));
      if (std::fabs(want) < 1e-37) continue;  // beyond float's normal range (Φ underflows)
      const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
      const double err = std::fabs(y[i] - want) / ulp;
      if (err > worst) worst = err, at = x[i];
    }
    x.clear();
  };
  for_float_range(1e-30f, 20.0f, test::sweep_stride(17), [&](float v) {
    x.push_back(v);
    x.push_back(-v);
    if (x.size() >= 1 << 16) check();
  });
  check();
  std::cout << "gelu_erf max error " << worst << " ulp at x = " << at << "\n";
  EXPECT_LE(worst, 5.0);
}

TEST(CpuMath, ExpF32Accuracy) {
  double worst = 0, at = 0;
  for_float_range(1e-30f, 87.3f, test::sweep_stride(13), [&](float x) {
    const double want = std::exp(-double{x});
    const double err = std::fabs(cpu::exp_nonpos_f32(-x) - want) / want;
    if (err > worst) worst = err, at = -x;
  });
  std::cout << "exp_nonpos_f32 max relative error " << worst << " at z = " << at << "\n";
  EXPECT_LE(worst, 1.2e-7);
  EXPECT_EQ(cpu::exp_nonpos_f32(-88.0f), 0.0f);
  EXPECT_EQ(cpu::exp_nonpos_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(cpu::exp_nonpos_f32(0.0f), 1.0f);
}

}  // namespace
}  // namespace bertrt
