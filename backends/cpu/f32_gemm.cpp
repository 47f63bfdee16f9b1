// See f32_gemm.h.
#include "backends/cpu/f32_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/f32_gemm_isa.h"
#include "core/error.h"

namespace bertrt::cpu {

F32Kernel f32_kernel_from_env() {
  const char* env = std::getenv("BERTRT_F32_KERNEL");
  if (env && *env) {
    std::string can;
    for (F32Kernel k : kAllF32Kernels)
      if (f32_kernel_available(k)) can += std::string(can.empty() ? "" : ", ") + f32_kernel_name(k);
    for (F32Kernel k : kAllF32Kernels)
      if (std::strcmp(env, f32_kernel_name(k)) == 0) {
        if (!f32_kernel_available(k))
          fail("BERTRT_F32_KERNEL={}: this CPU cannot run that kernel (it can run: {})", env, can);
        return k;
      }
    fail("BERTRT_F32_KERNEL={}: no such fp32 kernel (this CPU can run: {})", env, can);
  }
  for (F32Kernel k : {F32Kernel::kAvx512f, F32Kernel::kFma3})
    if (f32_kernel_available(k)) return k;
  return F32Kernel::kScalar;
}

namespace {

// The reference: X read as it is, one fma chain per output (std::fma: a single rounding, as the
// SIMD kernels' vfmadd).
void gemm_scalar(int M, int n0, int n1, int K, const float* X, int ldx, const float* W, int ldw,
                 const float* bias, float* Y, int ldy) {
  for (int m = 0; m < M; ++m) {
    const float* x = X + static_cast<size_t>(m) * ldx;
    float* y = Y + static_cast<size_t>(m) * ldy;
    for (int n = n0; n < n1; ++n) {
      const float* w = W + static_cast<size_t>(n) * ldw;
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc = std::fma(x[k], w[k], acc);
      y[n] = bias ? acc + bias[n] : acc;
    }
  }
}

}  // namespace

const char* f32_kernel_name(F32Kernel k) {
  switch (k) {
    case F32Kernel::kFma3:
      return "fma3";
    case F32Kernel::kAvx512f:
      return "avx512f";
    case F32Kernel::kScalar:
      break;
  }
  return "scalar";
}

bool f32_kernel_available(F32Kernel k) {
  switch (k) {
    case F32Kernel::kScalar:
      return true;
#ifdef BERTRT_F32_FMA3
    case F32Kernel::kFma3:
      return x86_features().fma;
#endif
#ifdef BERTRT_F32_AVX512F
    case F32Kernel::kAvx512f:
      return x86_features().avx512f;
#endif
    default:
      return false;
  }
}

F32Kernel f32_best_kernel() {
  static const F32Kernel k = f32_kernel_from_env();
  return k;
}

namespace {

// Each kernel's tiles: the panel form's columns and rows, the broadcast form's rows and columns.
struct Tiles {
  int tile_n, panel_rows, bcast_m, bcast_n;
};

Tiles tiles(F32Kernel k) {
  switch (k) {
    case F32Kernel::kAvx512f:
      return {12, 32, 12, 32};
    case F32Kernel::kFma3:
      return {6, 16, 6, 16};
    case F32Kernel::kScalar:
      break;
  }
  return {1, 1, 0, 0};
}

}  // namespace

int f32_kernel_tile_n(F32Kernel k) { return tiles(k).tile_n; }
int f32_kernel_panel_rows(F32Kernel k) { return tiles(k).panel_rows; }
int f32_bcast_tile_m(F32Kernel k) { return tiles(k).bcast_m; }
int f32_bcast_tile_n(F32Kernel k) { return tiles(k).bcast_n; }

size_t f32_packed_x_floats(F32Kernel k, int M, int K) {
  if (k == F32Kernel::kScalar || M <= 0 || K <= 0) return 0;
  const size_t pr = static_cast<size_t>(f32_kernel_panel_rows(k));
  return (static_cast<size_t>(M) + pr - 1) / pr * pr * static_cast<size_t>(K);
}

void f32_pack_x(F32Kernel k, float* P, const float* X, int ldx, int M, int K, int p0, int p1) {
  switch (k) {
#ifdef BERTRT_F32_AVX512F
    case F32Kernel::kAvx512f:
      return f32_pack_x_avx512f(P, X, ldx, M, K, p0, p1);
#endif
#ifdef BERTRT_F32_FMA3
    case F32Kernel::kFma3:
      return f32_pack_x_fma3(P, X, ldx, M, K, p0, p1);
#endif
    default:
      return;
  }
}

size_t f32_packed_w_floats(F32Kernel k, int N, int K) {
  if (N <= 0 || K <= 0) return 0;
  switch (k) {
#ifdef BERTRT_F32_AVX512F
    case F32Kernel::kAvx512f:
      return f32_packed_w_floats_avx512f(N, K);
#endif
#ifdef BERTRT_F32_FMA3
    case F32Kernel::kFma3:
      return f32_packed_w_floats_fma3(N, K);
#endif
    default:
      return 0;
  }
}

void f32_pack_w(F32Kernel k, float* Wp, const float* W, int N, int K) {
  if (N <= 0 || K <= 0) return;
  switch (k) {
#ifdef BERTRT_F32_AVX512F
    case F32Kernel::kAvx512f:
      return f32_pack_w_avx512f(Wp, W, N, K);
#endif
#ifdef BERTRT_F32_FMA3
    case F32Kernel::kFma3:
      return f32_pack_w_fma3(Wp, W, N, K);
#endif
    default:
      return;
  }
}

void f32_pack_x_t(F32Kernel k, float* P, const float* A, int lda, int M, int K, int p0, int p1) {
  if (k == F32Kernel::kScalar) return;
  const int pr = f32_kernel_panel_rows(k);
  for (int p = p0; p < p1; ++p) {
    float* dst = P + static_cast<size_t>(p) * K * pr;
    const int m0 = p * pr, mr = std::min(pr, M - m0);
    for (int kk = 0; kk < K; ++kk, dst += pr) {
      const float* a = A + static_cast<size_t>(kk) * lda + m0;
      std::copy(a, a + mr, dst);
      std::fill(dst + mr, dst + pr, 0.0f);
    }
  }
}

void f32_pack_w_t(F32Kernel k, float* Wp, const float* B, int ldb, int N, int K, int t0, int t1) {
  if (k == F32Kernel::kScalar) return;
  const int nr = f32_kernel_tile_n(k);
  for (int t = t0; t < t1; ++t) {
    const int n = t * nr, cols = std::min(nr, N - n);
    float* dst = Wp + static_cast<size_t>(n) * K;
    for (int kk = 0; kk < K; ++kk, dst += nr) {
      const float* b = B + static_cast<size_t>(kk) * ldb + n;
      std::copy(b, b + cols, dst);
      std::fill(dst + cols, dst + nr, 0.0f);
    }
  }
}

size_t f32_scratch_floats(F32Kernel k, int M, int n0, int n1, int K) {
  if (M <= 0 || n1 <= n0) return 0;
  switch (k) {
#ifdef BERTRT_F32_AVX512F
    case F32Kernel::kAvx512f:
      return f32_scratch_floats_avx512f(M, n0, n1, K);
#endif
#ifdef BERTRT_F32_FMA3
    case F32Kernel::kFma3:
      return f32_scratch_floats_fma3(M, n0, n1, K);
#endif
    default:
      return 0;
  }
}

void f32_gemm_xwt(F32Kernel k, int M, int n0, int n1, int K, const float* X, int ldx,
                  const float* P, const float* W, int ldw, const float* bias, float* Y, int ldy,
                  float* S) {
  if (M <= 0 || n1 <= n0) return;
  switch (k) {
#ifdef BERTRT_F32_AVX512F
    case F32Kernel::kAvx512f:
      return f32_gemm_32x12_avx512f(M, n0, n1, K, P, W, ldw, bias, Y, ldy, S);
#endif
#ifdef BERTRT_F32_FMA3
    case F32Kernel::kFma3:
      return f32_gemm_16x6_fma3(M, n0, n1, K, P, W, ldw, bias, Y, ldy, S);
#endif
    default:
      return gemm_scalar(M, n0, n1, K, X, ldx, W, ldw, bias, Y, ldy);
  }
}

size_t f32_packed_wb_floats(F32Kernel k, int N, int K) {
  if (N <= 0 || K <= 0) return 0;
  switch (k) {
#ifdef BERTRT_F32_AVX512F
    case F32Kernel::kAvx512f:
      return f32_packed_wb_floats_avx512f(N, K);
#endif
#ifdef BERTRT_F32_FMA3
    case F32Kernel::kFma3:
      return f32_packed_wb_floats_fma3(N, K);
#endif
    default:
      return 0;
  }
}

void f32_pack_wb(F32Kernel k, float* Wp, const float* W, int N, int K, int t0, int t1) {
  if (N <= 0 || K <= 0) return;
  switch (k) {
#ifdef BERTRT_F32_AVX512F
    case F32Kernel::kAvx512f:
      return f32_pack_wb_avx512f(Wp, W, N, K, t0, t1);
#endif
#ifdef BERTRT_F32_FMA3
    case F32Kernel::kFma3:
      return f32_pack_wb_fma3(Wp, W, N, K, t0, t1);
#endif
    default:
      return;
  }
}

void f32_gemm_xwt_bcast(F32Kernel k, int M, int n0, int n1, int K, const float* X, int ldx,
                        const float* Wp, const float* bias, float* Y, int ldy) {
  if (M <= 0 || n1 <= n0) return;
  switch (k) {
#ifdef BERTRT_F32_AVX512F
    case F32Kernel::kAvx512f:
      return f32_gemm_bcast_12x32_avx512f(M, n0, n1, K, X, ldx, Wp, bias, Y, ldy);
#endif
#ifdef BERTRT_F32_FMA3
    case F32Kernel::kFma3:
      return f32_gemm_bcast_6x16_fma3(M, n0, n1, K, X, ldx, Wp, bias, Y, ldy);
#endif
    default:
      fail("f32_gemm_xwt_bcast: the {} kernel has no broadcast form", f32_kernel_name(k));
  }
}

}  // namespace bertrt::cpu
