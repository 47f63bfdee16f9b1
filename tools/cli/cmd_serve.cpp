// bertrt serve: an HTTP server for embeddings, reranking and classification with the routes and
// bodies of Hugging Face text-embeddings-inference and OpenAI's embeddings API, batching the
// requests of several clients into one forward (serve_http.h, src/serve/).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common.h"
#include "core/error.h"
#include "embed/embedder.h"
#include "io/model_io.h"
#include "lora_flags.h"
#include "serve/api.h"
#include "serve_http.h"
#include "task_flags.h"

namespace bertrt::cli {

namespace {

// "NAME=PATH" or "PATH" (named by the file's stem).
std::pair<std::string, std::string> split_named(const std::string& flag, const std::string& v) {
  const size_t eq = v.find('=');
  if (eq == std::string::npos) return {std::filesystem::path(v).stem().string(), v};
  const std::string name = v.substr(0, eq), path = v.substr(eq + 1);
  if (name.empty() || path.empty())
    fail_usage("{} {}: expected NAME=FILE or FILE", flag, v);
  return {name, path};
}

std::unique_ptr<serve::ServedModel> load_served(const std::string& name, const std::string& path,
                                                const std::string& adapter) {
  auto sm = std::make_unique<serve::ServedModel>();
  sm->name = name;
  sm->path = path;
  sm->loaded = load_model(path);
  LoadedModel& m = sm->loaded;
  if (!adapter.empty()) apply_adapter_flag(m, path, adapter);
  const HeadKind kind = m.model->heads().resolved_kind();
  sm->embedding = bool(m.model->heads().embedding);
  sm->reranker = kind == HeadKind::kRegression;
  sm->classifier = kind == HeadKind::kSequenceClassification || kind == HeadKind::kRegression;
  if (!sm->embedding && !sm->classifier)
    fail("--model {}: a {} head; bertrt serve serves sentence-embedding models (/embed), "
         "cross-encoders (/rerank) and sequence classifiers (/predict)",
         path, head_kind_name(kind));
  if (sm->embedding) sm->embed_max_length = embed_max_length(*m.model, EmbedOptions{});
  const int max_pos = m.model->config().max_position_embeddings;
  sm->rerank_max_length = tokenizer_max_length(m.metadata, max_pos);
  if (sm->classifier) {
    const TaskDefinition task = model_task(m, path, "", /*head_is_enough=*/true);
    sm->labels = model_labels(m, task);
    sm->predict_max_length = std::min(task.max_seq_length, max_pos);
  }
  return sm;
}

}  // namespace

void add_serve(CLI::App& app) {
  struct Opts {
    std::vector<std::string> models, adapters;
    std::string api_key_file;
    ServeSettings s;
    BackendChoice backend;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "serve", "an HTTP server for embeddings, reranking and classification (TEI and OpenAI routes)");
  c->footer(
      "Routes (bodies as Hugging Face text-embeddings-inference and OpenAI define them):\n"
      "  POST /embed {\"inputs\": \"text\" | [...], \"normalize\", \"truncate\", \"dimensions\", "
      "\"prompt_name\"}\n"
      "  POST /v1/embeddings {\"input\", \"model\", \"dimensions\", \"encoding_format\": float|base64}\n"
      "  POST /rerank {\"query\", \"texts\", \"raw_scores\", \"return_text\", \"truncate\"}\n"
      "  POST /predict {\"inputs\": \"text\" | [\"a\", \"b\"] | [[\"a\"], [\"a\", \"b\"]], \"raw_scores\"}\n"
      "  POST /tokenize {\"inputs\", \"add_special_tokens\", \"prompt_name\"}\n"
      "  GET /health, GET /info, GET /metrics (Prometheus text)\n"
      "A body's \"model\" picks a served model by name (--model NAME=FILE; FILE alone is named by\n"
      "its stem); without one, the first that fits the route. Requests of several clients for the\n"
      "same model and options share a forward, up to --max-batch-tokens; more than\n"
      "--max-concurrent-requests waiting are answered 429 with Retry-After. SIGINT/SIGTERM stop\n"
      "accepting, answer what is queued and exit 0. docs/how-to/serve.md has curl and OpenAI\n"
      "client examples.\n"
      "  bertrt serve --model all-MiniLM-L6-v2.brt --port 8080\n"
      "  curl -s localhost:8080/embed -H 'Content-Type: application/json' -d '{\"inputs\": \"a cat\"}'");
  c->add_option("--model", o->models,
                "a model to serve, FILE or NAME=FILE (repeatable; the first is the default)")
      ->required();
  c->add_option("--adapter", o->adapters,
                "a LoRA adapter for the model NAME, NAME=ADAPTER_FILE (repeatable)");
  c->add_option("--host", o->s.host,
                "the address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 for "
                "every interface)")
      ->check(not_empty("an address"));
  c->add_option("--port", o->s.port, "the TCP port (default 8080; 0: a free one, printed)")
      ->check(CLI::Range(0, 65535));
  c->add_option("--max-batch-tokens", o->s.max_batch_tokens,
                "tokens a forward: the queued requests of one model and options are packed "
                "together up to this (default 2048)")
      ->check(at_least(1));
  c->add_option("--max-batch-requests", o->s.max_batch_requests,
                "requests a forward at most (default: as many as --max-batch-tokens holds; 1 "
                "turns batching across requests off)")
      ->check(at_least(1));
  c->add_option("--max-client-batch-size", o->s.max_client_batch_size,
                "inputs one request may send (default 32; more: 422)")
      ->check(at_least(1));
  c->add_option("--max-concurrent-requests", o->s.max_concurrent_requests,
                "requests waiting for the model at once (default 64); more are answered 429 "
                "with Retry-After")
      ->check(at_least(1));
  c->add_option("--payload-limit", o->s.payload_limit,
                "bytes a request body may have (default 2000000; more: 413)")
      ->check(at_least(1));
  c->add_flag("--auto-truncate", o->s.auto_truncate,
              "truncate inputs longer than the model takes (default: answer 422 unless the "
              "request says \"truncate\": true)");
  c->add_option("--api-key-file", o->api_key_file,
                "accept only requests with \"Authorization: Bearer KEY\" for a KEY of this file "
                "(one a line; /health and /metrics stay open)");
  c->add_option("--request-timeout", o->s.request_timeout,
                "seconds a connection may wait for the answer to a request it is sending or has "
                "sent; then it is closed (default 60: slow clients do not hold threads)")
      ->check(at_least(1));
  c->add_option("--shutdown-timeout", o->s.shutdown_timeout,
                "seconds to answer the queued requests after SIGINT/SIGTERM (default 30)")
      ->check(at_least(1));
  o->backend.add_to(c);
  c->callback([o] {
    if (!serve_available())
      fail("this bertrt was built without cpp-httplib (Debian libcpp-httplib-dev): `serve` is "
           "not available");
    std::vector<std::pair<std::string, std::string>> named;
    for (const std::string& v : o->models) {
      named.push_back(split_named("--model", v));
      check_input_file("--model", named.back().second);
      for (size_t i = 0; i + 1 < named.size(); ++i)
        if (named[i].first == named.back().first)
          fail_usage("--model: two models are named '{}' (name them: --model NAME=FILE)",
                     named.back().first);
    }
    std::map<std::string, std::string> adapters;
    for (const std::string& v : o->adapters) {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        fail_usage("--adapter {}: expected NAME=ADAPTER_FILE (NAME: a --model's name)", v);
      const std::string name = v.substr(0, eq);
      bool known = false;
      for (const auto& [n, p] : named) known = known || n == name;
      if (!known) fail_usage("--adapter {}: no --model is named '{}'", v, name);
      adapters[name] = v.substr(eq + 1);
    }
    if (!o->api_key_file.empty()) {
      check_input_file("--api-key-file", o->api_key_file);
      std::ifstream f(o->api_key_file, std::ios::binary);
      std::stringstream text;
      text << f.rdbuf();
      if (!f) fail("--api-key-file {}: cannot read it", o->api_key_file);
      o->s.api_keys = serve::parse_api_keys(text.str(), o->api_key_file);
    }
    // Before any thread exists (the backend's pool included): the server takes the signals.
    block_stop_signals();
    std::vector<std::unique_ptr<serve::ServedModel>> models;
    for (const auto& [name, path] : named)
      models.push_back(load_served(name, path, adapters.count(name) ? adapters[name] : ""));
    auto be = o->backend.make_inference();
    run_server(models, *be, o->s);
  });
}

}  // namespace bertrt::cli
