// A small, portable, seedable RNG (xoshiro256**, seeded by splitmix64). The standard library's
// distributions are implementation-defined, so weights and masks would differ across platforms;
// these are bit-identical everywhere (x86-64 and aarch64 give the same initial model).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace bertrt {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;  // splitmix64
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0], s_[3] ^= s_[1], s_[1] ^= s_[2], s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform double in [0, 1) with 53 random bits.
  double uniform() { return (next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n) (Lemire's multiply-shift; bias < 2^-64·n, negligible).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((__uint128_t(next()) * n) >> 64); }
  // Standard normal (Box–Muller; one value per call for simplicity).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  std::array<uint64_t, 4> state() const { return s_; }
  void set_state(const std::array<uint64_t, 4>& s) { s_ = s; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_{};
};

}  // namespace bertrt
