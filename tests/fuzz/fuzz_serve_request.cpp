// `bertrt serve`'s request bodies (src/serve/api.h): the bytes of one POST body, read by the
// parser of every route. ApiError is the parser refusing the body with its HTTP status; the
// API-key check runs on the same bytes as an Authorization header.
#include "fuzz_target.h"
#include "serve/api.h"

BERTRT_FUZZ_TARGET(serve_request) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  bertrt::serve::Limits limits;
  limits.max_client_batch_size = 8;
  auto guard = [](auto fn) {
    try {
      fn();
    } catch (const bertrt::serve::ApiError& e) {
      if (e.status < 400 || e.status > 599) __builtin_trap();
      (void)bertrt::serve::error_body(e);
    }
  };
  guard([&] {
    const auto r = bertrt::serve::parse_embed_request(body, limits);
    if (r.inputs.empty() || r.inputs.size() > limits.max_client_batch_size) __builtin_trap();
  });
  guard([&] {
    const auto r = bertrt::serve::parse_openai_request(body, limits);
    (void)bertrt::serve::openai_error_body(bertrt::serve::ApiError(422, bertrt::serve::ErrorType::kValidation, r.model));
  });
  guard([&] { (void)bertrt::serve::parse_rerank_request(body, limits); });
  guard([&] {
    const auto r = bertrt::serve::parse_predict_request(body, limits);
    if (r.inputs.empty()) __builtin_trap();
  });
  guard([&] { (void)bertrt::serve::parse_tokenize_request(body, limits); });
  (void)bertrt::serve::authorized(body, {"sk-test", "another key"});
}
