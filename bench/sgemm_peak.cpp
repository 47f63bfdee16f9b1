// The fp32 GEMM peak of this host, the yardstick of the training-step figure (the step's GEMM rate
// against the sgemm peak measured in the same run): OpenBLAS's cblas_sgemm on 3072 × 3072 × 3072 with its
// own threads, and the cpu backend's gemm (what a training step runs on: bertrt's kernel on
// AVX-512 hosts, else OpenBLAS single-threaded under bertrt's pool split) on the same shape.
// Best of repeated calls for about 2 s each; prints GFLOP/s. A benchmark: it asserts nothing.
//
// Usage: bench_sgemm_peak [--json] [--size N]   (threads: BERTRT_NUM_THREADS, as for bertrt)
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/blas_core.h"
#include "backends/cpu/cpu_backend.h"
#include "bench/bench_args.h"
#include "bench/best_seconds.h"

using bertrt::bench::best_seconds;

int main(int argc, char** argv) {
  bool json = false;
  int n = 3072;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (!bertrt::bench::positive_int_option(argc, argv, i, "--size", n)) {
      bertrt::bench::usage_exit(argv, i,
                                "usage: %s [--json] [--size N]\nfp32 GEMM peak (N x N x N, default "
                                "3072): OpenBLAS cblas_sgemm on its own threads, then the cpu "
                                "backend's gemm. Threads: BERTRT_NUM_THREADS.\n");
    }
  }
  bertrt::CpuBackend cpu;  // sets OpenBLAS to one thread (its pool splits); restored below
  const int threads = cpu.num_threads();
  const size_t nn = static_cast<size_t>(n) * n;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> a(nn), b(nn), c(nn);
  for (auto* v : {&a, &b})
    for (float& x : *v) x = d(gen);
  const double flop = 2.0 * n * n * n;

  cpu.gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  const double backend = flop / best_seconds([&] {
    cpu.gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  }, 2.0) * 1e-9;
  openblas_set_num_threads(threads);
  const double blas = flop / best_seconds([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
  }, 2.0) * 1e-9;
  const std::string core = bertrt::cpu::blas_core_summary();
  if (json)
    std::printf("{\"size\":%d,\"threads\":%d,\"openblas_sgemm_gflops\":%.2f,"
                "\"cpu_backend_gemm_gflops\":%.2f,\"blas\":\"%s\"}\n",
                n, threads, blas, backend, core.c_str());
  else
    std::printf("%d^3 fp32 GEMM, %d threads: OpenBLAS sgemm %.1f GFLOP/s, cpu backend gemm %.1f "
                "GFLOP/s (%s)\n",
                n, threads, blas, backend, core.c_str());
  return 0;
}
