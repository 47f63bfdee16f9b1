// The argument checks every backend's quantization ops make, worded once (the error messages are
// part of the contract: a shader-found error on Vulkan reports through them too).
#pragma once

#include <cmath>

#include "backends/backend.h"
#include "core/error.h"

namespace bertrt {

// A fake-quant or quantize scale must be positive and finite (row: which row of a per-row op).
inline void check_quant_scale(const char* op, float scale, int row) {
  if (!(scale > 0.0f) || !std::isfinite(scale))
    fail("{}: row {}: scale {} must be positive and finite", op, row, scale);
}

// K ≤ kMaxQ8K, so no int32 sum of u8·s8 products can wrap.
inline void check_q8_k(const char* op, int K) {
  if (K > kMaxQ8K)
    fail("{}: K = {} exceeds {} (an int32 sum of u8·s8 products could overflow)", op, K,
         kMaxQ8K);
}

}  // namespace bertrt
