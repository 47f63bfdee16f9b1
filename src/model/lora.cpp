#include "model/lora.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace bertrt {

bool lora_target_matches(const std::string& key, const std::string& target) {
  if (target.empty()) return false;
  if (key == target) return true;
  return key.size() > target.size() &&
         key.compare(key.size() - target.size(), target.size(), target) == 0 &&
         key[key.size() - target.size() - 1] == '.';
}

namespace {

// Every module of BertModel (+ its head) by Hugging Face name, with whether it is an nn.Linear
// LoRA may attach to: what PEFT's matching walks (model.named_modules()).
struct Module {
  std::string name;
  bool linear = false;  // an encoder or pooler Linear
  int out_f = 0, in_f = 0;
  bool head = false;    // modules_to_save: trained in full, never adapted
};

std::vector<Module> bert_modules(const BertConfig& c) {
  const int H = c.hidden_size, I = c.intermediate_size;
  std::vector<Module> m;
  auto other = [&](std::string name) { m.push_back({std::move(name)}); };
  auto linear = [&](std::string name, int out, int in) {
    m.push_back({std::move(name), true, out, in});
  };
  other("bert");
  other("bert.embeddings");
  for (const char* e : {"word_embeddings", "position_embeddings", "token_type_embeddings",
                        "LayerNorm", "dropout"})
    other(std::string("bert.embeddings.") + e);
  other("bert.encoder");
  other("bert.encoder.layer");
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l);
    other(p);
    other(p + ".attention");
    other(p + ".attention.self");
    linear(p + ".attention.self.query", H, H);
    linear(p + ".attention.self.key", H, H);
    linear(p + ".attention.self.value", H, H);
    other(p + ".attention.self.dropout");
    other(p + ".attention.output");
    linear(p + ".attention.output.dense", H, H);
    other(p + ".attention.output.LayerNorm");
    other(p + ".attention.output.dropout");
    other(p + ".intermediate");
    linear(p + ".intermediate.dense", I, H);
    other(p + ".intermediate.intermediate_act_fn");
    other(p + ".output");
    linear(p + ".output.dense", H, I);
    other(p + ".output.LayerNorm");
    other(p + ".output.dropout");
  }
  other("bert.pooler");
  linear("bert.pooler.dense", H, H);
  other("bert.pooler.activation");
  for (const char* h : {"classifier", "qa_outputs"}) m.push_back({h, false, 0, 0, true});
  other("dropout");
  return m;
}

}  // namespace

std::vector<LoraSite> lora_sites(const BertConfig& config, const LoraConfig& lora,
                                 const std::string& where) {
  if (lora.r < 1) fail("{}: LoRA rank r = {}: expected ≥ 1", where, lora.r);
  if (!(std::isfinite(lora.alpha) && lora.alpha > 0))
    fail("{}: lora_alpha = {}: expected a finite number > 0", where, lora.alpha);
  if (!(lora.dropout >= 0.0f && lora.dropout < 1.0f))
    fail("{}: lora_dropout = {}: expected a probability in [0, 1)", where, lora.dropout);
  if (lora.target_modules.empty())
    fail("{}: no LoRA target modules (e.g. query,value)", where);
  const std::vector<Module> modules = bert_modules(config);
  std::vector<bool> chosen(modules.size(), false);
  for (const std::string& t : lora.target_modules) {
    std::vector<std::string> not_linear;
    bool any = false;
    for (size_t i = 0; i < modules.size(); ++i) {
      if (!lora_target_matches(modules[i].name, t)) continue;
      if (modules[i].head)
        fail("{}: target '{}' is the task head ({}), which is trained in full beside the "
             "adapters (PEFT's modules_to_save), not adapted",
             where, t, modules[i].name);
      if (!modules[i].linear) {
        not_linear.push_back(modules[i].name);
        continue;
      }
      chosen[i] = any = true;
    }
    if (!not_linear.empty())
      fail("{}: target '{}' matches {}{}, which is not a Linear: LoRA attaches to the Linears "
           "query, key, value, dense (attention output, intermediate, output and pooler), "
           "attention.output.dense, intermediate.dense, output.dense, pooler.dense",
           where, t, not_linear.front(),
           not_linear.size() > 1 ? fmt::format(" (and {} more)", not_linear.size() - 1) : "");
    if (!any)
      fail("{}: target '{}' matches no module of the model (expected a Linear's name or the end "
           "of one after a dot: query, key, value, dense, attention.output.dense, "
           "intermediate.dense, output.dense, pooler.dense, or a full name such as "
           "bert.encoder.layer.0.attention.self.query)",
           where, t);
  }
  std::vector<LoraSite> sites;
  for (size_t i = 0; i < modules.size(); ++i) {
    if (!chosen[i]) continue;
    const Module& m = modules[i];
    if (lora.r > std::min(m.in_f, m.out_f))
      fail("{}: LoRA rank r = {} exceeds {}'s width ({} × {}): expected r ≤ {}", where, lora.r,
           m.name, m.out_f, m.in_f, std::min(m.in_f, m.out_f));
    sites.push_back({m.name, m.out_f, m.in_f});
  }
  return sites;
}

namespace {

// drop(inp) into xd [rows, in_f] (contiguous): the rows gathered, then Backend::dropout's mask.
void dropped_input(Backend& be, float* xd, const float* inp, int rows, int in_f, int lda,
                   float dropout, uint64_t seed) {
  be.copy_2d(xd, in_f, inp, lda, rows, in_f);
  be.dropout(xd, size_t(rows) * in_f, dropout, seed);
}

}  // namespace

void lora_forward(Backend& be, float* out, float* u, float* xd, const float* inp, const float* A,
                  const float* B, int rows, int in_f, int out_f, int r, float scaling, int lda,
                  float dropout, uint64_t seed) {
  const float* x = inp;
  int ldx = lda ? lda : in_f;
  if (dropout > 0.0f) {
    dropped_input(be, xd, inp, rows, in_f, ldx, dropout, seed);
    x = xd, ldx = in_f;
  }
  be.gemm(false, true, rows, r, in_f, 1.0f, x, ldx, A, in_f, 0.0f, u, r);             // u = x·Aᵀ
  be.gemm(false, true, rows, out_f, r, scaling, u, r, B, r, 1.0f, out, out_f);        // += s·u·Bᵀ
}

void lora_backward(Backend& be, float* dinp, float* dA, float* dB, float* du, float* xd,
                   const float* dout, const float* inp, const float* u, const float* A,
                   const float* B, int rows, int in_f, int out_f, int r, float scaling, int lda,
                   int ldd, float dropout, uint64_t seed) {
  be.gemm(false, false, rows, r, out_f, scaling, dout, out_f, B, r, 0.0f, du, r);     // du = s·dout·B
  if (dB) be.gemm(true, false, out_f, r, rows, scaling, dout, out_f, u, r, 1.0f, dB, r);
  const int ldx = lda ? lda : in_f, ldi = ldd ? ldd : in_f;
  if (dA) {
    const float* x = inp;
    int ld = ldx;
    if (dropout > 0.0f) {
      dropped_input(be, xd, inp, rows, in_f, ldx, dropout, seed);
      x = xd, ld = in_f;
    }
    be.gemm(true, false, r, in_f, rows, 1.0f, du, r, x, ld, 1.0f, dA, in_f);          // dA += duᵀ·x
  }
  if (!dinp) return;
  if (dropout == 0.0f) {
    be.gemm(false, false, rows, in_f, r, 1.0f, du, r, A, in_f, 1.0f, dinp, ldi);      // dinp += du·A
    return;
  }
  be.gemm(false, false, rows, in_f, r, 1.0f, du, r, A, in_f, 0.0f, xd, in_f);
  be.dropout(xd, size_t(rows) * in_f, dropout, seed);
  if (ldi == in_f) {
    be.add(dinp, dinp, xd, size_t(rows) * in_f);
  } else {
    for (int i = 0; i < rows; ++i)
      be.add(dinp + size_t(i) * ldi, dinp + size_t(i) * ldi, xd + size_t(i) * in_f, size_t(in_f));
  }
}

void lora_merge(float* W, const float* A, const float* B, int out_f, int in_f, int r,
                float scaling) {
  for (int o = 0; o < out_f; ++o)
    for (int i = 0; i < in_f; ++i) {
      double s = 0;
      for (int k = 0; k < r; ++k) s += double(B[size_t(o) * r + k]) * A[size_t(k) * in_f + i];
      W[size_t(o) * in_f + i] = float(W[size_t(o) * in_f + i] + double(scaling) * s);
    }
}

}  // namespace bertrt
