// BERTRT_CPU_CLONES: compile a hot loop twice on x86-64, for x86-64-v3 (AVX2 + FMA) and for the
// baseline (SSE2), and pick one at load time (GCC/Clang function multi-versioning via an ELF
// ifunc). The binary still runs on any x86-64; elsewhere (aarch64, non-ELF) it expands to nothing
// and the loop is built for the target's baseline (NEON on aarch64).
//
// The v3 clone lets the compiler contract a·b + c into FMA (GCC's default -ffp-contract=fast for
// GNU C++), which changes roundings by at most an ulp per operation; the cpu-vs-reference
// tolerances in tests/unit/ops_test.cpp already allow for that (they were set with ARM in mind).
#pragma once

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#define BERTRT_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
// The same with an AVX-512 clone first (x86-64-v4), for elementwise loops that are compute-bound
// (the exact GELU's erf, the softmax's exp: twice the lanes). Elementwise, or reductions with a
// fixed set of partial sums: each output is the same expression whatever the vector width, so v4
// and v3 give the same floats.
#define BERTRT_CPU_CLONES_V4 \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BERTRT_CPU_CLONES
#define BERTRT_CPU_CLONES_V4
#endif

// Eight floats as one vector (GCC/Clang vector extensions), for reductions with 8 partial results.
// Left to itself GCC 12 scalarises a loop over `float acc[8]` (8 vaddss per block); the vector
// type pins the lanes, so every clone (v4, v3, SSE2 as two halves, NEON) combines in the same
// order and gives the same floats. Keep these inside one function: a vector passed by value
// across a call would depend on the clone's ISA (GCC's -Wpsabi note).
// f32x4: four floats, for short rows GCC would otherwise add lane by lane (the fp32 tile's bias).
// Types only: this header is safe in the per-ISA files, which must not take inline library code.
namespace bertrt::cpu {
typedef float f32x8 __attribute__((vector_size(32)));
typedef float f32x4 __attribute__((vector_size(16)));
}  // namespace bertrt::cpu
