// Backend::attention_forward_inference and its streamed kernels (backends/cpu/f32_attention.h):
// - every kernel this CPU can run equals the scalar reference bit for bit, over odd sizes (T and
//   HS around the panels, tiles and 64-key blocks), row ranges that cut panels, padding masks,
//   keys masked by −inf and fully masked rows;
// - the scalar reference against a float64 softmax within a bound derived from its roundings;
// - the cpu backend (streamed by default) against ReferenceBackend, for 1 and 2 threads alike, and
//   its BERTRT_ATTENTION=gemm path against the training forward's unfused ops bit for bit (the same
//   sgemm calls and softmax rows); an unknown BERTRT_ATTENTION value is an error naming it;
// - packed sequences (attention_forward_varlen) against each sequence alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/f32_attention.h"
#include "backends/reference/reference_backend.h"
#include "core/error.h"
#include "op_test_util.h"
#include "test_util.h"

namespace bertrt {
namespace {

using cpu::F32Kernel;
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Head {
  int T, HS;
};

// Around every edge: 1, panels of 2/16/32 rows, tiles of 4/6/12 keys and dims, 64-key blocks
// (one, exactly two, a partial third), BERT's HS = 64; HS a multiple of 8 only or of 16 too with
// full panels (the register transposes of Q's panel and of the output: fma3 8 × 8, avx512f 16 × 16).
const Head kHeads[] = {{1, 1},   {2, 3},    {5, 7},    {16, 6},   {17, 12},  {31, 13},
                       {32, 8},  {33, 64},  {63, 5},   {64, 64},  {64, 16},  {65, 11},
                       {96, 48}, {128, 64}, {130, 70}, {200, 25}};

// Mask kinds: none, padding (−10000 on the last third), −inf on scattered keys, all −inf.
enum class MaskKind { kNone, kPadding, kSomeInf, kAllInf };

std::vector<float> make_mask(MaskKind kind, int T) {
  std::vector<float> m(size_t(T), 0.0f);
  for (int j = 0; j < T; ++j) {
    if (kind == MaskKind::kPadding && j >= T - T / 3) m[j] = -10000.0f;
    if (kind == MaskKind::kSomeInf && j % 3 == 1) m[j] = -kInf;
    if (kind == MaskKind::kAllInf) m[j] = -kInf;
  }
  return m;
}

// One head through kernel k, rows split at r_split (panels cut mid-way); Q, K, V with row stride
// ld = HS + 3, ctx with ldc = HS + 1, NaN wherever nothing should be written.
std::vector<float> run_kernel(F32Kernel k, const Head& h, const std::vector<float>& q,
                              const std::vector<float>& key, const std::vector<float>& v,
                              const float* mask, float scale, int r_split) {
  const int ld = h.HS + 3, ldc = h.HS + 1;
  std::vector<float> ctx(size_t(h.T) * ldc, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> buf(cpu::f32_attention_scratch_floats(k, h.HS) + 16);
  float* s =
      reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
  cpu::f32_attention_rows(k, ctx.data(), ldc, q.data(), key.data(), v.data(), ld, mask, h.T, h.HS,
                          scale, 0, r_split, s);
  cpu::f32_attention_rows(k, ctx.data(), ldc, q.data(), key.data(), v.data(), ld, mask, h.T, h.HS,
                          scale, r_split, h.T, s);
  return ctx;
}

TEST(F32Attention, EveryKernelEqualsTheScalarReference) {
  int compared = 0;
  for (const Head& h : kHeads)
    for (MaskKind mk : {MaskKind::kNone, MaskKind::kPadding, MaskKind::kSomeInf, MaskKind::kAllInf}) {
      const size_t n = size_t(h.T) * (h.HS + 3);
      const uint32_t seed = 7 * h.T + h.HS + 1000 * int(mk);
      // Scores up to ~±30 (× 4 on q): exercises the running max's rescaling between blocks.
      auto q = test::randn(n, seed);
      for (float& x : q) x *= 4.0f;
      const auto key = test::randn(n, seed + 1), v = test::randn(n, seed + 2);
      const auto mask = make_mask(mk, h.T);
      const float* mp = mk == MaskKind::kNone ? nullptr : mask.data();
      const float scale = 1.0f / std::sqrt(float(h.HS));
      const int split = h.T / 2 + (h.T > 2);  // not a panel boundary
      const auto want = run_kernel(F32Kernel::kScalar, h, q, key, v, mp, scale, split);
      for (int i = 0; i < h.T; ++i)
        for (int d = 0; d <= h.HS; ++d) {
          const float x = want[size_t(i) * (h.HS + 1) + d];
          ASSERT_EQ(d == h.HS, std::isnan(x)) << "T=" << h.T << " HS=" << h.HS << " row " << i;
        }
      for (F32Kernel k : cpu::kAllF32Kernels) {
        if (k == F32Kernel::kScalar || !cpu::f32_kernel_available(k)) continue;
        const auto got = run_kernel(k, h, q, key, v, mp, scale, split);
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
            << cpu::f32_kernel_name(k) << " T=" << h.T << " HS=" << h.HS << " mask " << int(mk);
        ++compared;
      }
    }
  RecordProperty("kernels_compared", compared);
}

// The scalar reference against softmax·V in float64 (two passes, exact max). Each p_j carries the
// polynomial's ≤ 2 ulp, the rescalings by α (one per block, ≤ 3 for T ≤ 200) 2 ulp each and the
// score's fma chain HS·u·Σ|q·k|, amplified by |z| ≤ ~30: the score error dominates, so the bound
// is relative to Σ_j p_j|v_j| with the score chain's bound scale·u·HS·max|q·k|·(1+|v|) spelled out.
TEST(F32Attention, ScalarReferenceAgainstFloat64Softmax) {
  for (const Head& h : kHeads)
    for (MaskKind mk : {MaskKind::kNone, MaskKind::kPadding, MaskKind::kSomeInf, MaskKind::kAllInf}) {
      const int ld = h.HS + 3, ldc = h.HS + 1;
      const size_t n = size_t(h.T) * ld;
      const uint32_t seed = 11 * h.T + h.HS + 100 * int(mk);
      const auto q = test::randn(n, seed), key = test::randn(n, seed + 1),
                 v = test::randn(n, seed + 2);
      const auto mask = make_mask(mk, h.T);
      const float* mp = mk == MaskKind::kNone ? nullptr : mask.data();
      const float scale = 1.0f / std::sqrt(float(h.HS));
      const auto got = run_kernel(F32Kernel::kScalar, h, q, key, v, mp, scale, h.T);
      const double u = std::ldexp(1.0, -24);
      for (int i = 0; i < h.T; ++i) {
        std::vector<double> z(size_t(h.T)), zabs(size_t(h.T));
        double mx = -INFINITY;
        for (int j = 0; j < h.T; ++j) {
          double s = 0, sa = 0;
          for (int d = 0; d < h.HS; ++d) {
            s += double(q[size_t(i) * ld + d]) * key[size_t(j) * ld + d];
            sa += std::fabs(double(q[size_t(i) * ld + d]) * key[size_t(j) * ld + d]);
          }
          z[j] = s * scale + (mp ? mp[j] : 0.0);
          zabs[j] = sa * scale;
          mx = std::max(mx, z[j]);
        }
        const bool uniform = mx == -INFINITY;
        double l = 0;
        std::vector<double> p(size_t(h.T));
        for (int j = 0; j < h.T; ++j) l += p[j] = uniform ? 1.0 : std::exp(z[j] - mx);
        for (int d = 0; d < h.HS; ++d) {
          double want = 0, mag = 0;
          for (int j = 0; j < h.T; ++j) {
            const double vj = v[size_t(j) * ld + d];
            want += p[j] / l * vj;
            if (p[j] == 0.0 || uniform) continue;  // a key masked by −inf; the uniform rows' sum
            // per term: (score chain HS·u·|z| + rounding of z, exp, rescales, sum, divide ~12u)
            mag += p[j] / l * std::fabs(vj) * ((h.HS + 2) * u * (zabs[j] + std::fabs(z[j] - mx)) +
                                              16 * u + 2 * h.T * u);
          }
          if (uniform) mag = 2 * h.T * u * std::fabs(want) + h.T * u;  // a T-term fma chain of v/T
          const double tol = mag + 4 * u * std::fabs(want) + 1e-30;
          ASSERT_NEAR(want, got[size_t(i) * ldc + d], tol)
              << "T=" << h.T << " HS=" << h.HS << " mask " << int(mk) << " row " << i << " d " << d;
        }
      }
    }
}

struct Case {
  int B, NH, T, HS;
};

TEST(AttentionInference, CpuBackendAgainstTheReferenceAndTheUnfusedOps) {
  CpuBackend cpu1(1), cpu2(2);
  ReferenceBackend ref;
  int n_cases = 0;
  for (Case c : {Case{1, 1, 1, 1}, Case{1, 2, 5, 7}, Case{2, 3, 17, 16}, Case{3, 4, 33, 9},
                 Case{2, 2, 64, 64}, Case{1, 4, 128, 32}, Case{2, 2, 150, 64}}) {
    for (int masked : {0, 1}) {
      const int C = c.NH * c.HS;
      const size_t N = size_t(c.B) * c.T, P = size_t(c.B) * c.NH * c.T * c.T;
      const uint32_t seed = 100 + c.B * 31 + c.T * 7 + c.HS + masked;
      const auto q = test::randn(N * C, seed), k = test::randn(N * C, seed + 1),
                 v = test::randn(N * C, seed + 2);
      std::vector<float> mask(N, 0.0f);
      if (masked) {  // sequence b keeps its first T − b·T/4 keys; the last sequence drops all
        for (int b = 0; b < c.B; ++b)
          for (int t = c.T - b * c.T / 4; t < c.T; ++t) mask[size_t(b) * c.T + t] = -10000.0f;
        if (c.B > 1)
          for (int t = 0; t < c.T; ++t) mask[size_t(c.B - 1) * c.T + t] = -kInf;
      }
      const float* mk = masked ? mask.data() : nullptr;
      const float scale = 1.0f / std::sqrt(float(c.HS));
      std::vector<float> streamed1(N * C, -1.0f), streamed2(N * C, -1.5f), gemm(N * C, -2.0f),
          unfused(N * C, -2.5f), want(N * C, -3.0f);
      std::vector<float> probs(P), scores(P);
      auto run = [&](CpuBackend& be, std::vector<float>& out) {
        be.attention_forward_inference(out.data(), nullptr, nullptr, q.data(), k.data(), v.data(),
                                       mk, c.B, c.NH, c.T, c.HS, scale);
      };
      run(cpu1, streamed1);
      run(cpu2, streamed2);
      cpu2.set_streamed_attention(false);
      run(cpu2, gemm);
      cpu2.set_streamed_attention(true);
      cpu2.Backend::attention_forward_inference(unfused.data(), probs.data(), scores.data(),
                                                q.data(), k.data(), v.data(), mk, c.B, c.NH, c.T,
                                                c.HS, scale);
      ref.attention_forward_inference(want.data(), probs.data(), scores.data(), q.data(), k.data(),
                                      v.data(), mk, c.B, c.NH, c.T, c.HS, scale);
      const std::string where = "B=" + std::to_string(c.B) + " NH=" + std::to_string(c.NH) +
                                " T=" + std::to_string(c.T) + " HS=" + std::to_string(c.HS) +
                                " masked=" + std::to_string(masked);
      ASSERT_EQ(0, std::memcmp(streamed1.data(), streamed2.data(), N * C * sizeof(float))) << where;
      ASSERT_EQ(0, std::memcmp(gemm.data(), unfused.data(), N * C * sizeof(float))) << where;
      // Against the scalar oracle: ctx is a convex combination of V rows (|v| ≲ 4), each sum
      // of T products rounded in another order.
      std::vector<double> tol(want.size(), 1e-5 * (1 + std::sqrt(double(c.T))));
      EXPECT_TRUE(test::all_close(want, streamed1, tol)) << where;
      EXPECT_TRUE(test::all_close(want, gemm, tol)) << where;
      ++n_cases;
    }
  }
  RecordProperty("cases", n_cases);
}

// Packed attention (attention_forward_varlen): each sequence of the packed rows gives, bit for
// bit, what attention_forward_inference gives it alone (B = 1, no mask) on the same backend, for
// the cpu backend's streamed and gemm paths with 1, 2 and 3 threads, the scalar reference and the
// checked backend; the cpu result matches the reference within the bound of the test above.
TEST(AttentionInference, PackedSequencesEqualEachSequenceAlone) {
  const int NH = 3, HS = 17, C = NH * HS;
  // Odd lengths around the panels (16/32 rows) and the 64-key blocks, a single-token sequence.
  const std::vector<int32_t> lens = {5, 1, 33, 64, 70, 17, 2};
  std::vector<int32_t> cu = {0};
  for (int32_t t : lens) cu.push_back(cu.back() + t);
  const int S = int(lens.size()), N = cu.back(), Tmax = 70;
  const auto q = test::randn(size_t(N) * C, 901), k = test::randn(size_t(N) * C, 902),
             v = test::randn(size_t(N) * C, 903);
  const float scale = 1.0f / std::sqrt(float(HS));
  std::vector<float> probs(size_t(NH) * Tmax * Tmax), scores(probs.size());
  auto alone = [&](Backend& be) {
    std::vector<float> out(size_t(N) * C, -7.0f);
    for (int s = 0; s < S; ++s) {
      const size_t x = size_t(cu[size_t(s)]) * C;
      be.attention_forward_inference(out.data() + x, probs.data(), scores.data(), q.data() + x,
                                     k.data() + x, v.data() + x, nullptr, 1, NH, lens[size_t(s)],
                                     HS, scale);
    }
    return out;
  };
  auto packed = [&](Backend& be) {
    std::vector<float> out(size_t(N) * C, -8.0f);
    be.attention_forward_varlen(out.data(), probs.data(), scores.data(), q.data(), k.data(),
                                v.data(), cu.data(), S, NH, HS, scale);
    return out;
  };
  auto same = [&](const std::vector<float>& a, const std::vector<float>& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  ReferenceBackend ref;
  const std::vector<float> want = alone(ref);
  EXPECT_TRUE(same(want, packed(ref)));
  std::vector<double> tol(want.size(), 1e-5 * (1 + std::sqrt(double(Tmax))));
  for (bool streamed : {true, false}) {
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      CpuBackend cpu(threads);
      cpu.set_streamed_attention(streamed);
      const std::vector<float> got = packed(cpu);
      EXPECT_TRUE(same(alone(cpu), got)) << "streamed " << streamed << ", threads " << threads;
      if (first.empty()) first = got;
      EXPECT_TRUE(same(first, got)) << "streamed " << streamed << ", threads " << threads;
      EXPECT_TRUE(test::all_close(want, got, tol)) << "streamed " << streamed;
    }
  }
  EXPECT_TRUE(ref.packed_attention());
  EXPECT_TRUE(CpuBackend(1).packed_attention());
}

TEST(AttentionInference, PathChoiceByEnvironment) {
  {
    test::ScopedEnv env("BERTRT_ATTENTION", "gemm");
    EXPECT_FALSE(CpuBackend(1).streamed_attention());
  }
  {
    test::ScopedEnv env("BERTRT_ATTENTION", "streamed");
    EXPECT_EQ(CpuBackend(1).f32_kernel() != F32Kernel::kScalar, CpuBackend(1).streamed_attention());
  }
  test::ScopedEnv env("BERTRT_ATTENTION", "flash");
  try {
    CpuBackend be(1);
    FAIL() << "BERTRT_ATTENTION=flash was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("BERTRT_ATTENTION=flash"), std::string::npos) << what;
    EXPECT_NE(what.find("streamed or gemm"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace bertrt
