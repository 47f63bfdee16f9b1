#include "forward_input.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/error.h"
#include "core/json_excerpt.h"

namespace bertrt::cli {

namespace {

std::vector<int32_t> int_list(const nlohmann::json& j, const char* key, size_t line, bool required,
                              size_t expect_len) {
  if (!j.contains(key)) {
    if (required) fail("stdin: line {}: field \"{}\" is missing", line, key);
    return {};
  }
  const auto& a = j[key];
  if (!a.is_array()) fail("stdin: line {}: \"{}\" must be a list of integers", line, key);
  std::vector<int32_t> v;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& x = a[i];
    // Range-checked before narrowing: 4294967397 must not wrap around to 101.
    if (!x.is_number_integer() || x.get<int64_t>() < INT32_MIN || x.get<int64_t>() > INT32_MAX ||
        (x.is_number_unsigned() && x.get<uint64_t>() > uint64_t(INT32_MAX)))
      fail(
          "stdin: line {}: \"{}\" must be a flat list of 32-bit integers (one sequence a line), "
          "but entry {} is {}",
          line, key, i, json_excerpt(x));
    v.push_back(x.get<int32_t>());
  }
  if (expect_len && v.size() != expect_len)
    fail("stdin: line {}: \"{}\" has {} entries, input_ids has {}", line, key, v.size(),
         expect_len);
  return v;
}

}  // namespace

nlohmann::json parse_json_object_line(const std::string& line, size_t n,
                                      const std::vector<std::string>& keys,
                                      const std::vector<std::string>& required,
                                      const std::string& source,
                                      const std::vector<std::string>& ignored) {
  // A repeated key would otherwise be decided silently by the parser (the last one wins).
  std::vector<std::string> seen;
  auto on_key = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1) {
      const std::string k = parsed.get<std::string>();
      if (std::find(seen.begin(), seen.end(), k) != seen.end())
        fail("{}: line {}: key \"{}\" appears twice", source, n, k);
      seen.push_back(k);
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line, on_key);
  } catch (const nlohmann::json::exception& e) {
    // "[json.exception.out_of_range.406] number overflow ...": the reason without the tag.
    const std::string why = e.what();
    const size_t tag = why.find("] ");
    fail("{}: line {}: not valid JSON: {}", source, n,
         tag == std::string::npos ? why : why.substr(tag + 2));
  }
  if (!j.is_object()) fail("{}: line {}: not a JSON object", source, n);
  std::string expected;
  for (const std::string& k : keys) expected += (expected.empty() ? "" : ", ") + k;
  // A misspelt key ("atention_mask") would otherwise be ignored without a word.
  for (const auto& item : j.items())
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end() &&
        std::find(ignored.begin(), ignored.end(), item.key()) == ignored.end())
      fail("{}: line {}: unknown key \"{}\" (expected {})", source, n, item.key(), expected);
  for (const std::string& k : required)
    if (!j.contains(k)) fail("{}: line {}: field \"{}\" is missing", source, n, k);
  return j;
}

ForwardInput parse_forward_line(const std::string& line, size_t n) {
  // "tokens": what `bertrt tokenize --json` writes beside the ids (the pieces, for reading).
  const nlohmann::json j = parse_json_object_line(
      line, n, {"input_ids", "token_type_ids", "attention_mask"}, {"input_ids"}, "stdin",
      {"tokens"});
  ForwardInput in;
  in.input_ids = int_list(j, "input_ids", n, true, 0);
  if (in.input_ids.empty()) fail("stdin: line {}: input_ids is empty", n);
  in.token_type_ids = int_list(j, "token_type_ids", n, false, in.input_ids.size());
  in.attention_mask = int_list(j, "attention_mask", n, false, in.input_ids.size());
  for (int32_t m : in.attention_mask)
    if (m != 0 && m != 1)
      fail("stdin: line {}: attention_mask values must be 0 or 1, got {}", n, m);
  return in;
}

}  // namespace bertrt::cli
