// fp32 GEMM tiles for the Linear form Y = X·Wᵀ (+ bias) with W read in place, for static-weight
// inference (XNNPACK-style names: data type, output tile rows × columns, instruction set).
//
// W stays where it is: nn.Linear's [N, K] rows, e.g. the model file's mapped pages, never packed
// or copied. The activations X [M, K] are packed per call instead, in panels of PR rows with k
// outermost (P[p][k][PR], rows past M zero): a packed panel gives PR rows of one k in PR/L vector
// loads. A tile of NR output columns broadcasts W[n + j, k] (one scalar per column and k) and
// multiply-adds it into the panel's vectors, so W is read once per panel and X once per tile.
// Packing X costs M·K moves per call against M·N·K multiply-adds: 1/N of the work (≤ 0.4 % for
// BERT's N ≥ 256), where packing W per call (OpenBLAS) moved N·K floats per call and a packed
// copy of W held at load (XNNPACK) doubled the weights' memory.
// Or W is packed once (f32_pack_w, ldw == 0), trading the weights' memory again for tiles read in
// order (one stream, not NR strided rows): training packs a weight once for several blocks of
// rows. The cpu backend's static weights use the broadcast form below, with its own layout.
//
//   f32_gemm_32x12_avx512f  32 rows (2 zmm) × 12 columns: 24 accumulators + 2 X vectors + 1
//                           broadcast of the 32 zmm registers (x86-64-v4: AVX-512 F/BW/DQ/VL)
//   f32_gemm_16x6_fma3      16 rows (2 ymm) × 6 columns: 12 accumulators of 16 ymm (AVX2 + FMA)
//   f32_gemm_scalar         the reference: one fused multiply-add per (m, n, k), X read as it is
//
// Numerics: every kernel computes each output as ONE chain of fused multiply-adds over k in
// order, starting from +0: acc = fma(X[m, k], W[n, k], acc) for k = 0 … K−1, then acc + bias[n]
// (one rounding). The same expression in every kernel, tile, split and thread count, so all
// kernels give the same floats bit for bit (tests/unit/f32_gemm_test.cpp).
#pragma once

#include <cstddef>

namespace bertrt::cpu {

enum class F32Kernel { kScalar, kFma3, kAvx512f };

// Every kernel, scalar first (for tests and `--help` texts).
constexpr F32Kernel kAllF32Kernels[] = {F32Kernel::kScalar, F32Kernel::kFma3, F32Kernel::kAvx512f};

// "scalar", "fma3", "avx512f".
const char* f32_kernel_name(F32Kernel k);
// True when kernel k was built and can run on this CPU (cpu_features.h).
bool f32_kernel_available(F32Kernel k);
// The best available SIMD kernel (avx512f > fma3), or the one named by BERTRT_F32_KERNEL (an
// unknown name or one this CPU cannot run is an error naming the variable and the kernels it can
// run). kScalar where no SIMD kernel can run (aarch64: the cpu backend keeps OpenBLAS there).
F32Kernel f32_kernel_from_env();
// f32_kernel_from_env() read once per process (what a CpuBackend starts with).
F32Kernel f32_best_kernel();

// Output columns per tile (12, 6, 1): callers split N in multiples of it.
int f32_kernel_tile_n(F32Kernel k);
// Rows per packed panel of X (32, 16; 1 for the scalar kernel, which reads X as it is).
int f32_kernel_panel_rows(F32Kernel k);
// Floats of X [M, K] packed for kernel k (0 for the scalar kernel).
size_t f32_packed_x_floats(F32Kernel k, int M, int K);
// Packs panels [p0, p1) of X [M, K] (row stride ldx) into P (f32_packed_x_floats floats, 64-byte
// aligned). Panels are independent: callers may pack them on several threads.
void f32_pack_x(F32Kernel k, float* P, const float* X, int ldx, int M, int K, int p0, int p1);

// Floats of W [N, K] packed once for kernel k (0 for the scalar kernel, which reads W in place):
// tiles of f32_kernel_tile_n columns over all of K, each k-major, columns past N zero.
size_t f32_packed_w_floats(F32Kernel k, int N, int K);
// Packs W [N, K] (row stride K) into Wp (f32_packed_w_floats floats, 64-byte aligned). Reading
// the packed tiles instead of W's rows changes no float: the same fma chains, the same order.
void f32_pack_w(F32Kernel k, float* Wp, const float* W, int N, int K);

// The same layouts from the transposed operands of a general GEMM (training's dX = dY·W and
// dW = dYᵀ·X): plain copies of contiguous runs, since a panel's PR rows of one k (and a tile's NR
// columns of one k) lie side by side in the transposed source. Same floats in the same places as
// f32_pack_x / f32_pack_w of the explicit transpose.
// Panels [p0, p1) of X = Aᵀ for A [K, M] (row stride lda) into P, as f32_pack_x.
void f32_pack_x_t(F32Kernel k, float* P, const float* A, int lda, int M, int K, int p0, int p1);
// Tiles [t0, t1) (of f32_kernel_tile_n columns) of W = Bᵀ for B [K, N] (row stride ldb) into Wp,
// laid out as f32_pack_w's (tile t at Wp + t·tile_n·K).
void f32_pack_w_t(F32Kernel k, float* Wp, const float* B, int ldb, int N, int K, int t0, int t1);

// Floats of scratch f32_gemm_xwt needs for M rows and columns [n0, n1): the partial sums of a
// block of columns, when K is longer than one block of k (0 otherwise, and for kScalar).
size_t f32_scratch_floats(F32Kernel k, int M, int n0, int n1, int K);

// Y[m, n] = Σ_k X[m, k]·W[n, k] (+ bias[n] when bias is non-null) for all M rows and columns
// [n0, n1) (n0 a multiple of f32_kernel_tile_n(k)), W [N, K] with row stride ldw (or, ldw == 0
// and a SIMD kernel, W packed by f32_pack_w), Y row stride
// ldy. The SIMD kernels read P (f32_pack_x of all of X for k), the scalar one X (row stride ldx).
// S: f32_scratch_floats floats, 64-byte aligned, owned by the caller's thread.
void f32_gemm_xwt(F32Kernel k, int M, int n0, int n1, int K, const float* X, int ldx,
                  const float* P, const float* W, int ldw, const float* bias, float* Y, int ldy,
                  float* S);

// --- The broadcast form, for static-weight inference (the cpu backend's provider `bertrt`) ---
// X [M, K] read in place (no packing per call), W packed once in tiles of f32_bcast_tile_n
// columns over all of K; each step of k broadcasts X[m, k] of the tile's rows into the columns'
// vectors, and each accumulator is a piece of one row of Y. The same fma chains as
// f32_gemm_xwt, so the same floats bit for bit.
//   f32_gemm_bcast_12x32_avx512f  12 rows × 32 columns (2 zmm): 24 accumulators
//   f32_gemm_bcast_6x16_fma3      6 rows × 16 columns (2 ymm): 12 accumulators
// It replaced the panel form there: at BERT-mini B1 the packing transposes of X and of the
// tiles' rows of Y were 8 % of the forward (docs/explanation/cpu-kernels.md).

// Output rows and columns per tile (12 × 32, 6 × 16; 0 for the scalar kernel, which has none).
int f32_bcast_tile_m(F32Kernel k);
int f32_bcast_tile_n(F32Kernel k);
// Floats of W [N, K] packed for the broadcast form (0 for the scalar kernel).
size_t f32_packed_wb_floats(F32Kernel k, int N, int K);
// Tiles [t0, t1) of f32_bcast_tile_n columns of W [N, K] (row stride K) into Wp: tile t at
// Wp + t·tile_n·K, k-major, columns past N zero. Tiles are independent (packed on any thread).
void f32_pack_wb(F32Kernel k, float* Wp, const float* W, int N, int K, int t0, int t1);
// Y[m, n] = Σ_k X[m, k]·W[n, k] (+ bias[n]) for rows [0, M) and columns [n0, n1) (n0 a multiple
// of f32_bcast_tile_n), X row stride ldx, Wp from f32_pack_wb, Y row stride ldy (Y must not
// overlap X: it holds the partial sums between blocks of k). A SIMD kernel only.
void f32_gemm_xwt_bcast(F32Kernel k, int M, int n0, int n1, int K, const float* X, int ldx,
                        const float* Wp, const float* bias, float* Y, int ldy);

}  // namespace bertrt::cpu
