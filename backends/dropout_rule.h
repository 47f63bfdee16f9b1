// Dropout's mask, shared by every backend (and the tests): a counter-based hash of (seed, index),
// so the mask needs no storage (the backward recomputes it), does not depend on how a backend
// splits the work over threads or invocations, and a resumed run draws the same masks.
//
// Element i of a call with seed s is kept when dropout_bits(s, i) ≥ dropout_threshold(p); kept
// elements are multiplied by 1 / (1 − p) (inverted dropout, torch.nn.Dropout in training mode).
// The hash is two rounds of Chris Wellons's lowbias32 (32-bit multiplies and shifts only, which a
// GLSL shader or NEON can do as well), the seed's halves entering one round each.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/error.h"

namespace bertrt {

inline uint32_t dropout_mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

inline uint32_t dropout_bits(uint64_t seed, uint32_t i) {
  return dropout_mix32(dropout_mix32(i + static_cast<uint32_t>(seed)) ^
                       static_cast<uint32_t>(seed >> 32));
}

// ⌊p · 2³²⌋ for p in [0, 1): element dropped when its bits fall below it.
inline uint32_t dropout_threshold(float p) {
  return static_cast<uint32_t>(static_cast<double>(p) * 4294967296.0);
}

// The scale of kept elements, in float as torch computes it (1 / (1 − p)).
inline float dropout_scale(float p) { return 1.0f / (1.0f - p); }

// The op's arguments, checked by each backend before it draws.
inline void check_dropout_args(size_t n, float p) {
  if (!(p >= 0.0f && p < 1.0f)) fail("dropout: probability {} is outside [0, 1)", p);
  if (n > UINT32_MAX) fail("dropout: {} elements; the mask counts them in 32 bits", n);
}

inline uint64_t dropout_splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A call's seed from the run's seed, the optimizer step and the call site (splitmix64), so every
// site of every step draws its own mask.
inline uint64_t dropout_seed(uint64_t run_seed, uint64_t step, uint64_t site) {
  return dropout_splitmix64(dropout_splitmix64(run_seed ^ dropout_splitmix64(step)) + site);
}

}  // namespace bertrt
