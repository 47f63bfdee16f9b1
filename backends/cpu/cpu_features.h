// What the x86-64 CPU and its OS let bertrt's SIMD kernels use, read once from cpuid and XGETBV.
// A hypervisor can report AVX-512 in cpuid and still leave the zmm state off (XCR0), and Linux
// hands out the AMX tile state only on request: both are checked here, so a kernel that is
// "available" runs. Elsewhere (aarch64, other compilers) every field is false.
#pragma once

namespace bertrt::cpu {

struct X86Features {
  bool amd = false;          // vendor "AuthenticAMD" (where a measured rule differs by vendor)
  bool avx2 = false;         // AVX2, ymm state enabled
  bool fma = false;          // FMA3 (with avx2: x86-64-v3's float kernels)
  bool avx512f = false;      // AVX-512 F/BW/DQ/VL, zmm and opmask state enabled (x86-64-v4)
  bool avx512_vnni = false;  // AVX-512 F/BW/VL + VNNI
  bool avx_vnni = false;     // VEX-encoded AVX-VNNI (with AVX2)
  bool amx_int8 = false;     // AMX-TILE + AMX-INT8, tile state granted by the OS
};

// The features of this CPU (computed once; the AMX permission is asked for at the first call).
const X86Features& x86_features();

}  // namespace bertrt::cpu
