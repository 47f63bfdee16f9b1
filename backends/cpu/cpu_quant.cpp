// CpuBackend's quantization ops: argument checks up front (pool tasks must not throw), then the
// loops of quant_kernels.h / the GEMM tiles of q8_gemm.h over the pool. Every output element is
// computed whole by one task, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gelu_u8.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/q8_gemm.h"
#include "backends/cpu/quant_kernels.h"
#include "backends/quant_checks.h"
#include "core/error.h"

namespace bertrt {
namespace {

constexpr size_t kGrainElems = 16384;  // as cpu_backend.cpp: below this a hand-off costs more

// Below this many multiply-adds a GEMM runs on the calling thread.
constexpr double kQ8SplitOps = 1 << 18;

// run_q8's post-op block: 64 × 64 fp32 (16 KB, in L1). Whole columns of a tall output would not
// stay cached: rows N floats apart (4 KB for N = 1024) fall into few cache sets.
constexpr int kPostCols = 64, kPostRows = 64;

// No work after the GEMM.
struct NoPost {
  static constexpr bool kActive = false;
  void operator()(int, int, int, int, const float*, size_t) const {}
};

// At most this many bytes of W, the int8 Linears split their rows between the threads instead of
// their columns. With the columns split, every thread reads all of A, half of which the other core
// has just written (the op before split the same rows that way): at BERT-mini those cross-core
// reads cost more than a second read of a small W from L3. bertrt bench, 2 threads, the two splits
// alternated (Intel Xeon, avx512vnni): BERT-mini int8 B1 min 1.42-1.46 -> 1.34-1.35 ms, B8
// 10.95-11.20 -> 10.14-10.36 ms; BERT-base, whose weights (0.6-2.4 MB each) come from memory and
// would be read twice, is level at B8 and 1-5 % slower at B1 with its rows split, so it keeps the
// columns. 512 KB: BERT-mini's largest weight (256 KB) with room, under BERT-base's smallest.
constexpr size_t kQ8RowSplitWBytes = 512 * 1024;
constexpr int kQ8RowGroup = 8;  // rows a unit of the row split: the widest kernels' tile height

// Runs the u8×s8 GEMM on the pool with the backend's kernel: packs A to int16 once (AVX2 path),
// then each task computes a block of the output: whole columns [n0, n1) (whole tiles of the
// kernel's width) for every row, or (W small, kQ8RowSplitWBytes) all columns of rows [m0, m1).
// Either way each output's sum is the same, so the split never changes a result.
// w_packed: W packed for that kernel (q8_pack_w) or null.
// post(m0, m1, c0, c1, x, ldx), when active, runs on the task's thread right after the block of
// rows [m0, m1) × columns [c0, c1) is dequantized (kPostRows × about kPostCols) into a buffer of
// the thread, while it is in L1 (x: its first float, ldx: its row stride); epi.out is not written.
template <class Post = NoPost>
void run_q8(cpu::ThreadPool& pool, cpu::Q8Kernel kernel, int M, int N, int K, const uint8_t* A,
            int lda, const int8_t* W, int ldw, const int8_t* w_packed, const cpu::Q8Epilogue& epi,
            Post post = {}) {
  if (M <= 0 || N <= 0) return;
  using cpu::Q8Kernel;
  const bool panels = cpu::q8_kernel_tile_n(kernel) != cpu::q8_kernel_tile_n(Q8Kernel::kScalar);
  // The NEON tiles need K ≥ 16; the panel kernels' epilogue needs a quint8 zero point (q8_gemm.h).
  if ((!panels && K < 16) ||
      (panels && (epi.out || Post::kActive) &&
       (epi.a_zero_point < 0 || epi.a_zero_point > 255)))
    kernel = Q8Kernel::kScalar, w_packed = nullptr;
  // Reused between calls on this thread: inference calls this per Linear with the same shapes.
  thread_local std::vector<int16_t> a16;
  cpu::Q8PackedA pa;
  if (cpu::q8_kernel_packs_a(kernel)) {
    pa.stride = cpu::q8_a16_stride(K);
    a16.resize(static_cast<size_t>(M) * pa.stride);
    cpu::q8_pack_a(a16.data(), A, lda, M, K);
    pa.a16 = a16.data();
  }
  const int tile = cpu::q8_kernel_tile_n(kernel);
  // Rows [m0, m1) × columns [n0, n1) of the output, on the calling task's thread.
  auto run_block = [&](int m0, int m1, int n0, int n1) {
    const auto a_at = [&](int m) { return A + static_cast<size_t>(m) * lda; };
    const auto pa_at = [&](int m) {
      cpu::Q8PackedA p = pa;
      if (p.a16) p.a16 += static_cast<size_t>(m) * p.stride;
      return p;
    };
    if constexpr (!Post::kActive) {
      cpu::Q8Epilogue e = epi;
      if (e.c) e.c += static_cast<size_t>(m0) * e.ldc;
      if (e.out) e.out += static_cast<size_t>(m0) * e.ldo;
      cpu::qu8s8_gemm(kernel, m1 - m0, n0, n1, K, a_at(m0), lda, pa_at(m0), W, ldw, w_packed, e);
    } else {
      const int step = std::max(1, kPostCols / tile) * tile;
      thread_local std::vector<float> block;
      block.resize(static_cast<size_t>(kPostRows) * step);
      for (int c0 = n0; c0 < n1; c0 += step) {
        const int c1 = std::min(n1, c0 + step);
        for (int m = m0; m < m1; m += kPostRows) {
          const int mr = std::min(kPostRows, m1 - m);
          cpu::Q8Epilogue e = epi;
          e.out = block.data(), e.ldo = step, e.out_col0 = c0;
          if (e.c) e.c += static_cast<size_t>(m) * e.ldc;
          cpu::qu8s8_gemm(kernel, mr, c0, c1, K, a_at(m), lda, pa_at(m), W, ldw, w_packed, e);
          post(m, m + mr, c0, c1, block.data(), static_cast<size_t>(step));
        }
      }
    }
  };
  const int threads = pool.active_threads();
  if (threads > 1 && M >= 2 * kQ8RowGroup * threads &&
      static_cast<size_t>(N) * static_cast<size_t>(K) <= kQ8RowSplitWBytes) {
    const size_t groups = static_cast<size_t>((M + kQ8RowGroup - 1) / kQ8RowGroup);
    const double ops_per_group = static_cast<double>(kQ8RowGroup) * N * K;
    const size_t grain = static_cast<size_t>(std::max(1.0, kQ8SplitOps / ops_per_group));
    pool.parallel_for(groups, grain, [&](size_t g0, size_t g1) {
      run_block(static_cast<int>(g0) * kQ8RowGroup, std::min(M, static_cast<int>(g1) * kQ8RowGroup),
                0, N);
    });
    return;
  }
  const size_t blocks = static_cast<size_t>((N + tile - 1) / tile);
  const double ops_per_block = static_cast<double>(tile) * M * (K > 0 ? K : 1);
  const size_t grain = static_cast<size_t>(std::max(1.0, kQ8SplitOps / ops_per_block));
  pool.parallel_for(blocks, grain, [&](size_t b0, size_t b1) {
    run_block(0, M, static_cast<int>(b0) * tile, std::min(N, static_cast<int>(b1) * tile));
  });
}

// The int8 Linear's dequantizing epilogue (q8_gemm.h: float(acc − zp·Σw)·(a_scale·w_scale) + b).
cpu::Q8Epilogue dequant_epilogue(float* out, int ldo, float a_scale, int a_zero_point,
                                 const float* w_scale, const int32_t* w_sum, const float* bias) {
  cpu::Q8Epilogue epi;
  epi.out = out;
  epi.ldo = ldo;
  epi.a_scale = a_scale;
  epi.a_zero_point = a_zero_point;
  epi.w_scale = w_scale;
  epi.w_sum = w_sum;
  epi.bias = bias;
  return epi;
}

// run_q8's post-op of linear_u8s8_gelu_u8: GELU and quantize_u8 of each block of the dequantized
// Linear, in the thread's scratch block: nothing reads the fp32 pre-activation at inference, and
// writing it out ([M, N], 4 MB a layer at BERT-mini B8) cost a pass through memory.
struct GeluQuantize {
  static constexpr bool kActive = true;
  uint8_t* q;
  int N;
  Gelu kind;
  float inv;
  int zero_point;
  cpu::F32Kernel simd;  // which SIMD path of gelu_u8.h (the backend's fp32 kernel)
  void operator()(int m0, int m1, int c0, int c1, const float* x, size_t ldx) const {
    const size_t w = static_cast<size_t>(c1 - c0);
    uint8_t* qb = q + static_cast<size_t>(m0) * N + c0;
    if (kind == Gelu::kErf)
      return cpu::gelu_erf_quantize_u8(simd, qb, x, m1 - m0, c1 - c0, N, ldx, inv, zero_point);
    thread_local std::vector<float> row;
    if (row.size() < w) row.resize(w);
    for (int m = 0; m < m1 - m0; ++m) {
      cpu::gelu_tanh_forward_kernel(row.data(), x + static_cast<size_t>(m) * ldx, w);
      cpu::quantize_u8_kernel(qb + static_cast<size_t>(m) * N, row.data(), w, inv, zero_point);
    }
  }
};

}  // namespace

void CpuBackend::min_max(float* mn, float* mx, const float* x, size_t n) {
  if (n == 0) fail("min_max: empty input");
  // Per-tile results combined in tile order (min/max are exact in any order anyway).
  const size_t tiles = (n + kGrainElems - 1) / kGrainElems;
  std::vector<float> lo(tiles), hi(tiles);
  pool_.parallel_for(tiles, 1, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t) {
      const size_t i0 = t * kGrainElems, i1 = std::min(n, i0 + kGrainElems);
      cpu::min_max_kernel(&lo[t], &hi[t], x + i0, i1 - i0);
    }
  });
  float l = lo[0], h = hi[0];
  for (size_t t = 1; t < tiles; ++t) {
    l = lo[t] < l ? lo[t] : l;
    h = hi[t] > h ? hi[t] : h;
  }
  *mn = l;
  *mx = h;
}

void CpuBackend::absmax_rows(float* out, const float* x, int rows, int cols) {
  const size_t grain = cols > 0 ? (kGrainElems + cols - 1) / cols : 1;
  pool_.parallel_for(rows, grain, [&](size_t r0, size_t r1) {
    cpu::absmax_rows_kernel(out, x, static_cast<int>(r0), static_cast<int>(r1), cols);
  });
}

void CpuBackend::fake_quant_per_tensor(float* out, uint8_t* mask, const float* x, size_t n,
                                       float scale, int zero_point, int qmin, int qmax) {
  check_quant_scale("fake_quant_per_tensor", scale, 0);
  const float inv = 1.0f / scale;
  pool_.parallel_for(n, kGrainElems, [&](size_t i0, size_t i1) {
    cpu::fake_quant_kernel(out + i0, mask ? mask + i0 : nullptr, x + i0, i1 - i0, scale, inv,
                           zero_point, qmin, qmax);
  });
}

void CpuBackend::fake_quant_per_row(float* out, uint8_t* mask, const float* x, const float* scale,
                                    int rows, int cols, int qmin, int qmax) {
  for (int r = 0; r < rows; ++r) check_quant_scale("fake_quant_per_row", scale[r], r);
  const size_t grain = cols > 0 ? (kGrainElems + cols - 1) / cols : 1;
  pool_.parallel_for(rows, grain, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const size_t off = r * static_cast<size_t>(cols);
      cpu::fake_quant_kernel(out + off, mask ? mask + off : nullptr, x + off,
                             static_cast<size_t>(cols), scale[r], 1.0f / scale[r], 0, qmin, qmax);
    }
  });
}

void CpuBackend::fake_quant_backward(float* dinp, const uint8_t* mask, const float* dout,
                                     size_t n) {
  pool_.parallel_for(n, kGrainElems, [&](size_t i0, size_t i1) {
    cpu::fake_quant_backward_kernel(dinp + i0, mask + i0, dout + i0, i1 - i0);
  });
}

void CpuBackend::quantize_u8(uint8_t* q, const float* x, size_t n, float scale, int zero_point) {
  check_quant_scale("quantize_u8", scale, 0);
  const float inv = 1.0f / scale;
  pool_.parallel_for(n, kGrainElems, [&](size_t i0, size_t i1) {
    cpu::quantize_u8_kernel(q + i0, x + i0, i1 - i0, inv, zero_point);
  });
}

void CpuBackend::embedding_forward_s8(float* out, const int32_t* ids, const int8_t* q,
                                      const float* scale, int n, int C, int V) {
  for (int i = 0; i < n; ++i)  // checked up front: the pool's tasks must not throw
    if (ids[i] < 0 || ids[i] >= V)
      fail("embedding_forward_s8: position {}: id {} is outside the table [0, {})", i, ids[i], V);
  const size_t grain = C > 0 ? (kGrainElems + C - 1) / C : 1;
  pool_.parallel_for(n, grain, [&](size_t r0, size_t r1) {
    cpu::embedding_forward_s8_rows(out, ids, q, scale, static_cast<int>(r0), static_cast<int>(r1),
                                   C);
  });
}

void CpuBackend::gemm_u8s8_s32(int M, int N, int K, const uint8_t* A, int lda, const int8_t* B,
                               int ldb, int32_t* C, int ldc) {
  check_q8_k("gemm_u8s8_s32", K);
  cpu::Q8Epilogue epi;
  epi.c = C;
  epi.ldc = ldc;
  run_q8(pool_, q8_kernel_, M, N, K, A, lda, B, ldb, nullptr, epi);
}

void CpuBackend::linear_u8s8(float* out, int ldo, const uint8_t* A, int lda, float a_scale,
                             int a_zero_point, const int8_t* W, const float* w_scale,
                             const int32_t* w_sum, const float* bias, int M, int N, int K) {
  linear_u8s8_packed(out, ldo, A, lda, a_scale, a_zero_point, W, nullptr, w_scale, w_sum, bias, M,
                     N, K);
}

size_t CpuBackend::q8_packed_weight_bytes(int N, int K) const {
  return cpu::q8_packed_w_bytes(q8_kernel_, N, K);
}

void CpuBackend::pack_q8_weight(int8_t* packed, const int8_t* W, int N, int K) {
  cpu::q8_pack_w(q8_kernel_, packed, W, K, N, K);
}

void CpuBackend::linear_u8s8_packed(float* out, int ldo, const uint8_t* A, int lda, float a_scale,
                                    int a_zero_point, const int8_t* W, const int8_t* w_packed,
                                    const float* w_scale, const int32_t* w_sum, const float* bias,
                                    int M, int N, int K) {
  check_q8_k("linear_u8s8", K);
  run_q8(pool_, q8_kernel_, M, N, K, A, lda, W, K, w_packed,
         dequant_epilogue(out, ldo, a_scale, a_zero_point, w_scale, w_sum, bias));
}

// The GEMM's epilogue dequantizes each block into the task's L1 buffer (run_q8); the task then
// runs GELU and the quantization on it: erf GELU by gelu_u8.h (a table where it provably gives the
// exact kernels' integer, those kernels elsewhere), tanh GELU by CpuBackend::gelu_forward's
// kernel, then quantize_u8's; either way the integers are those two ops'. `pre` and `act` are not
// used (scratch in Backend's contract).
void CpuBackend::linear_u8s8_gelu_u8(uint8_t* q, float*, float*, const uint8_t* A, int lda,
                                     float a_scale, int a_zero_point, const int8_t* W,
                                     const int8_t* w_packed, const float* w_scale,
                                     const int32_t* w_sum, const float* bias, int M, int N, int K,
                                     Gelu kind, float q_scale, int q_zero_point) {
  check_q8_k("linear_u8s8_gelu_u8", K);
  check_quant_scale("linear_u8s8_gelu_u8", q_scale, 0);
  run_q8(pool_, q8_kernel_, M, N, K, A, lda, W, K, w_packed,
         dequant_epilogue(nullptr, 0, a_scale, a_zero_point, w_scale, w_sum, bias),
         GeluQuantize{q, N, kind, 1.0f / q_scale, q_zero_point, f32_kernel_});
}

}  // namespace bertrt
