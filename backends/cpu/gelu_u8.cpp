// See gelu_u8.h: the dispatch over the SIMD paths, and the reference they fall back to.
#include "backends/cpu/gelu_u8.h"

#include "backends/cpu/kernels.h"
#include "backends/cpu/quant_kernels.h"

namespace bertrt::cpu {

void gelu_erf_quantize_u8_exact(uint8_t* q, const float* x, size_t n, float inv, int zero_point) {
  float g[256];
  for (size_t i = 0; i < n; i += 256) {
    const size_t m = n - i < 256 ? n - i : 256;
    gelu_erf_forward_kernel(g, x + i, m);
    quantize_u8_kernel(q + i, g, m, inv, zero_point);
  }
}

void gelu_erf_quantize_u8(F32Kernel k, uint8_t* q, const float* x, int rows, int cols, size_t ldq,
                          size_t ldx, float inv, int zero_point) {
#if defined(BERTRT_F32_AVX512F)
  if (k == F32Kernel::kAvx512f)
    return gelu_erf_quantize_u8_avx512f(q, x, rows, cols, ldq, ldx, inv, zero_point);
#endif
#if defined(BERTRT_F32_FMA3)
  if (k == F32Kernel::kFma3)
    return gelu_erf_quantize_u8_fma3(q, x, rows, cols, ldq, ldx, inv, zero_point);
#endif
  (void)k;
  for (int r = 0; r < rows; ++r)
    gelu_erf_quantize_u8_exact(q + static_cast<size_t>(r) * ldq, x + static_cast<size_t>(r) * ldx,
                               static_cast<size_t>(cols), inv, zero_point);
}

}  // namespace bertrt::cpu
