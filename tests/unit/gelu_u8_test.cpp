// The int8 FFN's GELU + quantization (backends/cpu/gelu_u8.h) against the op's reference, the two
// exact kernels in turn (gelu_erf_forward_kernel, quantize_u8_kernel): the same integers for every
// input, bit-exact, with inputs placed on the integers' rounding boundaries, where a fast GELU
// that is merely close would round the other way. And the bound the fast path's certificate
// rests on, |table GELU − exact kernel's GELU| ≤ E0 + E1·|table GELU|, measured.
#include "backends/cpu/gelu_u8.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <vector>

#include "backends/cpu/f32_gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/quant_kernels.h"
#include "op_test_util.h"

namespace bertrt {
namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Every step-th float of [−hi, hi] (both signs), by bit pattern.
std::vector<float> float_sweep(float hi, uint32_t step) {
  std::vector<float> x;
  for (uint32_t b = 0; b <= bits(hi); b += step) {
    x.push_back(from_bits(b));
    x.push_back(-from_bits(b));
  }
  return x;
}

std::vector<float> exact_gelu(const std::vector<float>& x) {
  std::vector<float> g(x.size());
  cpu::gelu_erf_forward_kernel(g.data(), x.data(), x.size());
  return g;
}

std::vector<uint8_t> reference(const std::vector<float>& x, float inv, int zp) {
  const std::vector<float> g = exact_gelu(x);
  std::vector<uint8_t> q(x.size());
  cpu::quantize_u8_kernel(q.data(), g.data(), g.size(), inv, zp);
  return q;
}

std::vector<uint8_t> fused(cpu::F32Kernel k, const std::vector<float>& x, float inv, int zp) {
  std::vector<uint8_t> q(x.size());
  cpu::gelu_erf_quantize_u8(k, q.data(), x.data(), 1, static_cast<int>(x.size()), x.size(),
                            x.size(), inv, zp);
  return q;
}

// Every path this CPU runs: the table paths, and the scalar one (the exact kernels through the
// dispatcher's rows: all that runs where no table path exists, aarch64).
std::vector<cpu::F32Kernel> paths() {
  std::vector<cpu::F32Kernel> ks;
  for (cpu::F32Kernel k : cpu::kAllF32Kernels)
    if (cpu::f32_kernel_available(k)) ks.push_back(k);
  return ks;
}

size_t first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return i;
  return a.size();
}

// Inputs on the rounding boundaries of (inv, zp): for every code, the float x where the exact
// t = GELU(x)·inv crosses the code's half-way point (bisection over float bit patterns on the
// two monotone branches of GELU, x ≥ −0.7518 rising and x ≤ −0.7518 falling), and the 4 floats on
// each side of it.
std::vector<float> boundary_inputs(float inv, int zp) {
  auto t_of = [&](float x) {
    float g;
    cpu::gelu_erf_forward_kernel(&g, &x, 1);
    return g * inv;
  };
  std::vector<float> out;
  auto crossings = [&](float a, float b) {  // t monotone on [a, b] (a < b, same sign or a < 0 < b)
    const float ta = t_of(a), tb = t_of(b);
    const bool rising = tb > ta;
    const float lo = std::fmin(ta, tb), hi = std::fmax(ta, tb);
    for (int code = -zp; code <= 255 - zp; ++code) {
      const float half = static_cast<float>(code) + 0.5f;
      if (!(half > lo && half < hi)) continue;
      // Map floats to a monotone integer scale, bisect there.
      auto key = [](float f) {
        const int64_t b = bits(f) & 0x7fffffffu;
        return f < 0 ? -b : b;
      };
      auto unkey = [](int64_t k) {
        return k < 0 ? -from_bits(uint32_t(-k)) : from_bits(uint32_t(k));
      };
      int64_t l = key(a), h = key(b);
      while (h - l > 1) {
        const int64_t m = l + (h - l) / 2;
        ((t_of(unkey(m)) < half) == rising ? l : h) = m;
      }
      for (int64_t k = l - 4; k <= l + 5; ++k) out.push_back(unkey(k));
    }
  };
  crossings(-9.0f, -0.7518f);
  crossings(-0.7518f, 12.0f);
  return out;
}

struct Quant {
  float scale;
  int zp;
};
// BERT's ranges: GELU ≥ −0.17, so the zero point sits low; a fine grid, a coarse one, one whose
// codes saturate early, and zero point 0 (the negative values clip).
constexpr Quant kQuants[] = {{0.03f, 6}, {0.0021f, 81}, {0.25f, 1}, {0.0004f, 200}, {7.0f, 0}};

// The worst |table − exact| / (E0 + E1·|table|) over a float sweep and every float near a join.
template <int N, int D>
void expect_within_bound(const cpu::GeluTable<N, D>& table, const char* name) {
  std::vector<float> x = float_sweep(7.0f, test::sweep_stride(101));  // sparser under qemu, ASan
  for (int i = 0; i <= N; ++i) {  // every float within 64 ulps of each join: the index may be off
    const float join = table.lo + static_cast<float>(i) * table.width;
    for (int d = -64; d <= 64; ++d) {
      const float f = join == 0.0f ? from_bits(std::abs(d)) * (d < 0 ? -1.0f : 1.0f)
                                   : from_bits(static_cast<uint32_t>(int64_t(bits(join)) + d));
      x.push_back(f);
    }
  }
  const std::vector<float> g = exact_gelu(x);
  double worst = 0;
  float at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float t = cpu::gelu_table_f32(table, x[i]);
    const double r = std::fabs(double(t) - double(g[i])) /
                     (double(cpu::kGeluTableE0) + double(cpu::kGeluTableE1) * std::fabs(t));
    if (r > worst) worst = r, at = x[i];
  }
  std::cout << name << ": " << x.size()
            << " inputs; worst |table − exact| / (E0 + E1·|table|) = " << worst << " at x = " << at
            << "\n";
  EXPECT_LE(worst, 1.0) << name << " at x = " << at;
}

// The tables of the paths this CPU runs (the bound is against this platform's exact kernel).
TEST(GeluU8, TablesWithinTheirBoundOfTheExactKernel) {
  bool any = false;
  if (cpu::f32_kernel_available(cpu::F32Kernel::kAvx512f))
    expect_within_bound(cpu::kGeluTable32, "kGeluTable32"), any = true;
  if (cpu::f32_kernel_available(cpu::F32Kernel::kFma3))
    expect_within_bound(cpu::kGeluTable8, "kGeluTable8"), any = true;
  if (!any) GTEST_SKIP() << "no table path on this CPU (the exact kernels run)";
}

TEST(GeluU8, SameIntegersAsTheExactKernelsOnTheRoundingBoundaries) {
  for (cpu::F32Kernel k : paths()) {
    std::cout << "path: " << cpu::f32_kernel_name(k) << "\n";
    for (const Quant& qp : kQuants) {
      const float inv = 1.0f / qp.scale;
      const std::vector<float> x = boundary_inputs(inv, qp.zp);
      ASSERT_GE(x.size(), 20u) << "scale " << qp.scale;  // 2 crossings for scale 7, 100s for BERT's
      const auto want = reference(x, inv, qp.zp), got = fused(k, x, inv, qp.zp);
      const size_t i = first_difference(want, got);
      EXPECT_EQ(i, x.size()) << cpu::f32_kernel_name(k) << " scale " << qp.scale << " zp " << qp.zp
                             << ": x = " << x[i] << " gives " << int(got[i])
                             << ", the exact kernels " << int(want[i]);
      // Not vacuous: the table's GELU alone (no certificate) rounds some of these the other way.
      if (qp.scale < 0.1f && k != cpu::F32Kernel::kScalar) {
        std::vector<float> gt(x.size());
        for (size_t j = 0; j < x.size(); ++j)
          gt[j] = k == cpu::F32Kernel::kAvx512f ? cpu::gelu_table_f32(cpu::kGeluTable32, x[j])
                                                : cpu::gelu_table_f32(cpu::kGeluTable8, x[j]);
        std::vector<uint8_t> naive(x.size());
        cpu::quantize_u8_kernel(naive.data(), gt.data(), gt.size(), inv, qp.zp);
        EXPECT_LT(first_difference(want, naive), x.size()) << "scale " << qp.scale;
      }
    }
  }
}

TEST(GeluU8, SameIntegersAsTheExactKernelsOnASweepAndSpecialValues) {
  std::vector<float> x = float_sweep(12.0f, test::sweep_stride(997));
  const float inf = std::numeric_limits<float>::infinity();
  for (float s : {0.0f, inf, std::numeric_limits<float>::quiet_NaN(), FLT_MAX, FLT_MIN,
                  FLT_TRUE_MIN, 6.0f, std::nextafter(6.0f, 0.0f), std::nextafter(6.0f, 7.0f),
                  std::nextafter(-6.0f, 0.0f), std::nextafter(-6.0f, -7.0f), 1e30f, 1e-30f})
    x.push_back(s), x.push_back(-s);
  for (cpu::F32Kernel k : paths())
    for (const Quant& qp : kQuants) {
      const float inv = 1.0f / qp.scale;
      const auto want = reference(x, inv, qp.zp), got = fused(k, x, inv, qp.zp);
      const size_t i = first_difference(want, got);
      EXPECT_EQ(i, x.size()) << cpu::f32_kernel_name(k) << " scale " << qp.scale << " zp " << qp.zp
                             << ": x = " << x[i] << " gives " << int(got[i])
                             << ", the exact kernels " << int(want[i]);
    }
}

// A block of a wider matrix, as the int8 Linear's post-op passes it (x: its scratch block, rows
// ldx apart; q: the output, rows ldq apart): only the block is written.
TEST(GeluU8, BlocksOfAWiderMatrixOddSizes) {
  const std::vector<float> all = float_sweep(9.0f, 1 << 16);
  for (auto [rows, cols, ldq, ldx] :
       {std::tuple{1, 1, 1, 1}, std::tuple{3, 37, 40, 37}, std::tuple{2, 16, 16, 64},
        std::tuple{5, 64, 3072, 64}, std::tuple{7, 95, 100, 96}, std::tuple{4, 33, 33, 300}}) {
    std::vector<float> x(static_cast<size_t>(rows) * ldx), block;
    for (size_t i = 0; i < x.size(); ++i) x[i] = all[(i * 7919) % all.size()];
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) block.push_back(x[static_cast<size_t>(r) * ldx + c]);
    const float inv = 1.0f / 0.03f;
    const auto want = reference(block, inv, 6);
    for (cpu::F32Kernel k : cpu::kAllF32Kernels) {
      if (!cpu::f32_kernel_available(k)) continue;
      std::vector<uint8_t> got(static_cast<size_t>(rows) * ldq, 77);
      cpu::gelu_erf_quantize_u8(k, got.data(), x.data(), rows, cols, ldq, ldx, inv, 6);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < ldq; ++c) {
          const int expect = c < cols ? int(want[static_cast<size_t>(r) * cols + c]) : 77;
          ASSERT_EQ(int(got[static_cast<size_t>(r) * ldq + c]), expect)
              << cpu::f32_kernel_name(k) << " " << rows << "x" << cols << " ldq " << ldq << " ldx "
              << ldx << " at (" << r << ", " << c << ")";
        }
    }
  }
}

}  // namespace
}  // namespace bertrt
