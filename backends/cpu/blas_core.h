// OpenBLAS's kernel set (its "core") on x86-64, checked once before the first GEMM.
//
// Debian 12's OpenBLAS 0.3.21 is built with DYNAMIC_ARCH: when it loads, it picks its kernels from
// a table of cpuid family/model numbers. A CPU newer than the table gets "Prescott", the SSE3
// kernels. One example is Intel family 6 model 207 (Emerald Rapids), which is a machine of this
// project's kind. There sgemm runs at about 27 GFLOP/s a core, where the AVX-512 kernels
// ("SkylakeX") run at about 110 (bench_kernels, one thread). Later OpenBLAS releases fall back on
// the CPU's features instead of its model. ensure_blas_core does the same: when OpenBLAS chose
// Prescott, OPENBLAS_CORETYPE is unset and the CPU (and the OS's saved register state) has
// AVX-512 F/BW/VL/DQ or AVX2 + FMA, it switches OpenBLAS to SkylakeX or Haswell through
// OpenBLAS's own dynamic-arch entry points (gotoblas_dynamic_quit/init), found with dlsym. A value
// of OPENBLAS_CORETYPE set by the user is always left alone.
#pragma once

#include <string>

namespace bertrt::cpu {

// Runs the check and the switch once per process (thread-safe); CpuBackend's constructor calls it.
// The switch happens before any GEMM of ours. Another user of OpenBLAS in the same process (e.g.
// numpy in the Python bindings) that is inside a BLAS call at that moment is not protected.
void ensure_blas_core();

// OpenBLAS single-threaded under the cpu backend's pool, once per process: one thread per call
// (openblas_set_num_threads(1), process-wide), and the threads OpenBLAS started when it loaded
// (one per core) stopped. Those threads wait for work by spinning with sched_yield for about
// 2^28 cycles (0.1 s) before they sleep, and they never get work once the count is 1: at every
// process start they took the cores the pool's threads needed. OpenBLAS starts them again by
// itself if a later caller asks it for more threads. Thread-safe.
void ensure_blas_single_threaded();

// What the fp32 GEMM runs on, for `bertrt bench` and `bertrt info`: "OpenBLAS 0.3.21, core
// SkylakeX (bertrt replaced OpenBLAS's choice Prescott: it did not know this CPU model)", or just
// "OpenBLAS 0.3.21, core Zen". Calls ensure_blas_core first.
std::string blas_core_summary();

}  // namespace bertrt::cpu
