// The table paths' loop (gelu_u8.h), one template for gelu_u8_avx512f.cpp and gelu_u8_fma3.cpp.
// Included by exactly those files, which define their Isa struct in an anonymous namespace: V
// (kLanes floats), I (the lanes' interval indices), M (a lane mask), Coeffs (the table's
// coefficients held in registers, with lookup(j, idx): every lane's coefficient of u^j), and
// the operations below; among them interval (s truncated, then at most the last interval: for
// x in the table, s > −1, so this is gelu_table_f32's clamped floor), gap (|t − rint(t)|) and
// store_q (rint(t) + zero point, clamped to [0, 255], as bytes). Everything here has internal
// linkage, so each file's copy is built with its own -m flags.
#pragma once

#include "backends/cpu/gelu_u8.h"

namespace bertrt::cpu {
namespace {

template <class Isa>
void gelu_u8_rows(uint8_t* q, const float* x, int rows, int cols, size_t ldq, size_t ldx, float inv,
                  int zero_point) {
  using V = typename Isa::V;
  constexpr int L = Isa::kLanes;
  const auto& T = Isa::kTable;
  constexpr int D = Isa::kTable.kDegree;
  const typename Isa::Coeffs coeffs(T);
  const V k = Isa::set1(1.0f / T.width), b = Isa::set1(-T.lo / T.width);
  const V width = Isa::set1(T.width), first_centre = Isa::set1(T.lo + 0.5f * T.width);
  const V zero = Isa::set1(0.0f);
  const typename Isa::I last = Isa::set1_i(T.kIntervals - 1);
  const V table_lo = Isa::set1(T.lo), table_hi = Isa::set1(T.hi);
  const V neg_inf = Isa::set1(-__builtin_inff());
  const V vinv = Isa::set1(inv), half = Isa::set1(0.5f);
  const V d0 = Isa::set1(gelu_u8_d0(inv)), d1 = Isa::set1(kGeluU8D1);
  const typename Isa::I zp = Isa::set1_i(zero_point);
  const size_t n = static_cast<size_t>(cols);
  for (int row = 0; row < rows; ++row, q += ldq, x += ldx) {
    size_t i = 0;
    for (; i + L <= n; i += L) {
      const V xv = Isa::load(x + i);
      // The interval. Lanes outside the table get some interval here and are decided below; a
      // NaN or −inf lane gets a NaN or infinite u, and so fails the test.
      const typename Isa::I idx = Isa::interval(Isa::fmadd(xv, k, b), last);
      const V u = Isa::sub(xv, Isa::fmadd(Isa::to_float(idx), width, first_centre));
      V g = coeffs.lookup(D, idx);
      for (int j = D - 1; j >= 0; --j) g = Isa::fmadd(g, u, coeffs.lookup(j, idx));
      g = Isa::select(Isa::ge(xv, table_hi), xv, g);
      // 0 below the table, but not at −inf: the exact kernel's −inf·0 is NaN (quantized to 0, not
      // to the zero point), so that lane's g is left to become NaN or ±inf and fail the test.
      g = Isa::select(Isa::both(Isa::lt(xv, table_lo), Isa::gt(xv, neg_inf)), zero, g);
      const V t = Isa::mul(g, vinv);
      const V test = Isa::fmadd(Isa::abs(t), d1, Isa::add(Isa::gap(t), d0));  // gap: exact
      if (!Isa::all(Isa::lt(test, half))) {                                   // NaN compares false
        gelu_erf_quantize_u8_exact(q + i, x + i, L, inv, zero_point);
        continue;
      }
      Isa::store_q(q + i, t, zp);  // |t| < 1/(2·d1) here: rint(t) fits an int32
    }
    if (i < n) gelu_erf_quantize_u8_exact(q + i, x + i, n - i, inv, zero_point);
  }
}

}  // namespace
}  // namespace bertrt::cpu
