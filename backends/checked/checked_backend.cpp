#include "backends/checked/checked_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace bertrt {
namespace {

// Elements a strided matrix of `rows` rows of `cols` spans (0 when empty).
size_t span(int64_t rows, int64_t cols, int64_t ld) {
  return rows > 0 && cols > 0 ? size_t((rows - 1) * ld + cols) : 0;
}
size_t span_batched(int batch, size_t one, int64_t stride) {
  return batch > 0 && one > 0 ? size_t((batch - 1) * stride) + one : 0;
}

}  // namespace

CheckedBackend::CheckedBackend(std::unique_ptr<Backend> inner, size_t max_batch)
    : inner_(std::move(inner)), max_batch_(max_batch < 1 ? 1 : max_batch) {}

CheckedBackend::~CheckedBackend() {
  queue_.clear();
  for (auto& [start, bytes] : blocks_) std::free(reinterpret_cast<void*>(start));
}

void* CheckedBackend::alloc(size_t bytes) {
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) fail("checked: out of memory allocating {} bytes", bytes);
  std::memset(p, 0xFF, rounded);  // NaN floats, −1 ints: reading before writing shows
  blocks_[reinterpret_cast<uintptr_t>(p)] = bytes;
  return p;
}

void CheckedBackend::release(void* p) {
  if (!p) return;
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(p));
  if (it == blocks_.end()) fail("checked: release of {} which alloc() did not return", p);
  submit();  // queued ops may still use it (a GPU defers the free; no host round trip either way)
  blocks_.erase(it);
  std::free(p);
}

void CheckedBackend::check(const char* op, const char* arg, const void* p, size_t bytes,
                           bool optional) {
  if (bytes == 0 || (optional && !p)) return;
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = blocks_.upper_bound(a);
  if (it != blocks_.begin()) {
    --it;
    if (a >= it->first && a + bytes <= it->first + it->second) return;
  }
  fail(
      "{}: argument '{}' ({} bytes at {}) is not memory of the '{}' backend (allocate it with "
      "Backend::alloc, or upload host data)",
      op, arg, bytes, p, name());
}

void CheckedBackend::record(std::function<void()> fn) {
  queue_.push_back(std::move(fn));
  ++stats_.ops;
  if (queue_.size() >= max_batch_) submit();
}

void CheckedBackend::submit() {
  if (queue_.empty()) return;
  std::vector<std::function<void()>> run;
  run.swap(queue_);  // an op that throws drops the rest of its submission
  ++stats_.submits;
  for (auto& fn : run) fn();
}

void CheckedBackend::sync() {
  ++stats_.syncs;
  submit();
}

void CheckedBackend::upload(void* dst, const void* src, size_t bytes) {
  check("upload", "dst", dst, bytes);
  auto staged = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(src),
                                                       static_cast<const uint8_t*>(src) + bytes);
  record([=] {
    if (bytes) std::memcpy(dst, staged->data(), bytes);
  });
}

void CheckedBackend::download(void* dst, const void* src, size_t bytes) {
  check("download", "src", src, bytes);
  record([=] {
    if (bytes) std::memcpy(dst, src, bytes);
  });
}

#define CHECK_F(name, p, n) check(op, name, p, size_t(n) * sizeof(float))
#define CHECK_OPT_F(name, p, n) check(op, name, p, size_t(n) * sizeof(float), true)
#define CHECK_I(name, p, n) check(op, name, p, size_t(n) * sizeof(int32_t))
#define CHECK_B(name, p, n) check(op, name, p, size_t(n))
#define CHECK_OPT_B(name, p, n) check(op, name, p, size_t(n), true)
#define CHECK_D(name, p) check(op, name, p, sizeof(double))

void CheckedBackend::fill(float* x, float value, size_t n) {
  const char* op = "fill";
  CHECK_F("x", x, n);
  record([=] { inner_->fill(x, value, n); });
}

void CheckedBackend::copy(void* dst, const void* src, size_t bytes) {
  const char* op = "copy";
  CHECK_B("dst", dst, bytes);
  CHECK_B("src", src, bytes);
  record([=] { inner_->copy(dst, src, bytes); });
}

void CheckedBackend::copy_2d(float* dst, int ldd, const float* src, int lds, int rows, int cols) {
  const char* op = "copy_2d";
  CHECK_F("dst", dst, span(rows, cols, ldd));
  CHECK_F("src", src, span(rows, cols, lds));
  record([=] { inner_->copy_2d(dst, ldd, src, lds, rows, cols); });
}

void CheckedBackend::gather_rows(float* out, const float* src, const int32_t* rows, int n, int C) {
  const char* op = "gather_rows";
  CHECK_F("out", out, size_t(n) * C);
  CHECK_I("rows", rows, n);
  CHECK_F("src", src, n > 0 ? C : 0);  // its row count is in backend memory: the first row
  record([=] { inner_->gather_rows(out, src, rows, n, C); });
}

void CheckedBackend::scale(float* x, float c, size_t n) {
  const char* op = "scale";
  CHECK_F("x", x, n);
  record([=] { inner_->scale(x, c, n); });
}

void CheckedBackend::sum_squares(double* out, const float* x, size_t n) {
  const char* op = "sum_squares";
  CHECK_D("out", out);
  CHECK_F("x", x, n);
  record([=] { inner_->sum_squares(out, x, n); });
}

void CheckedBackend::argmax_rows(int32_t* out, const float* x, int rows, int cols) {
  const char* op = "argmax_rows";
  CHECK_I("out", out, rows);
  CHECK_F("x", x, size_t(rows) * cols);
  record([=] { inner_->argmax_rows(out, x, rows, cols); });
}

void CheckedBackend::mse_loss(float* dpred, double* loss_sum, const float* pred,
                              const float* target, int n, float weight) {
  const char* op = "mse_loss";
  CHECK_OPT_F("dpred", dpred, n);
  CHECK_D("loss_sum", loss_sum);
  CHECK_F("pred", pred, n);
  CHECK_F("target", target, n);
  record([=] { inner_->mse_loss(dpred, loss_sum, pred, target, n, weight); });
}

void CheckedBackend::gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                          const float* A, int lda, const float* B, int ldb, float beta, float* C,
                          int ldc) {
  const char* op = "gemm";
  CHECK_F("A", A, trans_a ? span(K, M, lda) : span(M, K, lda));
  CHECK_F("B", B, trans_b ? span(N, K, ldb) : span(K, N, ldb));
  CHECK_F("C", C, span(M, N, ldc));
  record([=] { inner_->gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); });
}

void CheckedBackend::gemm_batched(int batch, bool trans_a, bool trans_b, int M, int N, int K,
                                  float alpha, const float* A, int lda, int64_t stride_a,
                                  const float* B, int ldb, int64_t stride_b, float beta, float* C,
                                  int ldc, int64_t stride_c) {
  const char* op = "gemm_batched";
  CHECK_F("A", A, span_batched(batch, trans_a ? span(K, M, lda) : span(M, K, lda), stride_a));
  CHECK_F("B", B, span_batched(batch, trans_b ? span(N, K, ldb) : span(K, N, ldb), stride_b));
  CHECK_F("C", C, span_batched(batch, span(M, N, ldc), stride_c));
  record([=] {
    inner_->gemm_batched(batch, trans_a, trans_b, M, N, K, alpha, A, lda, stride_a, B, ldb,
                         stride_b, beta, C, ldc, stride_c);
  });
}

void CheckedBackend::add(float* out, const float* a, const float* b, size_t n) {
  const char* op = "add";
  CHECK_F("out", out, n);
  CHECK_F("a", a, n);
  CHECK_F("b", b, n);
  record([=] { inner_->add(out, a, b, n); });
}

void CheckedBackend::bias_add(float* out, const float* bias, int rows, int cols) {
  const char* op = "bias_add";
  CHECK_F("out", out, size_t(rows) * cols);
  CHECK_F("bias", bias, cols);
  record([=] { inner_->bias_add(out, bias, rows, cols); });
}

void CheckedBackend::bias_backward(float* dbias, const float* dout, int rows, int cols) {
  const char* op = "bias_backward";
  CHECK_F("dbias", dbias, cols);
  CHECK_F("dout", dout, size_t(rows) * cols);
  record([=] { inner_->bias_backward(dbias, dout, rows, cols); });
}

void CheckedBackend::gelu_forward(float* out, const float* inp, size_t n, Gelu kind) {
  const char* op = "gelu_forward";
  CHECK_F("out", out, n);
  CHECK_F("inp", inp, n);
  record([=] { inner_->gelu_forward(out, inp, n, kind); });
}

void CheckedBackend::gelu_backward(float* dinp, const float* inp, const float* dout, size_t n,
                                   Gelu kind) {
  const char* op = "gelu_backward";
  CHECK_F("dinp", dinp, n);
  CHECK_F("inp", inp, n);
  CHECK_F("dout", dout, n);
  record([=] { inner_->gelu_backward(dinp, inp, dout, n, kind); });
}

void CheckedBackend::dropout(float* x, size_t n, float p, uint64_t seed) {
  const char* op = "dropout";
  CHECK_F("x", x, n);
  record([=] { inner_->dropout(x, n, p, seed); });
}

void CheckedBackend::tanh_forward(float* out, const float* inp, size_t n) {
  const char* op = "tanh_forward";
  CHECK_F("out", out, n);
  CHECK_F("inp", inp, n);
  record([=] { inner_->tanh_forward(out, inp, n); });
}

void CheckedBackend::tanh_backward(float* dinp, const float* out, const float* dout, size_t n) {
  const char* op = "tanh_backward";
  CHECK_F("dinp", dinp, n);
  CHECK_F("out", out, n);
  CHECK_F("dout", dout, n);
  record([=] { inner_->tanh_backward(dinp, out, dout, n); });
}

void CheckedBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                       const float* weight, const float* bias, int rows, int C,
                                       float eps) {
  const char* op = "layernorm_forward";
  CHECK_F("out", out, size_t(rows) * C);
  CHECK_F("mean", mean, rows);
  CHECK_F("rstd", rstd, rows);
  CHECK_F("inp", inp, size_t(rows) * C);
  CHECK_F("weight", weight, C);
  CHECK_F("bias", bias, C);
  record([=] { inner_->layernorm_forward(out, mean, rstd, inp, weight, bias, rows, C, eps); });
}

void CheckedBackend::skip_layernorm_forward(float* out, float* mean, float* rstd, uint8_t* q,
                                            float* x, const float* skip, const float* weight,
                                            const float* bias, int rows, int C, float eps,
                                            float q_scale, int q_zero_point) {
  const char* op = "skip_layernorm_forward";
  const size_t n = size_t(rows) * C;
  CHECK_F("out", out, n);
  CHECK_F("mean", mean, rows);
  CHECK_F("rstd", rstd, rows);
  CHECK_OPT_B("q", q, n);
  CHECK_F("x", x, n);
  CHECK_OPT_F("skip", skip, n);
  CHECK_F("weight", weight, C);
  CHECK_F("bias", bias, C);
  record([=] {
    inner_->skip_layernorm_forward(out, mean, rstd, q, x, skip, weight, bias, rows, C, eps, q_scale,
                                   q_zero_point);
  });
}

void CheckedBackend::layernorm_backward(float* dinp, float* dweight, float* dbias,
                                        const float* dout, const float* inp, const float* weight,
                                        const float* mean, const float* rstd, int rows, int C) {
  const char* op = "layernorm_backward";
  CHECK_F("dinp", dinp, size_t(rows) * C);
  CHECK_F("dweight", dweight, C);
  CHECK_F("dbias", dbias, C);
  CHECK_F("dout", dout, size_t(rows) * C);
  CHECK_F("inp", inp, size_t(rows) * C);
  CHECK_F("weight", weight, C);
  CHECK_F("mean", mean, rows);
  CHECK_F("rstd", rstd, rows);
  record([=] {
    inner_->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, rows, C);
  });
}

void CheckedBackend::softmax_forward(float* probs, const float* scores, const float* mask, int B,
                                     int NH, int T, float scale) {
  const char* op = "softmax_forward";
  const size_t n = size_t(B) * NH * T * T;
  CHECK_F("probs", probs, n);
  CHECK_F("scores", scores, n);
  CHECK_OPT_F("mask", mask, size_t(B) * T);
  record([=] { inner_->softmax_forward(probs, scores, mask, B, NH, T, scale); });
}

void CheckedBackend::attention_forward_inference(float* ctx, float* probs, float* scores,
                                                 const float* q, const float* k, const float* v,
                                                 const float* mask, int B, int NH, int T, int HS,
                                                 float scale) {
  const char* op = "attention_forward_inference";
  const size_t n = size_t(B) * T * NH * HS;
  CHECK_F("ctx", ctx, n);
  CHECK_F("q", q, n);
  CHECK_F("k", k, n);
  CHECK_F("v", v, n);
  CHECK_OPT_F("mask", mask, size_t(B) * T);
  CHECK_OPT_F("probs", probs, size_t(B) * NH * T * T);
  CHECK_OPT_F("scores", scores, size_t(B) * NH * T * T);
  record([=] {
    inner_->attention_forward_inference(ctx, probs, scores, q, k, v, mask, B, NH, T, HS, scale);
  });
}

void CheckedBackend::attention_forward_varlen(float* ctx, float* probs, float* scores,
                                              const float* q, const float* k, const float* v,
                                              const int32_t* cu_seqlens, int S, int NH, int HS,
                                              float scale) {
  const char* op = "attention_forward_varlen";
  std::vector<int32_t> cu(cu_seqlens, cu_seqlens + S + 1);
  int Tmax = 0;
  for (int s = 0; s < S; ++s) Tmax = std::max(Tmax, cu[size_t(s) + 1] - cu[size_t(s)]);
  const size_t n = size_t(cu[size_t(S)]) * NH * HS;
  CHECK_F("ctx", ctx, n);
  CHECK_F("q", q, n);
  CHECK_F("k", k, n);
  CHECK_F("v", v, n);
  CHECK_OPT_F("probs", probs, size_t(NH) * Tmax * Tmax);
  CHECK_OPT_F("scores", scores, size_t(NH) * Tmax * Tmax);
  record([=] {
    inner_->attention_forward_varlen(ctx, probs, scores, q, k, v, cu.data(), S, NH, HS, scale);
  });
}

void CheckedBackend::softmax_backward(float* dscores, const float* probs, const float* dprobs,
                                      int rows, int T, float scale) {
  const char* op = "softmax_backward";
  const size_t n = size_t(rows) * T;
  CHECK_F("dscores", dscores, n);
  CHECK_F("probs", probs, n);
  CHECK_F("dprobs", dprobs, n);
  record([=] { inner_->softmax_backward(dscores, probs, dprobs, rows, T, scale); });
}

// The tables' row counts are not arguments (ids live in backend memory): their first row is
// checked; the model checks ids against the vocabulary on the host before uploading them.
void CheckedBackend::embedding_forward(float* out, const int32_t* ids, const float* table, int n,
                                       int C) {
  const char* op = "embedding_forward";
  CHECK_F("out", out, size_t(n) * C);
  CHECK_I("ids", ids, n);
  CHECK_F("table", table, n > 0 ? C : 0);
  record([=] { inner_->embedding_forward(out, ids, table, n, C); });
}

void CheckedBackend::embedding_backward(float* dtable, const int32_t* ids, const float* dout, int n,
                                        int C) {
  const char* op = "embedding_backward";
  CHECK_F("dtable", dtable, n > 0 ? C : 0);
  CHECK_I("ids", ids, n);
  CHECK_F("dout", dout, size_t(n) * C);
  record([=] { inner_->embedding_backward(dtable, ids, dout, n, C); });
}

void CheckedBackend::cross_entropy(float* dlogits, double* loss_sum, const float* logits,
                                   const int32_t* targets, int rows, int V, float grad_scale) {
  const char* op = "cross_entropy";
  CHECK_OPT_F("dlogits", dlogits, size_t(rows) * V);
  CHECK_D("loss_sum", loss_sum);
  CHECK_F("logits", logits, size_t(rows) * V);
  CHECK_I("targets", targets, rows);
  record([=] { inner_->cross_entropy(dlogits, loss_sum, logits, targets, rows, V, grad_scale); });
}

void CheckedBackend::pool_tokens(float* out, int ldo, const float* hidden, const int32_t* mask,
                                 const int32_t* prompt_length, int B, int T, int H, Pooling mode) {
  const char* op = "pool_tokens";
  CHECK_F("out", out, span(B, H, ldo));
  CHECK_F("hidden", hidden, size_t(B) * T * H);
  CHECK_I("mask", mask, size_t(B) * T);
  CHECK_I("prompt_length", prompt_length, B);
  record([=] { inner_->pool_tokens(out, ldo, hidden, mask, prompt_length, B, T, H, mode); });
}

void CheckedBackend::pool_tokens_backward(float* dhidden, const float* dout, int ldd,
                                          const float* hidden, const int32_t* mask,
                                          const int32_t* prompt_length, int B, int T, int H,
                                          Pooling mode) {
  const char* op = "pool_tokens_backward";
  CHECK_F("dhidden", dhidden, size_t(B) * T * H);
  CHECK_F("dout", dout, span(B, H, ldd));
  CHECK_F("hidden", hidden, size_t(B) * T * H);
  CHECK_I("mask", mask, size_t(B) * T);
  CHECK_I("prompt_length", prompt_length, B);
  record([=] {
    inner_->pool_tokens_backward(dhidden, dout, ldd, hidden, mask, prompt_length, B, T, H, mode);
  });
}

void CheckedBackend::l2_normalize_rows(float* y, const float* x, int ldx, int rows, int cols) {
  const char* op = "l2_normalize_rows";
  CHECK_F("y", y, size_t(rows) * cols);
  CHECK_F("x", x, span(rows, cols, ldx));
  record([=] { inner_->l2_normalize_rows(y, x, ldx, rows, cols); });
}

void CheckedBackend::l2_normalize_rows_backward(float* dx, int lddx, const float* x, int ldx,
                                                const float* dy, int rows, int cols) {
  const char* op = "l2_normalize_rows_backward";
  CHECK_F("dx", dx, span(rows, cols, lddx));
  CHECK_F("x", x, span(rows, cols, ldx));
  CHECK_F("dy", dy, size_t(rows) * cols);
  record([=] { inner_->l2_normalize_rows_backward(dx, lddx, x, ldx, dy, rows, cols); });
}

void CheckedBackend::cosent_loss(float* dcos, double* loss, const float* cos, const float* labels,
                                 int n, float scale, float grad_scale) {
  const char* op = "cosent_loss";
  CHECK_OPT_F("dcos", dcos, n);
  CHECK_D("loss", loss);
  CHECK_F("cos", cos, n);
  CHECK_F("labels", labels, n);
  record([=] { inner_->cosent_loss(dcos, loss, cos, labels, n, scale, grad_scale); });
}

void CheckedBackend::adamw_step(float* param, float* m, float* v, const float* grad, size_t n,
                                const AdamWHyper& h, int64_t t) {
  const char* op = "adamw_step";
  CHECK_F("param", param, n);
  CHECK_F("m", m, n);
  CHECK_F("v", v, n);
  CHECK_F("grad", grad, n);
  const AdamWHyper hyper = h;
  record([=] { inner_->adamw_step(param, m, v, grad, n, hyper, t); });
}

void CheckedBackend::min_max(float* mn, float* mx, const float* x, size_t n) {
  const char* op = "min_max";
  CHECK_F("mn", mn, 1);
  CHECK_F("mx", mx, 1);
  CHECK_F("x", x, n);
  record([=] { inner_->min_max(mn, mx, x, n); });
}

void CheckedBackend::absmax_rows(float* out, const float* x, int rows, int cols) {
  const char* op = "absmax_rows";
  CHECK_F("out", out, rows);
  CHECK_F("x", x, size_t(rows) * cols);
  record([=] { inner_->absmax_rows(out, x, rows, cols); });
}

void CheckedBackend::symmetric_scale_rows(float* scale, const float* x, int rows, int cols,
                                          int qmin, int qmax) {
  const char* op = "symmetric_scale_rows";
  CHECK_F("scale", scale, rows);
  CHECK_F("x", x, size_t(rows) * cols);
  record([=] { inner_->symmetric_scale_rows(scale, x, rows, cols, qmin, qmax); });
}

void CheckedBackend::fake_quant_per_tensor(float* out, uint8_t* mask, const float* x, size_t n,
                                           float scale, int zero_point, int qmin, int qmax) {
  const char* op = "fake_quant_per_tensor";
  CHECK_F("out", out, n);
  CHECK_OPT_B("mask", mask, n);
  CHECK_F("x", x, n);
  record([=] { inner_->fake_quant_per_tensor(out, mask, x, n, scale, zero_point, qmin, qmax); });
}

void CheckedBackend::fake_quant_per_row(float* out, uint8_t* mask, const float* x,
                                        const float* scale, int rows, int cols, int qmin,
                                        int qmax) {
  const char* op = "fake_quant_per_row";
  const size_t n = size_t(rows) * cols;
  CHECK_F("out", out, n);
  CHECK_OPT_B("mask", mask, n);
  CHECK_F("x", x, n);
  CHECK_F("scale", scale, rows);
  record([=] { inner_->fake_quant_per_row(out, mask, x, scale, rows, cols, qmin, qmax); });
}

void CheckedBackend::fake_quant_backward(float* dinp, const uint8_t* mask, const float* dout,
                                         size_t n) {
  const char* op = "fake_quant_backward";
  CHECK_F("dinp", dinp, n);
  CHECK_B("mask", mask, n);
  CHECK_F("dout", dout, n);
  record([=] { inner_->fake_quant_backward(dinp, mask, dout, n); });
}

void CheckedBackend::quantize_u8(uint8_t* q, const float* x, size_t n, float scale,
                                 int zero_point) {
  const char* op = "quantize_u8";
  CHECK_B("q", q, n);
  CHECK_F("x", x, n);
  record([=] { inner_->quantize_u8(q, x, n, scale, zero_point); });
}

void CheckedBackend::gemm_u8s8_s32(int M, int N, int K, const uint8_t* A, int lda, const int8_t* B,
                                   int ldb, int32_t* C, int ldc) {
  const char* op = "gemm_u8s8_s32";
  CHECK_B("A", A, span(M, K, lda));
  CHECK_B("B", B, span(N, K, ldb));
  CHECK_I("C", C, span(M, N, ldc));
  record([=] { inner_->gemm_u8s8_s32(M, N, K, A, lda, B, ldb, C, ldc); });
}

void CheckedBackend::linear_u8s8(float* out, int ldo, const uint8_t* A, int lda, float a_scale,
                                 int a_zero_point, const int8_t* W, const float* w_scale,
                                 const int32_t* w_sum, const float* bias, int M, int N, int K) {
  const char* op = "linear_u8s8";
  CHECK_F("out", out, span(M, N, ldo));
  CHECK_B("A", A, span(M, K, lda));
  CHECK_B("W", W, size_t(N) * K);
  CHECK_F("w_scale", w_scale, N);
  CHECK_I("w_sum", w_sum, N);
  CHECK_OPT_F("bias", bias, N);
  record([=] {
    inner_->linear_u8s8(out, ldo, A, lda, a_scale, a_zero_point, W, w_scale, w_sum, bias, M, N, K);
  });
}

// The inner backend's fused op (cpu: GELU and quantization in the GEMM's tasks), with W as it is:
// this backend packs no weights (q8_packed_weight_bytes is the default 0).
void CheckedBackend::linear_u8s8_gelu_u8(uint8_t* q, float* pre, float* act, const uint8_t* A,
                                         int lda, float a_scale, int a_zero_point, const int8_t* W,
                                         const int8_t* w_packed, const float* w_scale,
                                         const int32_t* w_sum, const float* bias, int M, int N,
                                         int K, Gelu kind, float q_scale, int q_zero_point) {
  const char* op = "linear_u8s8_gelu_u8";
  CHECK_B("q", q, size_t(M) * N);
  CHECK_F("pre", pre, size_t(M) * N);
  CHECK_F("act", act, size_t(M) * N);
  CHECK_B("A", A, span(M, K, lda));
  CHECK_B("W", W, size_t(N) * K);
  CHECK_F("w_scale", w_scale, N);
  CHECK_I("w_sum", w_sum, N);
  CHECK_OPT_F("bias", bias, N);
  if (w_packed) fail("{}: a packed weight, but this backend packs none", op);
  record([=] {
    inner_->linear_u8s8_gelu_u8(q, pre, act, A, lda, a_scale, a_zero_point, W, nullptr, w_scale,
                                w_sum, bias, M, N, K, kind, q_scale, q_zero_point);
  });
}

void CheckedBackend::embedding_forward_s8(float* out, const int32_t* ids, const int8_t* q,
                                          const float* scale, int n, int C, int V) {
  const char* op = "embedding_forward_s8";
  CHECK_F("out", out, size_t(n) * C);
  CHECK_I("ids", ids, n);
  CHECK_B("q", q, size_t(V) * C);
  CHECK_F("scale", scale, V);
  record([=] { inner_->embedding_forward_s8(out, ids, q, scale, n, C, V); });
}

void CheckedBackend::observe_min_max(float* range, const float* batch, int parts, bool first,
                                     float momentum) {
  const char* op = "observe_min_max";
  CHECK_F("range", range, 2);
  CHECK_F("batch", batch, 2 * size_t(parts));
  record([=] { inner_->observe_min_max(range, batch, parts, first, momentum); });
}

void CheckedBackend::fake_quant_observed(float* out, uint8_t* mask, const float* x, size_t n,
                                         const float* range, int qmin, int qmax) {
  const char* op = "fake_quant_observed";
  CHECK_F("out", out, n);
  CHECK_OPT_B("mask", mask, n);
  CHECK_F("x", x, n);
  CHECK_F("range", range, 2);
  record([=] { inner_->fake_quant_observed(out, mask, x, n, range, qmin, qmax); });
}

}  // namespace bertrt
