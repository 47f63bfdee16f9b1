// XNNPACK as a provider of the cpu backend's static-weight fp32 fully-connected layers
// (Debian's libxnnpack, snapshot 0.0~git20220216: xnn_create/setup_fully_connected_nc_f32).
//
// What it covers, and why only that (../shared/notes/cpu-kernels.md §1–2):
//   - fp32 Y[M, N] = X[M, K] · Wᵀ, W [N, K] in nn.Linear layout, which is XNNPACK's own kernel
//     layout. XNNPACK packs W into its layout when the operator is created; the operator is kept
//     per weight (created at first use, deleted with the backend), so W is packed once, not per
//     call. The packed copy is as big as W (the provider doubles the FC weights' memory).
//   - not int8: the snapshot's qs8/qu8 fully-connected operators take one static scale for the
//     input, one for the whole kernel and one for the output, and write int8/uint8. Our int8
//     Linear has one scale per output channel and dequantizes the exact int32 sum to fp32
//     (Backend::linear_u8s8); XNNPACK would requantize to 8 bits, so it cannot give our results
//     and is not used for int8.
//
// Numerics: XNNPACK's microkernels sum K in order with FMA, one output element per accumulator
// lane, the same for any thread count (a tile of C is always one microkernel call over all of K).
// OpenBLAS sums in its own blocked order. Both are fp32 sums of the same products; they differ by
// rounding only (tests/unit/xnnpack_fc_test.cpp bounds it against a double-precision reference).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backends/cpu/fc_provider.h"

struct pthreadpool;

namespace bertrt::cpu {


// True when this build has XNNPACK (BERTRT_XNNPACK), without initialising it.
bool xnnpack_built();
// True when this build has XNNPACK and xnn_initialize (run once, on the first call) accepted
// this CPU.
bool xnnpack_available();
// Why xnnpack_available() is false ("" when it is true).
std::string xnnpack_unavailable_reason();


// The auto rule: true for a Linear shape [M, K] · [N, K]ᵀ on this CPU family where the bench
// (bench/fc_bench.cpp, figures in docs/explanation/cpu-kernels.md) measured XNNPACK faster than the
// OpenBLAS path. False wherever nothing was measured.
bool xnnpack_fc_wins(int M, int N, int K);

// The most bytes of packed weights auto lets one backend hold: BERTRT_FC_XNNPACK_MAX_MB (a
// non-negative integer, MB = 10⁶ bytes), else 16 MB: all of BERT-mini's Linears (12.8 MB), a
// quarter of the 64 MB over the file size that inference may use. Beyond it auto leaves
// the remaining weights on OpenBLAS. Throws bertrt::Error naming the variable for a bad value.
size_t xnnpack_auto_budget_bytes();

// The operators of one backend: one XNNPACK fully-connected operator per (weight, shape,
// strides), each holding its packed copy of W. Not thread-safe: one caller at a time, as a
// backend is.
class XnnpackFc {
 public:
  XnnpackFc();
  ~XnnpackFc();
  XnnpackFc(const XnnpackFc&) = delete;
  XnnpackFc& operator=(const XnnpackFc&) = delete;

  // Y[m, n] (row stride ldy) = Σ_k X[m, k] · W[n, k] (+ bias[n] when bias is non-null), X row
  // stride ldx, W [N, K] contiguous. The operator for (W, bias, N, K, ldx, ldy) is created on the
  // first call and reused: W's values are read once, when it is packed, so W must not change
  // (nor its memory be reused for another weight of that shape) while its operator is kept; call
  // clear() first. The caller guarantees it (CpuBackend: constant weights declared). pool may be
  // null (run on the caller). Throws bertrt::Error when XNNPACK reports a failure.
  void run(float* Y, int ldy, const float* X, int ldx, const float* W, const float* bias, int M,
           int N, int K, pthreadpool* pool);
  // Deletes every operator (and its packed weights).
  void clear();
  // True when an operator for exactly these arguments is held.
  bool holds(const float* W, const float* bias, int N, int K, int ldx, int ldy) const;
  size_t operators() const;
  size_t packed_bytes() const;  // Σ N·K·4 (+ N·4 with a bias) over the operators

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bertrt::cpu
