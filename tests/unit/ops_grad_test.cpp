// Finite-difference checks of every backward op of the reference backend (the oracle the other
// backends are compared with, so its gradients must be right on their own): for a loss
// L = Σ_k w_k·out_k with random w, each input x_i is nudged by ±h in float and
//   (L(x_i + h) − L(x_i − h)) / (actual float step)
// is compared with the analytic gradient the backward op ACCUMULATES onto a non-zero buffer.
//
// Tolerance per element = truncation + rounding:
//   truncation: the central difference is off by h²/6·|L'''|; c3 bounds |L'''| per op (inputs and
//               weights are O(1), so the third derivatives of these smooth ops are O(1)–O(10));
//   rounding:   the outputs are floats, each within eps/2·|out_k| of the exact value, so the
//               difference quotient is off by Σ_{k changed} eps/2·|w_k|·(|out_k⁺| + |out_k⁻|)/step,
//               computed exactly from the two evaluations;
//   plus a few eps of the analytic value (stored as float, accumulated onto a non-zero buffer).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "embedding_op_cases.h"
#include "op_test_util.h"

namespace bertrt {
namespace {

using test::kEps;
using test::randn;

// Evaluates the op's outputs for the current inputs.
using Forward = std::function<std::vector<float>()>;

// d_after − d_before is the analytic gradient (the backward op accumulates onto d_before).
void check_grad(const std::string& what, std::vector<float>& x, const Forward& forward,
                const std::vector<float>& w, const std::vector<float>& d_before,
                const std::vector<float>& d_after, float h, double c3) {
  ASSERT_EQ(x.size(), d_after.size()) << what;
  for (size_t i = 0; i < x.size(); ++i) {
    const float x0 = x[i];
    x[i] = x0 + h;
    const float xp = x[i];
    const auto out_p = forward();
    x[i] = x0 - h;
    const float xm = x[i];
    const auto out_m = forward();
    x[i] = x0;
    const double step = double{xp} - xm;
    double diff = 0.0, rounding = 0.0;
    for (size_t k = 0; k < out_p.size(); ++k) {
      if (out_p[k] == out_m[k]) continue;  // unchanged outputs cancel exactly
      diff += double{w[k]} * (double{out_p[k]} - out_m[k]);
      rounding += 0.5 * kEps * std::fabs(w[k]) * (std::fabs(out_p[k]) + std::fabs(out_m[k]));
    }
    const double numeric = diff / step;
    const double analytic = double{d_after[i]} - d_before[i];
    const double tol = c3 * h * h / 6 + rounding / step +
                       4 * kEps * (std::fabs(d_after[i]) + std::fabs(d_before[i]));
    EXPECT_NEAR(analytic, numeric, tol) << what << " [" << i << "] at x = " << x0;
  }
}

ReferenceBackend be;
constexpr float kH = 1e-2f;  // with float outputs, rounding/h dominates below ~1e-2

TEST(ReferenceGrad, Gelu) {
  for (Gelu kind : {Gelu::kErf, Gelu::kTanh}) {
    const int n = 17;
    auto x = randn(n, 1, 1.5f), w = randn(n, 2), d0 = randn(n, 3);
    Forward fwd = [&] {
      std::vector<float> y(n);
      be.gelu_forward(y.data(), x.data(), n, kind);
      return y;
    };
    auto d = d0;
    be.gelu_backward(d.data(), x.data(), w.data(), n, kind);
    // |gelu'''| ≤ 1.2 for both forms (its maxima sit near |x| ≈ 0.8), times |w| ≤ 3.
    check_grad(kind == Gelu::kErf ? "gelu_erf" : "gelu_tanh", x, fwd, w, d0, d, kH, 4.0);
  }
}

TEST(ReferenceGrad, Tanh) {
  const int n = 13;
  auto x = randn(n, 4, 1.5f), w = randn(n, 5), d0 = randn(n, 6);
  Forward fwd = [&] {
    std::vector<float> y(n);
    be.tanh_forward(y.data(), x.data(), n);
    return y;
  };
  const auto y = fwd();
  auto d = d0;
  be.tanh_backward(d.data(), y.data(), w.data(), n);
  check_grad("tanh", x, fwd, w, d0, d, kH, 2.0 * 3);  // |tanh'''| ≤ 2
}

TEST(ReferenceGrad, LayerNorm) {
  const int rows = 3, C = 13;
  auto x = randn(rows * C, 10, 1.0f, 0.5f), wt = randn(C, 11, 0.2f, 1.0f), b = randn(C, 12, 0.2f);
  auto w = randn(rows * C, 13);
  std::vector<float> mean(rows), rstd(rows);
  Forward fwd = [&] {
    std::vector<float> y(rows * C);
    be.layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), wt.data(), b.data(), rows,
                         C, 1e-5f);
    return y;
  };
  fwd();  // mean, rstd at the unperturbed point
  auto dx0 = randn(rows * C, 14), dw0 = randn(C, 15), db0 = randn(C, 16);
  auto dx = dx0, dw = dw0, db = db0;
  const auto m0 = mean, r0 = rstd;
  be.layernorm_backward(dx.data(), dw.data(), db.data(), w.data(), x.data(), wt.data(), m0.data(),
                        r0.data(), rows, C);
  // L is linear in weight and bias (c3 = 0); in x the normalisation's third derivative scales with
  // rstd³·Σ|w| (rstd ≈ 1 here): c3 = 100 is a generous O(C) allowance.
  check_grad("layernorm dinp", x, fwd, w, dx0, dx, kH, 100.0);
  check_grad("layernorm dweight", wt, fwd, w, dw0, dw, kH, 0.0);
  check_grad("layernorm dbias", b, fwd, w, db0, db, kH, 0.0);
}

TEST(ReferenceGrad, SoftmaxWithMaskAndScale) {
  const int B = 2, NH = 2, T = 7;
  const float scale = 0.35f;
  auto s = randn(B * NH * T * T, 20, 2.0f), w = randn(B * NH * T * T, 21);
  std::vector<float> mask(B * T, 0.0f);
  mask[2] = -10000.0f;                                  // batch 0 drops key 2
  for (int j = 4; j < T; ++j) mask[T + j] = -10000.0f;  // batch 1 drops keys 4..6
  Forward fwd = [&] {
    std::vector<float> p(s.size());
    be.softmax_forward(p.data(), s.data(), mask.data(), B, NH, T, scale);
    return p;
  };
  const auto p = fwd();
  auto d0 = randn(s.size(), 22);
  auto d = d0;
  be.softmax_backward(d.data(), p.data(), w.data(), B * NH * T, T, scale);
  // Masked keys have probability 0 and gradient 0 both ways. The softmax's third derivative is
  // bounded by a small constant times scale³·max|w|.
  check_grad("softmax dscores", s, fwd, w, d0, d, kH, 4.0);
  for (int i = 0; i < T; ++i) EXPECT_EQ(d[2 + i * T], d0[2 + i * T]) << "masked key got a gradient";
}

TEST(ReferenceGrad, EmbeddingRepeatedIds) {
  const int V = 5, C = 4;
  const std::vector<int32_t> ids = {1, 3, 1, 4, 1, 0};
  const int n = static_cast<int>(ids.size());
  auto table = randn(V * C, 30), out0 = randn(n * C, 31), w = randn(n * C, 32);
  Forward fwd = [&] {
    auto out = out0;
    be.embedding_forward(out.data(), ids.data(), table.data(), n, C);
    return out;
  };
  auto d0 = randn(V * C, 33);
  auto d = d0;
  be.embedding_backward(d.data(), ids.data(), w.data(), n, C);
  check_grad("embedding dtable", table, fwd, w, d0, d, kH, 0.0);  // linear
  for (int c = 0; c < C; ++c) EXPECT_EQ(d[2 * C + c], d0[2 * C + c]) << "unused row 2 changed";
}

TEST(ReferenceGrad, Bias) {
  const int rows = 4, cols = 7;
  auto bias = randn(cols, 40), out0 = randn(rows * cols, 41), w = randn(rows * cols, 42);
  Forward fwd = [&] {
    auto out = out0;
    be.bias_add(out.data(), bias.data(), rows, cols);
    return out;
  };
  auto d0 = randn(cols, 43);
  auto d = d0;
  be.bias_backward(d.data(), w.data(), rows, cols);
  check_grad("bias", bias, fwd, w, d0, d, kH, 0.0);  // linear
}

// The loss comes back in double, so L itself carries no float rounding: a smaller h works.
TEST(ReferenceGrad, CrossEntropyWithIgnoredRow) {
  const int rows = 4, V = 7;
  const std::vector<int32_t> t = {2, -100, 6, 0};
  const float gs = 1.0f / 3;  // mean over the 3 counted rows
  auto z = randn(rows * V, 50, 2.0f);
  std::vector<float> dz(rows * V, 99.0f);  // overwritten, not accumulated
  test::ce_sum(be, dz.data(), z.data(), t.data(), rows, V, gs);
  const float h = 1e-3f;
  for (size_t i = 0; i < z.size(); ++i) {
    const float z0 = z[i];
    z[i] = z0 + h;
    const float zp = z[i];
    const double lp = gs * test::ce_sum(be, nullptr, z.data(), t.data(), rows, V, gs);
    z[i] = z0 - h;
    const float zm = z[i];
    const double lm = gs * test::ce_sum(be, nullptr, z.data(), t.data(), rows, V, gs);
    z[i] = z0;
    const double numeric = (lp - lm) / (double{zp} - zm);
    // log-sum-exp has |third derivative| ≤ 1 (times gs); the float dlogits carry eps/2.
    const double tol = gs * h * h / 6 + kEps * std::fabs(dz[i]) + 1e-12;
    EXPECT_NEAR(dz[i], numeric, tol) << "dlogits [" << i << "]";
  }
  for (int j = 0; j < V; ++j) EXPECT_EQ(dz[V + j], 0.0f) << "ignored row must get zero gradient";
}

// C = op(A)·op(B): dA and dB from the GEMM itself (dA = dC·op(B)ᵀ, dB = op(A)ᵀ·dC), for the plain
// and the nn.Linear (B stored [N, K]) layouts. L is bilinear: zero truncation error.
TEST(ReferenceGrad, Gemm) {
  const int M = 3, N = 5, K = 4;
  for (bool tb : {false, true}) {
    auto A = randn(M * K, 60), B = randn(K * N, 61), w = randn(M * N, 62);
    const int ldb = tb ? K : N;
    Forward fwd = [&] {
      std::vector<float> C(M * N);
      be.gemm(false, tb, M, N, K, 1.0f, A.data(), K, B.data(), ldb, 0.0f, C.data(), N);
      return C;
    };
    auto dA0 = randn(M * K, 63), dB0 = randn(K * N, 64);
    auto dA = dA0, dB = dB0;
    // dA[M,K] += dC[M,N]·op(B)ᵀ: op(B)ᵀ is B itself when tb (stored [N,K]), else Bᵀ.
    be.gemm(false, !tb, M, K, N, 1.0f, w.data(), N, B.data(), ldb, 1.0f, dA.data(), K);
    if (tb)  // dB[N,K] += dCᵀ[N,M]·A[M,K]
      be.gemm(true, false, N, K, M, 1.0f, w.data(), N, A.data(), K, 1.0f, dB.data(), K);
    else     // dB[K,N] += Aᵀ[K,M]·dC[M,N]
      be.gemm(true, false, K, N, M, 1.0f, A.data(), K, w.data(), N, 1.0f, dB.data(), N);
    const std::string tag = tb ? " (B as [N,K])" : "";
    check_grad("gemm dA" + tag, A, fwd, w, dA0, dA, kH, 0.0);
    check_grad("gemm dB" + tag, B, fwd, w, dB0, dB, kH, 0.0);
  }
}

// Every pooling mode on a batch with a full row, an empty one, skipped prompts and a prompt past
// the text (embedding_op_cases.h). Each mode is linear in hidden, or piecewise linear (max: the
// inputs are 1/16 apart in every column, so ±h never changes the maximum's position): c3 = 0.
TEST(ReferenceGrad, PoolTokensEveryMode) {
  const int B = 6, T = 5, H = 3, ld = H + 2;
  for (Pooling mode : test::all_poolings()) {
    test::PoolInputs in = test::pool_inputs(B, T, H, 70);
    auto w = randn(size_t(B) * ld, 71);
    Forward fwd = [&] {
      std::vector<float> out(size_t(B) * ld, 0.0f);
      be.pool_tokens(out.data(), ld, in.hidden.data(), in.mask.data(), in.prompt.data(), B, T, H,
                     mode);
      return out;
    };
    auto d0 = randn(in.hidden.size(), 72);
    auto d = d0;
    be.pool_tokens_backward(d.data(), w.data(), ld, in.hidden.data(), in.mask.data(),
                            in.prompt.data(), B, T, H, mode);
    check_grad("pool_tokens " + test::pooling_label(mode), in.hidden, fwd, w, d0, d, kH, 0.0);
  }
}

// x / max(‖x‖, 1e-12) on the first cols of rows with a wider stride. Its third derivative is
// O(1/‖x‖³) per unit of Σ|w|; ‖x‖ ≈ √cols ≈ 3 here, c3 = 10 allows for it.
TEST(ReferenceGrad, L2NormalizeRows) {
  const int rows = 3, cols = 9, ld = 11;
  auto x = randn(size_t(rows) * ld, 80), w = randn(size_t(rows) * cols, 81);
  Forward fwd = [&] {
    std::vector<float> y(size_t(rows) * cols);
    be.l2_normalize_rows(y.data(), x.data(), ld, rows, cols);
    return y;
  };
  auto d0 = randn(x.size(), 82);
  auto d = d0;
  be.l2_normalize_rows_backward(d.data(), ld, x.data(), ld, w.data(), rows, cols);
  check_grad("l2_normalize_rows", x, fwd, w, d0, d, kH, 10.0);
  for (int r = 0; r < rows; ++r)  // the columns past the cut get no gradient
    for (int c = cols; c < ld; ++c) EXPECT_EQ(d[size_t(r) * ld + c], d0[size_t(r) * ld + c]);
}

// The loss is a double: h = 1e-3 on the cosines. Its third derivative is bounded by ~scale³
// (a log-sum-exp of scale·(cos_i − cos_j)); the float dcos carry a few eps.
TEST(ReferenceGrad, CosentLoss) {
  const int n = 7;
  const float scale = 5.0f, gs = 0.5f;
  std::vector<float> cos, labels;
  test::cosent_inputs(n, 90, cos, labels);
  std::vector<float> dcos(n, 99.0f);  // overwritten, not accumulated
  double loss = 0;
  be.cosent_loss(dcos.data(), &loss, cos.data(), labels.data(), n, scale, gs);
  const float h = 1e-3f;
  for (int i = 0; i < n; ++i) {
    const float c0 = cos[size_t(i)];
    double lp = 0, lm = 0;
    cos[size_t(i)] = c0 + h;
    const float cp = cos[size_t(i)];
    be.cosent_loss(nullptr, &lp, cos.data(), labels.data(), n, scale, gs);
    cos[size_t(i)] = c0 - h;
    const float cm = cos[size_t(i)];
    be.cosent_loss(nullptr, &lm, cos.data(), labels.data(), n, scale, gs);
    cos[size_t(i)] = c0;
    const double numeric = gs * (lp - lm) / (double{cp} - cm);
    const double tol = gs * 2 * scale * scale * scale * h * h / 6 + 4 * kEps * std::fabs(dcos[size_t(i)]) + 1e-9;
    EXPECT_NEAR(dcos[size_t(i)], numeric, tol) << "dcos [" << i << "]";
  }
  // A batch without any pair (equal labels): log(1) = 0, no gradient.
  const std::vector<float> same(n, 0.5f);
  be.cosent_loss(dcos.data(), &loss, cos.data(), same.data(), n, scale, gs);
  EXPECT_EQ(loss, 0.0);
  for (float g : dcos) EXPECT_EQ(g, 0.0f);
}

}  // namespace
}  // namespace bertrt
