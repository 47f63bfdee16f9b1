// The rest of a sentence-transformers pipeline after the pooling, on the host: each Dense module
// (y = activation(x · Wᵀ + b), models/Dense.py) in turn, then the output's Matryoshka truncation
// and L2 normalization (models/Normalize.py: x / max(‖x‖₂, 1e-12)).
#pragma once

#include <vector>

#include "heads/embedding_config.h"
#include "model/params.h"

namespace bertrt {

// What the backward of the Dense modules needs: each module's input and output.
struct DenseActs {
  std::vector<std::vector<float>> in, out;
};

// pooled [B, e.pooled_dim(H)] → [B, e.dim(H)] through the Dense modules, whose weights are read
// from `params` at their places in `layout`; `acts` (optional) keeps what the backward needs.
std::vector<float> dense_forward(const EmbeddingConfig& e, const ParamLayout& layout,
                                 const float* params, const float* pooled, int B, int H,
                                 DenseActs* acts = nullptr);
// Its backward from dy [B, e.dim(H)]: accumulates the Dense weights' gradients into `grads` (the
// layout's places) and returns ∂loss/∂pooled [B, e.pooled_dim(H)].
std::vector<float> dense_backward(const EmbeddingConfig& e, const ParamLayout& layout,
                                  const float* params, float* grads, const DenseActs& acts,
                                  std::vector<float> dy, int B, int H);

// Rows of x [B, D] divided by max(‖x‖₂, 1e-12) (F.normalize), and the backward of that from
// dy given the forward's input x: dx = (dy − y (y·dy)) / ‖x‖ (dy / 1e-12 below the clamp).
std::vector<float> l2_normalize(const std::vector<float>& x, int B, int D);
std::vector<float> l2_normalize_backward(const std::vector<float>& x, const std::vector<float>& dy,
                                         int B, int D);

// Keeps the first `dimensions` of each row of x [B, D] (0 or D: all), then L2-normalizes each row
// when `normalize`. Returns [B, dimensions].
std::vector<float> finish_embeddings(std::vector<float> x, int B, int D, int dimensions,
                                     bool normalize);

// Applies a torch activation named as DenseConfig::activation_function, in place; and multiplies
// dy by its derivative, given the input x and output y.
void dense_activation(const std::string& name, float* x, size_t n);
void dense_activation_backward(const std::string& name, const float* x, const float* y, float* dy,
                               size_t n);

}  // namespace bertrt
