// u8×s8 GEMM tiles for the CPU backend (XNNPACK-style names: data types, tile, instruction set).
//
//   qu8s8_gemm_6x16_avx2 (q8_gemm_avx2.cpp, q8_gemm_vnni.h): 6 rows of A × 16 columns of W per
//     tile. A is widened to int16 once per call (zero-extend, q8_pack_a), W packed in panels of 16
//     columns of k-pairs (once per weight, q8_pack_w, or per call) and sign-extended in registers;
//     vpmaddwd sums pairs of int16 products into int32 lanes. Every int16 product fits
//     (|a·w| ≤ 255·128) and every pair sum fits int32, so the sums are EXACT. vpmaddubsw (u8×s8
//     with pair sums SATURATED to int16, the usual AVX2 trick) is deliberately not used:
//     255·127 + 255·127 = 64770 > 32767 would clip (which is why FBGEMM needs reduce_range, 7-bit
//     activations, on pre-VNNI CPUs). Both do 16 multiply-adds per multiply instruction.
//   qu8s8_gemm_2x4_neon (aarch64, every ARMv8-A core): the same tile; u8 and s8 widened to int16
//     in registers (ushll/sshll) and multiplied-accumulated into int32 lanes (smlal/smlal2), exact.
//   qu8s8_gemm_2x4_neondot (ARMv8.2-A dot product, e.g. Cortex-A55/A76: Raspberry Pi 5, chosen
//     at run time from HWCAP_ASIMDDP): sdot takes s8×s8 only, so A is shifted to s8 (a − 128, one
//     eor with 0x80) and the shift added back exactly: Σ a·w = Σ (a − 128)·w + 128·Σ w. |(a−128)·w|
//     ≤ 2^14, so the shifted sums cannot overflow either.
//   qu8s8_gemm_8x8_neoni8mm (Armv8.6-A int8 matrix multiply, FEAT_I8MM, from HWCAP2_I8MM: e.g.
//     Cortex-A710, Neoverse N2/V1, Graviton 3): usmmla, u8×s8 → int32 on 2 × 2 blocks of 8-deep
//     dot products, exact and with no shift; W packed in panels of 8 columns (column pairs
//     interleaved 8 values of k at a time), once per weight or per call.
//   qu8s8_gemm_8x32_avx512vnni, _8x16_avx512vnni256, _6x16_avxvnni (q8_gemm_vnni.h): vpdpbusd,
//     u8×s8 → int32 in one instruction with no int16 step, exact; W packed in panels of 32 or 16
//     columns, once per weight (q8_pack_w, at load) or per call panel by panel.
//   qu8s8_gemm_32x32_amx (q8_gemm_amx.cpp; Sapphire Rapids and later, where Linux grants the tile
//     state): TDPBUSD on 16 × 64-byte tiles, the same exact u8×s8 → int32 sums, reading W packed
//     as the zmm VNNI kernel packs it.
//   qu8s8_gemm_scalar: plain int32 loops (the portable fallback; the compiler may vectorise them,
//     which is exact too: C integer arithmetic never saturates).
// All kernels give the same int32 sums bit for bit (tests/unit/quant_ops_test.cpp runs each one
// this CPU has against the scalar loops; CI runs the NEON ones under qemu-aarch64).
//
// The NEON kernels sum a tail of K that is not a multiple of 16 by scalar code, and the panel
// kernels read zero-padded panels and copies, so no read ever passes the end of a row. The caller
// checks K ≤ kMaxQ8K (backend.h), which keeps every int32 sum exact.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bertrt::cpu {

// What to do with each finished int32 dot product acc[m][n] (= Σ_k A[m,k]·W[n,k]).
struct Q8Epilogue {
  // Raw: c[m·ldc + n] = acc (when c is non-null).
  int32_t* c = nullptr;
  int ldc = 0;
  // Dequantized: out[m·ldo + n] = float(acc − a_zero_point·w_sum[n]) · (a_scale·w_scale[n]) +
  // bias[n].
  float* out = nullptr;
  int ldo = 0;
  int out_col0 = 0;  // out's first column: n is written at out[m·ldo + n − out_col0]
  float a_scale = 1.0f;
  int a_zero_point = 0;
  const float* w_scale = nullptr;
  const int32_t* w_sum = nullptr;
  const float* bias = nullptr;  // may be null
};

// A widened to int16 for the AVX2 kernel: rows [0, M) of q8_a16_stride(K) values, the columns
// past K zero.
struct Q8PackedA {
  const int16_t* a16 = nullptr;
  int stride = 0;  // q8_a16_stride(K)
};

// Row stride of q8_pack_a's copy: K rounded up to even (the kernel reads k in pairs).
inline int q8_a16_stride(int K) { return (K + 1) / 2 * 2; }

// The u8×s8 GEMM kernels.
enum class Q8Kernel {
  kScalar,
  kAvx2,
  kNeon,
  kNeonDot,
  kNeonI8mm,
  kAvx512Vnni,
  kAvx512Vnni256,
  kAvxVnni,
  kAmx
};

// Every kernel, scalar first (for tests and `--help` texts).
constexpr Q8Kernel kAllQ8Kernels[] = {
    Q8Kernel::kScalar,        Q8Kernel::kAvx2,     Q8Kernel::kNeon,
    Q8Kernel::kNeonDot,       Q8Kernel::kNeonI8mm, Q8Kernel::kAvx512Vnni,
    Q8Kernel::kAvx512Vnni256, Q8Kernel::kAvxVnni,  Q8Kernel::kAmx};

// "scalar", "avx2", "neon", "neondot", "neoni8mm", "avx512vnni", "avx512vnni256", "avxvnni",
// "amx".
const char* q8_kernel_name(Q8Kernel k);

// True when kernel k can run on this CPU (checked once: cpuid and XGETBV — the OS must save the
// ymm/zmm state — on x86-64, HWCAP and HWCAP2 on aarch64).
bool q8_kernel_available(Q8Kernel k);

// The kernel the cpu backend uses: the one named by the environment variable BERTRT_Q8_KERNEL
// when set (to measure e.g. the AVX2 path on a VNNI host; an unknown name or one this CPU cannot
// run is an error naming the variable and the kernels it can run), else the fastest available:
// amx > avx512vnni > avxvnni > avx2 on x86-64, neoni8mm > neondot > neon on aarch64.
Q8Kernel q8_best_kernel();

// Columns per tile of kernel k: callers split N in multiples of it.
int q8_kernel_tile_n(Q8Kernel k);

// Bytes of W [N, K] packed for kernel k by q8_pack_w; 0 when k reads W as it is.
size_t q8_packed_w_bytes(Q8Kernel k, int N, int K);
// Packs W [N, K] (row stride ldw) into dst (q8_packed_w_bytes bytes) for kernel k.
void q8_pack_w(Q8Kernel k, int8_t* dst, const int8_t* W, int ldw, int N, int K);

// True when kernel k reads A widened to int16 (Q8PackedA, q8_pack_a): the AVX2 tile.
inline bool q8_kernel_packs_a(Q8Kernel k) { return k == Q8Kernel::kAvx2; }

// Widens A [M, K] (row stride lda) into a16 [M, q8_a16_stride(K)], zero-padded.
void q8_pack_a(int16_t* a16, const uint8_t* A, int lda, int M, int K);

// Output columns [n0, n1) for all M rows with kernel k (which must be available; n0 a multiple of
// q8_kernel_tile_n(k)): acc from A (u8, row stride lda), its widened form (only when
// q8_kernel_packs_a(k); otherwise pa may be empty) and W [N, K] (row stride ldw) or, when
// w_packed is non-null, q8_pack_w's packing of the whole W for kernel k; then `epi`. The panel
// kernels (VNNI, AMX, AVX2, NEON i8mm) need epi.a_zero_point in [0, 255] when epi.out is set (a
// quint8 zero point).
void qu8s8_gemm(Q8Kernel k, int M, int n0, int n1, int K, const uint8_t* A, int lda,
                const Q8PackedA& pa, const int8_t* W, int ldw, const int8_t* w_packed,
                const Q8Epilogue& epi);

}  // namespace bertrt::cpu
