#include "backends/cpu/xnnpack_fc.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

#include "backends/cpu/cpu_features.h"
#include "core/error.h"

#ifdef BERTRT_HAVE_XNNPACK
#include <xnnpack.h>
#endif

namespace bertrt::cpu {

namespace {

struct InitState {
  bool ok = false;
  std::string why;
};

// xnn_initialize once per process (it checks the CPU and picks the microkernels).
const InitState& init_state() {
  static const InitState s = [] {
    InitState r;
#ifdef BERTRT_HAVE_XNNPACK
    const xnn_status st = xnn_initialize(nullptr);
    if (st == xnn_status_success)
      r.ok = true;
    else if (st == xnn_status_unsupported_hardware)
      r.why = "XNNPACK does not support this CPU (xnn_initialize: unsupported hardware)";
    else
      r.why = fmt::format("xnn_initialize failed (xnn_status {})", static_cast<int>(st));
#else
    r.why =
        "this build has no XNNPACK (configured with BERTRT_XNNPACK=OFF or without libxnnpack-dev)";
#endif
    return r;
  }();
  return s;
}

}  // namespace

bool xnnpack_built() {
#ifdef BERTRT_HAVE_XNNPACK
  return true;
#else
  return false;
#endif
}

bool xnnpack_available() { return init_state().ok; }
std::string xnnpack_unavailable_reason() { return init_state().why; }

namespace {

// XNNPACK runs its 7x16 AVX-512F f32 GEMM microkernel (the snapshot's src/init.c) when cpuinfo
// reports AVX-512F with the OS saving zmm state; libgcc's __builtin_cpu_supports checks the same
// (CPUID and XGETBV). Without it XNNPACK falls back to 5x16 FMA3, which spills an accumulator
// and lost 2.4x to OpenBLAS (../shared/notes/cpu-kernels.md §2).
// XNNPACK's AVX-512F kernels on an AMD CPU: where it measured faster (xnnpack_fc_wins).
bool xnnpack_wins_here() {
  const X86Features& f = x86_features();
  return f.avx512f && f.amd;
}

}  // namespace

bool xnnpack_fc_wins(int M, int N, int K) {
  // Measured with bench/fc_bench.cpp (docs/explanation/cpu-kernels.md), the two
  // providers interleaved in one process, medians of 31 rounds, 1 thread, on x86-64 with AVX-512F
  // (OpenBLAS on its Cooperlake kernel), three runs at load 5-10: XNNPACK took 0.66-0.93x
  // OpenBLAS's time in every run for every Linear with M ≥ 8 rows, N and K ≥ 256 and a weight of
  // at most 768 x 768 (BERT-mini's Linears, BERT-base's attention projections, the pooler at
  // B = 8); the bigger BERT-base FFN weights (9.4 MB) went either way (0.91-1.32x: XNNPACK streams
  // the whole packed weight once per 7-row tile, so it suffers more when others share the cache);
  // it lost at M = 1 (pooler, B = 1: 1.2-1.3x) and N = 2 (classifier: 4-9x, though µs). The rule
  // takes the region that won in every run. That host was an AMD Zen 4; on an Intel Xeon with
  // AVX-512 (Sapphire Rapids generation, OpenBLAS on its SkylakeX kernel) the same bench, three
  // runs, measured XNNPACK slower in that region (0.79-1.17x for BERT-mini, 1.18-1.37x for
  // BERT-base's attention projections), so the rule is kept to AMD. Not measured: AVX2-only hosts
  // (XNNPACK's FMA3 kernel, expected slower), 2 threads on a quiet machine, and aarch64: OpenBLAS
  // there until figures say otherwise.
  // bertrt's own kernel, once it fetched its next packed block ahead, overtook XNNPACK
  // from 512 rows on (BERT-mini B4 / B8, 2 threads, alternated: 13.2–13.8 / 26.3–27.4 ms against
  // 14.8–15.4 / 28.2–29.3 ms); at B1 and B2 XNNPACK's split of small GEMMs over 2 threads still
  // won (4.2–4.4 against 4.6 ms at B1), so it keeps M < 512. The broadcast form of
  // bertrt's kernel (X read in place, no transposes) overtook it at B1 and B2 too (3.8 against
  // 3.9–4.9 ms, 6.4–7.2 against 7.1–8.0), so `auto` asks the kernel first (use_f32_kernel) and
  // this rule takes what the kernel leaves: rows under 32 (the pooler from B8 on, short inputs)
  // and weights loaded by copy, which `auto` does not pack for the kernel.
  return xnnpack_wins_here() && M >= 8 && M < 512 && N >= 256 && K >= 256 &&
         static_cast<int64_t>(N) * K <= 768 * 768;
}

size_t xnnpack_auto_budget_bytes() {
  static const size_t bytes = [] {
    const char* env = std::getenv("BERTRT_FC_XNNPACK_MAX_MB");
    if (!env || !*env) return size_t{16'000'000};
    char* end = nullptr;
    const long long mb = std::strtoll(env, &end, 10);
    if (*end != '\0' || mb < 0 || mb > 1'000'000)
      fail(
          "BERTRT_FC_XNNPACK_MAX_MB: '{}' is not a size in MB (expected an integer in [0, "
          "1000000])",
          env);
    return static_cast<size_t>(mb) * 1'000'000;
  }();
  return bytes;
}

// --- the operators ---------------------------------------------------------------------------

struct XnnpackFc::Impl {
  using Key =
      std::tuple<const float*, const float*, int, int, int, int>;  // W, bias, N, K, ldx, ldy
  struct Entry {
#ifdef BERTRT_HAVE_XNNPACK
    xnn_operator_t op = nullptr;
#endif
    size_t bytes = 0;
  };
  std::map<Key, Entry> ops;

  static void destroy(Entry& e) {
#ifdef BERTRT_HAVE_XNNPACK
    if (e.op) xnn_delete_operator(e.op);
    e.op = nullptr;
#endif
  }
};

XnnpackFc::XnnpackFc() : impl_(std::make_unique<Impl>()) {}

XnnpackFc::~XnnpackFc() { clear(); }

void XnnpackFc::clear() {
  for (auto& [key, e] : impl_->ops) Impl::destroy(e);
  impl_->ops.clear();
}

bool XnnpackFc::holds(const float* W, const float* bias, int N, int K, int ldx, int ldy) const {
  return impl_->ops.count(Impl::Key{W, bias, N, K, ldx, ldy}) != 0;
}

size_t XnnpackFc::operators() const { return impl_->ops.size(); }

size_t XnnpackFc::packed_bytes() const {
  size_t b = 0;
  for (const auto& [key, e] : impl_->ops) b += e.bytes;
  return b;
}

void XnnpackFc::run(float* Y, int ldy, const float* X, int ldx, const float* W, const float* bias,
                    int M, int N, int K, pthreadpool* pool) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || ldx < K || ldy < N)
    fail("xnnpack fully connected: K {} must be ≥ 1, ldx {} ≥ K and ldy {} ≥ N {}", K, ldx, ldy, N);
  if (!xnnpack_available()) fail("xnnpack fully connected: {}", xnnpack_unavailable_reason());
#ifdef BERTRT_HAVE_XNNPACK
  const Impl::Key key{W, bias, N, K, ldx, ldy};
  auto it = impl_->ops.find(key);
  if (it == impl_->ops.end()) {
    Impl::Entry e;
    // Kernel [N, K] is XNNPACK's default layout (no XNN_FLAG_TRANSPOSE_WEIGHTS); no clamping of
    // the output (±inf). XNN_FLAG_YIELD_WORKERS: pthreadpool's workers sleep as soon as the call
    // is done, instead of spinning for the next one beside the cpu backend's own pool.
    const xnn_status st = xnn_create_fully_connected_nc_f32(
        static_cast<size_t>(K), static_cast<size_t>(N), static_cast<size_t>(ldx),
        static_cast<size_t>(ldy), W, bias, -INFINITY, INFINITY, XNN_FLAG_YIELD_WORKERS, &e.op);
    if (st != xnn_status_success)
      fail(
          "xnnpack fully connected [N {} K {}]: xnn_create_fully_connected_nc_f32 failed "
          "(xnn_status "
          "{})",
          N, K, static_cast<int>(st));
    e.bytes = (static_cast<size_t>(N) * K + (bias ? N : 0)) * sizeof(float);
    it = impl_->ops.emplace(key, e).first;
  }
  xnn_operator_t op = it->second.op;
  xnn_status st = xnn_setup_fully_connected_nc_f32(op, static_cast<size_t>(M), X, Y, pool);
  if (st == xnn_status_success) st = xnn_run_operator(op, pool);
  if (st != xnn_status_success)
    fail("xnnpack fully connected [M {} N {} K {}]: setup/run failed (xnn_status {})", M, N, K,
         static_cast<int>(st));
#else
  (void)Y, (void)X, (void)W, (void)bias, (void)pool;
#endif
}

}  // namespace bertrt::cpu
