// Shared by the op tests: deterministic inputs and an element-wise comparison that prints the
// first offending elements (ggml test-backend-ops / XNNPACK tester style).
#pragma once

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "test_util.h"

namespace bertrt::test {

// The backends whose ops take plain host memory (reference, cpu): what the op tests call with
// std::vector data. The checked backend is tested through the model (contract_test.cpp).
inline std::vector<std::string> host_backend_names() {
  std::vector<std::string> out;
  for (const std::string& name : backend_names())
    if (name != "vulkan" && make_backend(name)->accepts_host_pointers()) out.push_back(name);
  return out;
}

// cross_entropy's loss sum, read back (host backends: the op wrote it when it returned).
inline double ce_sum(Backend& be, float* dlogits, const float* logits, const int32_t* targets,
                     int rows, int V, float grad_scale) {
  double sum = 0;
  be.cross_entropy(dlogits, &sum, logits, targets, rows, V, grad_scale);
  be.sync();
  return sum;
}

constexpr double kEps = FLT_EPSILON;  // 2^-23: one float ulp at 1

// Stride of a sweep over float bit patterns: `stride` natively, 8x sparser when test::sparse (kept
// odd, so the sample still covers every value of the low mantissa bits).
inline uint32_t sweep_stride(uint32_t stride) { return sparse() ? stride * 8 + 1 : stride; }

inline std::vector<float> randn(size_t n, uint32_t seed, float stddev = 1.0f, float mean = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<float> uniform(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Passes when |got[i] − want[i]| ≤ tol[i] for every i; otherwise reports the count and the first
// few offenders. `tol` may hold one value for all elements.
inline ::testing::AssertionResult all_close(const std::vector<float>& want,
                                            const std::vector<float>& got,
                                            const std::vector<double>& tol) {
  if (want.size() != got.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  size_t bad = 0;
  std::string first;
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double t = tol.size() == 1 ? tol[0] : tol[i];
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= t)) {  // also catches NaN
      if (bad < 5)
        first += "\n  [" + std::to_string(i) + "] want " + std::to_string(want[i]) + " got " +
                 std::to_string(got[i]) + " err " + std::to_string(err) + " tol " +
                 std::to_string(t);
      ++bad;
    }
    if (t > 0) worst = std::max(worst, err / t);
  }
  if (bad == 0) return ::testing::AssertionSuccess() << "worst err/tol " << worst;
  return ::testing::AssertionFailure() << bad << " of " << want.size() << " elements off" << first;
}

}  // namespace bertrt::test
