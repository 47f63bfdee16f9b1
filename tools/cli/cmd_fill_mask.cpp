// bertrt fill-mask: the MLM head's top-k candidates for each [MASK] in a text.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common.h"
#include "core/error.h"
#include "core/utf8.h"
#include "io/model_io.h"

namespace bertrt::cli {

void add_fill_mask(CLI::App& app) {
  struct Opts {
    std::string model, text;
    int top_k = 5;
    bool json = false;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand("fill-mask", "predict the tokens hidden behind [MASK]");
  c->add_option("--model", o->model, "model file with an MLM head (.brt)")->required();
  c->add_option("--top-k", o->top_k, "candidates per [MASK]")->capture_default_str()
      ->check(at_least(1));
  c->add_flag("--json", o->json, "one JSON object a [MASK]: {position, candidates:[{token, probability}]}");
  c->add_option("text", o->text, "text with one or more [MASK] tokens")->required();
  o->backend.add_to(c);
  c->callback([o] {
    check_utf8_text(o->text, "text");  // as stdin lines are checked
    check_input_file("--model", o->model);
    LoadedModel m = load_model(o->model);
    BertModel& model = *m.model;
    if (!model.heads().mlm) fail("{}: the model has no MLM head (cls.predictions.*)", o->model);
    const Tokenizer& tok = *m.tokenizer;
    const int max_len = model.config().max_position_embeddings;
    const Encoding e = tok.encode(o->text, std::nullopt);
    if (int(e.input_ids.size()) > max_len)
      fail("text: {} tokens with [CLS]/[SEP], the model takes at most {} (max_position_embeddings)",
           e.input_ids.size(), max_len);
    std::vector<int> masks;
    for (size_t i = 0; i < e.input_ids.size(); ++i)
      if (e.input_ids[i] == tok.mask_id()) masks.push_back(int(i));
    if (masks.empty())
      fail("text: no {} token found in \"{}{}\"", tok.options().mask_token, o->text.substr(0, 80),
           o->text.size() > 80 ? "…" : "");
    auto be = o->backend.make_inference();
    const int T = int(e.input_ids.size()), V = model.config().vocab_size;
    EncoderInputs in{1, T, e.input_ids.data(), e.token_type_ids.data(), e.attention_mask.data()};
    model.forward(*be, in, Targets{}, false);
    const float* logits = model.mlm_logits_all(*be);
    const int k = std::min(o->top_k, V);
    for (int pos : masks) {
      const float* z = logits + size_t(pos) * V;
      const float mx = *std::max_element(z, z + V);
      double sum = 0;
      for (int v = 0; v < V; ++v) sum += std::exp(double(z[v]) - mx);
      std::vector<int> idx(V);
      std::iota(idx.begin(), idx.end(), 0);
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                        [z](int a, int b) { return z[a] > z[b]; });
      nlohmann::json cands = nlohmann::json::array();
      for (int i = 0; i < k; ++i) {
        const double p = std::exp(double(z[idx[i]]) - mx) / sum;
        if (o->json)
          cands.push_back({{"token", tok.vocab().token(idx[i])}, {"token_id", idx[i]}, {"probability", p}});
        else
          fmt::print("{}\t{:.4f}\n", tok.vocab().token(idx[i]), p);
      }
      if (o->json)
        fmt::print("{}\n", nlohmann::json{{"position", pos}, {"candidates", cands}}.dump());
      else if (masks.size() > 1 && pos != masks.back())
        fmt::print("\n");
    }
  });
}

}  // namespace bertrt::cli
