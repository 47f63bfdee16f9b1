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
#else
#define BERTRT_CPU_CLONES
#endif
