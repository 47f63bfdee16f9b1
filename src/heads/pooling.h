// sentence-transformers' Pooling (models/Pooling.py) over the encoder's last_hidden_state, on the
// host: the scalar reference of the sentence-embedding head. For each sequence b, with m[t] its
// attention mask and, when include_prompt is false, m[t] = 0 for the first prompt_length[b]
// positions ([CLS] and the prompt's tokens) as Pooling.forward sets them:
//   cls           h[0] (whatever the mask says)
//   max           max over t of h[t], masked positions read as -1e9
//   mean          Σ m[t]·h[t] / max(Σ m[t], 1e-9)
//   mean_sqrt_len Σ m[t]·h[t] / sqrt(max(Σ m[t], 1e-9))
//   weightedmean  Σ (t+1)·m[t]·h[t] / max(Σ (t+1)·m[t], 1e-9)   (positions counted from 1)
//   lasttoken     m[t]·h[t] at the last t with m[t] = 1 (t = 0 when there is none)
// concatenated in that order. Arithmetic in float, as the upstream module on float32 inputs.
#pragma once

#include <cstdint>

#include "heads/embedding_config.h"

namespace bertrt {

// hidden [B, T, H]; mask [B, T] (1 token, 0 padding; nullptr = all 1); prompt_length [B] or
// nullptr (none). out [B, p.modes() · H].
void pooling_forward(const PoolingConfig& p, const float* hidden, const int32_t* mask,
                     const int32_t* prompt_length, int B, int T, int H, float* out);

// Its backward: dhidden [B, T, H] accumulates ∂loss/∂hidden from dout [B, p.modes() · H] (max:
// to the first position holding the maximum, as torch.max's backward routes it).
void pooling_backward(const PoolingConfig& p, const float* dout, const float* hidden,
                      const int32_t* mask, const int32_t* prompt_length, int B, int T, int H,
                      float* dhidden);

}  // namespace bertrt
