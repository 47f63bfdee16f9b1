// See blas_core.h.
#include "backends/cpu/blas_core.h"

#include <cblas.h>
#include <dlfcn.h>

#include <cstdlib>

namespace bertrt::cpu {
namespace {

struct CoreChoice {
  std::string fallback;  // OpenBLAS's own choice, when bertrt replaced it; else empty
};

#if defined(OPENBLAS_VERSION) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The core OpenBLAS would pick by features rather than model (its later releases' rule); null
// when the CPU has neither AVX-512 nor AVX2 + FMA. __builtin_cpu_supports checks XGETBV too, so a
// hypervisor that reports AVX-512 but leaves the zmm state off gets Haswell.
const char* core_for_features() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

CoreChoice choose_core() {
  CoreChoice c;
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (user && *user) return c;
  const std::string was = openblas_get_corename();
  if (was != "Prescott") return c;  // OpenBLAS knew this CPU: keep its choice
  const char* want = core_for_features();
  using Fn = void (*)();
  auto quit = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (!want || !quit || !init) return c;  // no better core, or not a DYNAMIC_ARCH build
  // gotoblas_dynamic_init reads OPENBLAS_CORETYPE; it is set only for that call.
  setenv("OPENBLAS_CORETYPE", want, 1);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
  if (std::string(openblas_get_corename()) != was) c.fallback = was;
  return c;
}
#else
CoreChoice choose_core() { return {}; }
#endif

const CoreChoice& core_choice() {
  static const CoreChoice c = choose_core();  // thread-safe static initialisation
  return c;
}

}  // namespace

void ensure_blas_core() { (void)core_choice(); }

void ensure_blas_single_threaded() {
#ifdef OPENBLAS_VERSION
  static const bool done = [] {
    openblas_set_num_threads(1);
    // OpenBLAS's own stop for its threads (what it runs at exit and before fork), found with
    // dlsym: not every BLAS has it.
    using Fn = int (*)();
    if (auto stop = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) stop();
    return true;
  }();
  (void)done;
#endif
}

std::string blas_core_summary() {
  const CoreChoice& c = core_choice();
#ifdef OPENBLAS_VERSION
  std::string s = OPENBLAS_VERSION;  // " OpenBLAS 0.3.21 "
  s = s.substr(s.find_first_not_of(' '), s.find_last_not_of(' ') - s.find_first_not_of(' ') + 1);
  s += std::string(", core ") + openblas_get_corename();
  if (!c.fallback.empty())
    s += " (bertrt replaced OpenBLAS's choice " + c.fallback + ": it did not know this CPU model)";
  return s;
#else
  (void)c;
  return "CBLAS (not OpenBLAS)";
#endif
}

}  // namespace bertrt::cpu
