// Who runs the cpu backend's fp32 Linear-form GEMMs (gemm(no-trans A, trans B, alpha 1, beta 0),
// i.e. nn.Linear's X·Wᵀ) on a backend whose weights are declared constant (inference): OpenBLAS,
// XNNPACK (xnnpack_fc.h) or bertrt's own kernels (f32_gemm.h). Without the declaration (always in
// training) XNNPACK never runs: openblas keeps every GEMM on OpenBLAS, and bertrt or auto (on the
// avx512f kernel) run training's larger GEMMs on f32_gemm.h's panel form
// (CpuBackend::use_f32_gemm).
#pragma once

namespace bertrt::cpu {

enum class FcProvider {
  kOpenBlas,  // OpenBLAS sgemm split over the pool (cpu_backend.cpp)
  kXnnpack,   // XNNPACK fully_connected_nc_f32 with the weight packed once (xnnpack_fc.h)
  kBertrt,    // f32_gemm.h's broadcast form: W packed once (file pages given back), X in place
  kAuto,      // per shape and CPU, from measurements (CpuBackend::fc_choice)
};

// "openblas", "xnnpack", "bertrt", "auto".
const char* fc_provider_name(FcProvider p);

// The provider named by BERTRT_FC_PROVIDER (openblas | xnnpack | bertrt | auto), else kAuto.
// Throws bertrt::Error naming the variable for another value. Whether XNNPACK is available is
// checked where it would run (CpuBackend::set_constant_weights), not here: a backend whose weights
// are not declared constant never runs it, so a training run is not refused over it.
FcProvider fc_provider_from_env();

}  // namespace bertrt::cpu
