#include "model/lora.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace bertrt {

namespace {

// drop(inp) into xd [rows, in_f] (contiguous): the rows gathered, then Backend::dropout's mask.
void dropped_input(Backend& be, float* xd, const float* inp, int rows, int in_f, int lda,
                   float dropout, uint64_t seed) {
  be.copy_2d(xd, in_f, inp, lda, rows, in_f);
  be.dropout(xd, size_t(rows) * in_f, dropout, seed);
}

}  // namespace

void lora_forward(Backend& be, float* out, float* u, float* xd, const float* inp, const float* A,
                  const float* B, int rows, int in_f, int out_f, int r, float scaling, int lda,
                  float dropout, uint64_t seed) {
  const float* x = inp;
  int ldx = lda ? lda : in_f;
  if (dropout > 0.0f) {
    dropped_input(be, xd, inp, rows, in_f, ldx, dropout, seed);
    x = xd, ldx = in_f;
  }
  be.gemm(false, true, rows, r, in_f, 1.0f, x, ldx, A, in_f, 0.0f, u, r);             // u = x·Aᵀ
  be.gemm(false, true, rows, out_f, r, scaling, u, r, B, r, 1.0f, out, out_f);        // += s·u·Bᵀ
}

void lora_backward(Backend& be, float* dinp, float* dA, float* dB, float* du, float* xd,
                   const float* dout, const float* inp, const float* u, const float* A,
                   const float* B, int rows, int in_f, int out_f, int r, float scaling, int lda,
                   int ldd, float dropout, uint64_t seed) {
  be.gemm(false, false, rows, r, out_f, scaling, dout, out_f, B, r, 0.0f, du, r);     // du = s·dout·B
  if (dB) be.gemm(true, false, out_f, r, rows, scaling, dout, out_f, u, r, 1.0f, dB, r);
  const int ldx = lda ? lda : in_f, ldi = ldd ? ldd : in_f;
  if (dA) {
    const float* x = inp;
    int ld = ldx;
    if (dropout > 0.0f) {
      dropped_input(be, xd, inp, rows, in_f, ldx, dropout, seed);
      x = xd, ld = in_f;
    }
    be.gemm(true, false, r, in_f, rows, 1.0f, du, r, x, ld, 1.0f, dA, in_f);          // dA += duᵀ·x
  }
  if (!dinp) return;
  if (dropout == 0.0f) {
    be.gemm(false, false, rows, in_f, r, 1.0f, du, r, A, in_f, 1.0f, dinp, ldi);      // dinp += du·A
    return;
  }
  be.gemm(false, false, rows, in_f, r, 1.0f, du, r, A, in_f, 0.0f, xd, in_f);
  be.dropout(xd, size_t(rows) * in_f, dropout, seed);
  if (ldi == in_f) {
    be.add(dinp, dinp, xd, size_t(rows) * in_f);
  } else {
    for (int i = 0; i < rows; ++i)
      be.add(dinp + size_t(i) * ldi, dinp + size_t(i) * ldi, xd + size_t(i) * in_f, size_t(in_f));
  }
}

void lora_merge(float* W, const float* A, const float* B, int out_f, int in_f, int r,
                float scaling) {
  for (int o = 0; o < out_f; ++o)
    for (int i = 0; i < in_f; ++i) {
      double s = 0;
      for (int k = 0; k < r; ++k) s += double(B[size_t(o) * r + k]) * A[size_t(k) * in_f + i];
      W[size_t(o) * in_f + i] = float(W[size_t(o) * in_f + i] + double(scaling) * s);
    }
}

}  // namespace bertrt
