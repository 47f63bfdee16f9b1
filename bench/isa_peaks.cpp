// The instruction-level ceilings of the int8 and fp32 GEMM inner loops on this core (what bounds
// int8's gain over our own fp32 on AVX2-only hosts): how many multiply-adds a second one thread gets
// from each instruction form the kernels could use, with nothing else in the loop (no loads, 12
// independent accumulators, so only the issue ports limit it):
//   fp32  ymm FMA          vfmadd231ps                          8 multiply-adds an instruction
//   int8  exact (AVX2)     vpmaddwd + vpaddd on int16 operands  16 (what q8_gemm_avx2.cpp runs)
//   int8  vpmaddubsw       vpmaddubsw + vpmaddwd(1s) + vpaddd   32 (needs 7-bit activations)
//   int8  VNNI ymm / zmm   vpdpbusd                             32 / 64 (where the CPU has it)
//   fp32  zmm FMA          vfmadd231ps                          16 (where the CPU has AVX-512F)
// The ratio of an int8 form to ymm FMA bounds what an AVX2-only int8 GEMM can gain over an fp32
// one on this core; a whole forward gains less, since its other work (attention, LayerNorm) is
// the same in both. Best of repeated runs. A benchmark: it asserts nothing.
//
// Usage: bench_isa_peaks [--json]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "bench/bench_args.h"
#include "bench/best_seconds.h"

namespace {

constexpr long kIters = 20'000'000;

#if defined(__x86_64__)
// Twelve independent chains per iteration; ymm14/zmm14 and ymm15/zmm15 are the operands. Each
// macro expands to one iteration's instructions, repeated by the loop below.
// The operands and accumulators start at zero (no denormals: some cores slow FMA on them), and
// vzeroupper ends each run (no AVX-SSE transition penalty for the caller).
#define BERTRT_LOOP(body, clobbers)                                                          \
  __asm__ volatile("vpxor %%xmm14, %%xmm14, %%xmm14\n vpxor %%xmm15, %%xmm15, %%xmm15\n"   \
                   "vpxor %%xmm0, %%xmm0, %%xmm0\n vpxor %%xmm1, %%xmm1, %%xmm1\n"         \
                   "vpxor %%xmm2, %%xmm2, %%xmm2\n vpxor %%xmm3, %%xmm3, %%xmm3\n"         \
                   "vpxor %%xmm4, %%xmm4, %%xmm4\n vpxor %%xmm5, %%xmm5, %%xmm5\n"         \
                   "vpxor %%xmm6, %%xmm6, %%xmm6\n vpxor %%xmm7, %%xmm7, %%xmm7\n"         \
                   "vpxor %%xmm8, %%xmm8, %%xmm8\n vpxor %%xmm9, %%xmm9, %%xmm9\n"         \
                   "vpxor %%xmm10, %%xmm10, %%xmm10\n vpxor %%xmm11, %%xmm11, %%xmm11\n"   \
                   "vpxor %%xmm13, %%xmm13, %%xmm13\n" ::: clobbers, "xmm14", "xmm15");     \
  for (long i = 0; i < kIters; ++i) __asm__ volatile(body ::: clobbers, "xmm14", "xmm15");  \
  __asm__ volatile("vzeroupper" ::: clobbers, "xmm14", "xmm15");

#define YMM_ALL "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
                "xmm10", "xmm11", "xmm12", "xmm13"

__attribute__((target("avx2,fma"))) void fma_ymm() {
  BERTRT_LOOP(
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm0\n vfmadd231ps %%ymm14, %%ymm15, %%ymm1\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm2\n vfmadd231ps %%ymm14, %%ymm15, %%ymm3\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm4\n vfmadd231ps %%ymm14, %%ymm15, %%ymm5\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm6\n vfmadd231ps %%ymm14, %%ymm15, %%ymm7\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm8\n vfmadd231ps %%ymm14, %%ymm15, %%ymm9\n"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm10\n vfmadd231ps %%ymm14, %%ymm15, %%ymm11\n",
      YMM_ALL)
}

// The exact AVX2 kernel's step: a product into a temporary, added to its accumulator.
#define MADDWD(t, c) "vpmaddwd %%ymm14, %%ymm15, %%ymm" #t "\n vpaddd %%ymm" #t ", %%ymm" #c \
                     ", %%ymm" #c "\n"
__attribute__((target("avx2"))) void maddwd_ymm() {
  BERTRT_LOOP(MADDWD(6, 0) MADDWD(7, 1) MADDWD(8, 2) MADDWD(9, 3) MADDWD(10, 4) MADDWD(11, 5)
                  MADDWD(6, 0) MADDWD(7, 1) MADDWD(8, 2) MADDWD(9, 3) MADDWD(10, 4) MADDWD(11, 5),
              YMM_ALL)
}

// FBGEMM's / MLAS's AVX2 u8×s8 step: pair sums in int16 (saturating), widened by vpmaddwd with
// ones (ymm13), added to the accumulator.
#define MADDUBSW(t, c) "vpmaddubsw %%ymm14, %%ymm15, %%ymm" #t "\n vpmaddwd %%ymm13, %%ymm" #t \
                       ", %%ymm" #t "\n vpaddd %%ymm" #t ", %%ymm" #c ", %%ymm" #c "\n"
__attribute__((target("avx2"))) void maddubsw_ymm() {
  BERTRT_LOOP(MADDUBSW(6, 0) MADDUBSW(7, 1) MADDUBSW(8, 2) MADDUBSW(9, 3) MADDUBSW(10, 4)
                  MADDUBSW(11, 5) MADDUBSW(6, 0) MADDUBSW(7, 1) MADDUBSW(8, 2) MADDUBSW(9, 3)
                  MADDUBSW(10, 4) MADDUBSW(11, 5),
              YMM_ALL)
}

#define DPBUSD(v, c) "vpdpbusd %%" #v "14, %%" #v "15, %%" #v #c "\n"
#define DPBUSD12(v)                                                                            \
  DPBUSD(v, 0) DPBUSD(v, 1) DPBUSD(v, 2) DPBUSD(v, 3) DPBUSD(v, 4) DPBUSD(v, 5) DPBUSD(v, 6) \
      DPBUSD(v, 7) DPBUSD(v, 8) DPBUSD(v, 9) DPBUSD(v, 10) DPBUSD(v, 11)
// EVEX-encoded ymm (AVX-512 VNNI + VL); an AVX-VNNI-only CPU runs the VEX form at the same rate.
__attribute__((target("avx512f,avx512vl,avx512vnni"))) void dpbusd_ymm() {
  BERTRT_LOOP(DPBUSD12(ymm), YMM_ALL)
}
__attribute__((target("avx512f,avx512vnni"))) void dpbusd_zmm() {
  BERTRT_LOOP(DPBUSD12(zmm), YMM_ALL)
}
__attribute__((target("avx512f"))) void fma_zmm() {
  BERTRT_LOOP(
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm0\n vfmadd231ps %%zmm14, %%zmm15, %%zmm1\n"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm2\n vfmadd231ps %%zmm14, %%zmm15, %%zmm3\n"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm4\n vfmadd231ps %%zmm14, %%zmm15, %%zmm5\n"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm6\n vfmadd231ps %%zmm14, %%zmm15, %%zmm7\n"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm8\n vfmadd231ps %%zmm14, %%zmm15, %%zmm9\n"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm10\n vfmadd231ps %%zmm14, %%zmm15, %%zmm11\n",
      YMM_ALL)
}
#endif

struct Form {
  const char* name;
  const char* instructions;
  int macs_per_step;  // multiply-adds of one of the 12 steps per iteration
  bool available;
  void (*run)();
};

}  // namespace

int main(int argc, char** argv) {
  const bool json = bertrt::bench::json_only_args(
      argc, argv,
      "usage: %s [--json]\nThe multiply-adds per second of one thread for each instruction "
      "form of an fp32 or int8 GEMM's inner step (ymm FMA, the exact AVX2 vpmaddwd step, "
      "vpmaddubsw, VNNI), issue ports only.\n");
#if !defined(__x86_64__)
  std::fprintf(stderr, "bench_isa_peaks: x86-64 only\n");
  return 0;
#else
  const auto& f = bertrt::cpu::x86_features();
  const bool avx2 = f.avx2 && f.fma;
  if (!avx2) {  // every ratio is to the ymm FMA's rate
    std::fprintf(stderr, "bench_isa_peaks: this CPU has no AVX2 + FMA; nothing to compare\n");
    return 0;
  }
  const std::vector<Form> forms = {
      {"fp32_fma_ymm", "vfmadd231ps ymm", 8, avx2, fma_ymm},
      {"int8_exact_avx2", "vpmaddwd + vpaddd (int16 operands)", 16, avx2, maddwd_ymm},
      {"int8_maddubsw_avx2", "vpmaddubsw + vpmaddwd + vpaddd (7-bit a)", 32, avx2, maddubsw_ymm},
      {"int8_vnni_ymm", "vpdpbusd ymm", 32, f.avx512_vnni, dpbusd_ymm},
      {"int8_vnni_zmm", "vpdpbusd zmm", 64, f.avx512_vnni, dpbusd_zmm},
      {"fp32_fma_zmm", "vfmadd231ps zmm", 16, f.avx512f, fma_zmm},
  };
  std::vector<double> gmacs(forms.size(), 0.0);
  for (size_t i = 0; i < forms.size(); ++i) {
    if (!forms[i].available) continue;
    const double s = bertrt::bench::best_seconds(forms[i].run, 1.0);
    gmacs[i] = 12.0 * forms[i].macs_per_step * kIters / s * 1e-9;
  }
  const double base = gmacs[0];
  if (json) {
    std::printf("{\"fp32_fma_ymm_gmacs\": %.2f", base);
    for (size_t i = 1; i < forms.size(); ++i)
      if (forms[i].available)
        std::printf(", \"%s_gmacs\": %.2f, \"%s_vs_fma_ymm\": %.3f", forms[i].name, gmacs[i],
                    forms[i].name, gmacs[i] / base);
    std::printf("}\n");
    return 0;
  }
  std::printf("one thread, issue ports only (12 independent accumulators, no loads)\n");
  std::printf("%-20s %-42s %10s %12s\n", "form", "instructions", "G MAC/s", "vs ymm FMA");
  for (size_t i = 0; i < forms.size(); ++i) {
    if (!forms[i].available) {
      std::printf("%-20s %-42s %10s %12s\n", forms[i].name, forms[i].instructions, "-",
                  "(not on this CPU)");
      continue;
    }
    std::printf("%-20s %-42s %10.1f %11.2fx\n", forms[i].name, forms[i].instructions, gmacs[i],
                gmacs[i] / base);
  }
  return 0;
#endif
}
