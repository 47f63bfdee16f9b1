// The per-ISA entry points of f32_gemm.h, internal to backends/cpu: each lives in its own file
// compiled with its -m flags (CMakeLists.txt) and is called only where cpuid says the CPU has
// them. Such a file includes no inline library code (an inline function built there with AVX-512
// could be the copy the linker keeps for every caller), only intrinsics and f32_gemm_impl.h's
// internal-linkage templates.
#pragma once

#include <cstddef>

namespace bertrt::cpu {

void f32_pack_x_avx512f(float* P, const float* X, int ldx, int M, int K, int p0, int p1);
size_t f32_packed_w_floats_avx512f(int N, int K);
void f32_pack_w_avx512f(float* Wp, const float* W, int N, int K);
size_t f32_scratch_floats_avx512f(int M, int n0, int n1, int K);
void f32_gemm_32x12_avx512f(int M, int n0, int n1, int K, const float* P, const float* W, int ldw,
                            const float* bias, float* Y, int ldy, float* S);
size_t f32_packed_wb_floats_avx512f(int N, int K);
void f32_pack_wb_avx512f(float* Wp, const float* W, int N, int K, int t0, int t1);
void f32_gemm_bcast_12x32_avx512f(int M, int n0, int n1, int K, const float* X, int ldx,
                                  const float* Wp, const float* bias, float* Y, int ldy);

void f32_pack_x_fma3(float* P, const float* X, int ldx, int M, int K, int p0, int p1);
size_t f32_packed_w_floats_fma3(int N, int K);
void f32_pack_w_fma3(float* Wp, const float* W, int N, int K);
size_t f32_scratch_floats_fma3(int M, int n0, int n1, int K);
void f32_gemm_16x6_fma3(int M, int n0, int n1, int K, const float* P, const float* W, int ldw,
                        const float* bias, float* Y, int ldy, float* S);
size_t f32_packed_wb_floats_fma3(int N, int K);
void f32_pack_wb_fma3(float* Wp, const float* W, int N, int K, int t0, int t1);
void f32_gemm_bcast_6x16_fma3(int M, int n0, int n1, int K, const float* X, int ldx,
                              const float* Wp, const float* bias, float* Y, int ldy);

// f32_attention.h's kernels (f32_attention_impl.h), in the same files.
void f32_attention_avx512f(float* ctx, int ldc, const float* q, const float* key, const float* v,
                           int ld, const float* mask, int T, int HS, float scale, int r0, int r1,
                           float* scratch);
void f32_attention_fma3(float* ctx, int ldc, const float* q, const float* key, const float* v,
                        int ld, const float* mask, int T, int HS, float scale, int r0, int r1,
                        float* scratch);

}  // namespace bertrt::cpu
