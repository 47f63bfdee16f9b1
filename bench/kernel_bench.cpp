// Kernel throughput, side by side: the scalar reference GEMM, the cpu backend's fp32 GEMM
// (OpenBLAS) and its int8 Linear (u8×s8 → s32, dequantized) on BERT's Linear shapes for 128 tokens
// (nn.Linear layout, Y = X·Wᵀ); then the streamed attention (backends/cpu/f32_attention.h) of one
// head (HS = 64) at 128 and 512 tokens, every kernel this CPU runs. A benchmark, not a test: it
// prints figures and asserts nothing. Correctness of the same kernels is in
// tests/unit/ops_test.cpp, quant_ops_test.cpp and attention_inference_test.cpp.
//
// Usage: bench_kernels [--json]   (threads: BERTRT_NUM_THREADS, as for bertrt)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/f32_attention.h"
#include "backends/cpu/gelu_u8.h"
#include "backends/cpu/q8_gemm.h"
#include "backends/reference/reference_backend.h"
#include "bench/bench_args.h"
#include "bench/best_seconds.h"
#include "quant/int8_weight.h"

namespace {

using bertrt::Backend;
using bertrt::bench::best_seconds;

struct Shape {
  int M, N, K;
  const char* what;
};

template <class T>
std::vector<T> uniform(size_t n, unsigned seed, double lo, double hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(gen));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = bertrt::bench::json_only_args(
      argc, argv,
      "usage: %s [--json]\nGEMM throughput of the scalar reference, OpenBLAS fp32 and the "
      "int8 kernel on BERT Linear shapes (128 tokens), then the streamed attention kernels "
      "(one head, one thread). Threads: BERTRT_NUM_THREADS.\n");
  bertrt::ReferenceBackend ref;
  bertrt::CpuBackend cpu;
  const char* kernel = bertrt::cpu::q8_kernel_name(bertrt::cpu::q8_best_kernel());
  const Shape shapes[] = {{128, 768, 768, "BERT-base attention projection"},
                          {128, 3072, 768, "BERT-base FFN up"},
                          {128, 768, 3072, "BERT-base FFN down"},
                          {128, 256, 256, "BERT-mini attention projection"},
                          {128, 1024, 256, "BERT-mini FFN up"}};
  if (!json)
    std::printf(
        "%-34s %-16s %10s %10s %10s %12s   (GFLOP/s or GOP/s; threads: %d; int8 kernel: %s, "
        "BERTRT_Q8_KERNEL chooses another)\n",
        "shape", "MxNxK", "reference", "cpu fp32", "cpu int8", "int8 packed", cpu.num_threads(),
        kernel);
  if (json) std::printf("[");
  bool first = true;
  for (const Shape& s : shapes) {
    const size_t a = static_cast<size_t>(s.M) * s.K, w = static_cast<size_t>(s.N) * s.K;
    const auto Af = uniform<float>(a, 1, -1, 1), Wf = uniform<float>(w, 2, -1, 1);
    const auto Aq = uniform<uint8_t>(a, 3, 0, 255.99);
    const auto Wq = uniform<int8_t>(w, 4, -127.99, 127.99);
    auto wsum = bertrt::row_sums_s8(Wq.data(), s.N, s.K);
    std::vector<float> wscale(s.N, 1e-3f), out(static_cast<size_t>(s.M) * s.N);
    auto fp32 = [&](Backend& b) {
      b.gemm(false, true, s.M, s.N, s.K, 1.0f, Af.data(), s.K, Wf.data(), s.K, 0.0f, out.data(),
             s.N);
    };
    const double ops = 2.0 * s.M * s.N * s.K;
    const double g_ref = ops / best_seconds([&] { fp32(ref); }, 0.2) * 1e-9;
    const double g_cpu = ops / best_seconds([&] { fp32(cpu); }, 0.5) * 1e-9;
    const double g_i8 =
        ops /
        best_seconds(
            [&] {
              cpu.linear_u8s8(out.data(), s.N, Aq.data(), s.K, 0.01f, 128, Wq.data(), wscale.data(),
                              wsum.data(), nullptr, s.M, s.N, s.K);
            },
            0.5) *
        1e-9;
    // The same with W packed once for the kernel (as a loaded model runs it; equal to the above
    // where the kernel reads W as it is).
    std::vector<int8_t> packed(cpu.q8_packed_weight_bytes(s.N, s.K));
    if (!packed.empty()) cpu.pack_q8_weight(packed.data(), Wq.data(), s.N, s.K);
    const double g_i8p =
        ops /
        best_seconds(
            [&] {
              cpu.linear_u8s8_packed(out.data(), s.N, Aq.data(), s.K, 0.01f, 128, Wq.data(),
                                     packed.empty() ? nullptr : packed.data(), wscale.data(),
                                     wsum.data(), nullptr, s.M, s.N, s.K);
            },
            0.5) *
        1e-9;
    if (json) {
      std::printf(
          "%s\n "
          "{\"shape\":\"%s\",\"M\":%d,\"N\":%d,\"K\":%d,\"threads\":%d,\"int8_kernel\":\"%s\","
          "\"reference_gflops\":%.3f,"
          "\"cpu_fp32_gflops\":%.3f,\"cpu_int8_gops\":%.3f,\"cpu_int8_packed_gops\":%.3f}",
          first ? "" : ",", s.what, s.M, s.N, s.K, cpu.num_threads(), kernel, g_ref, g_cpu, g_i8,
          g_i8p);
    } else {
      char mnk[32];
      std::snprintf(mnk, sizeof mnk, "%dx%dx%d", s.M, s.N, s.K);
      std::printf("%-34s %-16s %10.2f %10.2f %10.2f %12.2f\n", s.what, mnk, g_ref, g_cpu, g_i8,
                  g_i8p);
    }
    std::fflush(stdout);
    first = false;
  }
  // One head of attention, all rows on this thread: Q, K, V interleaved as BERT's fused QKV rows
  // (row stride 3·768), 4·T·T·HS flops (Q·Kᵀ and P·V).
  constexpr int HS = 64, ld = 3 * 768;
  for (int T : {128, 512}) {
    const auto qkv = uniform<float>(static_cast<size_t>(T) * ld, 5, -1, 1);
    std::vector<float> ctx(static_cast<size_t>(T) * HS);
    for (bertrt::cpu::F32Kernel k : bertrt::cpu::kAllF32Kernels) {
      if (!bertrt::cpu::f32_kernel_available(k)) continue;
      std::vector<float> buf(bertrt::cpu::f32_attention_scratch_floats(k, HS) + 16);
      float* scratch =
          reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
      const double ops = 4.0 * T * T * HS;
      const double g = ops /
                       best_seconds(
                           [&] {
                             bertrt::cpu::f32_attention_rows(
                                 k, ctx.data(), HS, qkv.data(), qkv.data() + 768, qkv.data() + 1536,
                                 ld, nullptr, T, HS, 0.125f, 0, T, scratch);
                           },
                           0.3) *
                       1e-9;
      const char* name = bertrt::cpu::f32_kernel_name(k);
      if (json) {
        std::printf(
            ",\n {\"op\":\"attention\",\"kernel\":\"%s\",\"T\":%d,\"HS\":%d,\"gflops\":%.3f}", name,
            T, HS, g);
      } else {
        char what[48];
        std::snprintf(what, sizeof what, "attention %s, T=%d HS=%d", name, T, HS);
        std::printf("%-34s %-16s %10.2f\n", what, "(one head)", g);
      }
      std::fflush(stdout);
    }
  }
  // The int8 FFN's GELU + quantization (cpu_quant.cpp's post-op) on one 64 × 64 block of a
  // 3072-wide row-major output, one thread: the two exact kernels in turn (the op's reference,
  // gelu_u8.h's "scalar" path) and gelu_u8.h's table paths, each with the reference's integers.
  // Inputs uniform on [−8, 8].
  {
    constexpr int R = 64, C = 64, ld = 3072;
    const auto x = uniform<float>(static_cast<size_t>(R) * ld, 6, -8, 8);
    std::vector<uint8_t> q(static_cast<size_t>(R) * ld);
    const float inv = 1 / 0.03f;
    for (bertrt::cpu::F32Kernel k : bertrt::cpu::kAllF32Kernels) {
      if (!bertrt::cpu::f32_kernel_available(k)) continue;
      const double sec = best_seconds(
          [&] {
            bertrt::cpu::gelu_erf_quantize_u8(k, q.data(), x.data(), R, C, ld, ld, inv, 6);
          },
          0.3);
      const double ge = R * C / sec * 1e-9;
      const char* name = bertrt::cpu::f32_kernel_name(k);
      if (json) {
        std::printf(",\n {\"op\":\"gelu_erf_quantize_u8\",\"kernel\":\"%s\",\"gelems_per_s\":%.3f}",
                    name, ge);
      } else {
        char what[48];
        std::snprintf(what, sizeof what, "gelu_erf_quantize_u8 %s", name);
        std::printf("%-34s %-16s %10.2f  (Gelem/s, one thread)\n", what, "64x64 of 3072", ge);
      }
    }
  }
  if (json) std::printf("\n]\n");
  return 0;
}
