// OpenBLAS's kernel set after a CpuBackend exists (backends/cpu/blas_core.h): never the SSE3
// fallback "Prescott" on a CPU with AVX2 + FMA, unless the user chose it (OPENBLAS_CORETYPE; the
// CLI checks in tests/e2e/cli_test.sh cover that case). On Debian 12's OpenBLAS 0.3.21 this fails
// without the fix on any CPU model newer than its table, e.g. Intel family 6 model 207.
#include "backends/cpu/blas_core.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backends/cpu/cpu_backend.h"

namespace bertrt {
namespace {

#if defined(OPENBLAS_VERSION) && defined(__x86_64__)
TEST(BlasCore, NotTheSse3FallbackWhereTheCpuHasAvx2) {
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (user && *user) GTEST_SKIP() << "OPENBLAS_CORETYPE=" << user << " chooses the core";
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "no AVX2 + FMA: Prescott may be the right core";
  CpuBackend be(1);
  const std::string core = openblas_get_corename();
  EXPECT_NE(core, "Prescott") << cpu::blas_core_summary();
  // The summary names the core in use (what `bertrt bench` prints).
  EXPECT_NE(cpu::blas_core_summary().find("core " + core), std::string::npos)
      << cpu::blas_core_summary();
}

// The switch leaves GEMM results within the float rounding bound of the reference sum (a wrong
// kernel table would give garbage, not a different rounding).
TEST(BlasCore, GemmAfterTheCheckIsCorrect) {
  CpuBackend be(1);
  const int M = 37, N = 29, K = 301;
  std::vector<float> A(M * K), B(N * K), C(M * N);
  for (int i = 0; i < M * K; ++i) A[i] = static_cast<float>((i * 7919) % 201 - 100) / 64.0f;
  for (int i = 0; i < N * K; ++i) B[i] = static_cast<float>((i * 104729) % 199 - 99) / 32.0f;
  be.gemm(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, C.data(), N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      // Every product and partial sum here is a multiple of 2^-11 below 2^24 · 2^-11: exact in
      // float whatever the order, so the GEMM must equal the exact sum.
      double want = 0;
      for (int k = 0; k < K; ++k) want += double(A[m * K + k]) * double(B[n * K + k]);
      ASSERT_EQ(C[m * N + n], static_cast<float>(want)) << m << "," << n;
    }
}
#endif

}  // namespace
}  // namespace bertrt
