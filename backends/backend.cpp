#include "backends/backend.h"

#include "core/error.h"

namespace bertrt {

const char* op_name(Op op) {
  switch (op) {
    case Op::kGemm: return "gemm";
    case Op::kGemmBatched: return "gemm_batched";
    case Op::kAdd: return "add";
    case Op::kBiasAdd: return "bias_add";
    case Op::kBiasBackward: return "bias_backward";
    case Op::kGeluForward: return "gelu_forward";
    case Op::kGeluBackward: return "gelu_backward";
    case Op::kTanhForward: return "tanh_forward";
    case Op::kTanhBackward: return "tanh_backward";
    case Op::kLayerNormForward: return "layernorm_forward";
    case Op::kLayerNormBackward: return "layernorm_backward";
    case Op::kSoftmaxForward: return "softmax_forward";
    case Op::kSoftmaxBackward: return "softmax_backward";
    case Op::kEmbeddingForward: return "embedding_forward";
    case Op::kEmbeddingBackward: return "embedding_backward";
    case Op::kCrossEntropy: return "cross_entropy";
    case Op::kAdamW: return "adamw_step";
    case Op::kCount: break;
  }
  return "?";
}

}  // namespace bertrt
