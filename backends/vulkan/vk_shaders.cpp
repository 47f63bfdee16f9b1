#include "backends/vulkan/vk_shaders.h"

namespace bertrt::vk {
namespace {

// glslc -mfmt=c emits an aligned uint32_t initializer list.
const uint32_t kElementwise[] =
#include "shaders/elementwise.spv.inc"
    ;
const uint32_t kBiasAdd[] =
#include "shaders/bias_add.spv.inc"
    ;
const uint32_t kGemm[] =
#include "shaders/gemm.spv.inc"
    ;

const uint32_t kGeluForward[] =
#include "shaders/gelu_forward.spv.inc"
    ;
const uint32_t kLayerNormForward[] =
#include "shaders/layernorm_forward.spv.inc"
    ;
const uint32_t kSoftmaxForward[] =
#include "shaders/softmax_forward.spv.inc"
    ;
const uint32_t kAdamWStep[] =
#include "shaders/adamw_step.spv.inc"
    ;

const uint32_t kActivationBackward[] =
#include "shaders/activation_backward.spv.inc"
    ;
const uint32_t kBiasBackward[] =
#include "shaders/bias_backward.spv.inc"
    ;
const uint32_t kSoftmaxBackward[] =
#include "shaders/softmax_backward.spv.inc"
    ;
const uint32_t kRows[] =
#include "shaders/rows.spv.inc"
    ;

const uint32_t kLayerNormBackward[] =
#include "shaders/layernorm_backward.spv.inc"
    ;

const uint32_t kReduce[] =
#include "shaders/reduce.spv.inc"
    ;
const uint32_t kRowReduce[] =
#include "shaders/row_reduce.spv.inc"
    ;
const uint32_t kCrossEntropy[] =
#include "shaders/cross_entropy.spv.inc"
    ;
const uint32_t kMseLoss[] =
#include "shaders/mse_loss.spv.inc"
    ;
const uint32_t kEmbeddingBackward[] =
#include "shaders/embedding_backward.spv.inc"
    ;
const uint32_t kFakeQuant[] =
#include "shaders/fake_quant.spv.inc"
    ;
const uint32_t kGemmU8S8[] =
#include "shaders/gemm_u8s8.spv.inc"
    ;
const uint32_t kEmbeddingS8[] =
#include "shaders/embedding_s8.spv.inc"
    ;
const uint32_t kPoolTokens[] =
#include "shaders/pool_tokens.spv.inc"
    ;
const uint32_t kL2Normalize[] =
#include "shaders/l2_normalize.spv.inc"
    ;
const uint32_t kCosentLoss[] =
#include "shaders/cosent_loss.spv.inc"
    ;

}  // namespace

Spirv shader_gelu_forward() { return {kGeluForward, sizeof kGeluForward / 4}; }
Spirv shader_layernorm_forward() { return {kLayerNormForward, sizeof kLayerNormForward / 4}; }
Spirv shader_softmax_forward() { return {kSoftmaxForward, sizeof kSoftmaxForward / 4}; }
Spirv shader_adamw_step() { return {kAdamWStep, sizeof kAdamWStep / 4}; }
Spirv shader_activation_backward() { return {kActivationBackward, sizeof kActivationBackward / 4}; }
Spirv shader_bias_backward() { return {kBiasBackward, sizeof kBiasBackward / 4}; }
Spirv shader_softmax_backward() { return {kSoftmaxBackward, sizeof kSoftmaxBackward / 4}; }
Spirv shader_rows() { return {kRows, sizeof kRows / 4}; }
Spirv shader_layernorm_backward() { return {kLayerNormBackward, sizeof kLayerNormBackward / 4}; }
Spirv shader_elementwise() { return {kElementwise, sizeof kElementwise / 4}; }
Spirv shader_bias_add() { return {kBiasAdd, sizeof kBiasAdd / 4}; }
Spirv shader_gemm() { return {kGemm, sizeof kGemm / 4}; }

Spirv shader_reduce() { return {kReduce, sizeof kReduce / 4}; }
Spirv shader_row_reduce() { return {kRowReduce, sizeof kRowReduce / 4}; }
Spirv shader_cross_entropy() { return {kCrossEntropy, sizeof kCrossEntropy / 4}; }
Spirv shader_mse_loss() { return {kMseLoss, sizeof kMseLoss / 4}; }
Spirv shader_embedding_backward() { return {kEmbeddingBackward, sizeof kEmbeddingBackward / 4}; }
Spirv shader_fake_quant() { return {kFakeQuant, sizeof kFakeQuant / 4}; }
Spirv shader_gemm_u8s8() { return {kGemmU8S8, sizeof kGemmU8S8 / 4}; }
Spirv shader_embedding_s8() { return {kEmbeddingS8, sizeof kEmbeddingS8 / 4}; }
Spirv shader_pool_tokens() { return {kPoolTokens, sizeof kPoolTokens / 4}; }
Spirv shader_l2_normalize() { return {kL2Normalize, sizeof kL2Normalize / 4}; }
Spirv shader_cosent_loss() { return {kCosentLoss, sizeof kCosentLoss / 4}; }

}  // namespace bertrt::vk
