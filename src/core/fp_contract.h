// BERTRT_NO_FP_CONTRACT: for a function whose a·b + c must round the product on its own on every
// target. GCC contracts a·b + c into an FMA across statements by default for GNU C++, wherever the
// ISA has one (the x86-64-v3/v4 clones, aarch64), and the function attribute turns that off;
// Clang's default contracts only within one expression, so such code also keeps the product in a
// statement of its own.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#define BERTRT_NO_FP_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define BERTRT_NO_FP_CONTRACT
#endif
