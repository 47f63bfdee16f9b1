// bertrt rerank: a cross-encoder's scores of (query, passage) for the passages on stdin or in a
// file (embed/embedder.h rerank_scores), as CrossEncoder.predict / TEI's /rerank give them.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <numeric>

#include "common.h"
#include "core/error.h"
#include "core/float_decimal.h"
#include "embed/embedder.h"
#include "io/model_io.h"

namespace bertrt::cli {

void add_rerank(CLI::App& app) {
  struct Opts {
    std::string model, query, input;
    int top_k = 0, batch_size = 32, max_length = 0, max_batch_tokens = 2048;
    bool raw_scores = false, return_text = false, no_packing = false;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "rerank", "score passages (stdin or --input, one a line) against --query with a cross-encoder");
  c->footer(
      "The model: a sentence-transformers CrossEncoder or any BertForSequenceClassification with\n"
      "one output, converted by bertrt-convert. Output: one JSON line {\"index\": i, \"score\": s}\n"
      "a passage (index = its line, from 0), in input order; with --top-k K the K best, best\n"
      "first. The score is sigmoid(logit), CrossEncoder.predict's default; --raw-scores gives\n"
      "the logit.\n"
      "  printf 'a cat sat on the mat\\nstocks fell\\n' | bertrt rerank --model r.brt --query 'where is the cat'");
  c->add_option("--model", o->model, "model file (.brt): a one-output sequence classifier")->required();
  c->add_option("--query", o->query, "the query every passage is scored against")->required();
  c->add_option("--input", o->input, "text file, one passage a line (default: stdin)");
  c->add_option("--top-k", o->top_k, "print only the K best passages, best first")->check(at_least(1));
  c->add_flag("--raw-scores", o->raw_scores, "print the logit instead of sigmoid(logit)");
  c->add_flag("--return-text", o->return_text, "add each passage's \"text\"");
  c->add_option("--max-length", o->max_length,
                "tokens a (query, passage) pair keeps, longest first (default: the tokenizer's "
                "model_max_length, as CrossEncoder; at most max_position_embeddings)")
      ->check(at_least(3));
  c->add_option("--max-batch-tokens", o->max_batch_tokens,
                "tokens a forward: pairs are packed one after another without padding, each "
                "attending to its own tokens (default 2048)")
      ->check(at_least(1));
  c->add_flag("--no-packing", o->no_packing,
              "pad instead: --batch-size pairs a forward, longest first, padded to the longest "
              "(what the vulkan backend does anyway)");
  c->add_option("--batch-size", o->batch_size,
                "pairs a forward with --no-packing or on the vulkan backend (default 32)")
      ->check(at_least(1));
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    if (!o->input.empty()) check_input_file("--input", o->input);
    LoadedModel m = load_model(o->model);
    auto be = o->backend.make_inference();
    std::ifstream file;
    if (!o->input.empty()) {
      file.open(o->input);
      if (!file) fail("--input {}: cannot open", o->input);
    }
    std::vector<std::string> passages;
    for_each_line(o->input.empty() ? std::cin : file, o->input.empty() ? "stdin" : o->input,
                  [&](const std::string& text, size_t) { passages.push_back(text); });
    RerankOptions opts;
    opts.raw_scores = o->raw_scores;
    opts.max_length = o->max_length > 0 ? o->max_length
                                        : tokenizer_max_length(
                                              m.metadata, m.model->config().max_position_embeddings);
    opts.batch_size = o->batch_size;
    opts.packing = !o->no_packing;
    opts.max_batch_tokens = o->max_batch_tokens;
    EmbedStats st;
    const std::vector<float> scores =
        rerank_scores(*m.model, *m.tokenizer, *be, o->query, passages, opts, &st);
    std::vector<size_t> order(scores.size());
    std::iota(order.begin(), order.end(), size_t(0));
    if (o->top_k > 0) {
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return scores[a] > scores[b]; });
      order.resize(std::min(order.size(), size_t(o->top_k)));
    }
    for (size_t i : order) {
      nlohmann::ordered_json j;
      j["index"] = i;
      j["score"] = float_as_written(scores[i]);
      if (o->return_text) j["text"] = passages[i];
      fmt::print("{}\n", j.dump());
    }
    if (st.truncated)
      fmt::print(stderr, "rerank: {} of {} pairs were longer than {} tokens and were truncated\n",
                 st.truncated, passages.size(), st.max_seq_length);
  });
}

}  // namespace bertrt::cli
