// The HTTP API of `bertrt serve`: request bodies parsed and checked, response bodies written, as
// Hugging Face text-embeddings-inference (TEI, router/src/http/types.rs) and OpenAI's embeddings
// API name them, so that their clients work unchanged. No sockets and no model here: the parsers
// take a body and the limits, and throw ApiError with the status and the JSON error to answer
// (the request parser is a fuzz target: tests/fuzz/fuzz_serve_request.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bertrt::serve {

// TEI's ErrorType and the status each maps to (router/src/http/server.rs): Empty 400,
// Validation and Tokenizer 422, Overloaded 429, Backend 424, Unhealthy 503. Bodies too large
// are 413 and malformed JSON 400, both with error_type Validation.
enum class ErrorType { kUnhealthy, kBackend, kOverloaded, kValidation, kTokenizer, kEmpty };
const char* error_type_name(ErrorType type);  // "Validation", as TEI serializes it

struct ApiError : std::runtime_error {
  ApiError(int status, ErrorType type, const std::string& message)
      : std::runtime_error(message), status(status), type(type) {}
  int status;
  ErrorType type;
};
// {"error": message, "error_type": "Validation"} (TEI's ErrorResponse).
std::string error_body(const ApiError& e);
// {"message", "code", "type"} (TEI's OpenAICompatErrorResponse, for /v1/embeddings).
std::string openai_error_body(const ApiError& e);

// Limits a request is checked against before it is queued.
struct Limits {
  size_t max_client_batch_size = 32;  // inputs (or texts) a request
};

// POST /embed (TEI EmbedRequest) and POST /v1/embeddings (OpenAI: input, model, dimensions,
// encoding_format, user).
struct EmbedRequest {
  std::vector<std::string> inputs;
  bool single = false;  // "inputs": "text" rather than ["text"]: TEI answers [[...]] either way
  bool normalize = true;
  std::optional<bool> truncate;  // unset: the server's --auto-truncate
  int dimensions = 0;            // 0: all
  std::string prompt_name;
  std::string model;     // "model": a served model's name ("" : the default one)
  bool base64 = false;   // OpenAI encoding_format "base64": little-endian float32 bytes
};
EmbedRequest parse_embed_request(std::string_view body, const Limits& limits);
EmbedRequest parse_openai_request(std::string_view body, const Limits& limits);

// POST /rerank (TEI RerankRequest).
struct RerankRequest {
  std::string query;
  std::vector<std::string> texts;
  bool raw_scores = false, return_text = false;
  std::optional<bool> truncate;
  std::string model;
};
RerankRequest parse_rerank_request(std::string_view body, const Limits& limits);

// POST /predict (TEI PredictRequest): "inputs" is a text, a pair [a, b], or a batch of [a] and
// [a, b] rows.
struct PredictRequest {
  std::vector<std::pair<std::string, std::optional<std::string>>> inputs;
  bool batch = false;  // a batch is answered [[...], ...], a single input [...]
  bool raw_scores = false;
  std::optional<bool> truncate;
  std::string model;
};
PredictRequest parse_predict_request(std::string_view body, const Limits& limits);

// POST /tokenize (TEI TokenizeRequest).
struct TokenizeRequest {
  std::vector<std::string> inputs;
  bool add_special_tokens = true;
  std::string prompt_name;
  std::string model;
};
TokenizeRequest parse_tokenize_request(std::string_view body, const Limits& limits);

// OpenAI's encoding_format "base64": the float32 values' little-endian bytes, base64-encoded
// (RFC 4648, padded), which the openai client decodes with numpy.frombuffer(dtype=float32).
std::string base64_floats(const float* values, size_t n);

// API keys: one a line of `text` (blank lines and lines starting with # skipped, surrounding
// spaces dropped). Throws bertrt::Error naming `path` when none is left.
std::vector<std::string> parse_api_keys(const std::string& text, const std::string& path);
// Whether the Authorization header value is "Bearer K" for one of `keys`; every key is compared
// in full, in time that depends on the lengths only, so the timing tells nothing of a key.
bool authorized(std::string_view authorization, const std::vector<std::string>& keys);

}  // namespace bertrt::serve
