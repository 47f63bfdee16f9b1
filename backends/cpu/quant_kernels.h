// The CPU backend's quantization loops (elementwise and per-row), written for the compiler to
// vectorise and multi-versioned for AVX2 (simd.h) like kernels.h; the int8 GEMM tiles are in
// q8_gemm.h. Each kernel writes only its own range, so CpuBackend may split it over threads.
//
// The rounding is the reference's (backends/reference/reference_quant.cpp): in float,
// q = nearbyint(x · inv) + zero_point with inv = 1.0f / scale. Only min/max/nearbyint/compare and
// one multiply per rounding are involved, so the results are bit-identical to the reference.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bertrt::cpu {

// *mn / *mx over n ≥ 1 elements.
void min_max_kernel(float* mn, float* mx, const float* x, size_t n);
// out[r] = max_c |x[r, c]| for rows [r0, r1) of x [*, cols].
void absmax_rows_kernel(float* out, const float* x, int r0, int r1, int cols);

// Fake-quant of n elements with one (scale, inv = 1/scale, zero point); mask may be nullptr.
void fake_quant_kernel(float* out, uint8_t* mask, const float* x, size_t n, float scale, float inv,
                       int zero_point, int qmin, int qmax);
// dinp[i] += mask[i] ? dout[i] : 0.
void fake_quant_backward_kernel(float* dinp, const uint8_t* mask, const float* dout, size_t n);
// q[i] = clamp(nearbyint(x[i] · inv) + zero_point, 0, 255).
void quantize_u8_kernel(uint8_t* q, const float* x, size_t n, float inv, int zero_point);
// The int8 embedding lookup for rows [r0, r1): out[i, :] += scale[ids[i]] · float(q[ids[i], :]),
// the product rounded on its own as in the reference's loop (no FMA), ids already checked.
void embedding_forward_s8_rows(float* out, const int32_t* ids, const int8_t* q, const float* scale,
                               int r0, int r1, int C);

}  // namespace bertrt::cpu
