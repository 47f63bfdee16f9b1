// See f32_attention.h. The scalar reference and the dispatch; built with -ffp-contract=off
// (CMakeLists.txt), so its mul and add stay two roundings, as in the SIMD kernels.
#include "backends/cpu/f32_attention.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/f32_attention_impl.h"
#include "backends/cpu/f32_gemm_isa.h"
#include "core/error.h"

namespace bertrt::cpu {
namespace {

struct Scalar {
  using V = float;
  static constexpr int kLanes = 1;
  static constexpr int kNR = 4;
  static V zero() { return 0.0f; }
  static V load(const float* p) { return *p; }
  static V bcast(float x) { return x; }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static void store(float* p, V v) { *p = v; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V max(V a, V b) { return a > b ? a : b; }
  static V round(V x) { return std::nearbyint(x); }
  static V pow2(V n) {
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  static V select_lt(V a, V b, V x, V y) { return a < b ? x : y; }
  static void transpose(float* dst, size_t, const float* src, size_t) { *dst = *src; }
};

}  // namespace

bool f32_attention_streamed_from_env() {
  const char* env = std::getenv("BERTRT_ATTENTION");
  if (!env || !*env || std::strcmp(env, "streamed") == 0) return true;
  if (std::strcmp(env, "gemm") == 0) return false;
  fail("BERTRT_ATTENTION={}: not an attention path (expected streamed or gemm)", env);
}

int f32_attention_panel_rows(F32Kernel k) {
  return k == F32Kernel::kScalar ? 2 * Scalar::kLanes : f32_kernel_panel_rows(k);
}

size_t f32_attention_scratch_floats(F32Kernel k, int HS) {  // attention_rows' Qp, O, S, l
  return (2 * static_cast<size_t>(HS) + kF32AttentionBlock + 1) *
         static_cast<size_t>(f32_attention_panel_rows(k));
}

void f32_attention_rows(F32Kernel k, float* ctx, int ldc, const float* q, const float* key,
                        const float* v, int ld, const float* mask, int T, int HS, float scale,
                        int r0, int r1, float* scratch) {
  if (r1 <= r0 || T <= 0 || HS <= 0) return;
  switch (k) {
#ifdef BERTRT_F32_AVX512F
    case F32Kernel::kAvx512f:
      return f32_attention_avx512f(ctx, ldc, q, key, v, ld, mask, T, HS, scale, r0, r1, scratch);
#endif
#ifdef BERTRT_F32_FMA3
    case F32Kernel::kFma3:
      return f32_attention_fma3(ctx, ldc, q, key, v, ld, mask, T, HS, scale, r0, r1, scratch);
#endif
    default:
      return attention_rows<Scalar>(ctx, ldc, q, key, v, ld, mask, T, HS, scale, r0, r1, scratch);
  }
}

}  // namespace bertrt::cpu
