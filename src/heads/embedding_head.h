// The rest of a sentence-transformers pipeline after the pooling, on the host: each Dense module
// (y = activation(x · Wᵀ + b), models/Dense.py) in turn, then the output's Matryoshka truncation
// and L2 normalization (models/Normalize.py: x / max(‖x‖₂, 1e-12)).
#pragma once

#include <vector>

#include "heads/embedding_config.h"
#include "model/params.h"

namespace bertrt {

// pooled [B, e.pooled_dim(H)] → [B, e.dim(H)] through the Dense modules, whose weights are read
// from `params` at their places in `layout`.
std::vector<float> dense_forward(const EmbeddingConfig& e, const ParamLayout& layout,
                                 const float* params, const float* pooled, int B, int H);

// Keeps the first `dimensions` of each row of x [B, D] (0 or D: all), then L2-normalizes each row
// when `normalize`. Returns [B, dimensions].
std::vector<float> finish_embeddings(std::vector<float> x, int B, int D, int dimensions,
                                     bool normalize);

// Applies a torch activation named as DenseConfig::activation_function, in place.
void dense_activation(const std::string& name, float* x, size_t n);

}  // namespace bertrt
