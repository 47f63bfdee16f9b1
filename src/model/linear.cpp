#include "model/linear.h"

#include "model/lora_int8.h"
#include "quant/quant_linear.h"

namespace bertrt {

void linear_forward(Backend& be, float* out, const float* inp, const float* weight,
                    const float* bias, int rows, int in_f, int out_f, int lda, QuantLinear* q) {
  if (q && q->mode != QuantMode::kFloat) {
    quant_linear_forward(be, *q, out, inp, weight, bias, rows, in_f, out_f, lda);
    return;
  }
  be.gemm(false, true, rows, out_f, in_f, 1.0f, inp, lda ? lda : in_f, weight, in_f, 0.0f, out,
          out_f);
  if (bias) be.bias_add(out, bias, rows, out_f);
}

void linear_forward_inference(Backend& be, float* out, float* pre, const float* inp,
                              const float* weight, const float* bias, const float* residual,
                              int rows, int in_f, int out_f, std::optional<Gelu> gelu,
                              QuantLinear* q) {
  if (!q || q->mode == QuantMode::kFloat) {
    be.linear_forward_inference(out, pre, inp, in_f, weight, bias, residual, rows, out_f, in_f,
                                gelu);
    return;
  }
  float* y = gelu ? pre : out;
  quant_linear_forward(be, *q, y, inp, weight, bias, rows, in_f, out_f, 0);
  const size_t n = size_t(rows) * out_f;
  if (gelu) be.gelu_forward(out, pre, n, *gelu);
  if (residual) be.add(out, out, residual, n);
}

void linear_backward(Backend& be, float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int rows, int in_f, int out_f,
                     int lda, int ldd, QuantLinear* q) {
  if (q && q->mode == QuantMode::kInt8) {  // a frozen int8 base under adapters: dX only
    int8_linear_backward(be, *q, dinp, dweight, dbias, dout, rows, in_f, out_f, ldd);
    return;
  }
  if (q && q->mode != QuantMode::kFloat) {
    quant_linear_backward(be, *q, dinp, dweight, dbias, dout, rows, in_f, out_f, ldd);
    return;
  }
  if (dinp)
    be.gemm(false, false, rows, in_f, out_f, 1.0f, dout, out_f, weight, in_f, 1.0f, dinp,
            ldd ? ldd : in_f);
  if (dweight)
    be.gemm(true, false, out_f, in_f, rows, 1.0f, dout, out_f, inp, lda ? lda : in_f, 1.0f,
            dweight, in_f);
  if (dbias) be.bias_backward(dbias, dout, rows, out_f);
}

}  // namespace bertrt
