// The sentence-embedding head (pooling, Dense modules, Normalize) as ops of a Backend, forward
// and backward, so that it runs where the encoder ran (any backend, Vulkan included) and only the
// result comes back to the host. The math is that of heads/pooling.h and heads/embedding_head.h,
// which stay the host's scalar statement of it.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/device_array.h"
#include "heads/embedding_config.h"
#include "model/params.h"

namespace bertrt {

// The pooling modes of a head in the order their outputs are concatenated (embedding_config.h).
std::vector<Pooling> pooling_modes(const PoolingConfig& p);

// What the forward keeps for the backward, in the backend's memory.
struct EmbeddingHeadActs {
  int B = 0, T = 0;
  DeviceArray<int32_t> mask;           // [B·T] attention mask, then [B] prompt lengths to skip
  DeviceArray<float> pooled;           // [B, pooled_dim]
  std::vector<DeviceArray<float>> pre; // each Dense module's output before its activation
  std::vector<DeviceArray<float>> out; // and after it (empty for Identity: pre is the output)
  DeviceArray<float> normalized;       // [B, dim] when the head ends with Normalize
  // Backward scratch (grow-only).
  DeviceArray<float> d0, d1, dpre;
};

// Runs the head on `be` over hidden [B, T, H] (be's memory): mask [B, T] and prompt_length [B]
// (nullptr: none; ignored when the pooling includes the prompt) are host arrays, uploaded here.
// params: the model's parameters as ops on `be` read them (BertModel::params(be)). Returns the
// embeddings [B, e.dim(H)] in be's memory, valid while `acts` lives.
const float* embedding_head_forward(Backend& be, const EmbeddingConfig& e,
                                    const ParamLayout& layout, const float* params,
                                    const float* hidden, const int32_t* mask,
                                    const int32_t* prompt_length, int B, int T, int H,
                                    EmbeddingHeadActs& acts);

// Its backward from dy [B, e.dim(H)] (be's memory; used as scratch): accumulates the Dense
// weights' gradients into grads (the layout's places, on `be`) and ∂loss/∂hidden into dhidden
// [B, T, H].
void embedding_head_backward(Backend& be, const EmbeddingConfig& e, const ParamLayout& layout,
                             const float* params, float* grads, const float* hidden,
                             EmbeddingHeadActs& acts, float* dy, int H, float* dhidden);

}  // namespace bertrt
