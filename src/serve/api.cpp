#include "serve/api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace bertrt::serve {

namespace {

using json = nlohmann::json;

// Deeper than any request body is (TEI's deepest is a batch of pairs: 3): a bound on the parser's
// and the destructor's work for hostile input such as a megabyte of '['.
constexpr int kMaxDepth = 16;

[[noreturn]] void invalid(const std::string& message) {
  throw ApiError(422, ErrorType::kValidation, message);
}

const char* type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "a value";
  }
}

// The body as a JSON object: malformed JSON is 400, another value 422.
json parse_object(std::string_view body) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        invalid(fmt::format("the body nests arrays and objects deeper than {} levels", kMaxDepth));
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  json j;
  try {
    j = json::parse(body.begin(), body.end());
  } catch (const json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
    std::string what = e.what();
    const size_t at = what.find("] ");
    throw ApiError(400, ErrorType::kValidation,
                   "the body is not valid JSON: " + (at == std::string::npos ? what : what.substr(at + 2)));
  }
  if (!j.is_object()) invalid(fmt::format("the body must be a JSON object, got {}", type_name(j)));
  return j;
}

const json* field(const json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string string_field(const json& j, const char* key, bool required = false) {
  const json* v = field(j, key);
  if (!v) {
    if (required) invalid(fmt::format("missing field `{}`", key));
    return {};
  }
  if (!v->is_string()) invalid(fmt::format("`{}` must be a string, got {}", key, type_name(*v)));
  return v->get<std::string>();
}

bool bool_field(const json& j, const char* key, bool fallback) {
  const json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_boolean()) invalid(fmt::format("`{}` must be true or false, got {}", key, type_name(*v)));
  return v->get<bool>();
}

std::optional<bool> optional_bool(const json& j, const char* key) {
  if (!field(j, key)) return std::nullopt;
  return bool_field(j, key, false);
}

int dimensions_field(const json& j) {
  const json* v = field(j, "dimensions");
  if (!v) return 0;
  if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0))
    invalid(fmt::format("`dimensions` must be a positive integer, got {}", type_name(*v)));
  const uint64_t d = v->get<uint64_t>();
  if (d == 0) invalid("`dimensions` must be at least 1");
  if (d > 1000000) invalid(fmt::format("`dimensions` {} is above any model's width", d));
  return int(d);
}

// truncation_direction: TEI takes Left or Right; bertrt truncates on the right only.
void check_truncation_direction(const json& j) {
  const json* v = field(j, "truncation_direction");
  if (!v) return;
  if (!v->is_string()) invalid(fmt::format("`truncation_direction` must be a string, got {}", type_name(*v)));
  const std::string d = v->get<std::string>();
  if (d == "Right" || d == "right") return;
  if (d == "Left" || d == "left") invalid("`truncation_direction` Left is not supported: inputs are truncated on the right");
  invalid(fmt::format("`truncation_direction` must be Left or Right, got '{}'", d));
}

void check_batch(size_t n, const char* key, const Limits& limits, bool empty_is_error = true) {
  if (n == 0 && empty_is_error)
    throw ApiError(400, ErrorType::kEmpty, fmt::format("`{}` cannot be empty", key));
  if (n > limits.max_client_batch_size)
    invalid(fmt::format("batch size {} > maximum allowed batch size {} (--max-client-batch-size)",
                        n, limits.max_client_batch_size));
}

// A text or an array of texts (TEI's Input; token-id inputs are refused).
std::vector<std::string> texts_field(const json& j, const char* key, bool* single,
                                     const Limits& limits) {
  const json* v = field(j, key);
  if (!v) invalid(fmt::format("missing field `{}`", key));
  std::vector<std::string> out;
  if (v->is_string()) {
    if (single) *single = true;
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    check_batch(v->size(), key, limits);
    out.reserve(v->size());
    // TEI also takes token ids ([1, 2] or [[1, 2], ...]): refused by name.
    const bool ids = std::all_of(v->begin(), v->end(), [](const json& e) { return e.is_number_integer(); });
    for (size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      if (ids || (e.is_array() && !e.empty() && e[0].is_number_integer()))
        invalid(fmt::format("`{}`: token ids are not supported: send the texts", key));
      if (!e.is_string())
        invalid(fmt::format("`{}[{}]` must be a string, got {}", key, i, type_name(e)));
      out.push_back(e.get<std::string>());
    }
  } else {
    invalid(fmt::format("`{}` must be a string or an array of strings, got {}", key, type_name(*v)));
  }
  return out;
}

}  // namespace

const char* error_type_name(ErrorType type) {
  switch (type) {
    case ErrorType::kUnhealthy: return "Unhealthy";
    case ErrorType::kBackend: return "Backend";
    case ErrorType::kOverloaded: return "Overloaded";
    case ErrorType::kValidation: return "Validation";
    case ErrorType::kTokenizer: return "Tokenizer";
    case ErrorType::kEmpty: return "Empty";
  }
  return "Backend";
}

std::string error_body(const ApiError& e) {
  return json{{"error", e.what()}, {"error_type", error_type_name(e.type)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

std::string openai_error_body(const ApiError& e) {
  return json{{"message", e.what()}, {"code", e.status}, {"type", error_type_name(e.type)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

EmbedRequest parse_embed_request(std::string_view body, const Limits& limits) {
  const json j = parse_object(body);
  EmbedRequest r;
  r.inputs = texts_field(j, "inputs", &r.single, limits);
  r.normalize = bool_field(j, "normalize", true);
  r.truncate = optional_bool(j, "truncate");
  check_truncation_direction(j);
  r.dimensions = dimensions_field(j);
  r.prompt_name = string_field(j, "prompt_name");
  r.model = string_field(j, "model");
  return r;
}

EmbedRequest parse_openai_request(std::string_view body, const Limits& limits) {
  const json j = parse_object(body);
  EmbedRequest r;
  r.inputs = texts_field(j, "input", nullptr, limits);
  r.dimensions = dimensions_field(j);
  r.model = string_field(j, "model");
  string_field(j, "user");  // accepted, unused; its type is still checked
  const std::string format = string_field(j, "encoding_format");
  if (format == "base64") r.base64 = true;
  else if (!format.empty() && format != "float")
    invalid(fmt::format("`encoding_format` must be float or base64, got '{}'", format));
  return r;
}

RerankRequest parse_rerank_request(std::string_view body, const Limits& limits) {
  const json j = parse_object(body);
  RerankRequest r;
  r.query = string_field(j, "query", true);
  const json* t = field(j, "texts");
  if (!t) invalid("missing field `texts`");
  if (!t->is_array()) invalid(fmt::format("`texts` must be an array of strings, got {}", type_name(*t)));
  r.texts = texts_field(j, "texts", nullptr, limits);
  r.raw_scores = bool_field(j, "raw_scores", false);
  r.return_text = bool_field(j, "return_text", false);
  r.truncate = optional_bool(j, "truncate");
  check_truncation_direction(j);
  r.model = string_field(j, "model");
  return r;
}

PredictRequest parse_predict_request(std::string_view body, const Limits& limits) {
  const json j = parse_object(body);
  PredictRequest r;
  const json* v = field(j, "inputs");
  if (!v) invalid("missing field `inputs`");
  auto sequence = [&](const json& a, const std::string& where) {
    if (a.empty() || a.size() > 2)
      invalid(fmt::format("`{}` must be a text or a pair [text, text_pair], got an array of {}",
                          where, a.size()));
    for (size_t k = 0; k < a.size(); ++k)
      if (!a[k].is_string())
        invalid(fmt::format("`{}[{}]` must be a string, got {}", where, k, type_name(a[k])));
    std::pair<std::string, std::optional<std::string>> s{a[0].get<std::string>(), std::nullopt};
    if (a.size() == 2) s.second = a[1].get<std::string>();
    return s;
  };
  if (v->is_string()) {
    r.inputs.push_back({v->get<std::string>(), std::nullopt});
  } else if (v->is_array() && !v->empty() && (*v)[0].is_string()) {
    r.inputs.push_back(sequence(*v, "inputs"));  // one text or one pair
  } else if (v->is_array()) {
    check_batch(v->size(), "inputs", limits);
    r.batch = true;
    for (size_t i = 0; i < v->size(); ++i) {
      const json& row = (*v)[i];
      const std::string where = fmt::format("inputs[{}]", i);
      if (!row.is_array()) invalid(fmt::format("`{}` must be an array of one or two strings, got {}", where, type_name(row)));
      r.inputs.push_back(sequence(row, where));
    }
  } else {
    invalid(fmt::format("`inputs` must be a string, a pair of strings or a batch of them, got {}",
                        type_name(*v)));
  }
  r.raw_scores = bool_field(j, "raw_scores", false);
  r.truncate = optional_bool(j, "truncate");
  check_truncation_direction(j);
  r.model = string_field(j, "model");
  return r;
}

TokenizeRequest parse_tokenize_request(std::string_view body, const Limits& limits) {
  const json j = parse_object(body);
  TokenizeRequest r;
  r.inputs = texts_field(j, "inputs", nullptr, limits);
  r.add_special_tokens = bool_field(j, "add_special_tokens", true);
  r.prompt_name = string_field(j, "prompt_name");
  r.model = string_field(j, "model");
  return r;
}

std::string base64_floats(const float* values, size_t n) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(n * 4);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &values[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + size_t(b)] = static_cast<unsigned char>(u >> (8 * b));
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t a = bytes[i], b = i + 1 < bytes.size() ? bytes[i + 1] : 0,
                   c = i + 2 < bytes.size() ? bytes[i + 2] : 0;
    const uint32_t w = (a << 16) | (b << 8) | c;
    out += kAlphabet[(w >> 18) & 63];
    out += kAlphabet[(w >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(w >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[w & 63] : '=';
  }
  return out;
}

std::vector<std::string> parse_api_keys(const std::string& text, const std::string& path) {
  std::vector<std::string> keys;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    const size_t a = line.find_first_not_of(" \t\r"), b = line.find_last_not_of(" \t\r");
    line = a == std::string::npos ? "" : line.substr(a, b - a + 1);
    if (!line.empty() && line[0] != '#') keys.push_back(line);
    start = end + 1;
  }
  if (keys.empty()) fail("--api-key-file {}: no key in it (one key a line; # starts a comment)", path);
  return keys;
}

bool authorized(std::string_view authorization, const std::vector<std::string>& keys) {
  constexpr std::string_view kBearer = "Bearer ";
  const bool bearer = authorization.substr(0, kBearer.size()) == kBearer;
  const std::string_view given =
      bearer ? authorization.substr(kBearer.size()) : std::string_view();
  bool ok = false;
  for (const std::string& key : keys) {
    // Every byte of the longer of the two is visited, whatever matches.
    unsigned diff = unsigned(given.size() != key.size());
    const size_t n = std::max(given.size(), key.size());
    for (size_t i = 0; i < n; ++i) {
      const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
      const unsigned char k = i < key.size() ? static_cast<unsigned char>(key[i]) : 0;
      diff |= unsigned(g ^ k);
    }
    ok |= bearer && diff == 0;
  }
  return ok;
}

}  // namespace bertrt::serve
