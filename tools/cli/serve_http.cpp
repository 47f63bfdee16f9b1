#include "serve_http.h"

#include <fmt/format.h>

#include "core/error.h"

#ifndef BERTRT_HAVE_HTTPLIB

namespace bertrt::cli {

bool serve_available() { return false; }
void block_stop_signals() {}
void run_server(std::vector<std::unique_ptr<serve::ServedModel>>&, Backend&, const ServeSettings&) {
  fail("this bertrt was built without cpp-httplib (Debian libcpp-httplib-dev): `serve` is not "
       "available; install it and configure again");
}

}  // namespace bertrt::cli

#else

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/float_decimal.h"
#include "core/utf8.h"
#include "core/version.h"
#include "serve/api.h"
#include "tokenizer/offsets.h"
#include "train/task_inference.h"

namespace bertrt::cli {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using serve::ApiError;
using serve::ErrorType;
using serve::Job;
using serve::JobKind;
using serve::ServedModel;

// The connection threads: a fixed pool, and a bounded list of accepted connections waiting for
// one (a socket each). Past `pending` the accepting thread waits, and further clients wait in the
// kernel's listen backlog (cpp-httplib's is 5: past it the kernel drops connections, which
// clients see as resets), so the list is long: a flood is answered 429 by the threads rather
// than dropped, and nothing grows without bound.
class ConnectionPool : public httplib::TaskQueue {
 public:
  ConnectionPool(size_t threads, size_t pending) : capacity_(pending) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return stopping_ || pending_.size() < capacity_; });
    pending_.push_back(std::move(fn));
    ready_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    room_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
        if (pending_.empty()) return;  // stopping, and every accepted connection served
        fn = std::move(pending_.front());
        pending_.pop_front();
        room_.notify_one();
      }
      fn();
    }
  }
  const size_t capacity_;
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> pending_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  bool stopping_ = false;
};

// A client that sends its request a byte at a time keeps cpp-httplib's per-read timeout from
// ever firing, and holds a connection thread. Every second this looks at the process's TCP
// connections: one that has sent nothing for --request-timeout seconds (no answer to a request
// that has been arriving, or waiting, that long; idle keep-alive connections are closed by
// cpp-httplib after 5 s) is shut down, which ends the thread's read. The socket's inode tells
// a new connection on a reused descriptor from the old one.
class SlowClientWatchdog {
 public:
  explicit SlowClientWatchdog(int timeout_s) : timeout_s_(timeout_s) {
    thread_ = std::thread([this] { run(); });
  }
  ~SlowClientWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stop_; })) {
      const auto now = Clock::now();
      std::map<int, std::pair<ino_t, Clock::time_point>> still;
      for (int fd : open_descriptors()) {
        struct stat st {};
        if (fd < 3 || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        int listening = 0;
        socklen_t len = sizeof(listening);
        struct tcp_info info {};
        socklen_t info_len = sizeof(info);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening ||
            getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) != 0 ||
            info.tcpi_state != 1 /* TCP_ESTABLISHED */)
          continue;
        auto it = seen_.find(fd);
        const Clock::time_point first =
            it == seen_.end() || it->second.first != st.st_ino ? now : it->second.second;
        const double age = std::chrono::duration<double>(now - first).count();
        if (age > timeout_s_ && info.tcpi_last_data_sent > uint32_t(timeout_s_) * 1000u)
          shutdown(fd, SHUT_RDWR);
        else
          still[fd] = {st.st_ino, first};
      }
      seen_.swap(still);
    }
  }

  // The process's open descriptors (/proc/self/fd): a scan of what is open, not of every number
  // up to RLIMIT_NOFILE.
  static std::vector<int> open_descriptors() {
    std::vector<int> fds;
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return fds;
    const int own = dirfd(dir);
    while (const dirent* e = readdir(dir)) {
      char* end = nullptr;
      const long fd = std::strtol(e->d_name, &end, 10);
      if (*end == '\0' && end != e->d_name && fd != own) fds.push_back(int(fd));
    }
    closedir(dir);
    return fds;
  }
  const int timeout_s_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::map<int, std::pair<ino_t, Clock::time_point>> seen_;
};

// The route label of /metrics: the served paths, everything else one label (no unbounded
// label set from clients' paths).
std::string route_label(const std::string& path) {
  static const char* kRoutes[] = {"/embed", "/v1/embeddings", "/rerank", "/predict", "/tokenize",
                                  "/health", "/info", "/metrics"};
  for (const char* r : kRoutes)
    if (path == r) return r;
  return "other";
}

thread_local Clock::time_point t_request_start;

// Accepted connections waiting for a connection thread (ConnectionPool).
constexpr size_t kPendingConnections = 1024;

double json_float(float v) { return float_as_written(v); }

float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

class Server {
 public:
  Server(std::vector<std::unique_ptr<ServedModel>>& models, Backend& be, const ServeSettings& s)
      : models_(models), be_(be), s_(s), queue_(s.max_concurrent_requests) {
    limits_.max_client_batch_size = s.max_client_batch_size;
  }

  void run();

 private:
  // The model a request names, else the first served one that fits the route.
  // fits == nullptr: any model.
  ServedModel& pick(const std::string& name, bool ServedModel::*fits, const char* what) {
    if (!name.empty()) {
      for (auto& m : models_)
        if (m->name == name) {
          if (fits && !((*m).*fits))
            throw ApiError(424, ErrorType::kBackend,
                           fmt::format("model '{}' is a {} model, not {}", name, m->kind(), what));
          return *m;
        }
      std::string names;
      for (auto& m : models_) names += (names.empty() ? "" : ", ") + m->name;
      throw ApiError(422, ErrorType::kValidation,
                     fmt::format("model '{}' is not served here (served: {})", name, names));
    }
    // /predict prefers a classifier to a cross-encoder (also a one-output classifier).
    if (fits == &ServedModel::classifier)
      for (auto& m : models_)
        if (m->classifier && !m->reranker) return *m;
    for (auto& m : models_)
      if (!fits || (*m).*fits) return *m;
    throw ApiError(424, ErrorType::kBackend, fmt::format("no model served here is {}", what));
  }

  // Checks each input's length against the model's; returns the tokens the job will run.
  size_t check_lengths(const std::vector<int>& lengths, int max_len, std::optional<bool> truncate,
                       const char* field) {
    const bool cut = truncate.value_or(s_.auto_truncate);
    size_t tokens = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (lengths[i] > max_len && !cut)
        throw ApiError(
            422, ErrorType::kValidation,
            fmt::format("`{}[{}]` must have at most {} tokens (the model's max input length); "
                        "given: {}. Send \"truncate\": true, or start the server with "
                        "--auto-truncate",
                        field, i, max_len, lengths[i]));
      tokens += size_t(std::min(lengths[i], max_len));
    }
    return tokens;
  }

  // Queues the job and waits for its answer; 429 when the queue is full, 503 when stopping.
  Job::Result submit(std::shared_ptr<Job> job) {
    std::future<Job::Result> answer = job->done.get_future();
    if (!queue_.push(job)) {
      if (stopping_) throw ApiError(503, ErrorType::kUnhealthy, "the server is shutting down");
      throw ApiError(429, ErrorType::kOverloaded,
                     fmt::format("model is overloaded: {} requests are queued "
                                 "(--max-concurrent-requests); retry later",
                                 queue_.capacity()));
    }
    Job::Result r = answer.get();
    if (!r.error.empty()) throw ApiError(424, ErrorType::kBackend, r.error);
    return r;
  }

  std::shared_ptr<Job> embed_job(const serve::EmbedRequest& req, ServedModel** model,
                                 std::vector<int>* lengths) {
    ServedModel& m = pick(req.model, &ServedModel::embedding, "an embedding model");
    auto job = std::make_shared<Job>();
    job->kind = JobKind::kEmbed;
    job->model = &m;
    job->embed.normalize = req.normalize;
    job->embed.dimensions = req.dimensions;
    job->embed.prompt_name = req.prompt_name;
    try {
      embedding_dim(*m.loaded.model, job->embed);
      *lengths = embed_token_lengths(*m.loaded.model, *m.loaded.tokenizer, req.inputs, job->embed);
    } catch (const Error& e) {
      std::string msg = e.what();
      for (const auto& [flag, field] : {std::pair{"--dimensions", "`dimensions`"},
                                       {"--prompt-name", "`prompt_name`"}})
        if (msg.rfind(flag, 0) == 0) msg = field + msg.substr(std::strlen(flag));
      throw ApiError(422, ErrorType::kValidation, msg);
    }
    job->tokens = check_lengths(*lengths, m.embed_max_length, req.truncate, "inputs");
    job->key = fmt::format("embed\n{}\n{}\n{}\n{}", m.name, req.normalize, req.dimensions,
                           req.prompt_name);
    job->texts = req.inputs;
    *model = &m;
    return job;
  }

  void embed(const httplib::Request& http, httplib::Response& res) {
    const serve::EmbedRequest req = serve::parse_embed_request(http.body, limits_);
    ServedModel* m = nullptr;
    std::vector<int> lengths;
    const Job::Result r = submit(embed_job(req, &m, &lengths));
    std::string out = "[";
    for (size_t i = 0; i < req.inputs.size(); ++i) {
      json row = json::array();
      for (size_t k = 0; k < r.width; ++k) row.push_back(json_float(r.values[i * r.width + k]));
      out += (i ? "," : "") + row.dump();
    }
    reply(res, out + "]");
  }

  void openai(const httplib::Request& http, httplib::Response& res) {
    const serve::EmbedRequest req = serve::parse_openai_request(http.body, limits_);
    ServedModel* m = nullptr;
    std::vector<int> lengths;
    const Job::Result r = submit(embed_job(req, &m, &lengths));
    json data = json::array();
    size_t tokens = 0;
    for (size_t i = 0; i < req.inputs.size(); ++i) {
      tokens += size_t(std::min(lengths[i], m->embed_max_length));
      json e{{"object", "embedding"}};
      const float* row = r.values.data() + i * r.width;
      if (req.base64) {
        e["embedding"] = serve::base64_floats(row, r.width);
      } else {
        json v = json::array();
        for (size_t k = 0; k < r.width; ++k) v.push_back(json_float(row[k]));
        e["embedding"] = std::move(v);
      }
      e["index"] = i;
      data.push_back(std::move(e));
    }
    json out{{"object", "list"}, {"data", std::move(data)}, {"model", m->name},
             {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
    reply(res, out.dump());
  }

  void rerank(const httplib::Request& http, httplib::Response& res) {
    const serve::RerankRequest req = serve::parse_rerank_request(http.body, limits_);
    ServedModel& m = pick(req.model, &ServedModel::reranker, "a reranker (a one-output classifier)");
    std::vector<int> lengths;
    for (size_t i = 0; i < req.texts.size(); ++i) {
      check_utf8_field(req.query, "query");
      check_utf8_field(req.texts[i], fmt::format("texts[{}]", i));
      lengths.push_back(int(m.loaded.tokenizer->encode(req.query, req.texts[i]).input_ids.size()));
    }
    auto job = std::make_shared<Job>();
    job->kind = JobKind::kRerank;
    job->model = &m;
    job->tokens = check_lengths(lengths, m.rerank_max_length, req.truncate, "texts");
    job->key = "rerank\n" + m.name;
    job->query = req.query;
    job->texts = req.texts;
    const Job::Result r = submit(job);
    std::vector<size_t> order(req.texts.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return r.values[a] > r.values[b]; });
    json out = json::array();
    for (size_t i : order) {
      json rank{{"index", i}};
      if (req.return_text) rank["text"] = req.texts[i];
      const float z = r.values[i];
      rank["score"] = json_float(req.raw_scores ? z : sigmoid(z));
      out.push_back(std::move(rank));
    }
    reply(res, out.dump());
  }

  void predict(const httplib::Request& http, httplib::Response& res) {
    const serve::PredictRequest req = serve::parse_predict_request(http.body, limits_);
    ServedModel& m = pick(req.model, &ServedModel::classifier, "a sequence classifier");
    std::vector<int> lengths;
    auto job = std::make_shared<Job>();
    for (size_t i = 0; i < req.inputs.size(); ++i) {
      const auto& [a, b] = req.inputs[i];
      check_utf8_field(a, fmt::format("inputs[{}]", i));
      if (b) check_utf8_field(*b, fmt::format("inputs[{}]", i));
      lengths.push_back(int(m.loaded.tokenizer->encode(a, b).input_ids.size()));
      job->texts.push_back(a);
      job->pairs.push_back(b);
    }
    job->kind = JobKind::kPredict;
    job->model = &m;
    job->tokens = check_lengths(lengths, m.predict_max_length, req.truncate, "inputs");
    job->key = "predict\n" + m.name;
    const Job::Result r = submit(job);
    json out = json::array();
    for (size_t i = 0; i < req.inputs.size(); ++i) {
      std::vector<float> row(r.values.begin() + std::ptrdiff_t(i * r.width),
                             r.values.begin() + std::ptrdiff_t((i + 1) * r.width));
      std::vector<float> scores = row;
      if (!req.raw_scores) {
        if (row.size() > 1) scores = softmax(row);
        else scores[0] = sigmoid(row[0]);
      }
      std::vector<size_t> order(scores.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t x, size_t y) { return scores[x] > scores[y]; });
      json preds = json::array();
      for (size_t k : order)
        preds.push_back({{"score", json_float(scores[k])},
                         {"label", k < m.labels.size() ? m.labels[k] : fmt::format("LABEL_{}", k)}});
      if (!req.batch) {
        reply(res, preds.dump());
        return;
      }
      out.push_back(std::move(preds));
    }
    reply(res, out.dump());
  }

  void tokenize(const httplib::Request& http, httplib::Response& res) {
    const serve::TokenizeRequest req = serve::parse_tokenize_request(http.body, limits_);
    ServedModel& m = req.model.empty() ? *models_[0] : pick(req.model, nullptr, "");
    std::string prompt;
    if (!req.prompt_name.empty()) {
      if (!m.embedding)
        throw ApiError(422, ErrorType::kValidation,
                       fmt::format("`prompt_name`: model '{}' has no prompts", m.name));
      const EmbeddingConfig head = embedding_head(*m.loaded.model, EmbedOptions{});
      const std::string* p = head.prompt(req.prompt_name);
      if (!p)
        throw ApiError(422, ErrorType::kValidation,
                       fmt::format("`prompt_name` '{}' is not one of the model's prompts", req.prompt_name));
      prompt = *p;
    }
    const Tokenizer& tok = *m.loaded.tokenizer;
    json out = json::array();
    for (size_t i = 0; i < req.inputs.size(); ++i) {
      const std::string text = prompt + req.inputs[i];
      check_utf8_field(text, fmt::format("inputs[{}]", i));
      json tokens = json::array();
      auto special = [&](int32_t id) {
        tokens.push_back({{"id", id}, {"text", tok.vocab().token(id)}, {"special", true},
                          {"start", nullptr}, {"stop", nullptr}});
      };
      if (req.add_special_tokens) special(tok.cls_id());
      for (const TokenSpan& t : tokenize_with_offsets(tok, text)) {
        int32_t id = tok.vocab().find(t.token);
        if (id < 0) id = tok.unk_id();
        tokens.push_back({{"id", id}, {"text", text.substr(t.begin, t.end - t.begin)},
                          {"special", false}, {"start", t.begin}, {"stop", t.end}});
      }
      if (req.add_special_tokens) special(tok.sep_id());
      out.push_back(std::move(tokens));
    }
    reply(res, out.dump(-1, ' ', false, json::error_handler_t::replace));
  }

  void info(httplib::Response& res) {
    const ServedModel& m = *models_[0];
    auto model_type = [&](const ServedModel& sm) {
      if (sm.embedding)  // TEI's EmbeddingModel: {"pooling": "mean"}
        return json{{"embedding",
                     {{"pooling", embedding_head(*sm.loaded.model, EmbedOptions{}).pooling.mode_string()}}}};
      json id2label = json::object(), label2id = json::object();
      for (size_t k = 0; k < sm.labels.size(); ++k) {
        id2label[std::to_string(k)] = sm.labels[k];
        label2id[sm.labels[k]] = k;
      }
      return json{{sm.kind(), {{"id2label", id2label}, {"label2id", label2id}}}};
    };
    json models = json::array();
    for (const auto& sm : models_)
      models.push_back({{"name", sm->name}, {"model_type", model_type(*sm)},
                        {"model_dtype", sm->loaded.model->quant_mode() == QuantMode::kInt8 ? "int8" : "float32"}});
    const int max_input = m.embedding ? m.embed_max_length
                          : m.reranker ? m.rerank_max_length : m.predict_max_length;
    json out{{"model_id", m.name},
             {"model_sha", nullptr},
             {"model_dtype", m.loaded.model->quant_mode() == QuantMode::kInt8 ? "int8" : "float32"},
             {"served_model_name", m.name},
             {"model_type", model_type(m)},
             {"max_concurrent_requests", s_.max_concurrent_requests},
             {"max_input_length", max_input},
             {"max_batch_tokens", s_.max_batch_tokens},
             {"max_batch_requests", s_.max_batch_requests ? json(s_.max_batch_requests) : json(nullptr)},
             {"max_client_batch_size", s_.max_client_batch_size},
             {"auto_truncate", s_.auto_truncate},
             {"tokenization_workers", connection_threads()},
             {"version", version_string()},
             {"sha", nullptr},
             {"docker_label", nullptr},
             {"models", std::move(models)}};
    reply(res, out.dump());
  }

  // The tokenizer drops malformed bytes; TEI answers them with a Tokenizer error.
  static void check_utf8_field(const std::string& text, const std::string& field) {
    if (first_invalid_utf8(text) != std::string::npos)
      throw ApiError(422, ErrorType::kTokenizer, fmt::format("`{}` is not valid UTF-8", field));
  }

  size_t connection_threads() const { return s_.max_concurrent_requests + 4; }

  static void reply(httplib::Response& res, const std::string& body) {
    res.status = 200;
    res.set_content(body, "application/json");
  }

  // Runs a route's handler, turning ApiError (and anything else) into TEI's JSON errors.
  template <typename Fn>
  static httplib::Server::Handler handler(bool openai_errors, Fn fn) {
    return [openai_errors, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        fn(req, res);
      } catch (const ApiError& e) {
        error(res, e, openai_errors);
      } catch (const std::bad_alloc&) {
        error(res, ApiError(503, ErrorType::kBackend, "out of memory"), openai_errors);
      } catch (const std::exception& e) {
        error(res, ApiError(422, ErrorType::kValidation, e.what()), openai_errors);
      }
    };
  }

  static void error(httplib::Response& res, const ApiError& e, bool openai_errors) {
    res.status = e.status;
    if (e.status == 429 || e.status == 503) res.set_header("Retry-After", "1");
    res.set_content(openai_errors ? serve::openai_error_body(e) : serve::error_body(e),
                    "application/json");
  }

  std::vector<std::unique_ptr<ServedModel>>& models_;
  Backend& be_;
  const ServeSettings& s_;
  serve::Limits limits_;
  serve::JobQueue queue_;
  serve::Metrics metrics_;
  std::atomic<bool> stopping_{false};
};

// Shared with the detached signal thread, which may outlive the Server.
std::atomic<int> g_signal{0};
std::atomic<bool> g_listen_returned{false}, g_finished{false}, g_stop_requested{false};

void Server::run() {
  httplib::Server svr;
  const size_t threads = connection_threads();
  svr.new_task_queue = [threads] { return new ConnectionPool(threads, kPendingConnections); };
  svr.set_payload_max_length(s_.payload_limit);
  svr.set_read_timeout(5, 0);
  svr.set_write_timeout(5, 0);
  svr.set_keep_alive_timeout(5);
  svr.set_keep_alive_max_count(1000);  // clients that keep a connection keep it (default 5)
  // Answers go out at once: with Nagle on, a small answer waits for the client's delayed ACK
  // (40 ms a request on Linux).
  svr.set_tcp_nodelay(true);
  const std::vector<std::string>& keys = s_.api_keys;
  svr.set_pre_routing_handler([&keys](const httplib::Request& req, httplib::Response& res) {
    t_request_start = Clock::now();
    if (keys.empty() || req.path == "/health" || req.path == "/metrics")
      return httplib::Server::HandlerResponse::Unhandled;
    if (serve::authorized(req.get_header_value("Authorization"), keys))
      return httplib::Server::HandlerResponse::Unhandled;
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer");
    res.set_content(serve::error_body(ApiError(401, ErrorType::kValidation,
                                               "missing or wrong API key: send the header "
                                               "\"Authorization: Bearer KEY\"")),
                    "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
  // Errors cpp-httplib answers itself (a body past --payload-limit, an unknown route, a
  // malformed request line) get a JSON body too.
  const size_t payload_limit = s_.payload_limit;
  svr.set_error_handler(httplib::Server::HandlerWithResponse(
      [payload_limit](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string msg;
    ErrorType type = ErrorType::kValidation;
    if (res.status == 413)
      msg = fmt::format("the body is larger than {} bytes (--payload-limit)", payload_limit);
    else if (res.status == 404)
      msg = fmt::format("no route {} {} (POST /embed, /v1/embeddings, /rerank, /predict, "
                        "/tokenize; GET /health, /info, /metrics)", req.method, req.path);
    else if (res.status == 405)
      msg = fmt::format("{} does not take {}", req.path, req.method);
    else
      msg = fmt::format("HTTP {}", res.status);
    res.set_content(serve::error_body(ApiError(res.status, type, msg)), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.request(route_label(req.path), res.status,
                     std::chrono::duration<double>(Clock::now() - t_request_start).count());
  });
  svr.Post("/embed", handler(false, [this](auto& q, auto& r) { embed(q, r); }));
  svr.Post("/v1/embeddings", handler(true, [this](auto& q, auto& r) { openai(q, r); }));
  svr.Post("/rerank", handler(false, [this](auto& q, auto& r) { rerank(q, r); }));
  svr.Post("/predict", handler(false, [this](auto& q, auto& r) { predict(q, r); }));
  svr.Post("/tokenize", handler(false, [this](auto& q, auto& r) { tokenize(q, r); }));
  svr.Get("/info", handler(false, [this](auto&, auto& r) { info(r); }));
  svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (stopping_) error(res, ApiError(503, ErrorType::kUnhealthy, "the server is shutting down"), false);
    else res.status = 200;
  });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(queue_.size(), queue_.capacity()),
                    "text/plain; version=0.0.4");
  });

  // The listening socket: SO_REUSEADDR only (cpp-httplib's default adds SO_REUSEPORT, which lets
  // a second server bind the same port and take half its connections).
  int listen_fd = -1;
  svr.set_socket_options([&listen_fd](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd = sock;
  });
  const int port = s_.port == 0 ? svr.bind_to_any_port(s_.host)
                                : (svr.bind_to_port(s_.host, s_.port) ? s_.port : -1);
  if (port < 0)
    fail("--host {} --port {}: cannot listen there ({})", s_.host, s_.port,
         s_.port == 0 ? "no free port" : "in use, or not an address of this machine");
  // cpp-httplib listens with a backlog of 5: a burst of clients overflows it while the accepting
  // thread waits for a core, and the kernel drops them. listen() again sets the kernel's maximum.
  if (listen_fd >= 0) ::listen(listen_fd, SOMAXCONN);

  std::thread batcher([this] {
    serve::batching_loop(queue_, be_, s_.max_batch_tokens,
                         s_.max_batch_requests ? s_.max_batch_requests : SIZE_MAX, metrics_);
  });
  // SIGINT/SIGTERM: stop accepting (cpp-httplib then finishes the connections it has, whose
  // requests the batching thread answers), within --shutdown-timeout; a second signal, or the
  // timeout, ends the process at once.
  std::thread signals([&svr, timeout = s_.shutdown_timeout, queued = &queue_] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int sig = 0;
    sigwait(&set, &sig);
    g_signal = sig;
    fmt::print(stderr, "bertrt serve: {}: no new connections; answering the {} queued requests "
                       "(at most --shutdown-timeout {} s)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", queued->size(), timeout);
    while (!g_listen_returned) {
      if (svr.is_running()) svr.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    g_stop_requested = true;  // the Server may go now: nothing here touches it any more
    const auto deadline = Clock::now() + std::chrono::seconds(timeout);
    const timespec tick{0, 100 * 1000 * 1000};
    while (!g_finished) {
      const int again = sigtimedwait(&set, nullptr, &tick);
      if (again > 0) {
        fmt::print(stderr, "bertrt serve: second signal: exiting without finishing\n");
        std::_Exit(128 + again);
      }
      if (Clock::now() > deadline) {
        fmt::print(stderr, "bertrt serve: error: requests still unanswered after "
                           "--shutdown-timeout {} s; exiting\n", timeout);
        std::_Exit(1);
      }
    }
  });
  signals.detach();

  fmt::print("bertrt serve: listening on http://{}:{}\n", s_.host, port);
  std::fflush(stdout);
  bool served = false;
  {
    SlowClientWatchdog watchdog(s_.request_timeout);
    if (g_signal == 0) served = svr.listen_after_bind();
    g_listen_returned = true;
    // Everything accepted is answered or closed; nothing new can be queued.
    stopping_ = true;
    queue_.close();
    batcher.join();
  }
  if (g_signal == 0 && !served) fail("--host {} --port {}: the server stopped listening", s_.host, port);
  while (!g_stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  g_finished = true;
  fmt::print(stderr, "bertrt serve: stopped\n");
}

}  // namespace

bool serve_available() { return true; }

void block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is a failed write, not a kill
}

void run_server(std::vector<std::unique_ptr<ServedModel>>& models, Backend& be,
                const ServeSettings& settings) {
  Server(models, be, settings).run();
}

}  // namespace bertrt::cli

#endif
