// The cpu backend's fully-connected providers side by side: OpenBLAS (today's path) and XNNPACK
// (backends/cpu/xnnpack_fc.h), each as linear_forward runs it (gemm X·Wᵀ, then bias_add), on the
// inference Linear shapes of BERT-mini and BERT-base at S = 128: [M = B·S, K, N] for the
// attention projections (Q, K, V and attention output share one shape), FFN up and down, and
// [M = B, K, N] for the pooler and a 2-label classifier, B = 1 and 8.
//
// The two providers run interleaved in one process (A B, then B A, round after round) so that
// load from other processes hits both alike; the figure is each one's median over the rounds. The
// first XNNPACK call of a shape packs W (reported apart, "pack"). A benchmark, not a test: it
// prints figures and asserts nothing (correctness: tests/unit/xnnpack_fc_test.cpp).
//
// Usage: bench_xnnpack [--rounds N] [--json]   (threads: BERTRT_NUM_THREADS, as for bertrt)
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
    } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
      if (rounds < 1) {
        std::fprintf(stderr, "%s: --rounds must be ≥ 1\n", argv[0]);
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--rounds N] [--json]\nOpenBLAS vs XNNPACK fp32 fully connected on "
                   "BERT-mini/base inference shapes, interleaved, medians. Threads: "
                   "BERTRT_NUM_THREADS.\n",
                   argv[0]);
      return std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  if (!cpu::xnnpack_available()) {
    std::fprintf(stderr, "%s: no XNNPACK: %s\n", argv[0],
                 cpu::xnnpack_unavailable_reason().c_str());
    return 1;
  }
  CpuBackend blas, xnn;
  blas.set_fc_provider(cpu::FcProvider::kOpenBlas);
  xnn.set_fc_provider(cpu::FcProvider::kXnnpack);
  // Only a backend told its weights are constant runs XNNPACK: each W below is kept (kept_w)
  // until the backend goes, so no packed copy outlives its weight.
  xnn.set_constant_weights(true);
  std::vector<std::vector<float>> kept_w;
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  if (!json) {
    std::printf(
        "# %s\n# threads %d, OPENBLAS_CORETYPE=%s, %d interleaved rounds, median ms of "
        "gemm + bias_add\n",
        cpu_line().c_str(), blas.num_threads(), coretype ? coretype : "(unset)", rounds);
    std::printf("%-5s %-13s %2s %5s %5s %5s | %9s %9s | %7s %8s %8s | %8s %9s %4s\n", "model",
                "layer", "B", "M", "K", "N", "openblas", "xnnpack", "x/o", "GF/s o", "GF/s x",
                "pack ms", "max diff", "auto");
  }
  for (const Shape& s : shapes()) {
    const auto X = randn(size_t(s.M) * s.K, 1u + s.M + s.K, 1.0f);
    auto W = randn(size_t(s.N) * s.K, 2u + s.N + s.K, 0.05f);
    const auto b = randn(size_t(s.N), 3u + s.N, 0.1f);
    std::vector<float> yo(size_t(s.M) * s.N), yx(yo.size());
    ms_of(blas, s, X.data(), W.data(), b.data(), yo.data());  // warm-up
    const double pack = ms_of(xnn, s, X.data(), W.data(), b.data(), yx.data());
    double diff = 0, scale = 0;
    for (size_t i = 0; i < yo.size(); ++i)
      diff = std::max(diff, double(std::fabs(yo[i] - yx[i]))),
      scale = std::max(scale, double(std::fabs(yo[i])));
    std::vector<double> to, tx;
    for (int r = 0; r < rounds; ++r) {
      if (r % 2 == 0) {
        to.push_back(ms_of(blas, s, X.data(), W.data(), b.data(), yo.data()));
        tx.push_back(ms_of(xnn, s, X.data(), W.data(), b.data(), yx.data()));
      } else {
        tx.push_back(ms_of(xnn, s, X.data(), W.data(), b.data(), yx.data()));
        to.push_back(ms_of(blas, s, X.data(), W.data(), b.data(), yo.data()));
      }
    }
    const double mo = median(to), mx = median(tx);
    const double gflop = 2.0 * s.M * s.N * s.K * 1e-9;
    const double rel = scale > 0 ? diff / scale : diff;
    const bool wins = cpu::xnnpack_fc_wins(s.M, s.N, s.K);  // auto's choice, before its budget
    if (json)
      std::printf(
          "{\"model\":\"%s\",\"layer\":\"%s\",\"B\":%d,\"M\":%d,\"K\":%d,\"N\":%d,"
          "\"openblas_ms\":%.4f,\"xnnpack_ms\":%.4f,\"ratio\":%.3f,\"pack_ms\":%.3f,"
          "\"max_rel_diff\":%.2e,\"auto_xnnpack\":%s,\"rounds\":%d,\"threads\":%d}\n",
          s.model, s.layer, s.B, s.M, s.K, s.N, mo, mx, mx / mo, pack, rel, wins ? "true" : "false",
          rounds, blas.num_threads());
    else
      std::printf(
          "%-5s %-13s %2d %5d %5d %5d | %9.3f %9.3f | %7.2f %8.1f %8.1f | %8.2f %9.1e %4s\n",
          s.model, s.layer, s.B, s.M, s.K, s.N, mo, mx, mx / mo, gflop / (mo * 1e-3),
          gflop / (mx * 1e-3), pack, rel, wins ? "x" : "o");
    std::fflush(stdout);
    kept_w.push_back(std::move(W));  // the buffer moves, its address (xnn's key) stays held
  }
  if (!json)
    std::printf(
        "# x/o > 1: XNNPACK slower. max diff: max |openblas − xnnpack| / max |openblas|. auto: "
        "what\n"
        "# BERTRT_FC_PROVIDER=auto takes for the shape (x xnnpack, o openblas) within its budget.\n"
        "# %s\n# %s\n",
        blas.fc_summary().c_str(), xnn.fc_summary().c_str());
  return 0;
}
