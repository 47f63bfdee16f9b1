// bertrt search: semantic search over a corpus file (one passage a line). The corpus is embedded
// once into an index file beside it (embed/embedding_index.h), which later runs reuse while the
// model file, the corpus file and the embed options are the ones it was built from; queries from
// stdin are answered by exact inner-product search (a GEMM on the cpu backend, top-k by partial
// sort), as sentence-transformers' util.semantic_search does.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common.h"
#include "core/error.h"
#include "core/float_decimal.h"
#include "embed/embedder.h"
#include "embed/embedding_index.h"
#include "embed/semantic_search.h"
#include "io/model_io.h"
#include "progress.h"

namespace bertrt::cli {

namespace {

// Passages a call of embed_texts while indexing: a progress update each, memory bounded.
constexpr size_t kIndexChunk = 256;

// What the corpus embeddings depend on besides the model and the corpus: the index records it.
// --batch-size and the backend are left out (they do not change what an embedding means).
std::string options_json(const EmbedOptions& o) {
  nlohmann::ordered_json j;
  j["dimensions"] = o.dimensions;
  j["normalize"] = o.normalize;
  j["prompt_name"] = o.prompt_name;
  j["prompt"] = o.prompt ? nlohmann::json(*o.prompt) : nlohmann::json(nullptr);
  j["pooling"] = o.pooling;
  return j.dump();
}

}  // namespace

void add_search(CLI::App& app) {
  struct Opts {
    std::string model, corpus, index, pooling, query_prompt_name, corpus_prompt_name;
    int top_k = 10, dimensions = 0, batch_size = 32;
    bool no_normalize = false, rebuild = false;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "search", "semantic search: the --corpus passages nearest each query line of stdin");
  c->footer(
      "The corpus (one passage a line) is embedded once into an index file (default:\n"
      "CORPUS.bertrt-index), written atomically, which later runs reuse. The index records the\n"
      "model file's and the corpus file's size and CRC-32C and the embed options; when one of\n"
      "them changed, or the index is damaged, search stops with an error saying what differs:\n"
      "--rebuild embeds the corpus again (or give another --index to keep both).\n"
      "Queries: one a line on stdin; for each, one JSON line\n"
      "  {\"query\": q, \"hits\": [{\"index\": i, \"score\": s, \"text\": t}, ...]}\n"
      "the --top-k passages (index = their line, from 0) by inner product of the embeddings,\n"
      "best first (cosine similarity for normalized embeddings), exactly, on the cpu.\n"
      "  bertrt search --model all-MiniLM-L6-v2.brt --corpus passages.txt --top-k 3 < queries.txt");
  c->add_option("--model", o->model, "model file (.brt) with an embedding head")->required();
  c->add_option("--corpus", o->corpus, "text file, one passage a line")->required();
  c->add_option("--index", o->index, "the index file (default: CORPUS.bertrt-index)");
  c->add_flag("--rebuild", o->rebuild,
              "embed the corpus again and replace the index, whatever it holds");
  c->add_option("--top-k", o->top_k, "passages a query (default 10)")->check(at_least(1));
  c->add_option("--dimensions", o->dimensions,
                "keep the first D dimensions, then normalize (Matryoshka); default: all")
      ->check(at_least(1));
  c->add_flag("--no-normalize", o->no_normalize,
              "score the model's own output (by default embeddings are L2-normalized: cosine)");
  c->add_option("--query-prompt-name", o->query_prompt_name,
                "put the model's prompt of this name before each query (e.g. query)");
  c->add_option("--corpus-prompt-name", o->corpus_prompt_name,
                "put the model's prompt of this name before each passage (e.g. passage)");
  c->add_option("--pooling", o->pooling,
                "pool a model without an embedding head: cls, mean, max, mean_sqrt_len_tokens, "
                "weightedmean or lasttoken")
      ->check(CLI::IsMember(
          {"cls", "mean", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"}));
  c->add_option("--batch-size", o->batch_size, "sequences a forward (default 32)")
      ->check(at_least(1));
  o->backend.add_to(c);
  c->callback([o] {
    check_input_file("--model", o->model);
    check_input_file("--corpus", o->corpus);
    const std::string index_path = o->index.empty() ? o->corpus + ".bertrt-index" : o->index;
    check_output_path("--index", index_path);
    check_distinct_files({{"--index", index_path}},
                         {{"--model", o->model}, {"--corpus", o->corpus}});

    LoadedModel m = load_model(o->model);
    auto be = o->backend.make_inference();
    EmbedOptions corpus_opts;
    corpus_opts.dimensions = o->dimensions;
    corpus_opts.normalize = !o->no_normalize;
    corpus_opts.prompt_name = o->corpus_prompt_name;
    corpus_opts.pooling = o->pooling;
    corpus_opts.batch_size = o->batch_size;
    EmbedOptions query_opts = corpus_opts;
    query_opts.prompt_name = o->query_prompt_name;
    const int dim = embedding_dim(*m.model, corpus_opts);
    // An unknown prompt name fails now, before the corpus is embedded, naming this command's flag.
    for (const auto& [flag, opts] :
         {std::pair<const char*, const EmbedOptions&>{"--corpus-prompt-name", corpus_opts},
          {"--query-prompt-name", query_opts}}) {
      try {
        embed_texts(*m.model, *m.tokenizer, *be, {}, opts);
      } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.rfind("--prompt-name", 0) == 0) msg.replace(0, 13, flag);
        throw Error(msg);
      }
    }

    std::vector<std::string> passages;
    {
      std::ifstream in(o->corpus);
      if (!in) fail("--corpus {}: cannot open", o->corpus);
      for_each_line(in, o->corpus, [&](const std::string& t, size_t) { passages.push_back(t); });
    }
    if (passages.empty()) fail("--corpus {}: no passages (one a line)", o->corpus);
    if (passages.size() > size_t(INT_MAX))
      fail("--corpus {}: {} passages, more than {} ", o->corpus, passages.size(), INT_MAX);

    EmbeddingIndexKey key;
    key.model_crc32c = file_crc32c(o->model, &key.model_bytes);
    key.corpus_crc32c = file_crc32c(o->corpus, &key.corpus_bytes);
    key.options = options_json(corpus_opts);
    const std::string rebuild_hint =
        fmt::format("pass --rebuild to embed the corpus again into {} (or --index PATH to keep it)",
                    index_path);

    if (o->rebuild || !std::filesystem::exists(index_path)) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<float> e;
      e.reserve(passages.size() * size_t(dim));
      ProgressBar bar("search: embedding " + o->corpus, int64_t(passages.size()));
      size_t truncated = 0;
      for (size_t i = 0; i < passages.size(); i += kIndexChunk) {
        const size_t n = std::min(kIndexChunk, passages.size() - i);
        const std::vector<std::string> chunk(passages.begin() + std::ptrdiff_t(i),
                                             passages.begin() + std::ptrdiff_t(i + n));
        EmbedStats st;
        const std::vector<float> ce =
            embed_texts(*m.model, *m.tokenizer, *be, chunk, corpus_opts, &st);
        e.insert(e.end(), ce.begin(), ce.end());
        truncated += st.truncated;
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        bar.update(int64_t(i + n),
                   fmt::format("{:.0f} passages/s", double(i + n) / std::max(s, 1e-9)));
      }
      bar.finish();
      write_embedding_index(index_path, key, e.data(), passages.size(), uint32_t(dim));
      fmt::print(
          stderr, "search: indexed {} passages ({} dimensions) into {}{}\n", passages.size(), dim,
          index_path,
          truncated ? fmt::format("; {} were truncated to the model's length", truncated) : "");
    }

    EmbeddingIndex index;
    try {
      index = EmbeddingIndex::open(index_path);
    } catch (const Error& err) {
      fail("--index {}; {}", err.what(), rebuild_hint);
    }
    const EmbeddingIndexView& v = index.view();
    const std::string diff = embedding_index_difference(v.key, key);
    if (!diff.empty())
      fail("--index {} was built from other inputs: {}; {}", index_path, diff, rebuild_hint);
    if (v.count != passages.size() || v.dim != uint32_t(dim))
      fail("--index {}: {} embeddings of {} dimensions, the corpus and options make {} of {}; {}",
           index_path, v.count, v.dim, passages.size(), dim, rebuild_hint);

    // The search's GEMM: the cpu backend, whatever --backend runs the model, without constant
    // weights (the index is no weight to pack).
    auto cpu = make_backend("cpu");
    for_each_stdin_line([&](const std::string& query, size_t) {
      const std::vector<float> q = embed_texts(*m.model, *m.tokenizer, *be, {query}, query_opts);
      const std::vector<SearchHit> hits = semantic_search(
          *cpu, q.data(), 1, v.embeddings, passages.size(), dim, size_t(o->top_k))[0];
      nlohmann::ordered_json j;
      j["query"] = query;
      j["hits"] = nlohmann::json::array();
      for (const SearchHit& h : hits) {
        nlohmann::ordered_json hit;
        hit["index"] = h.index;
        hit["score"] = float_as_written(h.score);
        hit["text"] = passages[h.index];
        j["hits"].push_back(std::move(hit));
      }
      fmt::print("{}\n", j.dump());
      std::fflush(stdout);
    });
  });
}

}  // namespace bertrt::cli
