// The op interface every backend implements (ggml style): the model calls only these.
//
// Conventions (llm.c style):
//   - all tensors are row-major fp32 (ids int32); shapes are given in each comment;
//   - backward ops ACCUMULATE (+=) into their d-prefixed outputs, so residual branches and tied
//     weights need no extra adds; callers zero gradient buffers once per step;
//   - a backend answers supports(op) for the ops it implements natively; backends derive from
//     ReferenceBackend, so an op they do not override runs the scalar reference on the CPU;
//   - memory and execution (the contract that lets a GPU live behind this interface; README
//     "Backends"): every pointer an op takes is memory of THIS backend (alloc(), or host memory
//     where accepts_host_pointers()); ops may be recorded and run later, in call order; the host
//     reads or writes backend memory only after sync(), and moves data with upload/download.
//     Nothing an op computes is returned to the host directly: reductions write into backend
//     memory (cross_entropy's loss, sum_squares, min_max, argmax_rows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bertrt {

// GELU variants: BERT's TF code used the tanh approximation, PyTorch/HF "gelu" is exact erf.
enum class Gelu { kErf, kTanh };

enum class Op {
  kFill,
  kCopy,
  kCopy2d,
  kGatherRows,
  kScale,
  kSumSquares,
  kArgmaxRows,
  kMseLoss,
  kGemm,
  kGemmBatched,
  kAdd,
  kBiasAdd,
  kBiasBackward,
  kGeluForward,
  kGeluBackward,
  kTanhForward,
  kTanhBackward,
  kLayerNormForward,
  kLayerNormBackward,
  kSkipLayerNormForward,
  kSoftmaxForward,
  kSoftmaxBackward,
  kEmbeddingForward,
  kEmbeddingBackward,
  kCrossEntropy,
  kAdamW,
  kMinMax,
  kAbsMaxRows,
  kSymmetricScaleRows,
  kFakeQuantPerTensor,
  kFakeQuantPerRow,
  kFakeQuantBackward,
  kQuantizeU8,
  kGemmU8S8,
  kLinearU8S8,
  kLinearU8S8GeluU8,
  kEmbeddingForwardS8,
  kObserveMinMax,
  kFakeQuantObserved,
  kDropout,
  kPoolTokens,
  kPoolTokensBackward,
  kL2NormalizeRows,
  kL2NormalizeRowsBackward,
  kCosentLoss,
  kCount
};
const char* op_name(Op op);

// sentence-transformers' pooling modes (models/Pooling.py), one per pool_tokens call.
enum class Pooling { kCls, kMax, kMean, kMeanSqrtLen, kWeightedMean, kLastToken };

// torch.optim.AdamW hyper-parameters; bias_correction=false gives the original BERT optimizer
// (google-research/bert optimization.py: no bias correction).
struct AdamWHyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool bias_correction = true;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // True when this backend implements `op` itself (otherwise the scalar reference runs it).
  virtual bool supports(Op op) const = 0;

  // --- memory and execution ---------------------------------------------------------------------
  // Expires with the backend: arrays of its memory (device_array.h) hold it, because a backend's
  // memory goes with it and an array that outlives it must not release (or read) it.
  std::weak_ptr<const void> lifetime() const { return alive_; }
  // `bytes` of backend memory, 64-byte aligned, contents undefined; throws bertrt::Error when the
  // backend is out of memory. release() takes what alloc() returned (nullptr is a no-op).
  virtual void* alloc(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  // True when alloc()'s pointers are host addresses the host may use after sync() (CPU backends,
  // unified-memory GPUs); false when only upload/download reach the memory (discrete GPUs).
  virtual bool host_visible() const = 0;
  // True when ops also accept plain host memory that alloc() did not return (the CPU backends:
  // weights are then used in place, e.g. from a mapped file). False: every pointer must resolve
  // into alloc()'s blocks, and an op given one that does not is an error naming op and argument.
  virtual bool accepts_host_pointers() const = 0;
  // Returns once every op called so far has run and every download() has landed. Errors an op
  // raised while it ran (a bad id, an invalid scale) surface here at the latest.
  virtual void sync() = 0;
  // Training's memory options ask for a smaller peak at some cost in speed (--recompute). A
  // backend may ignore it; it never changes a float. The cpu backend then runs its training GEMMs
  // in blocks that bound their copies (cpu_backend.h).
  virtual void prefer_memory(bool on) { (void)on; }
  // dst (backend) ← src (host), `bytes`; src may be reused as soon as upload returns.
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;
  // dst (host) ← src (backend), `bytes`; dst holds the data after the next sync().
  virtual void download(void* dst, const void* src, size_t bytes) = 0;

  // --- data movement and small reductions (what the host used to do between ops) --------------
  // x[i] = value, n elements.
  virtual void fill(float* x, float value, size_t n) = 0;
  // dst ← src within this backend's memory, `bytes`, not overlapping.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // dst[r·ldd + c] = src[r·lds + c] for r < rows, c < cols (a block of columns).
  virtual void copy_2d(float* dst, int ldd, const float* src, int lds, int rows, int cols) = 0;
  // out[i, :] = src[rows[i], :] for i < n; out [n, C], src [?, C].
  virtual void gather_rows(float* out, const float* src, const int32_t* rows, int n, int C) = 0;
  // x[i] *= c.
  virtual void scale(float* x, float c, size_t n) = 0;
  // *out = Σ_i x[i]² summed in double in index order (the global gradient norm of clipping).
  virtual void sum_squares(double* out, const float* x, size_t n) = 0;
  // out[r] = the first column of the largest value of row r (std::max_element), x [rows, cols].
  virtual void argmax_rows(int32_t* out, const float* x, int rows, int cols) = 0;
  // Mean squared error pieces of a regression head over n predictions:
  //   *loss_sum = Σ_i (double(pred[i]) − target[i])²,
  //   dpred[i] = float(double(weight) · 2 · (pred[i] − target[i]) / n)   (dpred may be nullptr).
  virtual void mse_loss(float* dpred, double* loss_sum, const float* pred, const float* target,
                        int n, float weight) = 0;

  // C[M,N] = alpha · op(A)[M,K] · op(B)[K,N] + beta · C.  op(A) = A^T when trans_a (A is stored
  // [K,M]); op(B) = B^T when trans_b (B is stored [N,K], the nn.Linear weight layout).
  virtual void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                    int lda, const float* B, int ldb, float beta, float* C, int ldc) = 0;
  // `batch` independent GEMMs; A, B, C advance by stride_a, stride_b, stride_c elements.
  virtual void gemm_batched(int batch, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                            const float* A, int lda, int64_t stride_a, const float* B, int ldb,
                            int64_t stride_b, float beta, float* C, int ldc, int64_t stride_c) = 0;

  // out[i] = a[i] + b[i], n elements (out may alias a or b).
  virtual void add(float* out, const float* a, const float* b, size_t n) = 0;
  // out[r, c] += bias[c], out [rows, cols].
  virtual void bias_add(float* out, const float* bias, int rows, int cols) = 0;
  // dbias[c] += Σ_r dout[r, c].
  virtual void bias_backward(float* dbias, const float* dout, int rows, int cols) = 0;

  // out = gelu(inp), n elements. kErf: x·Φ(x); kTanh: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
  virtual void gelu_forward(float* out, const float* inp, size_t n, Gelu kind) = 0;
  // dinp += gelu'(inp) · dout.
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n,
                             Gelu kind) = 0;
  virtual void tanh_forward(float* out, const float* inp, size_t n) = 0;
  // dinp += (1 − out²) · dout, from the forward's output.
  virtual void tanh_backward(float* dinp, const float* out, const float* dout, size_t n) = 0;

  // Inverted dropout in place (training only): x[i] = keep(seed, i) ? x[i] · 1/(1 − p) : 0, the
  // mask of backends/dropout_rule.h, n < 2³², p in [0, 1). Its backward is the same call on the
  // gradient with the same seed. The default throws (a backend without it says so in supports).
  virtual void dropout(float* x, size_t n, float p, uint64_t seed);

  // LayerNorm over the last dim: inp, out [rows, C]; weight, bias [C]; saves mean, rstd [rows].
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                 const float* weight, const float* bias, int rows, int C,
                                 float eps) = 0;
  // dinp += ∂L/∂inp, dweight += ∂L/∂weight, dbias += ∂L/∂bias.
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean,
                                  const float* rstd, int rows, int C) = 0;
  // The end of a sublayer (ONNX Runtime's SkipLayerNormalization), fused where the backend can:
  // x += skip (x [rows, C] in place; skip may be nullptr), layernorm_forward(out, mean, rstd, x,
  // ...), and where q is given (int8 inference) q = quantize_u8(out, q_scale, q_zero_point)
  // [rows, C] for the next int8 Linear. The same floats and integers as those ops in turn (the
  // default).
  virtual void skip_layernorm_forward(float* out, float* mean, float* rstd, uint8_t* q, float* x,
                                      const float* skip, const float* weight, const float* bias,
                                      int rows, int C, float eps, float q_scale, int q_zero_point);

  // Attention softmax over keys: probs[b,h,i,:] = softmax_j(scale · scores[b,h,i,j] + mask[b,j]).
  // scores, probs [B, NH, T, T]; mask [B, T] additive (0 keep, −10000 or −inf drop) or nullptr.
  // The row max is subtracted first (a row of equal large negatives gives uniform, not NaN).
  virtual void softmax_forward(float* probs, const float* scores, const float* mask, int B, int NH,
                               int T, float scale) = 0;
  // Attention without a gradient (inference, frozen layers): ctx [B, T, NH·HS] = softmax(scale ·
  // Q·Kᵀ + mask)·V per batch and head, Q, K, V [B, T, NH·HS] with head h in columns [h·HS,
  // (h+1)·HS). The default is the training forward's gemm_batched + softmax_forward +
  // gemm_batched through scores and probs [B, NH, T, T]; a backend may fuse it and leave those
  // untouched (the cpu one: one head at a time in T×T buffers of its own, same values).
  virtual void attention_forward_inference(float* ctx, float* probs, float* scores, const float* q,
                                           const float* k, const float* v, const float* mask,
                                           int B, int NH, int T, int HS, float scale);
  // Packed (variable-length) attention without a gradient: S sequences lie one after another in
  // the rows of Q, K, V and ctx [N, NH·HS] (N = cu_seqlens[S]), sequence s in rows
  // [cu_seqlens[s], cu_seqlens[s+1]), and each attends to its own rows only: no padding, no mask.
  // cu_seqlens [S+1] is on the host (shape information, as T is). Per sequence the same floats as
  // attention_forward_inference with B = 1 and no mask, which the default runs through scores and
  // probs (each NH·Tmax² floats, Tmax the longest sequence); a fusing backend leaves them untouched.
  virtual void attention_forward_varlen(float* ctx, float* probs, float* scores, const float* q,
                                        const float* k, const float* v, const int32_t* cu_seqlens,
                                        int S, int NH, int HS, float scale);
  // True where packed batches pay: attention_forward_varlen runs its sequences in one op (cpu) or
  // is the scalar reference anyway; false where the default would be a chain of small dispatches
  // per sequence (Vulkan), so callers batch padded sequences there instead.
  virtual bool packed_attention() const { return true; }
  // A Linear without a gradient (inference), with its epilogue:
  //   out [M, N] = gelu(X·Wᵀ + bias) + residual
  // X [M, K] row stride ldx, W [N, K]; bias [N], residual [M, N] and the GELU are each optional
  // (null, nullopt). The same floats as gemm, bias_add, gelu_forward and add in turn, which the
  // default runs, through pre [M, N] when there is a GELU (the GEMM's output; a fusing backend
  // may leave it untouched). out aliases neither X, pre nor residual.
  virtual void linear_forward_inference(float* out, float* pre, const float* x, int ldx,
                                        const float* w, const float* bias, const float* residual,
                                        int M, int N, int K, std::optional<Gelu> gelu);
  // dscores += scale · probs ⊙ (dprobs − Σ_j probs ⊙ dprobs); rows of length T.
  virtual void softmax_backward(float* dscores, const float* probs, const float* dprobs, int rows,
                                int T, float scale) = 0;

  // out[i, :] += table[ids[i], :] for i < n; out [n, C], table [V, C].
  virtual void embedding_forward(float* out, const int32_t* ids, const float* table, int n,
                                 int C) = 0;
  // dtable[ids[i], :] += dout[i, :] (scatter-add; repeated ids accumulate).
  virtual void embedding_backward(float* dtable, const int32_t* ids, const float* dout, int n,
                                  int C) = 0;

  // Softmax cross-entropy of logits [rows, V] against targets [rows]; a target < 0 ignores the row
  // (Hugging Face's -100). *loss_sum = Σ loss over counted rows (double, rows in order). When
  // dlogits is non-null it is OVERWRITTEN with grad_scale · (softmax − onehot), zero on ignored
  // rows; dlogits may be logits itself (in place: the MLM head keeps one [P, V] buffer, not two).
  // A target ≥ V is an error.
  virtual void cross_entropy(float* dlogits, double* loss_sum, const float* logits,
                             const int32_t* targets, int rows, int V, float grad_scale) = 0;

  // --- the sentence-embedding head and its losses (src/heads/pooling.h states the modes) --------
  // One pooling mode over last_hidden_state: out[b, 0:H] (row stride ldo, so that the modes of
  // a head fill one [B, modes·H] matrix side by side) from hidden [B, T, H], with
  // m[t] = (mask[b, t] != 0 and t ≥ prompt_length[b]) (mask [B, T], prompt_length [B]: the
  // leading tokens include_prompt=false leaves out, 0 for none):
  //   kCls h[0]; kMax max_t (m[t] ? h[t] : −1e9); kMean Σ m·h / max(Σ m, 1e-9); kMeanSqrtLen
  //   Σ m·h / √max(Σ m, 1e-9); kWeightedMean Σ (t+1)·m·h / max(Σ (t+1)·m, 1e-9); kLastToken
  //   m[l]·h[l] at the last l with m[l] = 1 (0 when there is none).
  virtual void pool_tokens(float* out, int ldo, const float* hidden, const int32_t* mask,
                           const int32_t* prompt_length, int B, int T, int H, Pooling mode) = 0;
  // Its backward: dhidden [B, T, H] += ∂L/∂hidden from dout (row stride ldd). kMax routes each
  // column's gradient to the first position holding the maximum (torch.max), none when that
  // position is masked (the maximum is then the constant −1e9).
  virtual void pool_tokens_backward(float* dhidden, const float* dout, int ldd,
                                    const float* hidden, const int32_t* mask,
                                    const int32_t* prompt_length, int B, int T, int H,
                                    Pooling mode) = 0;
  // F.normalize over rows: y[r, :] = x[r, 0:cols] / max(‖x[r, 0:cols]‖₂, 1e-12); y [rows, cols],
  // x row stride ldx ≥ cols (the first cols columns: a Matryoshka cut). y may not alias x.
  virtual void l2_normalize_rows(float* y, const float* x, int ldx, int rows, int cols) = 0;
  // Its backward from the forward's input: dx[r, 0:cols] (row stride lddx) +=
  // (dy − y·(y·dy)) / ‖x‖, or dy / 1e-12 where ‖x‖ ≤ 1e-12 (the clamp: a constant divisor).
  virtual void l2_normalize_rows_backward(float* dx, int lddx, const float* x, int ldx,
                                          const float* dy, int rows, int cols) = 0;
  // CoSENTLoss (sentence-transformers losses/CoSENTLoss.py) of n pair cosines cos [n] with
  // scores labels [n]: *loss = log(1 + Σ_{labels[i] < labels[j]} exp(scale·(cos[i] − cos[j]))),
  // the log-sum-exp taken from its maximum (double). When dcos is non-null it is OVERWRITTEN
  // with grad_scale · ∂loss/∂cos.
  virtual void cosent_loss(float* dcos, double* loss, const float* cos, const float* labels, int n,
                           float scale, float grad_scale) = 0;

  // One AdamW update of n parameters at 1-based step t, in place on param, m, v
  // (torch.optim.AdamW: decoupled decay param *= 1 − lr·wd before the Adam update).
  virtual void adamw_step(float* param, float* m, float* v, const float* grad, size_t n,
                          const AdamWHyper& h, int64_t t) = 0;

  // --- quantization (the rules for scales and zero points live in src/quant/) -------------------
  // All rounding is PyTorch's: q = zero_point + nearbyint(x · inv), inv = 1.0f / scale in float
  // (a float reciprocal, not a division: they differ near ties, e.g. x = −29.250002, scale 0.1),
  // nearbyint rounding half to even (ATen QuantizedOpKernels.cpp, fake_quantize_tensor_cachemask
  // and quantize_val).

  // *mn = min_i x[i], *mx = max_i x[i] over n ≥ 1 elements (torch.aminmax; the observer's input).
  virtual void min_max(float* mn, float* mx, const float* x, size_t n) = 0;
  // out[r] = max_c |x[r, c]|, x [rows, cols] (the range of each output channel of a weight).
  virtual void absmax_rows(float* out, const float* x, int rows, int cols) = 0;
  // scale[r] = symmetric_scale(max_c |x[r, c]|, qmin, qmax) (backends/quant_rules.h): the
  // per-output-channel weight scales of fake-quant and of the int8 export.
  virtual void symmetric_scale_rows(float* scale, const float* x, int rows, int cols, int qmin,
                                    int qmax) = 0;

  // torch.fake_quantize_per_tensor_affine over n elements:
  //   q = zero_point + nearbyint(x · inv);  out = (clamp(q, qmin, qmax) − zero_point) · scale;
  //   mask = (qmin ≤ q ≤ qmax), the straight-through mask (nullptr: not written).
  // scale > 0 and finite. out may alias x.
  virtual void fake_quant_per_tensor(float* out, uint8_t* mask, const float* x, size_t n,
                                     float scale, int zero_point, int qmin, int qmax) = 0;
  // The same per row r of x [rows, cols] with scale[r] and zero point 0 (symmetric; PyTorch's
  // fake_quantize_per_channel_affine with axis 0 = nn.Linear's output channels, or the rows of
  // an embedding table). out may alias x.
  virtual void fake_quant_per_row(float* out, uint8_t* mask, const float* x, const float* scale,
                                  int rows, int cols, int qmin, int qmax) = 0;
  // Straight-through estimator: dinp[i] += mask[i] ? dout[i] : 0 (the backward of both
  // fake-quant ops: PyTorch's gradient is dout · mask, zero where q fell outside [qmin, qmax]).
  virtual void fake_quant_backward(float* dinp, const uint8_t* mask, const float* dout,
                                   size_t n) = 0;

  // q[i] = clamp(zero_point + nearbyint(x[i] · inv), 0, 255): torch.quantize_per_tensor to
  // quint8, the same integers the fake-quant forward dequantizes.
  virtual void quantize_u8(uint8_t* q, const float* x, size_t n, float scale, int zero_point) = 0;

  // C[m, n] = Σ_k A[m, k] · B[n, k], exact in int32: A [M, K] uint8, B [N, K] int8 (nn.Linear
  // layout), C [M, N] int32 overwritten. Throws when K > kMaxQ8K (the sum could overflow int32).
  virtual void gemm_u8s8_s32(int M, int N, int K, const uint8_t* A, int lda, const int8_t* B,
                             int ldb, int32_t* C, int ldc) = 0;
  // The int8 Linear, dequantized to fp32 with the bias:
  //   acc = Σ_k A[m, k] · W[n, k] − a_zero_point · w_sum[n]        (exact integer)
  //   out[m, n] = float(acc) · (a_scale · w_scale[n]) + bias[n]     (float, in that order)
  // A [M, K] uint8 (row stride lda), W [N, K] int8, w_scale [N], w_sum [N] = Σ_k W[n, k]
  // (precomputed once per weight, src/quant/int8_weight.h), bias [N] or nullptr, out [M, N]
  // (row stride ldo) overwritten. Throws when K > kMaxQ8K.
  virtual void linear_u8s8(float* out, int ldo, const uint8_t* A, int lda, float a_scale,
                           int a_zero_point, const int8_t* W, const float* w_scale,
                           const int32_t* w_sum, const float* bias, int M, int N, int K) = 0;
  // Optional: a constant int8 weight W [N, K] in the backend's own GEMM layout, packed once (when
  // the model first runs it) instead of on every call. q8_packed_weight_bytes: the size of that
  // layout (0, the default: the backend reads W as it is); pack_q8_weight writes it into `packed`
  // (that many bytes of this backend's memory); linear_u8s8_packed is linear_u8s8 that may read
  // the packed form instead of W (same results; the default ignores it).
  virtual size_t q8_packed_weight_bytes(int N, int K) const { return 0; }
  virtual void pack_q8_weight(int8_t* packed, const int8_t* W, int N, int K) {}
  virtual void linear_u8s8_packed(float* out, int ldo, const uint8_t* A, int lda, float a_scale,
                                  int a_zero_point, const int8_t* W, const int8_t* w_packed,
                                  const float* w_scale, const int32_t* w_sum, const float* bias,
                                  int M, int N, int K) {
    linear_u8s8(out, ldo, A, lda, a_scale, a_zero_point, W, w_scale, w_sum, bias, M, N, K);
  }
  // The int8 Linear, GELU, and the quantization of the result for the next int8 Linear (BERT's
  // feed-forward intermediate at inference, fused where the backend can):
  //   pre = linear_u8s8_packed(A, W, ...) [M, N];  act = gelu(pre);  q = quantize_u8(act, q_scale,
  //   q_zero_point) [M, N] (row stride N for all three)
  // The same integers as those three ops in turn. pre and act are scratch that the default (the
  // three ops) writes and a fused backend may leave untouched (the cpu backend's blocks stay in a
  // buffer of each thread: nothing reads the fp32 intermediate at inference).
  virtual void linear_u8s8_gelu_u8(uint8_t* q, float* pre, float* act, const uint8_t* A, int lda,
                                   float a_scale, int a_zero_point, const int8_t* W,
                                   const int8_t* w_packed, const float* w_scale,
                                   const int32_t* w_sum, const float* bias, int M, int N, int K,
                                   Gelu kind, float q_scale, int q_zero_point);
  // The int8 embedding lookup: out[i, :] += scale[ids[i]] · float(q[ids[i], :]) for i < n; q [V, C]
  // int8 per-row symmetric, scale [V]. An id outside [0, V) is an error.
  virtual void embedding_forward_s8(float* out, const int32_t* ids, const int8_t* q,
                                    const float* scale, int n, int C, int V) = 0;

  // The QAT activation observer, on the backend so that a training step needs no read-back
  // (src/quant/observer.h: torch's MovingAverageMinMaxObserver). The batch range is the min of
  // batch[2r] and the max of batch[2r + 1] over r < parts (min_max results); first: range = it,
  // else range[i] += momentum · (batch[i] − range[i]) with the product rounded to float first.
  // A non-finite or inverted batch range is an error, as in ActivationObserver::observe.
  virtual void observe_min_max(float* range, const float* batch, int parts, bool first,
                               float momentum) = 0;
  // fake_quant_per_tensor with the scale and zero point of range [min, max] (backend memory;
  // affine_qparams_rule of quant_rules.h, the observer's qparams), computed where the op runs.
  virtual void fake_quant_observed(float* out, uint8_t* mask, const float* x, size_t n,
                                   const float* range, int qmin, int qmax) = 0;

 private:
  std::shared_ptr<const void> alive_ = std::make_shared<char>(0);
};

// The longest reduction the u8×s8 ops accept: K·255·128 ≤ 2³¹ − 1, so no int32 sum can wrap.
constexpr int kMaxQ8K = 65793;

// "reference" (scalar oracle), "cpu" (OpenBLAS GEMMs + vectorised loops) or "checked" (the cpu
// backend behind the contract's checks: deferred ops, resolved pointers; backends/checked/).
// Throws bertrt::Error naming the valid choices for anything else.
std::unique_ptr<Backend> make_backend(const std::string& name);
// device: which GPU for "vulkan" (< 0: BERTRT_VULKAN_DEVICE, else 0); ignored by the others.
std::unique_ptr<Backend> make_backend(const std::string& name, int device);
std::vector<std::string> backend_names();
// One line per compute device besides the CPU (the Vulkan devices with their limits); empty
// without a Vulkan build, loader or driver.
std::vector<std::string> device_lines();

}  // namespace bertrt
