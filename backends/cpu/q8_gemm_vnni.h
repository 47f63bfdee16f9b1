// The panel u8×s8 GEMM kernels of q8_gemm.h (the dot-product (VNNI) ones and, at the end, the
// AVX2 one and aarch64's int8 matrix-multiply one), internal to backends/cpu.
//
// vpdpbusd multiplies 4 unsigned bytes of A by 4 signed bytes of W and adds the 4 products to an
// int32 lane with no 16-bit intermediate, so every sum is exact (no saturation; the plain
// vpdpbusd wraps, and K ≤ kMaxQ8K keeps every sum inside int32). That is our u8×s8 format as is:
// no 0x80 shift, no correction term.
//
// W is read packed in panels of kVnniPanel(Isa) columns: panel p holds columns
// [p·NRP, p·NRP + NRP) as [K4][NRP][4] bytes (K4 = ⌈K/4⌉; columns past N and k past K are 0), so
// one vector load gives NRP/2 columns × 4 values of k, and each row of A is broadcast 4 bytes at a
// time (vpbroadcastd). Tile: 8 rows × NRP columns = 16 accumulators (6 rows, 12, where VEX
// reaches only 16 registers).
//   qu8s8_gemm_8x32_avx512vnni     zmm (AVX-512 F/BW/VL + VNNI: Ice Lake, Zen 4 and later)
//   qu8s8_gemm_8x16_avx512vnni256  ymm, EVEX-encoded (same CPUs; no 512-bit frequency penalty)
//   qu8s8_gemm_6x16_avxvnni        ymm, VEX-encoded AVX-VNNI (Alder Lake, Zen 5, no AVX-512)
// Each lives in its own file compiled with its -m flags (CMakeLists.txt): such a file includes no
// inline library code (an inline function built there with AVX-512 could be the copy the linker
// keeps for every caller, ODR), only intrinsics and its own internal-linkage templates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/q8_gemm.h"

namespace bertrt::cpu {

// Columns per packed panel of the zmm and ymm kernels.
constexpr int kVnniPanelZmm = 32;
constexpr int kVnniPanelYmm = 16;

// Bytes of one packed panel of nrp columns and K values of k: ⌈K/4⌉ · nrp · 4 (q8_gemm.cpp: not
// inline, see above).
size_t vnni_panel_bytes(int nrp, int K);

// Packs W rows [n, n + nr) (nr ≤ nrp; row stride ldw) into one panel (q8_gemm.cpp; plain C).
void vnni_pack_panel(int8_t* dst, const int8_t* W, int ldw, int n, int nr, int K, int nrp);

// Output columns [n0, n1) for all M rows (n0 a multiple of the panel width). W packed as above
// when w_packed is non-null (the whole matrix, panel p at p · vnni_panel_bytes), else W [N, K]
// (row stride ldw) is packed panel by panel into panel_buf (vnni_panel_bytes bytes). Needs
// epi.a_zero_point in [0, 255] (then acc − zp·Σw is exact in int32).
void qu8s8_gemm_8x32_avx512vnni(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                                const int8_t* W, int ldw, const int8_t* w_packed, int8_t* panel_buf,
                                const Q8Epilogue& epi);
void qu8s8_gemm_8x16_avx512vnni256(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                                   const int8_t* W, int ldw, const int8_t* w_packed,
                                   int8_t* panel_buf, const Q8Epilogue& epi);
void qu8s8_gemm_6x16_avxvnni(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                             const int8_t* W, int ldw, const int8_t* w_packed, int8_t* panel_buf,
                             const Q8Epilogue& epi);

// The AMX kernel (q8_gemm_amx.cpp): 32 × 32 tiles, W packed as for qu8s8_gemm_8x32_avx512vnni.
void qu8s8_gemm_32x32_amx(int M, int n0, int n1, int K, const uint8_t* A, int lda, const int8_t* W,
                          int ldw, const int8_t* w_packed, int8_t* panel_buf,
                          const Q8Epilogue& epi);

// The AVX2 panel kernel (q8_gemm_avx2.cpp): panels of kAvx2Panel columns packed as
// [⌈K/2⌉][kAvx2Panel][2] bytes (columns past N and k past K are 0), A read as q8_pack_a's int16
// rows (stride lda16 = q8_a16_stride(K)). Same epilogue and zero-point rule as the VNNI kernels.
constexpr int kAvx2Panel = 16;
size_t avx2_panel_bytes(int K);
void avx2_pack_panel(int8_t* dst, const int8_t* W, int ldw, int n, int nr, int K);
void qu8s8_gemm_6x16_avx2(int M, int n0, int n1, int K, const int16_t* a16, int lda16,
                          const int8_t* W, int ldw, const int8_t* w_packed, int8_t* panel_buf,
                          const Q8Epilogue& epi);

// The NEON int8 matrix-multiply kernel (q8_gemm_neoni8mm.cpp, aarch64): panels of kI8mmPanel
// columns packed as [⌈K/8⌉][kI8mmPanel / 2][2][8] bytes — per 8 values of k, columns (0, 1),
// (2, 3), ... as 16-byte pairs, the operand layout of usmmla (columns past N and k past K are 0);
// A read as it is. Same epilogue and zero-point rule as the VNNI kernels.
constexpr int kI8mmPanel = 8;
size_t i8mm_panel_bytes(int K);
void i8mm_pack_panel(int8_t* dst, const int8_t* W, int ldw, int n, int nr, int K);
void qu8s8_gemm_8x8_neoni8mm(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                             const int8_t* W, int ldw, const int8_t* w_packed, int8_t* panel_buf,
                             const Q8Epilogue& epi);

}  // namespace bertrt::cpu
