// The cpu backend's fp32 fully-connected providers side by side (backends/cpu/fc_provider.h):
// OpenBLAS, XNNPACK (W packed once) and bertrt's own kernel (f32_gemm.h: W packed once), each
// as linear_forward runs it (gemm X·Wᵀ, then bias_add), on the inference Linear shapes of
// BERT-mini and BERT-base at S = 128: [M = B·S, K, N] for the attention projections (Q, K, V and
// attention output share one shape), FFN up and down, and [M = B, K, N] for the pooler and a
// 2-label classifier, B = 1 and 8.
//
// The providers run interleaved in one process, in a rotating order round after round, so that
// load from other processes hits them alike; each figure is a provider's median (and minimum)
// over the rounds. The first XNNPACK call of a shape packs W (reported apart, "pack"). A
// benchmark, not a test: it prints figures and asserts nothing (correctness:
// tests/unit/f32_gemm_test.cpp, tests/unit/xnnpack_fc_test.cpp).
//
// Usage: bench_fc [--rounds N] [--json]   (threads: BERTRT_NUM_THREADS, as for bertrt)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/xnnpack_fc.h"
#include "bench/bench_args.h"

namespace {

using bertrt::CpuBackend;
namespace cpu = bertrt::cpu;

struct Shape {
  const char* model;
  const char* layer;
  int B, M, K, N;
};

std::vector<Shape> shapes() {
  std::vector<Shape> v;
  const struct {
    const char* name;
    int H, I;
  } models[] = {{"mini", 256, 1024}, {"base", 768, 3072}};
  for (const auto& m : models)
    for (int B : {1, 8}) {
      const int M = B * 128;
      v.push_back({m.name, "qkv/attn-out", B, M, m.H, m.H});
      v.push_back({m.name, "ffn1", B, M, m.H, m.I});
      v.push_back({m.name, "ffn2", B, M, m.I, m.H});
      v.push_back({m.name, "pooler", B, B, m.H, m.H});
      v.push_back({m.name, "classifier", B, B, m.H, 2});
    }
  return v;
}

std::vector<float> randn(size_t n, unsigned seed, float stddev) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

double ms_of(CpuBackend& be, const Shape& s, const float* X, const float* W, const float* b,
             float* Y) {
  const auto t0 = std::chrono::steady_clock::now();
  be.gemm(false, true, s.M, s.N, s.K, 1.0f, X, s.K, W, s.K, 0.0f, Y, s.N);
  be.bias_add(Y, b, s.M, s.N);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The CPU's name and the SIMD flags that decide the kernels (/proc/cpuinfo on Linux).
std::string cpu_line() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, name, flags;
  while (std::getline(f, line)) {
    if (name.empty() && line.rfind("model name", 0) == 0) name = line.substr(line.find(':') + 2);
    if (flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0))
      flags = line.substr(line.find(':') + 2);
  }
  std::string picked;
  std::istringstream in(flags);
  for (std::string w; in >> w;)
    for (const char* want : {"avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni",
                             "asimd", "asimddp", "i8mm", "sve"})
      if (w == want) picked += (picked.empty() ? "" : " ") + w;
  return (name.empty() ? std::string("?") : name) + "; flags: " + picked;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 21;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (!bertrt::bench::positive_int_option(argc, argv, i, "--rounds", rounds)) {
      bertrt::bench::usage_exit(argv, i,
                                "usage: %s [--rounds N] [--json]\nOpenBLAS vs XNNPACK vs bertrt's "
                                "kernel, fp32 fully connected on BERT-mini/base inference shapes, "
                                "interleaved, medians. Threads: BERTRT_NUM_THREADS; kernel: "
                                "BERTRT_F32_KERNEL.\n");
    }
  }
  // One backend per provider; each W below is kept (kept_w) until the backends go, so no packed
  // copy outlives its weight (XNNPACK runs only on a backend told its weights are constant).
  const bool have_xnn = cpu::xnnpack_available();
  std::vector<cpu::FcProvider> provs = {cpu::FcProvider::kOpenBlas, cpu::FcProvider::kBertrt};
  if (have_xnn) provs.insert(provs.begin() + 1, cpu::FcProvider::kXnnpack);
  std::vector<std::unique_ptr<CpuBackend>> be;
  for (cpu::FcProvider p : provs) {
    be.push_back(std::make_unique<CpuBackend>());
    be.back()->set_fc_provider(p);
    be.back()->set_constant_weights(true);
  }
  CpuBackend autob;  // what BERTRT_FC_PROVIDER=auto picks, shape by shape (from its call counts)
  autob.set_fc_provider(cpu::FcProvider::kAuto);
  autob.set_constant_weights(true);
  const size_t P = provs.size();
  std::vector<std::vector<float>> kept_w;
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  if (!json) {
    std::printf(
        "# %s\n# threads %d, OPENBLAS_CORETYPE=%s, fp32 kernel %s, %d interleaved rounds; ms of "
        "gemm + bias_add, median (min)%s\n",
        cpu_line().c_str(), be[0]->num_threads(), coretype ? coretype : "(unset)",
        cpu::f32_kernel_name(cpu::f32_best_kernel()), rounds,
        have_xnn ? "" : ("; no XNNPACK: " + cpu::xnnpack_unavailable_reason()).c_str());
    std::printf("%-5s %-13s %2s %5s %5s %5s |", "model", "layer", "B", "M", "K", "N");
    for (cpu::FcProvider p : provs) std::printf(" %17s", cpu::fc_provider_name(p));
    std::printf(" | %6s %6s | %8s %9s %8s\n", "b/o", "x/o", "pack ms", "max diff", "auto");
  }
  for (const Shape& s : shapes()) {
    const auto X = randn(size_t(s.M) * s.K, 1u + s.M + s.K, 1.0f);
    auto W = randn(size_t(s.N) * s.K, 2u + s.N + s.K, 0.05f);
    const auto b = randn(size_t(s.N), 3u + s.N, 0.1f);
    std::vector<std::vector<float>> y(P, std::vector<float>(size_t(s.M) * s.N));
    double pack = 0;
    for (size_t i = 0; i < P; ++i) {  // warm-up; XNNPACK's first call packs W
      const double ms = ms_of(*be[i], s, X.data(), W.data(), b.data(), y[i].data());
      if (provs[i] == cpu::FcProvider::kXnnpack) pack = ms;
    }
    double diff = 0, scale = 0;  // the largest difference from OpenBLAS, over the providers
    for (size_t i = 1; i < P; ++i)
      for (size_t e = 0; e < y[0].size(); ++e)
        diff = std::max(diff, double(std::fabs(y[0][e] - y[i][e]))),
        scale = std::max(scale, double(std::fabs(y[0][e])));
    std::vector<std::vector<double>> t(P);
    for (int r = 0; r < rounds; ++r)
      for (size_t j = 0; j < P; ++j) {
        const size_t i = (j + static_cast<size_t>(r)) % P;
        t[i].push_back(ms_of(*be[i], s, X.data(), W.data(), b.data(), y[i].data()));
      }
    const auto before = autob.fc_stats();
    ms_of(autob, s, X.data(), W.data(), b.data(), y[0].data());
    const auto after = autob.fc_stats();
    const char* pick = after.bertrt_calls > before.bertrt_calls     ? "bertrt"
                       : after.xnnpack_calls > before.xnnpack_calls ? "xnnpack"
                                                                    : "openblas";
    std::vector<double> med(P), mn(P);
    for (size_t i = 0; i < P; ++i)
      med[i] = median(t[i]), mn[i] = *std::min_element(t[i].begin(), t[i].end());
    const double rel = scale > 0 ? diff / scale : diff;
    const double bo = med[P - 1] / med[0], xo = have_xnn ? med[1] / med[0] : 0.0;
    if (json) {
      std::printf("{\"model\":\"%s\",\"layer\":\"%s\",\"B\":%d,\"M\":%d,\"K\":%d,\"N\":%d", s.model,
                  s.layer, s.B, s.M, s.K, s.N);
      for (size_t i = 0; i < P; ++i)
        std::printf(",\"%s_ms\":%.4f,\"%s_min_ms\":%.4f", cpu::fc_provider_name(provs[i]), med[i],
                    cpu::fc_provider_name(provs[i]), mn[i]);
      std::printf(
          ",\"pack_ms\":%.3f,\"max_rel_diff\":%.2e,\"auto\":\"%s\",\"rounds\":%d,\"threads\":%d}\n",
          pack, rel, pick, rounds, be[0]->num_threads());
    } else {
      std::printf("%-5s %-13s %2d %5d %5d %5d |", s.model, s.layer, s.B, s.M, s.K, s.N);
      for (size_t i = 0; i < P; ++i) std::printf(" %8.3f (%6.3f)", med[i], mn[i]);
      std::printf(" | %6.2f %6.2f | %8.2f %9.1e %8s\n", bo, xo, pack, rel, pick);
    }
    std::fflush(stdout);
    kept_w.push_back(std::move(W));  // the buffer moves, its address (xnn's key) stays held
  }
  if (!json)
    std::printf(
        "# b/o, x/o: bertrt's, XNNPACK's median over OpenBLAS's (< 1: faster). max diff: max "
        "|openblas − other| / max |openblas|.\n# auto: what BERTRT_FC_PROVIDER=auto takes for the "
        "shape.\n");
  return 0;
}
