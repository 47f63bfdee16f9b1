// The sentence-embedding head's ops (pool_tokens and its backward, l2_normalize_rows and its
// backward, cosent_loss): inputs with awkward sizes and masks, runners that go through backend
// memory (upload, op, download: the same code for reference, cpu and Vulkan), and the
// comparisons with tolerances from the arithmetic each backend does. Used by ops_test (cpu vs
// reference), cpu_threads_test and vulkan_embedding_ops_test.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <tuple>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/device_array.h"
#include "op_test_util.h"

namespace bertrt::test {

inline const std::vector<Pooling>& all_poolings() {
  static const std::vector<Pooling> p = {Pooling::kCls,         Pooling::kMax,
                                         Pooling::kMean,        Pooling::kMeanSqrtLen,
                                         Pooling::kWeightedMean, Pooling::kLastToken};
  return p;
}

inline std::string pooling_label(Pooling p) {
  static const char* names[] = {"cls", "max", "mean", "mean_sqrt_len", "weightedmean", "lasttoken"};
  return names[int(p)];
}

// A padded batch: sequence b holds len[b] tokens then padding, and skips its first prompt[b]
// (include_prompt=false). The lengths cover a full row, an empty one (every position masked), a
// prompt as long as the text and a prompt past it; hidden values are distinct multiples of 1/64
// per column (max has no ties, so its gradient is well defined under ±1e-2 nudges) plus noise.
struct PoolInputs {
  int B = 0, T = 0, H = 0;
  std::vector<float> hidden;        // [B, T, H]
  std::vector<int32_t> mask, prompt;  // [B, T], [B]
};

inline PoolInputs pool_inputs(int B, int T, int H, uint32_t seed) {
  PoolInputs in{B, T, H, {}, std::vector<int32_t>(size_t(B) * T, 0), std::vector<int32_t>(B, 0)};
  std::mt19937 rng(seed);
  for (int b = 0; b < B; ++b) {
    int len = b == 0 ? T : b == 1 ? 0 : 1 + int(rng() % uint32_t(T));
    int skip = b % 4 == 2 ? len : b % 4 == 3 ? int(rng() % uint32_t(len + 1)) : 0;
    if (b == 4) skip = len + 1;  // past the text: nothing counted
    for (int t = 0; t < len; ++t) in.mask[size_t(b) * T + t] = 1 + int(rng() % 3);  // != 0 counts
    in.prompt[size_t(b)] = skip;
  }
  in.hidden.resize(size_t(B) * T * H);
  std::vector<int> order(static_cast<size_t>(T));
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < H; ++c) {
      for (int t = 0; t < T; ++t) order[size_t(t)] = t;
      std::shuffle(order.begin(), order.end(), rng);
      for (int t = 0; t < T; ++t)
        in.hidden[(size_t(b) * T + t) * H + c] =
            float(order[size_t(t)] - T / 2) / 16.0f + float(rng() % 1000) / 64000.0f;
    }
  return in;
}

template <class T>
T* to_backend(Backend& be, DeviceArray<T>& d, const std::vector<T>& h) {
  d.ensure(be, h.size());
  if (!h.empty()) be.upload(d.data(), h.data(), h.size() * sizeof(T));
  return d.data();
}

// pool_tokens into out [B, ldo] pre-filled with 7 (the padding columns must come back as 7).
inline std::vector<float> run_pool(Backend& be, const PoolInputs& in, Pooling mode, int ldo) {
  DeviceArray<float> h, o;
  DeviceArray<int32_t> m, p;
  const std::vector<float> out0(size_t(in.B) * ldo, 7.0f);
  float* out = to_backend(be, o, out0);
  be.pool_tokens(out, ldo, to_backend(be, h, in.hidden), to_backend(be, m, in.mask),
                 to_backend(be, p, in.prompt), in.B, in.T, in.H, mode);
  return read_back(be, static_cast<const float*>(out), out0.size());
}

// pool_tokens_backward from dout [B, ldd] onto dhidden0.
inline std::vector<float> run_pool_backward(Backend& be, const PoolInputs& in, Pooling mode,
                                            const std::vector<float>& dout, int ldd,
                                            const std::vector<float>& dhidden0) {
  DeviceArray<float> h, d, dh;
  DeviceArray<int32_t> m, p;
  float* g = to_backend(be, dh, dhidden0);
  be.pool_tokens_backward(g, to_backend(be, d, dout), ldd, to_backend(be, h, in.hidden),
                          to_backend(be, m, in.mask), to_backend(be, p, in.prompt), in.B, in.T,
                          in.H, mode);
  return read_back(be, static_cast<const float*>(g), dhidden0.size());
}

inline std::vector<float> run_l2(Backend& be, const std::vector<float>& x, int ldx, int rows,
                                 int cols) {
  DeviceArray<float> dx, dy;
  float* y = dy.ensure(be, size_t(rows) * cols);
  be.l2_normalize_rows(y, to_backend(be, dx, x), ldx, rows, cols);
  return read_back(be, static_cast<const float*>(y), size_t(rows) * cols);
}

inline std::vector<float> run_l2_backward(Backend& be, const std::vector<float>& x, int ldx,
                                          const std::vector<float>& dy, int rows, int cols,
                                          const std::vector<float>& dx0, int lddx) {
  DeviceArray<float> a, b, c;
  float* dx = to_backend(be, c, dx0);
  be.l2_normalize_rows_backward(dx, lddx, to_backend(be, a, x), ldx, to_backend(be, b, dy), rows,
                                cols);
  return read_back(be, static_cast<const float*>(dx), dx0.size());
}

// The loss and dcos of cosent_loss.
inline std::pair<double, std::vector<float>> run_cosent(Backend& be, const std::vector<float>& cos,
                                                        const std::vector<float>& labels,
                                                        float scale, float grad_scale) {
  DeviceArray<float> c, l, d;
  DeviceArray<double> loss(be, 1);
  const int n = int(cos.size());
  float* dc = d.ensure(be, std::max<size_t>(cos.size(), 1));
  be.cosent_loss(dc, loss.data(), to_backend(be, c, cos), to_backend(be, l, labels), n, scale,
                 grad_scale);
  const double value = read_back(be, static_cast<const double*>(loss.data()), 1)[0];
  return {value, read_back(be, static_cast<const float*>(dc), cos.size())};
}

// Rows of x with a zero row (the 1e-12 clamp) and one of tiny values.
inline std::vector<float> l2_inputs(int rows, int ld, uint32_t seed) {
  std::vector<float> x = randn(size_t(rows) * ld, seed);
  if (rows > 1) std::fill_n(x.begin() + ld, ld, 0.0f);
  if (rows > 2)
    for (int c = 0; c < ld; ++c) x[size_t(2) * ld + c] *= 1e-3f;
  return x;
}

// Cosines in [-1, 1] and labels with ties (equal labels form no pair).
inline void cosent_inputs(int n, uint32_t seed, std::vector<float>& cos, std::vector<float>& labels) {
  cos = uniform(size_t(n), seed, -1.0f, 1.0f);
  labels.resize(size_t(n));
  std::mt19937 rng(seed + 1);
  for (float& l : labels) l = float(rng() % 5) / 4.0f;
}

// --- tolerances (a backend against the reference, which sums in double and rounds once) ------

// Weighted poolings summed in float over T positions: ≤ (T + 2)·eps·Σ w|h| / divisor (Higham
// §3.1, the division and the final rounding included); the others copy or compare: exact.
inline std::vector<double> pool_tolerance(const PoolInputs& in, Pooling mode, int ldo) {
  std::vector<double> tol(size_t(in.B) * ldo, 0.0);
  if (mode == Pooling::kCls || mode == Pooling::kMax || mode == Pooling::kLastToken) return tol;
  for (int b = 0; b < in.B; ++b) {
    double div = 0;
    auto w = [&](int t) {
      const bool on = in.mask[size_t(b) * in.T + t] != 0 && t >= in.prompt[size_t(b)];
      return on ? (mode == Pooling::kWeightedMean ? double(t + 1) : 1.0) : 0.0;
    };
    for (int t = 0; t < in.T; ++t) div += w(t);
    div = std::max(div, 1e-9);
    if (mode == Pooling::kMeanSqrtLen) div = std::sqrt(div);
    for (int c = 0; c < in.H; ++c) {
      double s = 0;
      for (int t = 0; t < in.T; ++t) s += w(t) * std::fabs(in.hidden[(size_t(b) * in.T + t) * in.H + c]);
      tol[size_t(b) * ldo + c] = (in.T + 3) * kEps * s / div;
    }
  }
  return tol;
}

// The backward: one add per element (exact for cls, max, lasttoken), and for the weighted modes
// d·w/div in float (three roundings) added to the buffer: 4·eps·(|dhidden0| + |d·w/div|).
inline std::vector<double> pool_backward_tolerance(const PoolInputs& in, Pooling mode,
                                                   const std::vector<float>& dout, int ldd,
                                                   const std::vector<float>& dh0) {
  std::vector<double> tol(dh0.size(), 0.0);
  for (size_t i = 0; i < dh0.size(); ++i) tol[i] = 2 * kEps * std::fabs(dh0[i]);
  if (mode == Pooling::kCls || mode == Pooling::kMax || mode == Pooling::kLastToken) {
    for (size_t i = 0; i < dh0.size(); ++i) {
      const int b = int(i / (size_t(in.T) * in.H)), c = int(i % size_t(in.H));
      tol[i] += 2 * kEps * std::fabs(dout[size_t(b) * ldd + c]);  // one float add, any order
    }
    return tol;
  }
  for (int b = 0; b < in.B; ++b) {
    double div = 0;
    for (int t = 0; t < in.T; ++t)
      if (in.mask[size_t(b) * in.T + t] != 0 && t >= in.prompt[size_t(b)])
        div += mode == Pooling::kWeightedMean ? t + 1 : 1;
    div = std::max(div, 1e-9);
    if (mode == Pooling::kMeanSqrtLen) div = std::sqrt(div);
    for (int t = 0; t < in.T; ++t)
      for (int c = 0; c < in.H; ++c) {
        const size_t i = (size_t(b) * in.T + t) * in.H + c;
        const double w = mode == Pooling::kWeightedMean ? t + 1 : 1;
        tol[i] += 4 * kEps * (std::fabs(dh0[i]) + std::fabs(dout[size_t(b) * ldd + c]) * w / div);
      }
  }
  return tol;
}

// y = x / ‖x‖: the squared norm summed in float by a backend that does (`float_sums`, a tree or a
// loop of `cols` terms: ≤ cols·eps relative, half of it in the norm), then the root and the
// division: (cols/2 + 3)·eps·|y|; with the norm in double, 3·eps·|y|.
inline std::vector<double> l2_tolerance(const std::vector<float>& want, int cols, bool float_sums) {
  std::vector<double> tol(want.size());
  for (size_t i = 0; i < want.size(); ++i)
    tol[i] = ((float_sums ? cols / 2.0 : 0.0) + 3) * kEps * std::fabs(want[i]) + 1e-30;
  return tol;
}

// dx += (dy − y·(y·dy)) / ‖x‖: the terms' magnitudes |dy| + |y|·Σ|y·dy| over ‖x‖, each off by
// (cols + 4)·eps with float sums (the dot product and the norm), 4·eps without; plus the add.
inline std::vector<double> l2_backward_tolerance(const std::vector<float>& x, int ldx,
                                                 const std::vector<float>& dy,
                                                 const std::vector<float>& dx0, int lddx, int rows,
                                                 int cols, bool float_sums) {
  std::vector<double> tol(dx0.size(), 0.0);
  for (size_t i = 0; i < dx0.size(); ++i) tol[i] = 2 * kEps * std::fabs(dx0[i]);
  for (int r = 0; r < rows; ++r) {
    double ss = 0, yg = 0;
    for (int c = 0; c < cols; ++c) ss += double(x[size_t(r) * ldx + c]) * x[size_t(r) * ldx + c];
    const double norm = std::sqrt(ss);
    const double div = std::max(norm, 1e-12);
    for (int c = 0; c < cols; ++c)
      yg += std::fabs(x[size_t(r) * ldx + c] / div * dy[size_t(r) * cols + c]);
    for (int c = 0; c < cols; ++c) {
      const double y = std::fabs(x[size_t(r) * ldx + c]) / div;
      const double mag = (std::fabs(dy[size_t(r) * cols + c]) + y * yg) / div;
      tol[size_t(r) * lddx + c] += ((float_sums ? cols : 0) + 4) * kEps * mag;
    }
  }
  return tol;
}

// CoSENT in float against the reference's double: each z = scale·(cos_i − cos_j) is off by
// ≤ 2·eps·|z|, the exp of it by that plus ~2 eps, and the n² terms' sum by ≤ (n²/G + log2 G)
// ·eps relative (G ≥ 1 threads, so n²); the loss (a log) absorbs that as an absolute error, and
// each dcos_k, a ratio of such sums, as a relative one. Exact (0) when the backend runs the
// reference's code (`exact`).
inline ::testing::AssertionResult compare_cosent(Backend& ref, Backend& other, int n, float scale,
                                                 bool exact, uint32_t seed) {
  std::vector<float> cos, labels;
  cosent_inputs(n, seed, cos, labels);
  const auto [l1, d1] = run_cosent(ref, cos, labels, scale, 0.5f);
  const auto [l2, d2] = run_cosent(other, cos, labels, scale, 0.5f);
  const double rel = exact ? 0.0 : (double(n) * n + 4 * 2 * scale + 16) * kEps;
  if (!(std::fabs(l1 - l2) <= rel * (1 + std::fabs(l1))))
    return ::testing::AssertionFailure() << "loss " << l2 << " vs reference " << l1;
  // |dcos_k| ≤ 0.5·scale·(Σ_j p_kj + Σ_j p_jk) ≤ 0.5·scale: the bound times rel.
  return all_close(d1, d2, {rel * 0.5 * scale + (exact ? 0.0 : kEps)});
}

struct EmbeddingOpCase {
  Op op;
  std::string label;
  std::function<::testing::AssertionResult(Backend& ref, Backend& other)> check;
};

// Odd sizes (1, primes, beyond a 256-thread workgroup), every pooling mode, an output or
// gradient row stride wider than H (the modes of a head side by side) and Matryoshka cuts.
// float_sums: the backend under test sums norms in float (Vulkan) and runs its own CoSENT.
inline std::vector<EmbeddingOpCase> embedding_op_cases(bool float_sums) {
  std::vector<EmbeddingOpCase> cases;
  struct Shape {
    int B, T, H;
  };
  const std::vector<Shape> shapes = {{1, 1, 1}, {5, 7, 3}, {6, 13, 17}, {7, 33, 31}, {3, 65, 257}};
  uint32_t seed = 900;
  for (Pooling mode : all_poolings())
    for (const Shape& s : shapes) {
      const std::string tag = pooling_label(mode) + "_" + std::to_string(s.B) + "x" +
                              std::to_string(s.T) + "x" + std::to_string(s.H);
      const uint32_t sd = seed += 7;
      cases.push_back({Op::kPoolTokens, "pool_tokens_" + tag, [=](Backend& r, Backend& c) {
                         const PoolInputs in = pool_inputs(s.B, s.T, s.H, sd);
                         const int ldo = s.H + 3;
                         const auto want = run_pool(r, in, mode, ldo);
                         std::vector<double> tol = pool_tolerance(in, mode, ldo);
                         return all_close(want, run_pool(c, in, mode, ldo), tol);
                       }});
      cases.push_back({Op::kPoolTokensBackward, "pool_tokens_backward_" + tag,
                       [=](Backend& r, Backend& c) {
                         const PoolInputs in = pool_inputs(s.B, s.T, s.H, sd);
                         const int ldd = s.H + 2;
                         const auto dout = randn(size_t(s.B) * ldd, sd + 1);
                         const auto dh0 = randn(in.hidden.size(), sd + 2);
                         const auto want = run_pool_backward(r, in, mode, dout, ldd, dh0);
                         return all_close(want, run_pool_backward(c, in, mode, dout, ldd, dh0),
                                          pool_backward_tolerance(in, mode, dout, ldd, dh0));
                       }});
    }
  for (auto [rows, cols, ld] : {std::tuple{1, 1, 1}, std::tuple{3, 7, 7}, std::tuple{5, 13, 17},
                                std::tuple{17, 31, 31}, std::tuple{4, 257, 300},
                                std::tuple{2, 1000, 1001}}) {
    const int R = rows, C = cols, L = ld;  // C++17 lambdas cannot capture structured bindings
    const std::string tag = std::to_string(R) + "x" + std::to_string(C) + "_ld" + std::to_string(L);
    cases.push_back({Op::kL2NormalizeRows, "l2_normalize_rows_" + tag, [=](Backend& r, Backend& c) {
                       const auto x = l2_inputs(R, L, 950 + C);
                       const auto want = run_l2(r, x, L, R, C);
                       return all_close(want, run_l2(c, x, L, R, C),
                                        l2_tolerance(want, C, float_sums));
                     }});
    cases.push_back({Op::kL2NormalizeRowsBackward, "l2_normalize_rows_backward_" + tag,
                     [=](Backend& r, Backend& c) {
                       const auto x = l2_inputs(R, L, 960 + C);
                       const auto dy = randn(size_t(R) * C, 961 + C);
                       const int lddx = L + 1;
                       const auto dx0 = randn(size_t(R) * lddx, 962 + C);
                       const auto want = run_l2_backward(r, x, L, dy, R, C, dx0, lddx);
                       // The clamped row's dy / 1e-12 is ~1e12: relative tolerance there too.
                       return all_close(want, run_l2_backward(c, x, L, dy, R, C, dx0, lddx),
                                        l2_backward_tolerance(x, L, dy, dx0, lddx, R, C, float_sums));
                     }});
  }
  for (int n : {0, 1, 2, 7, 33, 300})
    for (float scale : {1.0f, 20.0f})
      cases.push_back({Op::kCosentLoss,
                       "cosent_loss_" + std::to_string(n) + "_scale" + std::to_string(int(scale)),
                       [=](Backend& r, Backend& c) {
                         return compare_cosent(r, c, n, scale, !float_sums, 970 + n);
                       }});
  return cases;
}

}  // namespace bertrt::test
