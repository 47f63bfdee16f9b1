// The compute shaders, compiled to SPIR-V by glslc at build time and embedded (CMake:
// backends/vulkan/shaders.cmake): one accessor per shaders/<name>.comp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bertrt::vk {

struct Spirv {
  const uint32_t* code;
  size_t words;
};

Spirv shader_elementwise();
Spirv shader_bias_add();
Spirv shader_gemm();
Spirv shader_gelu_forward();
Spirv shader_layernorm_forward();
Spirv shader_softmax_forward();
Spirv shader_adamw_step();
Spirv shader_layernorm_backward();
Spirv shader_activation_backward();
Spirv shader_bias_backward();
Spirv shader_softmax_backward();
Spirv shader_rows();
Spirv shader_reduce();
Spirv shader_row_reduce();
Spirv shader_cross_entropy();
Spirv shader_mse_loss();
Spirv shader_embedding_backward();
Spirv shader_fake_quant();
Spirv shader_gemm_u8s8();
Spirv shader_embedding_s8();
Spirv shader_pool_tokens();
Spirv shader_l2_normalize();
Spirv shader_cosent_loss();

}  // namespace bertrt::vk
