#include "backends/cpu/cpu_features.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>  // SYS_arch_prctl: the AMX tile state
#include <unistd.h>
#endif
#define BERTRT_CPU_X86 1
#endif

namespace bertrt::cpu {
namespace {

#ifdef BERTRT_CPU_X86
// Linux hands out the AMX tile data state (XFEATURE 18) per process on request.
bool request_amx_permission() {
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

// AVX state (XCR0 bits 1–2) must be enabled by the OS for any ymm kernel, and the opmask/zmm state
// (bits 5–7) for the AVX-512 ones.
X86Features read_features() {
  X86Features f;
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  f.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "Auth" "enti" "cAMD"
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
  if (!osxsave || !avx) return f;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const bool ymm_os = (lo & 0x6) == 0x6, zmm_os = (lo & 0xE6) == 0xE6;
  if (!ymm_os || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  f.avx2 = (b >> 5) & 1;
  f.fma = f.avx2 && fma;
  const bool f512 = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1,
             vnni = (c >> 11) & 1;
  f.avx512f = zmm_os && f512 && dq && bw && vl && f.fma;
  f.avx512_vnni = zmm_os && f512 && bw && vl && vnni;
  // AMX: AMX-TILE and AMX-INT8 (leaf 7 EDX bits 24, 25), the tile state in XCR0 (bits 17–18),
  // and Linux's permission to use it (asked once; refused on kernels before 5.16).
  const bool amx_cpu = ((d >> 24) & 1) && ((d >> 25) & 1) && (lo & 0x60000) == 0x60000;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx_vnni = f.avx2 && ((a >> 4) & 1);
  f.amx_int8 =
      amx_cpu && f.avx512_vnni && request_amx_permission();  // its file is built for AVX-512
  return f;
}
#else
X86Features read_features() { return {}; }
#endif

}  // namespace

const X86Features& x86_features() {
  static const X86Features f = read_features();
  return f;
}

}  // namespace bertrt::cpu
