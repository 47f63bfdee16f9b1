// Backend::attention_forward_inference: the cpu backend's fused version (one task per batch and
// head, no [B, NH, T, T] tensors) against the training forward's unfused ops on the same backend —
// the same floats bit for bit, since it makes the same sgemm calls and softmax rows — and against
// the scalar reference, over odd sizes (T = 1, primes, HS not a multiple of the vector width),
// padding masks and a fully masked (−inf) sequence.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference_backend.h"
#include "op_test_util.h"

namespace bertrt {
namespace {

struct Case {
  int B, NH, T, HS;
};

TEST(AttentionInference, CpuFusedEqualsUnfusedOpsAndTheReference) {
  CpuBackend cpu(2);
  ReferenceBackend ref;
  int n_cases = 0;
  for (Case c : {Case{1, 1, 1, 1}, Case{1, 2, 5, 7}, Case{2, 3, 17, 16}, Case{3, 4, 33, 9},
                 Case{2, 2, 64, 64}, Case{1, 4, 128, 32}}) {
    for (int masked : {0, 1}) {
      const int C = c.NH * c.HS;
      const size_t N = size_t(c.B) * c.T, P = size_t(c.B) * c.NH * c.T * c.T;
      const uint32_t seed = 100 + c.B * 31 + c.T * 7 + c.HS + masked;
      const auto q = test::randn(N * C, seed), k = test::randn(N * C, seed + 1),
                 v = test::randn(N * C, seed + 2);
      std::vector<float> mask(N, 0.0f);
      if (masked) {  // sequence b keeps its first T − b·T/4 keys; the last sequence drops all
        for (int b = 0; b < c.B; ++b)
          for (int t = c.T - b * c.T / 4; t < c.T; ++t) mask[size_t(b) * c.T + t] = -10000.0f;
        if (c.B > 1)
          for (int t = 0; t < c.T; ++t)
            mask[size_t(c.B - 1) * c.T + t] = -std::numeric_limits<float>::infinity();
      }
      const float* mk = masked ? mask.data() : nullptr;
      const float scale = 1.0f / std::sqrt(float(c.HS));
      std::vector<float> fused(N * C, -1.0f), unfused(N * C, -2.0f), want(N * C, -3.0f);
      std::vector<float> probs(P), scores(P);
      cpu.attention_forward_inference(fused.data(), nullptr, nullptr, q.data(), k.data(), v.data(),
                                      mk, c.B, c.NH, c.T, c.HS, scale);
      cpu.Backend::attention_forward_inference(unfused.data(), probs.data(), scores.data(),
                                               q.data(), k.data(), v.data(), mk, c.B, c.NH, c.T,
                                               c.HS, scale);
      ref.attention_forward_inference(want.data(), probs.data(), scores.data(), q.data(), k.data(),
                                      v.data(), mk, c.B, c.NH, c.T, c.HS, scale);
      ASSERT_EQ(0, std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)))
          << "B=" << c.B << " NH=" << c.NH << " T=" << c.T << " HS=" << c.HS
          << " masked=" << masked;
      // Against the scalar oracle: ctx is a convex combination of V rows (|v| ≲ 4), each sum
      // of T products rounded in another order.
      std::vector<double> tol(want.size(), 1e-5 * (1 + std::sqrt(double(c.T))));
      EXPECT_TRUE(test::all_close(want, fused, tol))
          << "B=" << c.B << " NH=" << c.NH << " T=" << c.T << " HS=" << c.HS;
      ++n_cases;
    }
  }
  RecordProperty("cases", n_cases);
}

}  // namespace
}  // namespace bertrt
