#include "backends/cpu/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include "backends/cpu/blas_core.h"
#include "backends/cpu/f32_attention.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/quant_kernels.h"
#include "backends/dropout_rule.h"
#include "backends/quant_checks.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace bertrt {
namespace {

// Tiles hold at least this many floats of work: below it a pool hand-off (~µs) costs more than
// the loop.
constexpr size_t kGrainElems = 16384;

size_t row_grain(size_t C) { return C > 0 ? (kGrainElems + C - 1) / C : 1; }

// Columns are split in multiples of 16 floats (a 64-byte cache line) so two threads never write
// the same line.
template <class F>
void for_column_blocks(cpu::ThreadPool& pool, int rows, int cols, F&& f) {
  const size_t blocks = (static_cast<size_t>(cols) + 15) / 16;
  const size_t grain = row_grain(static_cast<size_t>(rows) * 16);
  pool.parallel_for(blocks, grain, [&](size_t b0, size_t b1) {
    const int c0 = static_cast<int>(b0 * 16);
    const int c1 = static_cast<int>(std::min(b1 * 16, static_cast<size_t>(cols)));
    f(c0, c1);
  });
}

}  // namespace

CpuBackend::CpuBackend(int num_threads)
    : pool_(num_threads),
      q8_kernel_(cpu::q8_best_kernel()),
      f32_kernel_(cpu::f32_best_kernel()),
      fc_provider_(cpu::fc_provider_from_env()),
      streamed_attention_(cpu::f32_attention_streamed_from_env()) {
  cpu::ensure_blas_core();  // before the first GEMM: OpenBLAS may not know this CPU (blas_core.h)
  cpu::ensure_blas_single_threaded();  // process-wide; see gemm below
}

CpuBackend::~CpuBackend() {
  // Diagnostics for a user tuning threads: what the pool did (regions, wake-ups, stragglers,
  // adaptive width changes).
  if (const char* env = std::getenv("BERTRT_THREAD_STATS"); env && std::string(env) == "1")
    std::fprintf(stderr, "cpu backend threads: %s\n", pool_.summary().c_str());
}

// --- fully-connected provider ------------------------------------------------------------------

namespace {

void check_xnnpack_available(cpu::FcProvider p) {
  if (p == cpu::FcProvider::kXnnpack && !cpu::xnnpack_available())
    fail("cpu backend: fc provider xnnpack (BERTRT_FC_PROVIDER): {}; use openblas or auto",
         cpu::xnnpack_unavailable_reason());
}

}  // namespace

void CpuBackend::set_constant_weights(bool constant) {
  if (constant) check_xnnpack_available(fc_provider_);
  if (!constant) xnn_.reset(), drop_f32_packed_w(), f32_not_in_file_.clear();
  constant_weights_ = constant;
}

// The packed copies and their counts go together: a weight packed again (and its file pages given
// back again) is counted once.
void CpuBackend::drop_f32_packed_w() {
  f32_packed_w_.clear();
  f32_packed_w_bytes_ = 0, f32_released_bytes_ = 0;
}

void CpuBackend::set_fc_provider(cpu::FcProvider p) {
  if (constant_weights_) check_xnnpack_available(p);
  fc_provider_ = p;
}

bool CpuBackend::use_xnnpack(int M, int N, int K) const {
  if (!constant_weights_) return false;
  switch (fc_provider_) {
    case cpu::FcProvider::kOpenBlas:
      return false;
    case cpu::FcProvider::kXnnpack:
      return true;
    case cpu::FcProvider::kBertrt:
      return false;
    case cpu::FcProvider::kAuto:
      // The rule first: where it never wins (aarch64), XNNPACK is never even initialised. Its
      // rule holds for its AVX-512F kernels, which it picks by CPUID whatever BERTRT_F32_KERNEL
      // says: under a forced narrower fp32 kernel (fma3, the AVX2-only proxy) auto leaves it, as
      // a CPU without AVX-512F would (xnnpack_wins_here).
      return f32_kernel_ == cpu::F32Kernel::kAvx512f && cpu::xnnpack_fc_wins(M, N, K) &&
             cpu::xnnpack_available();
  }
  return false;
}

void CpuBackend::set_q8_kernel(cpu::Q8Kernel k) {
  if (!cpu::q8_kernel_available(k))
    fail("cpu backend: int8 kernel {} cannot run on this CPU", cpu::q8_kernel_name(k));
  q8_kernel_ = k;
}

void CpuBackend::set_f32_kernel(cpu::F32Kernel k) {
  if (!cpu::f32_kernel_available(k))
    fail("cpu backend: fp32 kernel {} cannot run on this CPU", cpu::f32_kernel_name(k));
  if (k != f32_kernel_) drop_f32_packed_w();  // another tile layout: packed again when used
  f32_kernel_ = k;
}

const float* CpuBackend::f32_packed_w(const float* W, int N, int K) {
  const cpu::F32Kernel k = f32_kernel_;
  const size_t floats = cpu::f32_packed_wb_floats(k, N, K);
  if (floats == 0) return nullptr;
  PackedW& p = f32_packed_w_[W];
  if (p.N != N || p.K != K || p.data.size() != floats) {
    f32_packed_w_bytes_ -= p.data.size() * sizeof(float);
    p.data.resize(floats);
    p.N = N, p.K = K;
    const int tn = cpu::f32_bcast_tile_n(k);
    float* wp = p.data.data();
    pool_.parallel_for(static_cast<size_t>((N + tn - 1) / tn), 1, [&](size_t t0, size_t t1) {
      cpu::f32_pack_wb(k, wp, W, N, K, static_cast<int>(t0), static_cast<int>(t1));
    });
    f32_packed_w_bytes_ += floats * sizeof(float);
    // The packed copy is the one the GEMMs read now: where W is a model file's mapped pages,
    // never written, they go back (a later reader maps them again), so the weights stay
    // resident once (inference's memory bound: docs/explanation/performance.md). Written or
    // anonymous memory stays.
    if (MappedFile::release_clean_pages(W, static_cast<size_t>(N) * K * sizeof(float)))
      f32_released_bytes_ += static_cast<size_t>(N) * K * sizeof(float);
  }
  return p.data.data();
}

// bertrt's own kernel (f32_gemm.h) on W packed once: always when asked for (its packed copies
// cost what they cost). auto takes it where packing costs no memory and the kernel was measured
// faster: a SIMD kernel (avx512f against OpenBLAS's SkylakeX kernel, fma3 against its Haswell
// one, the pair an AVX2-only host runs), a weight that is a model file's mapped pages never
// written (given back once packed: release_clean_pages), from a panel of rows on (32, 16 for
// fma3: the pooler's few rows stay with XNNPACK or OpenBLAS); and, once a weight is packed, every
// later call of it (its pages are gone). It comes before XNNPACK's rule: since its broadcast form
// it is the faster of the two there (docs/explanation/cpu-kernels.md). Weights loaded by copy
// (anonymous memory) stay with XNNPACK's rule, then OpenBLAS. Figures:
// docs/explanation/cpu-kernels.md.
bool CpuBackend::use_f32_kernel(const float* W, int M, int N, int K, int lda, int ldc) const {
  if (!constant_weights_) return false;
  if (fc_provider_ == cpu::FcProvider::kBertrt) return true;
  if (fc_provider_ != cpu::FcProvider::kAuto || f32_kernel_ == cpu::F32Kernel::kScalar)
    return false;
  const auto it = f32_packed_w_.find(W);
  if (it != f32_packed_w_.end() && it->second.N == N && it->second.K == K) return true;
  if (M < cpu::f32_kernel_panel_rows(f32_kernel_) || f32_not_in_file_.count(W)) return false;
  if (MappedFile::pages_clean(W, static_cast<size_t>(N) * K * sizeof(float))) return true;
  f32_not_in_file_.insert(W);  // constant weights: its memory stays what it is
  return false;
}

// auto packs weights only while their copies stay within cpu::xnnpack_auto_budget_bytes() (the
// packed copy is extra memory, and inference's RSS is bounded); an explicit xnnpack packs all.
bool CpuBackend::within_pack_budget(const float* W, int N, int K, int lda, int ldc) const {
  if (fc_provider_ != cpu::FcProvider::kAuto) return true;
  if (xnn_ && xnn_->holds(W, nullptr, N, K, lda, ldc)) return true;
  const size_t held = xnn_ ? xnn_->packed_bytes() : 0;
  return held + static_cast<size_t>(N) * K * sizeof(float) <= cpu::xnnpack_auto_budget_bytes();
}

bool CpuBackend::fc_on_xnnpack(const float* W, int M, int N, int K, int lda, int ldc) const {
  return use_xnnpack(M, N, K) && within_pack_budget(W, N, K, lda, ldc);
}

CpuBackend::FcStats CpuBackend::fc_stats() const {
  return FcStats{fc_xnnpack_calls_,  fc_bertrt_calls_,
                 fc_openblas_calls_, (xnn_ ? xnn_->packed_bytes() : 0) + f32_packed_w_bytes_,
                 constant_weights_,  f32_released_bytes_};
}

std::string CpuBackend::fc_summary() const {
  const FcStats s = fc_stats();
  // XNNPACK (forced or auto) runs only where the caller declared the weights constant.
  std::string line = fmt::format(
      "fc provider {} ({}): openblas {}, xnnpack {}, bertrt {} Linear GEMMs (fp32 kernel {})",
      cpu::fc_provider_name(fc_provider_),
      s.constant_weights ? "weights declared constant" : "weights not constant: openblas only",
      s.openblas_calls, s.xnnpack_calls, s.bertrt_calls, cpu::f32_kernel_name(f32_kernel_));
  if (s.packed_bytes) line += fmt::format(" ({:.1f} MB packed)", s.packed_bytes / 1e6);
  if (s.released_bytes)
    line += fmt::format(" ({:.1f} MB of the file's pages given back)", s.released_bytes / 1e6);
  // Without initialising XNNPACK (auto never does where its rule says no, e.g. aarch64).
  if (fc_provider_ == cpu::FcProvider::kAuto && !cpu::xnnpack_built())
    line += " (no XNNPACK in this build)";
  return line;
}

bool CpuBackend::supports(Op op) const {
  switch (op) {
    case Op::kGemm:
    case Op::kGemmBatched:
    case Op::kAdd:
    case Op::kBiasAdd:
    case Op::kBiasBackward:
    case Op::kGeluForward:
    case Op::kGeluBackward:
    case Op::kLayerNormForward:
    case Op::kLayerNormBackward:
    case Op::kSkipLayerNormForward:
    case Op::kSoftmaxForward:
    case Op::kSoftmaxBackward:
    case Op::kEmbeddingForward:
    case Op::kEmbeddingBackward:
    case Op::kCrossEntropy:
    case Op::kAdamW:
    case Op::kMinMax:
    case Op::kAbsMaxRows:
    case Op::kFakeQuantPerTensor:
    case Op::kFakeQuantObserved:  // the qparams, then its own fake_quant_per_tensor
    case Op::kFakeQuantPerRow:
    case Op::kFakeQuantBackward:
    case Op::kQuantizeU8:
    case Op::kGemmU8S8:
    case Op::kLinearU8S8:
    case Op::kLinearU8S8GeluU8:
    case Op::kDropout:
    case Op::kPoolTokens:
    case Op::kPoolTokensBackward:
    case Op::kL2NormalizeRows:
    case Op::kL2NormalizeRowsBackward:
      return true;
    // The scalar reference's loops: memory moves and small reductions (already what the host
    // did, and memory-bound), tanh (the pooler's [B, C] only), the int8 embedding lookup.
    case Op::kFill:
    case Op::kCopy:
    case Op::kCopy2d:
    case Op::kGatherRows:
    case Op::kScale:
    case Op::kSumSquares:
    case Op::kArgmaxRows:
    case Op::kMseLoss:
    case Op::kSymmetricScaleRows:
    case Op::kEmbeddingForwardS8:
    case Op::kObserveMinMax:
    case Op::kTanhForward:
    case Op::kTanhBackward:
    case Op::kCosentLoss:  // O(n²) over a batch's pairs: small
    case Op::kCount:
      return false;
  }
  return false;
}

// --- GEMM: OpenBLAS, one thread per call, split over our pool ----------------------------------
//
// OpenBLAS's own threads busy-wait (sched_yield) between calls; next to our pool on a small
// machine they take the cores our row ops need. So the constructor sets OpenBLAS to one thread
// and stops its threads (blas_core.h), and gemm splits C into blocks run on the pool.
//
// OpenBLAS rounds an element of C differently depending on where the call's blocks start, so the
// blocks are fixed by the shape alone (never by the thread count): results are the same for any
// number of threads (tests/unit/cpu_threads_test.cpp).

namespace {

// Below this many multiply-adds a split costs more than it saves.
constexpr double kGemmSplitFlops = 1 << 18;
// The largest copy f32_gemm makes (floats): BERT-base's FFN activations (1024 × 3072) and weights.
constexpr size_t kF32GemmCopyFloats = size_t{1} << 22;
// With bounded copies (Backend::prefer_memory: training's --recompute), training's GEMMs on
// bertrt's kernel run in blocks whose copies (op(A)'s packed panels, op(B)'s packed tiles, the
// product before alpha and beta, the kernel's partial sums) stay near this many floats each,
// whatever the batch: whole, they were 4 MB each at BERT-mini B8 S128 (1024 × 1024), a tenth of
// its pre-training's peak RSS with the memory options. Each output is still the kernel's one fma
// chain over all of K, so blocking changes no float (f32_gemm.h). It is not the default: forced
// on, BERT-base's step took 1.06× as long (1.01× with --recompute, whose recomputed forwards
// hide it; docs/how-to/pretrain.md, "Memory options").
constexpr size_t kF32BoundedCopyFloats = size_t{1} << 18;
// Blocks never go below 8 panels of rows (a full task for each of 2 threads at 4 panels: fewer
// leave the kernel's W tiles less reuse than the copies save) or 8 tiles of columns.
constexpr int kMinBlockPanels = 8, kMinBlockTiles = 8;

// The length of equal blocks of `len` (multiples of `unit`, the last one shorter) of at most
// `most`, or `least` where `most` is smaller.
int block_len(int len, size_t most, int unit, int least) {
  const size_t u = static_cast<size_t>(unit), n = static_cast<size_t>(len);
  const size_t cap = std::max(most / u * u, static_cast<size_t>(least));
  if (n <= cap) return len;
  const size_t blocks = (n + cap - 1) / cap;
  return static_cast<int>(((n + blocks - 1) / blocks + u - 1) / u * u);
}

// Rows of op(A) per block of a training GEMM on kernel k with K-long rows, copies of at most
// `copy` floats.
int train_block_rows(cpu::F32Kernel k, int M, int K, size_t copy) {
  const int pr = cpu::f32_kernel_panel_rows(k);
  return block_len(M, copy / static_cast<size_t>(K), pr, kMinBlockPanels * pr);
}

// Rows (or columns) of C per block: about kGemmBlock, never below kGemmMinBlock (OpenBLAS's
// packing must pay off), a multiple of 16 (its kernel's width).
constexpr int kGemmBlock = 256;
constexpr int kGemmMinBlock = 64;

// The block length for splitting `len` rows or columns of C. The count of blocks is a multiple of
// 4 where the length allows, so 2 or 4 threads get equal shares: 3 blocks of 256 for a 768-wide
// C (BERT-base at B1) left one of two threads idle a third of each GEMM, and BERT-mini's 256-wide
// C ran on one thread. The length depends on the shape alone, never on the thread count.
int gemm_block(int len) {
  const int blocks = ((len + kGemmBlock - 1) / kGemmBlock + 3) / 4 * 4;
  const int block = ((len + blocks - 1) / blocks + 15) / 16 * 16;
  return std::max(block, kGemmMinBlock);
}

// At most this many bytes of W, f32_linear splits the rows of 32 a thread and more, not the
// columns: bertrt bench of BERT-mini fp32 (weights 256 KB-1 MB), 2 threads, alternated (Intel
// Xeon, avx512f): B1 min 3.60-3.66 -> 3.33-3.49 ms, B2 7.24-7.36 -> 6.48-6.63. BERT-base's
// weights (2.25 MB and up) come from memory, and each thread would read all of each.
constexpr size_t kF32RowSplitWBytes = 1024 * 1024;

// Whether C is worth splitting over the pool: enough work, and at least two blocks.
bool gemm_splits(int M, int N, int K) {
  return static_cast<double>(M) * N * K >= kGemmSplitFlops && std::max(M, N) >= 2 * kGemmMinBlock;
}

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
  // BLAS's rule for alpha = 0: C = beta·C, reading neither A nor B (nor C when beta = 0).
  // OpenBLAS 0.3.21's SkylakeX kernels multiply anyway, so an Inf in A made NaN in C (Intel hosts
  // of this kind, where bertrt switches OpenBLAS to SkylakeX: blas_core.h).
  if (alpha == 0.0f) {
    for (int m = 0; m < M; ++m) {
      float* c = C + static_cast<size_t>(m) * ldc;
      for (int n = 0; n < N; ++n) c[n] = beta == 0.0f ? 0.0f : beta * c[n];
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace

// Blocks of the longer side of C (rows [b, e) of C and op(A), or columns of C and op(B)), or C
// whole on the caller where a split does not pay.
template <class F>
void CpuBackend::for_gemm_blocks(int M, int N, int K, F&& f) {
  if (!gemm_splits(M, N, K)) {
    f(0, M, 0, N);
    return;
  }
  const bool split_m = M >= N;
  const int len = split_m ? M : N;
  const int block = gemm_block(len);
  const size_t blocks = static_cast<size_t>((len + block - 1) / block);
  pool_.parallel_for(blocks, 1, [&](size_t b0, size_t b1) {
    for (size_t blk = b0; blk < b1; ++blk) {
      const int b = static_cast<int>(blk) * block;
      const int e = std::min(b + block, len);
      if (split_m)
        f(b, e, 0, N);
      else
        f(0, M, b, e);
    }
  });
}

void CpuBackend::gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                      int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (!constant_weights_ && use_f32_gemm(trans_b, M, N, K, alpha, beta)) {
    f32_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // nn.Linear's forward X·Wᵀ: the fully-connected provider's form (W contiguous [N, K]).
  if (!trans_a && trans_b && alpha == 1.0f && beta == 0.0f && ldb == K && K > 0) {
    if (use_f32_kernel(B, M, N, K, lda, ldc)) {
      f32_linear(C, ldc, A, lda, B, M, N, K);
      ++fc_bertrt_calls_;
      return;
    }
    if (fc_on_xnnpack(B, M, N, K, lda, ldc)) {
      if (!xnn_) xnn_ = std::make_unique<cpu::XnnpackFc>();
      // Threads exactly where the OpenBLAS path below splits: a small GEMM runs on the caller,
      // where a fork-join would cost more (and wait for a busy core on a loaded machine).
      xnn_->run(C, ldc, A, lda, B, nullptr, M, N, K,
                gemm_splits(M, N, K) ? pool_.xnnpack_pool() : nullptr);
      ++fc_xnnpack_calls_;
      return;
    }
    ++fc_openblas_calls_;
  }
  for_gemm_blocks(M, N, K, [&](int r0, int r1, int c0, int c1) {
    sgemm(trans_a, trans_b, r1 - r0, c1 - c0, K, alpha,
          trans_a ? A + r0 : A + static_cast<size_t>(r0) * lda, lda,
          trans_b ? B + static_cast<size_t>(c0) * ldb : B + c0, ldb, beta,
          C + static_cast<size_t>(r0) * ldc + c0, ldc);
  });
}

namespace {

// The calling thread's scratch for f32_gemm_xwt's partial sums (grown, never shrunk).
float* f32_scratch(size_t floats) {
  thread_local FloatBuffer buf;
  if (buf.size() < floats) buf.resize(floats);
  return buf.data();
}

// A copy of one row's block for the GELU: its kernel reads and writes through restrict pointers.
float* epilogue_row(size_t floats) {
  thread_local FloatBuffer buf;
  if (buf.size() < floats) buf.resize(floats);
  return buf.data();
}

// Rows [r0, r1) × columns [c0, c1) of out [M, N] after its GEMM: + bias, GELU, + residual, with
// the kernels of bias_add, gelu_forward and add, so each float is what those ops give.
void finish_linear_block(float* out, int N, const float* bias, const float* residual,
                         std::optional<Gelu> gelu, int r0, int r1, int c0, int c1) {
  const size_t n = static_cast<size_t>(c1 - c0);
  float* tmp = gelu ? epilogue_row(n) : nullptr;
  for (int r = r0; r < r1; ++r) {
    float* y = out + static_cast<size_t>(r) * N + c0;
    if (bias) cpu::add_kernel(y, y, bias + c0, n);
    if (gelu) {
      std::copy(y, y + n, tmp);
      if (*gelu == Gelu::kErf)
        cpu::gelu_erf_forward_kernel(y, tmp, n);
      else
        cpu::gelu_tanh_forward_kernel(y, tmp, n);
    }
    if (residual) cpu::add_kernel(y, y, residual + static_cast<size_t>(r) * N + c0, n);
  }
}

}  // namespace

void CpuBackend::linear_forward_inference(float* out, float* pre, const float* x, int ldx,
                                          const float* w, const float* bias, const float* residual,
                                          int M, int N, int K, std::optional<Gelu> gelu) {
  if (M <= 0 || N <= 0) return;
  const bool on_f32_kernel = K > 0 && use_f32_kernel(w, M, N, K, ldx, N);
  if (K <= 0 || (!on_f32_kernel && fc_on_xnnpack(w, M, N, K, ldx, N)))
    return Backend::linear_forward_inference(out, pre, x, ldx, w, bias, residual, M, N, K, gelu);
  if (on_f32_kernel) {
    const LinearEpilogue ep{residual, gelu};
    f32_linear(out, N, x, ldx, w, M, N, K, bias, &ep);
    ++fc_bertrt_calls_;
    return;
  }
  if (!constant_weights_ && use_f32_gemm(true, M, N, K, 1.0f, 0.0f)) {
    // gemm's kernel for changing weights: an inference forward of a model in training (frozen
    // layers, evaluation, QAT calibration) computes the training forward's floats.
    const int mb = train_block_rows(f32_kernel_, M, K, copy_floats());
    const bool packed = mb < M;  // W packed once for the blocks (ldw 0), else read in place
    const float* wp = packed ? pack_w_for_blocks(w, N, K) : w;
    for (int r0 = 0; r0 < M; r0 += mb) {
      const int rows = std::min(mb, M - r0);
      const LinearEpilogue ep{residual ? residual + static_cast<size_t>(r0) * N : nullptr, gelu};
      f32_xwt(out + static_cast<size_t>(r0) * N, N, x + static_cast<size_t>(r0) * ldx, ldx, false,
              wp, packed ? 0 : K, rows, N, K, bias, &ep);
    }
    return;
  }
  for_gemm_blocks(M, N, K, [&](int r0, int r1, int c0, int c1) {
    float* y = out + static_cast<size_t>(r0) * N + c0;
    sgemm(false, true, r1 - r0, c1 - c0, K, 1.0f, x + static_cast<size_t>(r0) * ldx, ldx,
          w + static_cast<size_t>(c0) * K, K, 0.0f, y, N);
    finish_linear_block(out, N, bias, residual, gelu, r0, r1, c0, c1);
  });
  ++fc_openblas_calls_;
}

// The broadcast form (f32_gemm.h) on W packed once, X read in place: one fork-join a Linear.
// Each thread takes an equal share of the rows and all columns (W read once per task) from 256
// rows a thread (the panel form's 8 panels of 32), or from 32 when W is at most
// kF32RowSplitWBytes; otherwise each takes a share of the column tiles, so that it streams only
// its share of W (BERT-base B1 and B2, 2 threads: docs/explanation/cpu-kernels.md). A split by
// rows keeps each thread on the rows it wrote in the op before; a split by columns makes it read the
// other core's half of X. Either way every output is the kernel's one fma chain: the split never
// changes a float.
void CpuBackend::f32_linear(float* Y, int ldy, const float* X, int ldx, const float* W, int M,
                            int N, int K, const float* bias, const LinearEpilogue* ep) {
  const cpu::F32Kernel k = f32_kernel_;
  const float* Wp = f32_packed_w(W, N, K);
  if (!Wp) return f32_xwt(Y, ldy, X, ldx, false, W, K, M, N, K, bias, ep);  // the scalar kernel
  const int tn = cpu::f32_bcast_tile_n(k);
  const int threads = gemm_splits(M, N, K) ? pool_.active_threads() : 1;
  const bool small_w = static_cast<size_t>(N) * K * sizeof(float) <= kF32RowSplitWBytes;
  const int min_rows = small_w ? 32 : 8 * 32;
  if (threads > 1 && M >= min_rows * threads) {
    // Tiles of at least min_rows rows, up to 4 a thread, taken by whichever thread is free: a
    // thread the OS descheduled holds up one tile, not a fixed share.
    constexpr int kUnit = 4;  // rows: a tile is a multiple of 4
    const size_t units = static_cast<size_t>((M + kUnit - 1) / kUnit);
    const size_t grain = std::max<size_t>(min_rows / kUnit, (units + 4 * threads - 1) / (4 * threads));
    pool_.parallel_for(units, grain, [&](size_t u0, size_t u1) {
      const int m0 = static_cast<int>(u0) * kUnit, m1 = std::min(static_cast<int>(u1) * kUnit, M);
      cpu::f32_gemm_xwt_bcast(k, m1 - m0, 0, N, K, X + static_cast<size_t>(m0) * ldx, ldx, Wp,
                              bias, Y + static_cast<size_t>(m0) * ldy, ldy);
      if (ep) finish_linear_block(Y, ldy, nullptr, ep->residual, ep->gelu, m0, m1, 0, N);
    });
    return;
  }
  const size_t tiles = static_cast<size_t>((N + tn - 1) / tn);
  pool_.parallel_for(threads > 1 ? tiles : 1, 1, [&](size_t t0, size_t t1) {
    const int n0 = static_cast<int>(t0) * tn;
    const int n1 = threads > 1 ? std::min(static_cast<int>(t1) * tn, N) : N;
    cpu::f32_gemm_xwt_bcast(k, M, n0, n1, K, X, ldx, Wp, bias, Y, ldy);
    if (ep) finish_linear_block(Y, ldy, nullptr, ep->residual, ep->gelu, 0, M, n0, n1);
  });
}

void CpuBackend::f32_xwt(float* Y, int ldy, const float* X, int ldx, bool x_t, const float* W,
                         int ldw, int M, int N, int K, const float* bias,
                         const LinearEpilogue* ep) {
  const cpu::F32Kernel k = f32_kernel_;
  assert(!x_t || k != cpu::F32Kernel::kScalar);  // the scalar kernel reads X as it is
  const size_t need = cpu::f32_packed_x_floats(k, M, K);
  if (f32_packed_x_.size() < need) f32_packed_x_.resize(need);
  float* P = f32_packed_x_.data();
  const int pr = cpu::f32_kernel_panel_rows(k);
  const int panels = (M + pr - 1) / pr;
  const size_t panel_floats = static_cast<size_t>(K) * pr;
  const int threads = gemm_splits(M, N, K) ? pool_.active_threads() : 1;
  // Rows [m0, m0 + rows) of op(X) into panels [0, n) at p: X [M, K] or, x_t, X [K, M].
  auto pack = [&](float* p, int m0, int rows, int n) {
    if (x_t)
      cpu::f32_pack_x_t(k, p, X + m0, ldx, rows, K, 0, n);
    else
      cpu::f32_pack_x(k, p, X + static_cast<size_t>(m0) * ldx, ldx, rows, K, 0, n);
  };
  if (threads > 1 && panels >= 8 * threads) {
    // Tiles of at least 8 panels (kMinBlockPanels: W's tiles reused enough), up to 4 a thread.
    const size_t grain = std::max<size_t>(kMinBlockPanels, (panels + 4 * threads - 1) / (4 * threads));
    pool_.parallel_for(static_cast<size_t>(panels), grain, [&](size_t p0, size_t p1) {
      const int m0 = static_cast<int>(p0) * pr, m1 = std::min(static_cast<int>(p1) * pr, M);
      float* p = P ? P + p0 * panel_floats : nullptr;  // the scalar kernel packs nothing
      const float* x = x_t ? X + m0 : X + static_cast<size_t>(m0) * ldx;
      pack(p, m0, m1 - m0, static_cast<int>(p1 - p0));
      cpu::f32_gemm_xwt(k, m1 - m0, 0, N, K, x, ldx, p, W, ldw, bias,
                        Y + static_cast<size_t>(m0) * ldy, ldy,
                        f32_scratch(cpu::f32_scratch_floats(k, m1 - m0, 0, N, K)));
      if (ep) finish_linear_block(Y, ldy, nullptr, ep->residual, ep->gelu, m0, m1, 0, N);
    });
    return;
  }
  if (threads > 1 && panels > 1) {
    // The threads pack the panels between them first (one fork-join more): packed by the caller
    // alone, the other thread waited (BERT-base B1, 2 threads: 73.5–74.8 → 68.9–72.5 ms).
    pool_.parallel_for(static_cast<size_t>(panels), 1, [&](size_t p0, size_t p1) {
      const int m0 = static_cast<int>(p0) * pr, m1 = std::min(static_cast<int>(p1) * pr, M);
      pack(P + p0 * panel_floats, m0, m1 - m0, static_cast<int>(p1 - p0));
    });
  } else {
    pack(P, 0, M, panels);
  }
  const int tn = cpu::f32_kernel_tile_n(k);
  const size_t tiles = static_cast<size_t>((N + tn - 1) / tn);
  pool_.parallel_for(threads > 1 ? tiles : 1, 1, [&](size_t t0, size_t t1) {
    const int n0 = static_cast<int>(t0) * tn;
    const int n1 = threads > 1 ? std::min(static_cast<int>(t1) * tn, N) : N;
    cpu::f32_gemm_xwt(k, M, n0, n1, K, X, ldx, P, W, ldw, bias, Y, ldy,
                      f32_scratch(cpu::f32_scratch_floats(k, M, n0, n1, K)));
    if (ep) finish_linear_block(Y, ldy, nullptr, ep->residual, ep->gelu, 0, M, n0, n1);
  });
}

// With several blocks of rows the kernel would pack W's tiles again for each (from 8 panels on:
// f32_gemm_impl.h): packed here once, in parallel, a copy of the weight (the model's size, not
// the batch's).
const float* CpuBackend::pack_w_for_blocks(const float* W, int N, int K) {
  const cpu::F32Kernel k = f32_kernel_;
  const int tn = cpu::f32_kernel_tile_n(k);
  const size_t need = cpu::f32_packed_w_floats(k, N, K);
  if (f32_gemm_w_.size() < need) f32_gemm_w_.resize(need);
  float* wp = f32_gemm_w_.data();
  // Tile t lies at wp + t·tn·K whatever the columns packed with it, so ranges pack apart.
  pool_.parallel_for(static_cast<size_t>((N + tn - 1) / tn), 1, [&](size_t t0, size_t t1) {
    const size_t n0 = t0 * tn, n1 = std::min(t1 * tn, static_cast<size_t>(N));
    cpu::f32_pack_w(k, wp + n0 * K, W + n0 * K, static_cast<int>(n1 - n0), K);
  });
  return wp;
}

size_t CpuBackend::copy_floats() const {
  return bounded_copies_ ? kF32BoundedCopyFloats : std::numeric_limits<size_t>::max();
}

// Training's GEMMs (weights that change: the Linears' forward, dX = dY·W and dW = dYᵀ·X, the
// tied decoder) on bertrt's kernel: provider bertrt, or auto with the avx512f kernel:
// OpenBLAS's packing and kernel were 80 % of a BERT-base pre-training step (Haswell core, the
// one this kind of host is given), and the avx512f tile runs about twice its speed a core
// (docs/explanation/cpu-kernels.md). From a full panel of rows and a tile of columns on; smaller GEMMs (the pooler's few rows) stay on OpenBLAS. The split changes
// no float (f32_gemm.h), so training stays bit-identical across thread counts.
bool CpuBackend::use_f32_gemm(bool trans_b, int M, int N, int K, float alpha, float beta) const {
  // alpha = 0: BLAS does not read A and B (an Inf there must not become NaN in C): OpenBLAS.
  if (f32_kernel_ == cpu::F32Kernel::kScalar || K <= 0 || alpha == 0.0f) return false;
  // auto: avx512f only; fma3 measured slower than OpenBLAS's Haswell kernel on the same AVX2
  // instructions (BERT-base step 4.1–4.3 s against 3.8–4.2 s), so AVX2-only hosts keep OpenBLAS.
  if (fc_provider_ != cpu::FcProvider::kBertrt &&
      !(fc_provider_ == cpu::FcProvider::kAuto && f32_kernel_ == cpu::F32Kernel::kAvx512f))
    return false;
  if (M < cpu::f32_kernel_panel_rows(f32_kernel_) || N < cpu::f32_kernel_tile_n(f32_kernel_))
    return false;
  // Its copies (X packed, B packed unless trans_b, the product unless written in place) are
  // memory a training run did not hold before (+14 MB at BERT-mini, +47 MB at base; none with
  // BERTRT_FC_PROVIDER=openblas; bounded with prefer_memory): each at most kF32GemmCopyFloats,
  // so the MLM decoder's vocabulary-sized operands stay on OpenBLAS.
  const auto fits = [](size_t a, size_t b) { return a * b <= kF32GemmCopyFloats; };
  return fits(M, K) && (trans_b || fits(N, K)) && ((alpha == 1.0f && beta == 0.0f) || fits(M, N));
}

void CpuBackend::f32_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                          const float* A, int lda, const float* B, int ldb, float beta, float* C,
                          int ldc) {
  const cpu::F32Kernel k = f32_kernel_;
  const int tn = cpu::f32_kernel_tile_n(k);
  const bool direct = alpha == 1.0f && beta == 0.0f;
  // Blocks of columns when B is packed (each block's tiles at most about copy_floats()), then of
  // rows (op(A)'s panels and, unless direct, the product's block, each at most about as much).
  const size_t copy = copy_floats();
  const int nb = trans_b ? N : block_len(N, copy / static_cast<size_t>(K), tn, kMinBlockTiles * tn);
  const int pr = cpu::f32_kernel_panel_rows(k);
  int mb = train_block_rows(k, M, K, copy);
  if (!direct) mb = std::min(mb, block_len(M, copy / nb, pr, kMinBlockPanels * pr));
  if (trans_b && mb < M && ldb == K) B = pack_w_for_blocks(B, N, K), ldb = 0;
  for (int c0 = 0; c0 < N; c0 += nb) {
    const int cols = std::min(nb, N - c0);
    const float* W = B + static_cast<size_t>(c0) * ldb;
    int ldw = ldb;
    if (!trans_b) {  // W = Bᵀ: packed per call, N·K copies against M·N·K multiply-adds
      const size_t need = cpu::f32_packed_w_floats(k, cols, K);
      if (f32_gemm_w_.size() < need) f32_gemm_w_.resize(need);
      float* wp = f32_gemm_w_.data();
      const size_t tiles = static_cast<size_t>((cols + tn - 1) / tn);
      pool_.parallel_for(tiles, gemm_splits(M, cols, K) ? 1 : tiles, [&](size_t t0, size_t t1) {
        cpu::f32_pack_w_t(k, wp, B + c0, ldb, cols, K, static_cast<int>(t0), static_cast<int>(t1));
      });
      W = wp, ldw = 0;
    }
    for (int r0 = 0; r0 < M; r0 += mb) {
      const int rows = std::min(mb, M - r0);
      const float* X = trans_a ? A + r0 : A + static_cast<size_t>(r0) * lda;
      float* c = C + static_cast<size_t>(r0) * ldc + c0;
      if (direct) {
        f32_xwt(c, ldc, X, lda, trans_a, W, ldw, rows, cols, K, nullptr, nullptr);
        continue;
      }
      const size_t need = static_cast<size_t>(rows) * cols;
      if (f32_gemm_y_.size() < need) f32_gemm_y_.resize(need);
      float* Y = f32_gemm_y_.data();
      f32_xwt(Y, cols, X, lda, trans_a, W, ldw, rows, cols, K, nullptr, nullptr);
      pool_.parallel_for(static_cast<size_t>(rows), row_grain(cols), [&](size_t i0, size_t i1) {
        for (size_t i = i0; i < i1; ++i) {
          const float* t = Y + i * cols;
          float* ci = c + i * ldc;
          if (beta == 0.0f)  // C is not read (it may hold anything, NaN included), as in BLAS
            for (int j = 0; j < cols; ++j) ci[j] = alpha * t[j];
          else
            for (int j = 0; j < cols; ++j) ci[j] = alpha * t[j] + beta * ci[j];
        }
      });
    }
  }
}

// OpenBLAS 0.3.21 (Debian 12) has no cblas_sgemm_batch: the batch (attention's per-head GEMMs)
// is split over the pool, each GEMM whole on one thread.
void CpuBackend::gemm_batched(int batch, bool trans_a, bool trans_b, int M, int N, int K,
                              float alpha, const float* A, int lda, int64_t stride_a,
                              const float* B, int ldb, int64_t stride_b, float beta, float* C,
                              int ldc, int64_t stride_c) {
  if (M <= 0 || N <= 0 || batch <= 0) return;
  const double flops = static_cast<double>(M) * N * K;
  const size_t grain =
      flops >= kGemmSplitFlops ? 1 : static_cast<size_t>(kGemmSplitFlops / (flops + 1)) + 1;
  pool_.parallel_for(static_cast<size_t>(batch), grain, [&](size_t p0, size_t p1) {
    for (size_t p = p0; p < p1; ++p)
      sgemm(trans_a, trans_b, M, N, K, alpha, A + p * stride_a, lda, B + p * stride_b, ldb, beta,
            C + p * stride_c, ldc);
  });
}

// --- elementwise ---------------------------------------------------------------------------------

void CpuBackend::add(float* out, const float* a, const float* b, size_t n) {
  pool_.parallel_for(n, kGrainElems, [&](size_t i0, size_t i1) {
    cpu::add_kernel(out + i0, a + i0, b + i0, i1 - i0);
  });
}

void CpuBackend::bias_add(float* out, const float* bias, int rows, int cols) {
  pool_.parallel_for(rows, row_grain(cols), [&](size_t r0, size_t r1) {
    cpu::bias_add_rows(out, bias, static_cast<int>(r0), static_cast<int>(r1), cols);
  });
}

void CpuBackend::bias_backward(float* dbias, const float* dout, int rows, int cols) {
  for_column_blocks(pool_, rows, cols, [&](int c0, int c1) {
    cpu::bias_backward_cols(dbias, dout, rows, cols, c0, c1);
  });
}

void CpuBackend::gelu_forward(float* out, const float* inp, size_t n, Gelu kind) {
  pool_.parallel_for(n, kGrainElems / 4, [&](size_t i0, size_t i1) {
    if (kind == Gelu::kErf)
      cpu::gelu_erf_forward_kernel(out + i0, inp + i0, i1 - i0);
    else
      cpu::gelu_tanh_forward_kernel(out + i0, inp + i0, i1 - i0);
  });
}

void CpuBackend::gelu_backward(float* dinp, const float* inp, const float* dout, size_t n,
                               Gelu kind) {
  pool_.parallel_for(n, kGrainElems / 4, [&](size_t i0, size_t i1) {
    if (kind == Gelu::kErf)
      cpu::gelu_erf_backward_kernel(dinp + i0, inp + i0, dout + i0, i1 - i0);
    else
      cpu::gelu_tanh_backward_kernel(dinp + i0, inp + i0, dout + i0, i1 - i0);
  });
}

void CpuBackend::dropout(float* x, size_t n, float p, uint64_t seed) {
  check_dropout_args(n, p);
  const uint32_t threshold = dropout_threshold(p);
  const float scale = dropout_scale(p);
  pool_.parallel_for(n, kGrainElems, [&](size_t i0, size_t i1) {
    cpu::dropout_kernel(x, i0, i1, threshold, scale, seed);
  });
}

// --- LayerNorm -----------------------------------------------------------------------------------

void CpuBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                   const float* weight, const float* bias, int rows, int C,
                                   float eps) {
  pool_.parallel_for(rows, row_grain(C), [&](size_t r0, size_t r1) {
    cpu::layernorm_forward_rows(out, mean, rstd, inp, weight, bias, static_cast<int>(r0),
                                static_cast<int>(r1), C, eps);
  });
}

// One pass over a few rows at a time while they are in L1 (4 rows: layernorm_forward_rows' block),
// and one pool hand-off instead of three: the row kernels of add, layernorm_forward and
// quantize_u8, so the same floats and integers.
void CpuBackend::skip_layernorm_forward(float* out, float* mean, float* rstd, uint8_t* q, float* x,
                                        const float* skip, const float* weight, const float* bias,
                                        int rows, int C, float eps, float q_scale,
                                        int q_zero_point) {
  if (q) check_quant_scale("skip_layernorm_forward", q_scale, 0);
  const float inv = q ? 1.0f / q_scale : 0.0f;
  constexpr size_t kChunk = 4;
  pool_.parallel_for(rows, row_grain(C), [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; r += kChunk) {
      const size_t m = std::min(kChunk, r1 - r), at = r * static_cast<size_t>(C), n = m * C;
      if (skip) cpu::add_kernel(x + at, x + at, skip + at, n);
      cpu::layernorm_forward_rows(out, mean, rstd, x, weight, bias, static_cast<int>(r),
                                  static_cast<int>(r + m), C, eps);
      if (q) cpu::quantize_u8_kernel(q + at, out + at, n, inv, q_zero_point);
    }
  });
}

void CpuBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                    const float* inp, const float* weight, const float* mean,
                                    const float* rstd, int rows, int C) {
  // Two passes: dinp by rows, then dweight/dbias by columns (each a sum over rows in order).
  pool_.parallel_for(rows, row_grain(C), [&](size_t r0, size_t r1) {
    cpu::layernorm_backward_dinp_rows(dinp, dout, inp, weight, mean, rstd, static_cast<int>(r0),
                                      static_cast<int>(r1), C);
  });
  for_column_blocks(pool_, rows, C, [&](int c0, int c1) {
    cpu::layernorm_backward_params_cols(dweight, dbias, dout, inp, mean, rstd, rows, C, c0, c1);
  });
}

// --- attention softmax ---------------------------------------------------------------------------

void CpuBackend::softmax_forward(float* probs, const float* scores, const float* mask, int B,
                                 int NH, int T, float scale) {
  const size_t rows = static_cast<size_t>(B) * NH * T;
  pool_.parallel_for(rows, row_grain(T), [&](size_t r0, size_t r1) {
    cpu::softmax_forward_rows(probs, scores, mask, NH, T, scale, r0, r1);
  });
}

void CpuBackend::attention_forward_inference(float* ctx, float*, float*, const float* q,
                                             const float* k, const float* v, const float* mask,
                                             int B, int NH, int T, int HS, float scale) {
  if (B <= 0 || T <= 0) return;
  const int C = NH * HS;
  if (streamed_attention()) {
    // One task per (sequence, head, block of query rows): no T × T buffer, and rows are
    // independent, so any split (and thread count) gives the same floats.
    const cpu::F32Kernel kern = f32_kernel_;
    const int rows = 2 * cpu::f32_attention_panel_rows(kern);
    const int blocks = (T + rows - 1) / rows;
    const size_t scratch = cpu::f32_attention_scratch_floats(kern, HS);
    pool_.parallel_for(static_cast<size_t>(B) * NH * blocks, 1, [&](size_t t0, size_t t1) {
      thread_local FloatBuffer buf;
      if (buf.size() < scratch) buf.resize(scratch);
      for (size_t t = t0; t < t1; ++t) {
        const int blk = static_cast<int>(t % blocks);
        const int bh = static_cast<int>(t / blocks), b = bh / NH, h = bh % NH;
        const size_t x = static_cast<size_t>(b) * T * C + static_cast<size_t>(h) * HS;
        cpu::f32_attention_rows(kern, ctx + x, C, q + x, k + x, v + x, C,
                                mask ? mask + static_cast<size_t>(b) * T : nullptr, T, HS, scale,
                                blk * rows, std::min(T, (blk + 1) * rows), buf.data());
      }
    });
    return;
  }
  const size_t TT = static_cast<size_t>(T) * T;
  pool_.parallel_for(static_cast<size_t>(B) * NH, 1, [&](size_t p0, size_t p1) {
    thread_local std::vector<float> buf;
    if (buf.size() < 2 * TT) buf.resize(2 * TT);
    float* s = buf.data();
    float* p = s + TT;
    for (size_t bh = p0; bh < p1; ++bh) {
      const int b = static_cast<int>(bh) / NH, h = static_cast<int>(bh) % NH;
      const size_t x = static_cast<size_t>(b) * T * C + static_cast<size_t>(h) * HS;
      sgemm(false, true, T, T, HS, 1.0f, q + x, C, k + x, C, 0.0f, s, T);
      // Rows 0..T of one head: mask row b (NH = 1 makes row r's mask row r / T = 0).
      cpu::softmax_forward_rows(p, s, mask ? mask + static_cast<size_t>(b) * T : nullptr, 1, T,
                                scale, 0, static_cast<size_t>(T));
      sgemm(false, false, T, HS, T, 1.0f, p, T, v + x, C, 0.0f, ctx + x, C);
    }
  });
}

void CpuBackend::attention_forward_varlen(float* ctx, float* probs, float* scores, const float* q,
                                          const float* k, const float* v,
                                          const int32_t* cu_seqlens, int S, int NH, int HS,
                                          float scale) {
  if (!streamed_attention()) {
    Backend::attention_forward_varlen(ctx, probs, scores, q, k, v, cu_seqlens, S, NH, HS, scale);
    return;
  }
  const int C = NH * HS;
  const cpu::F32Kernel kern = f32_kernel_;
  const int rows = 2 * cpu::f32_attention_panel_rows(kern);
  // first[s]: the first task of sequence s; its NH · blocks tasks follow.
  std::vector<size_t> first(static_cast<size_t>(S) + 1, 0);
  for (int s = 0; s < S; ++s) {
    const int T = cu_seqlens[s + 1] - cu_seqlens[s];
    first[s + 1] = first[s] + static_cast<size_t>(NH) * ((std::max(T, 0) + rows - 1) / rows);
  }
  const size_t scratch = cpu::f32_attention_scratch_floats(kern, HS);
  pool_.parallel_for(first[S], 1, [&](size_t t0, size_t t1) {
    thread_local FloatBuffer buf;
    if (buf.size() < scratch) buf.resize(scratch);
    for (size_t t = t0; t < t1; ++t) {
      const int s = static_cast<int>(std::upper_bound(first.begin(), first.end(), t) -
                                     first.begin()) - 1;
      const int T = cu_seqlens[s + 1] - cu_seqlens[s];
      const int blocks = (T + rows - 1) / rows;
      const size_t i = t - first[s];
      const int blk = static_cast<int>(i % blocks), h = static_cast<int>(i / blocks);
      const size_t x = static_cast<size_t>(cu_seqlens[s]) * C + static_cast<size_t>(h) * HS;
      cpu::f32_attention_rows(kern, ctx + x, C, q + x, k + x, v + x, C, nullptr, T, HS, scale,
                              blk * rows, std::min(T, (blk + 1) * rows), buf.data());
    }
  });
}

void CpuBackend::softmax_backward(float* dscores, const float* probs, const float* dprobs, int rows,
                                  int T, float scale) {
  pool_.parallel_for(rows, row_grain(T), [&](size_t r0, size_t r1) {
    cpu::softmax_backward_rows(dscores, probs, dprobs, T, scale, r0, r1);
  });
}

// --- embeddings ----------------------------------------------------------------------------------

void CpuBackend::embedding_forward(float* out, const int32_t* ids, const float* table, int n,
                                   int C) {
  pool_.parallel_for(n, row_grain(C), [&](size_t r0, size_t r1) {
    cpu::embedding_forward_rows(out, ids, table, static_cast<int>(r0), static_cast<int>(r1), C);
  });
}

void CpuBackend::embedding_backward(float* dtable, const int32_t* ids, const float* dout, int n,
                                    int C) {
  for_column_blocks(pool_, n, C, [&](int c0, int c1) {
    cpu::embedding_backward_cols(dtable, ids, dout, n, C, c0, c1);
  });
}

// --- loss ----------------------------------------------------------------------------------------

void CpuBackend::cross_entropy(float* dlogits, double* loss_sum, const float* logits,
                               const int32_t* targets, int rows, int V, float grad_scale) {
  for (int r = 0; r < rows; ++r)  // checked up front: the pool's tasks must not throw
    if (targets[r] >= V)
      fail("cross_entropy: row {}: target {} is outside the vocabulary [0, {})", r, targets[r], V);
  std::vector<double> loss(static_cast<size_t>(rows));
  pool_.parallel_for(rows, row_grain(V), [&](size_t r0, size_t r1) {
    cpu::cross_entropy_rows(loss.data(), dlogits, logits, targets, V, grad_scale,
                            static_cast<int>(r0), static_cast<int>(r1));
  });
  double total = 0.0;  // rows in order, as the serial loop summed them
  for (double l : loss) total += l;
  *loss_sum = total;
}

// --- optimizer -----------------------------------------------------------------------------------

void CpuBackend::adamw_step(float* param, float* m, float* v, const float* grad, size_t n,
                            const AdamWHyper& h, int64_t t) {
  const double lr = h.lr, b1d = h.beta1, b2d = h.beta2;
  cpu::AdamWScalars s{};
  s.b1 = h.beta1;
  s.b2 = h.beta2;
  s.one_minus_b1 = static_cast<float>(1.0 - b1d);
  s.one_minus_b2 = static_cast<float>(1.0 - b2d);
  s.eps = h.eps;
  s.bias_correction = h.bias_correction;
  if (h.bias_correction) {
    s.decay = static_cast<float>(1.0 - lr * h.weight_decay);
    s.step_size = static_cast<float>(lr / (1.0 - std::pow(b1d, static_cast<double>(t))));
    s.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(b2d, static_cast<double>(t))));
  }
  s.lr = h.lr;
  s.wd = h.weight_decay;
  pool_.parallel_for(n, kGrainElems, [&](size_t i0, size_t i1) {
    cpu::adamw_kernel(param + i0, m + i0, v + i0, grad + i0, i1 - i0, s);
  });
}

}  // namespace bertrt
