// See q8_gemm.h.
#include "backends/cpu/q8_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/q8_gemm_vnni.h"
#include "core/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BERTRT_Q8_X86 1
#endif
#if defined(__aarch64__) && defined(__ARM_NEON) && (defined(__GNUC__) || defined(__clang__))
#define BERTRT_Q8_NEON 1
#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h>  // getauxval(AT_HWCAP): HWCAP_ASIMDDP; AT_HWCAP2: HWCAP2_I8MM
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)  // Linux's uapi bit; glibc's headers name it from 2.33 on
#endif
#endif
#endif

namespace bertrt::cpu {
namespace {

// Rows of A per pass over W: their int16 copy (rows · k16 · 2 bytes) should stay in L2 while W's
// rows stream past once per pass.
constexpr size_t kAChunkBytes = 256 * 1024;
// The tile: kMR rows of A × kNR rows of W. W's kNR rows, widened to int16, stay in L1 while A's
// rows stream from L2, so each A load feeds kNR multiply-adds (with 2 × 2 the kernel was bound by
// L2 bandwidth).
constexpr int kMR = 2;
constexpr int kNR = 4;

[[maybe_unused]] int rows_per_chunk(int k16) {  // unused where no SIMD kernel is compiled
  const size_t bytes_per_row = static_cast<size_t>(k16 > 0 ? k16 : 1) * 2;
  const int rows = static_cast<int>(kAChunkBytes / bytes_per_row);
  return std::max(4, rows / 4 * 4);
}

// Finishes one output: the raw int32 and/or the dequantized float (the reference's order of
// operations, backends/reference/reference_quant.cpp; no FMA here, so x86 results are identical).
inline void store(const Q8Epilogue& e, int m, int n, int32_t acc) {
  if (e.c) e.c[static_cast<size_t>(m) * e.ldc + n] = acc;
  if (e.out) {
    const int64_t v = int64_t{acc} - int64_t{e.a_zero_point} * e.w_sum[n];
    const float s = e.a_scale * e.w_scale[n];
    float y = static_cast<float>(v) * s;
    if (e.bias) y += e.bias[n];
    e.out[static_cast<size_t>(m) * e.ldo + (n - e.out_col0)] = y;
  }
}

// acc[i][j] += Σ_{k ∈ [k0, K)} A[m+i, k]·W[n+j, k] for an mr × nr tile (the K tail).
inline void tail_sums(int32_t (*acc)[kNR], int mr, int nr, int k0, int K, const uint8_t* A, int lda,
                      const int8_t* W, int ldw, int m, int n) {
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) {
      const uint8_t* a = A + static_cast<size_t>(m + i) * lda;
      const int8_t* w = W + static_cast<size_t>(n + j) * ldw;
      int32_t s = 0;
      for (int k = k0; k < K; ++k) s += int32_t{a[k]} * int32_t{w[k]};
      acc[i][j] += s;
    }
}

#ifdef BERTRT_Q8_NEON
// acc[i][j] = Σ_{k < k16} A[m+i, k]·W[n+j, k] for an MR × NR tile, 16 values of k at a time: each
// u8/s8 vector widened to two int16 vectors (ushll/sshll; a ≤ 255 fits int16 as is), then 4
// smlal/smlal2 per (i, j) into int32 lanes. Exact: every product fits int16 × int16 → int32.
template <int MR, int NR>
inline void tile_neon(int32_t (*out)[kNR], const uint8_t* A, int lda, const int8_t* W, int ldw,
                      int k16) {
  int32x4_t acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = vdupq_n_s32(0);
  for (int k = 0; k < k16; k += 16) {
    int16x8_t wl[NR], wh[NR];
    for (int j = 0; j < NR; ++j) {
      const int8x16_t w = vld1q_s8(W + static_cast<size_t>(j) * ldw + k);
      wl[j] = vmovl_s8(vget_low_s8(w));
      wh[j] = vmovl_high_s8(w);
    }
    for (int i = 0; i < MR; ++i) {
      const uint8x16_t a = vld1q_u8(A + static_cast<size_t>(i) * lda + k);
      const int16x8_t al = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(a)));
      const int16x8_t ah = vreinterpretq_s16_u16(vmovl_high_u8(a));
      for (int j = 0; j < NR; ++j) {
        int32x4_t c = acc[i][j];
        c = vmlal_s16(c, vget_low_s16(al), vget_low_s16(wl[j]));
        c = vmlal_high_s16(c, al, wl[j]);
        c = vmlal_s16(c, vget_low_s16(ah), vget_low_s16(wh[j]));
        c = vmlal_high_s16(c, ah, wh[j]);
        acc[i][j] = c;
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) out[i][j] = vaddvq_s32(acc[i][j]);
}

// The same with sdot (compiled for ARMv8.2-A + dot product, run only where HWCAP says the CPU has
// it; arm_neon.h declares vdotq_s32 for exactly that target): A shifted to s8 by an eor with 0x80
// (a − 128), one sdot per (i, j) per 16 values of k. The caller adds 128·Σ_{k < k16} W[n+j, k]
// back.
template <int MR, int NR>
__attribute__((target("arch=armv8.2-a+dotprod"))) inline void tile_neondot(int32_t (*out)[kNR],
                                                                           const uint8_t* A,
                                                                           int lda, const int8_t* W,
                                                                           int ldw, int k16) {
  int32x4_t acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = vdupq_n_s32(0);
  const uint8x16_t flip = vdupq_n_u8(0x80);
  for (int k = 0; k < k16; k += 16) {
    int8x16_t w[NR];
    for (int j = 0; j < NR; ++j) w[j] = vld1q_s8(W + static_cast<size_t>(j) * ldw + k);
    for (int i = 0; i < MR; ++i) {
      const int8x16_t a =
          vreinterpretq_s8_u8(veorq_u8(vld1q_u8(A + static_cast<size_t>(i) * lda + k), flip));
      for (int j = 0; j < NR; ++j) acc[i][j] = vdotq_s32(acc[i][j], a, w[j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) out[i][j] = vaddvq_s32(acc[i][j]);
}

template <bool kDot, int MR, int NR>
inline void tile_neon_any(int32_t (*out)[kNR], const uint8_t* A, int lda, const int8_t* W, int ldw,
                          int k16) {
  if constexpr (kDot)
    tile_neondot<MR, NR>(out, A, lda, W, ldw, k16);
  else
    tile_neon<MR, NR>(out, A, lda, W, ldw, k16);
}

// Dispatch on the runtime tile width to the compile-time one.
template <bool kDot, int MR>
inline void tile_cols_neon(int nr, int32_t (*out)[kNR], const uint8_t* A, int lda, const int8_t* W,
                           int ldw, int k16) {
  switch (nr) {
    case 4:
      tile_neon_any<kDot, MR, 4>(out, A, lda, W, ldw, k16);
      break;
    case 3:
      tile_neon_any<kDot, MR, 3>(out, A, lda, W, ldw, k16);
      break;
    case 2:
      tile_neon_any<kDot, MR, 2>(out, A, lda, W, ldw, k16);
      break;
    default:
      tile_neon_any<kDot, MR, 1>(out, A, lda, W, ldw, k16);
      break;
  }
}

// Both NEON kernels: the AVX2 loop nest without the int16 copies (widening is in registers).
template <bool kDot>
void qu8s8_gemm_2x4_neon_impl(int M, int n0, int n1, int K, const uint8_t* A, int lda,
                              const int8_t* W, int ldw, const Q8Epilogue& epi) {
  const int k16 = K / 16 * 16;
  const int chunk = rows_per_chunk(k16);
  for (int mc = 0; mc < M; mc += chunk) {
    const int mc_end = std::min(M, mc + chunk);
    for (int n = n0; n < n1; n += kNR) {
      const int nr = std::min(kNR, n1 - n);
      const int8_t* w = W + static_cast<size_t>(n) * ldw;
      // sdot path: 128·Σ_{k < k16} w, added back to each shifted sum. Unsigned arithmetic: the
      // shifted sum and the correction may each be near ±2^30, their total is the exact result.
      uint32_t shift[kNR] = {};
      if (kDot)
        for (int j = 0; j < nr; ++j) {
          int32_t sw = 0;
          for (int k = 0; k < k16; ++k) sw += w[static_cast<size_t>(j) * ldw + k];
          shift[j] = 128u * static_cast<uint32_t>(sw);
        }
      for (int m = mc; m < mc_end; m += kMR) {
        const int mr = std::min(kMR, mc_end - m);
        int32_t acc[kMR][kNR] = {};
        const uint8_t* a = A + static_cast<size_t>(m) * lda;
        if (mr == 2)
          tile_cols_neon<kDot, 2>(nr, acc, a, lda, w, ldw, k16);
        else
          tile_cols_neon<kDot, 1>(nr, acc, a, lda, w, ldw, k16);
        if (kDot)
          for (int i = 0; i < mr; ++i)
            for (int j = 0; j < nr; ++j)
              acc[i][j] = static_cast<int32_t>(static_cast<uint32_t>(acc[i][j]) + shift[j]);
        tail_sums(acc, mr, nr, k16, K, A, lda, W, ldw, m, n);
        for (int i = 0; i < mr; ++i)
          for (int j = 0; j < nr; ++j) store(epi, m + i, n + j, acc[i][j]);
      }
    }
  }
}

bool have_dotprod() {
#if defined(__linux__) && defined(HWCAP_ASIMDDP)
  static const bool have = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return have;
#else
  return false;
#endif
}

bool have_i8mm() {
#if defined(BERTRT_Q8_I8MM) && defined(__linux__) && defined(HWCAP2_I8MM)
  static const bool have = (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
  return have;
#else
  return false;  // not built (a compiler without +i8mm) or no way to ask the kernel
#endif
}
#endif  // BERTRT_Q8_NEON

}  // namespace

const char* q8_kernel_name(Q8Kernel k) {
  switch (k) {
    case Q8Kernel::kAvx2:
      return "avx2";
    case Q8Kernel::kNeon:
      return "neon";
    case Q8Kernel::kNeonDot:
      return "neondot";
    case Q8Kernel::kNeonI8mm:
      return "neoni8mm";
    case Q8Kernel::kAvx512Vnni:
      return "avx512vnni";
    case Q8Kernel::kAvx512Vnni256:
      return "avx512vnni256";
    case Q8Kernel::kAvxVnni:
      return "avxvnni";
    case Q8Kernel::kAmx:
      return "amx";
    case Q8Kernel::kScalar:
      break;
  }
  return "scalar";
}

bool q8_kernel_available(Q8Kernel k) {
  switch (k) {
    case Q8Kernel::kScalar:
      return true;
#ifdef BERTRT_Q8_X86
#ifdef BERTRT_Q8_AVX2
    case Q8Kernel::kAvx2:
      return x86_features().avx2;
#endif
#ifdef BERTRT_Q8_AVX512VNNI
    case Q8Kernel::kAvx512Vnni:
    case Q8Kernel::kAvx512Vnni256:
      return x86_features().avx512_vnni;
#endif
#ifdef BERTRT_Q8_AVXVNNI
    case Q8Kernel::kAvxVnni:
      return x86_features().avx_vnni;
#endif
#ifdef BERTRT_Q8_AMX
    case Q8Kernel::kAmx:
      return x86_features().amx_int8;
#endif
#endif
#ifdef BERTRT_Q8_NEON
    case Q8Kernel::kNeon:
      return true;  // NEON is part of every ARMv8-A core
    case Q8Kernel::kNeonDot:
      return have_dotprod();
    case Q8Kernel::kNeonI8mm:
      return have_i8mm();
#endif
    default:
      return false;
  }
}

namespace {
Q8Kernel pick_kernel() {
  const char* env = std::getenv("BERTRT_Q8_KERNEL");
  if (env && *env) {
    std::string can;
    for (Q8Kernel k : kAllQ8Kernels)
      if (q8_kernel_available(k)) can += std::string(can.empty() ? "" : ", ") + q8_kernel_name(k);
    for (Q8Kernel k : kAllQ8Kernels)
      if (std::strcmp(env, q8_kernel_name(k)) == 0) {
        if (!q8_kernel_available(k))
          fail("BERTRT_Q8_KERNEL={}: this CPU cannot run that kernel (it can run: {})", env, can);
        return k;
      }
    fail("BERTRT_Q8_KERNEL={}: no such int8 kernel (this CPU can run: {})", env, can);
  }
  // The 512-bit kernel before the 256-bit one: on Zen 4 a zmm vpdpbusd does twice the work of a
  // ymm one per issue, and Intel parts with AVX-512 VNNI run it at full width too.
  for (Q8Kernel k : {Q8Kernel::kNeonI8mm, Q8Kernel::kNeonDot, Q8Kernel::kNeon, Q8Kernel::kAmx,
                     Q8Kernel::kAvx512Vnni, Q8Kernel::kAvxVnni, Q8Kernel::kAvx2})
    if (q8_kernel_available(k)) return k;
  return Q8Kernel::kScalar;
}
}  // namespace

Q8Kernel q8_best_kernel() {
  static const Q8Kernel k = pick_kernel();
  return k;
}

int q8_kernel_tile_n(Q8Kernel k) {
  switch (k) {
    case Q8Kernel::kAvx512Vnni:
    case Q8Kernel::kAmx:
      return kVnniPanelZmm;
    case Q8Kernel::kAvx512Vnni256:
    case Q8Kernel::kAvxVnni:
      return kVnniPanelYmm;
    case Q8Kernel::kAvx2:
      return kAvx2Panel;
    case Q8Kernel::kNeonI8mm:
      return kI8mmPanel;
    default:
      return kNR;
  }
}

size_t vnni_panel_bytes(int nrp, int K) {
  return static_cast<size_t>((K + 3) / 4) * static_cast<size_t>(nrp) * 4;
}

void vnni_pack_panel(int8_t* dst, const int8_t* W, int ldw, int n, int nr, int K, int nrp) {
  const int k4 = K / 4, rem = K - 4 * k4;
  if (nr < nrp || rem) std::memset(dst, 0, vnni_panel_bytes(nrp, K));
  for (int j = 0; j < nr; ++j) {
    const int8_t* w = W + static_cast<size_t>(n + j) * ldw;
    int8_t* d = dst + static_cast<size_t>(j) * 4;
    for (int q = 0; q < k4; ++q) std::memcpy(d + static_cast<size_t>(q) * nrp * 4, w + 4 * q, 4);
    if (rem) std::memcpy(d + static_cast<size_t>(k4) * nrp * 4, w + 4 * k4, rem);
  }
}

size_t avx2_panel_bytes(int K) {
  return static_cast<size_t>((K + 1) / 2) * static_cast<size_t>(kAvx2Panel) * 2;
}

void avx2_pack_panel(int8_t* dst, const int8_t* W, int ldw, int n, int nr, int K) {
  const int k2 = K / 2, odd = K - 2 * k2;
  if (nr < kAvx2Panel || odd) std::memset(dst, 0, avx2_panel_bytes(K));
  for (int j = 0; j < nr; ++j) {
    const int8_t* w = W + static_cast<size_t>(n + j) * ldw;
    int8_t* d = dst + static_cast<size_t>(j) * 2;
    for (int q = 0; q < k2; ++q)
      std::memcpy(d + static_cast<size_t>(q) * kAvx2Panel * 2, w + 2 * q, 2);
    if (odd) d[static_cast<size_t>(k2) * kAvx2Panel * 2] = w[2 * k2];
  }
}

size_t i8mm_panel_bytes(int K) {
  return static_cast<size_t>((K + 7) / 8) * static_cast<size_t>(kI8mmPanel) * 8;
}

void i8mm_pack_panel(int8_t* dst, const int8_t* W, int ldw, int n, int nr, int K) {
  const int k8 = (K + 7) / 8;
  if (k8 == 0) return;  // K = 0: an empty panel (dst may be null)
  std::memset(dst, 0, i8mm_panel_bytes(K));
  for (int j = 0; j < nr; ++j) {
    const int8_t* w = W + static_cast<size_t>(n + j) * ldw;
    // Column j's 8 values of block kb: pair j / 2, half j % 2.
    int8_t* d = dst + static_cast<size_t>(j / 2) * 16 + static_cast<size_t>(j % 2) * 8;
    for (int kb = 0; kb < k8; ++kb) {
      const int len = std::min(8, K - 8 * kb);
      std::memcpy(d + static_cast<size_t>(kb) * kI8mmPanel * 8, w + 8 * kb, len);
    }
  }
}

namespace {
// One panel of kernel k's packing: its bytes, and the packing of W rows [n, n + nr) into it.
size_t panel_bytes(Q8Kernel k, int K) {
  if (k == Q8Kernel::kAvx2) return avx2_panel_bytes(K);
  if (k == Q8Kernel::kNeonI8mm) return i8mm_panel_bytes(K);
  return vnni_panel_bytes(q8_kernel_tile_n(k), K);
}
void pack_panel(Q8Kernel k, int8_t* dst, const int8_t* W, int ldw, int n, int nr, int K) {
  if (k == Q8Kernel::kAvx2)
    avx2_pack_panel(dst, W, ldw, n, nr, K);
  else if (k == Q8Kernel::kNeonI8mm)
    i8mm_pack_panel(dst, W, ldw, n, nr, K);
  else
    vnni_pack_panel(dst, W, ldw, n, nr, K, q8_kernel_tile_n(k));
}
}  // namespace

size_t q8_packed_w_bytes(Q8Kernel k, int N, int K) {
  const int nrp = q8_kernel_tile_n(k);
  if (nrp == kNR) return 0;
  return static_cast<size_t>((N + nrp - 1) / nrp) * panel_bytes(k, K);
}

void q8_pack_w(Q8Kernel k, int8_t* dst, const int8_t* W, int ldw, int N, int K) {
  const int nrp = q8_kernel_tile_n(k);
  if (nrp == kNR) return;
  const size_t panel = panel_bytes(k, K);
  for (int n = 0; n < N; n += nrp)
    pack_panel(k, dst + static_cast<size_t>(n / nrp) * panel, W, ldw, n, std::min(nrp, N - n), K);
}

void q8_pack_a(int16_t* a16, const uint8_t* A, int lda, int M, int K) {
  const int stride = q8_a16_stride(K);
  for (int m = 0; m < M; ++m) {
    const uint8_t* a = A + static_cast<size_t>(m) * lda;
    int16_t* o = a16 + static_cast<size_t>(m) * stride;
    for (int k = 0; k < K; ++k) o[k] = a[k];
    for (int k = K; k < stride; ++k) o[k] = 0;
  }
}

namespace {

void qu8s8_gemm_scalar(int M, int n0, int n1, int K, const uint8_t* A, int lda, const int8_t* W,
                       int ldw, const Q8Epilogue& epi) {
  for (int n = n0; n < n1; ++n) {
    const int8_t* __restrict w = W + static_cast<size_t>(n) * ldw;
    for (int m = 0; m < M; ++m) {
      const uint8_t* __restrict a = A + static_cast<size_t>(m) * lda;
      int32_t acc = 0;
      for (int k = 0; k < K; ++k) acc += int32_t{a[k]} * int32_t{w[k]};
      store(epi, m, n, acc);
    }
  }
}
}  // namespace

void qu8s8_gemm(Q8Kernel k, int M, int n0, int n1, int K, const uint8_t* A, int lda,
                [[maybe_unused]] const Q8PackedA& pa, const int8_t* W, int ldw,
                [[maybe_unused]] const int8_t* w_packed, const Q8Epilogue& epi) {
#if defined(BERTRT_Q8_AVX512VNNI) || defined(BERTRT_Q8_AVXVNNI) || defined(BERTRT_Q8_AVX2) || \
    defined(BERTRT_Q8_AMX)
  if (k == Q8Kernel::kAvx512Vnni || k == Q8Kernel::kAvx512Vnni256 || k == Q8Kernel::kAvxVnni ||
      k == Q8Kernel::kAvx2 || k == Q8Kernel::kAmx) {
    // One panel of W per call when it is not packed yet (reused between calls on this thread).
    thread_local std::vector<int8_t> panel;
    if (!w_packed) panel.resize(panel_bytes(k, K));
    int8_t* buf = w_packed ? nullptr : panel.data();
    switch (k) {
#ifdef BERTRT_Q8_AMX
      case Q8Kernel::kAmx:
        return qu8s8_gemm_32x32_amx(M, n0, n1, K, A, lda, W, ldw, w_packed, buf, epi);
#endif
#ifdef BERTRT_Q8_AVX2
      case Q8Kernel::kAvx2:
        return qu8s8_gemm_6x16_avx2(M, n0, n1, K, pa.a16, pa.stride, W, ldw, w_packed, buf, epi);
#endif
#ifdef BERTRT_Q8_AVX512VNNI
      case Q8Kernel::kAvx512Vnni:
        return qu8s8_gemm_8x32_avx512vnni(M, n0, n1, K, A, lda, W, ldw, w_packed, buf, epi);
      case Q8Kernel::kAvx512Vnni256:
        return qu8s8_gemm_8x16_avx512vnni256(M, n0, n1, K, A, lda, W, ldw, w_packed, buf, epi);
#endif
#ifdef BERTRT_Q8_AVXVNNI
      case Q8Kernel::kAvxVnni:
        return qu8s8_gemm_6x16_avxvnni(M, n0, n1, K, A, lda, W, ldw, w_packed, buf, epi);
#endif
      default:
        break;
    }
  }
#endif
  switch (k) {
#ifdef BERTRT_Q8_I8MM
    case Q8Kernel::kNeonI8mm: {
      thread_local std::vector<int8_t> panel;  // as above
      if (!w_packed) panel.resize(i8mm_panel_bytes(K));
      return qu8s8_gemm_8x8_neoni8mm(M, n0, n1, K, A, lda, W, ldw, w_packed,
                                     w_packed ? nullptr : panel.data(), epi);
    }
#endif
#ifdef BERTRT_Q8_NEON
    case Q8Kernel::kNeon:
      return qu8s8_gemm_2x4_neon_impl<false>(M, n0, n1, K, A, lda, W, ldw, epi);
    case Q8Kernel::kNeonDot:
      return qu8s8_gemm_2x4_neon_impl<true>(M, n0, n1, K, A, lda, W, ldw, epi);
#endif
    default:
      return qu8s8_gemm_scalar(M, n0, n1, K, A, lda, W, ldw, epi);
  }
}

}  // namespace bertrt::cpu
