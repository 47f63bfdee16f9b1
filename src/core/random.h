// Random draws (data pipeline, weight init), defined on top of the raw 64-bit output of std::mt19937_64.
//
// Why not <random>'s distributions and std::shuffle: their algorithms are implementation-defined,
// so libstdc++ and libc++ (or two versions of either) give different sequences for the same seed.
// A pre-training run must produce the same examples on the host and on an ARM board, so these
// helpers fix the algorithm. Semantics mirror Python's random module as used by
// google-research/bert create_pretraining_data.py (random(), randint(a, b) inclusive, shuffle).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace bertrt {

// Uniform double in [0, 1) with 53 random bits (like Python's random.random()).
inline double random_unit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Uniform integer in [lo, hi], both inclusive (Python's randint). Unbiased: rejection sampling on
// the largest multiple of the range (hi >= lo required).
inline int64_t random_int(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
  if (range == 0) return static_cast<int64_t>(rng());  // the full 64-bit range
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t x;
  do x = rng();
  while (x >= limit);
  return lo + static_cast<int64_t>(x % range);
}

// Fisher–Yates shuffle (same algorithm as Python's random.shuffle, with our random_int).
template <typename T>
void random_shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(random_int(rng, 0, static_cast<int64_t>(i) - 1));
    std::swap(v[i - 1], v[j]);
  }
}

// Standard normal draw (Box–Muller, one value per call): weight initialisation N(0, σ²).
inline double random_normal(std::mt19937_64& rng) {
  double u1 = random_unit(rng);
  const double u2 = random_unit(rng);
  if (u1 < 1e-300) u1 = 1e-300;  // log(0)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace bertrt
