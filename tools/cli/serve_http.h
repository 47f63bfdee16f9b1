// `bertrt serve`'s HTTP side (cpp-httplib): the routes, authorization, the connection threads,
// the slow-client watchdog and the shutdown on SIGINT/SIGTERM. The request bodies are
// src/serve/api.*, the batching src/serve/engine.* and batch_queue.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "serve/engine.h"

namespace bertrt::cli {

struct ServeSettings {
  std::string host = "127.0.0.1";
  int port = 8080;
  int max_batch_tokens = 2048;
  size_t max_batch_requests = 0;  // 0: as many as the token budget holds
  size_t max_client_batch_size = 32;
  size_t max_concurrent_requests = 64;
  size_t payload_limit = 2000000;
  bool auto_truncate = false;
  std::vector<std::string> api_keys;
  int request_timeout = 60;   // seconds a connection may go without an answer to its request
  int shutdown_timeout = 30;  // seconds to finish the queued requests after SIGINT/SIGTERM
  int backend_threads = 0;
};

// Whether this build has the HTTP server (cpp-httplib was found at configure time).
bool serve_available();

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts from now on (the
// backend's thread pool included): the server takes them with sigwait. Call first.
void block_stop_signals();

// Binds host:port (prints "listening on http://HOST:PORT" to stdout once bound), serves until
// SIGINT/SIGTERM, stops accepting, answers what is queued, returns. Throws bertrt::Error when the
// address cannot be bound.
void run_server(std::vector<std::unique_ptr<serve::ServedModel>>& models, Backend& be,
                const ServeSettings& settings);

}  // namespace bertrt::cli
