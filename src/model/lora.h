// LoRA (Hu et al. 2021, arXiv:2106.09685) on the encoder's Linears, as Hugging Face PEFT's
// LoraLayer computes it (peft/tuners/lora/layer.py, Linear.forward):
//   out = inp · Wᵀ + b + (dropout(inp) · Aᵀ) · Bᵀ · scaling,   scaling = lora_alpha / r
// with A [r, in_features] (PEFT's lora_A.weight) and B [out_features, r] (lora_B.weight). W and b
// stay frozen; only A and B (and the task head, PEFT's modules_to_save) are trained.
// docs/explanation/lora.md has the design.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "model/config.h"

namespace bertrt {

// PEFT's LoraConfig fields bertrt implements (bias "none", no DoRA, no rsLoRA, no fan_in_fan_out).
struct LoraConfig {
  int r = 8;                // PEFT's default
  float alpha = 8.0f;       // lora_alpha; PEFT's default
  float dropout = 0.0f;     // lora_dropout, on the adapter's input only, while training
  std::vector<std::string> target_modules;  // PEFT's list form (lora_target_matches)
  float scaling() const { return alpha / float(r); }
  bool operator==(const LoraConfig& o) const {
    return r == o.r && alpha == o.alpha && dropout == o.dropout &&
           target_modules == o.target_modules;
  }
};

// PEFT check_target_module_exists for a list of targets: the module named `key` (e.g.
// bert.encoder.layer.0.attention.self.query) is matched by `target` when key == target or key
// ends with "." + target. So `dense` matches the attention output's, the feed-forward's two and
// the pooler's dense; `output.dense` the attention output's and the feed-forward output's.
bool lora_target_matches(const std::string& key, const std::string& target);

// The name of every module of a BERT with a task head, as PEFT walks them (the Hugging Face
// model's named_modules()): what a regex target_modules is matched against.
std::vector<std::string> lora_module_names(const BertConfig& config);

// A Linear that carries an adapter: its Hugging Face module name and size.
struct LoraSite {
  std::string name;  // e.g. bert.encoder.layer.0.attention.self.query
  int out_f = 0, in_f = 0;
  std::string a() const { return name + ".lora_A.weight"; }  // [r, in_f]
  std::string b() const { return name + ".lora_B.weight"; }  // [out_f, r]
};

// The Linears of the encoder and pooler that lora.target_modules select, in the model's order
// (each layer's query, key, value, attention output dense, intermediate dense, output dense; the
// pooler's dense last). Throws bertrt::Error, prefixed by `where` (a flag or a file), when r < 1,
// r exceeds the narrower side of a selected Linear, alpha is not finite and positive, dropout is
// outside [0, 1), the list is empty, a target matches no module, only modules that are not
// Linears (e.g. `intermediate`: its Linear is `intermediate.dense`), or the head (PEFT's
// modules_to_save, trained in full).
std::vector<LoraSite> lora_sites(const BertConfig& config, const LoraConfig& lora,
                                 const std::string& where);

// out [rows, out_f] (row stride out_f) += scaling · (drop(inp) · Aᵀ) · Bᵀ, keeping
// u = drop(inp) · Aᵀ [rows, r] for the backward. inp [rows, in_f] has row stride lda (0 = in_f;
// the pooler reads the [CLS] rows of [B, T, C]). dropout > 0 drops inp's elements with
// Backend::dropout's mask from `seed` into xd [rows, in_f] (scratch; unused without dropout).
void lora_forward(Backend& be, float* out, float* u, float* xd, const float* inp, const float* A,
                  const float* B, int rows, int in_f, int out_f, int r, float scaling, int lda,
                  float dropout, uint64_t seed);

// The backward of lora_forward for dout [rows, out_f], accumulating: dB += scaling · doutᵀ · u,
// dA += duᵀ · drop(inp) with du = scaling · dout · B [rows, r] (scratch), and dinp (row stride
// ldd, 0 = in_f; skipped when nullptr) += drop'(du · A), the same mask as the forward's. xd
// [rows, in_f] is scratch (with dropout, or when dinp is strided).
void lora_backward(Backend& be, float* dinp, float* dA, float* dB, float* du, float* xd,
                   const float* dout, const float* inp, const float* u, const float* A,
                   const float* B, int rows, int in_f, int out_f, int r, float scaling, int lda,
                   int ldd, float dropout, uint64_t seed);

// W [out_f, in_f] += scaling · B · A, accumulated in double per element (bertrt merge; PEFT's
// merge_and_unload computes the same delta, get_delta_weight).
void lora_merge(float* W, const float* A, const float* B, int out_f, int in_f, int r,
                float scaling);

}  // namespace bertrt
