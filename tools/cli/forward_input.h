// One stdin line of `bertrt forward` ({"input_ids", "token_type_ids", "attention_mask"}) parsed
// and checked, apart from the command so the fuzz target (tests/fuzz/fuzz_forward_jsonl.cpp)
// drives exactly the code the CLI runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bertrt::cli {

struct ForwardInput {
  std::vector<int32_t> input_ids;       // non-empty
  std::vector<int32_t> token_type_ids;  // empty or input_ids.size()
  std::vector<int32_t> attention_mask;  // empty or input_ids.size(), values 0/1
};

// Keys that `bertrt tokenize --json` writes and forward does not read ("tokens") are allowed and
// ignored, so that `bertrt tokenize --json | bertrt forward` works; any other key is an error (a
// misspelt "atention_mask" would otherwise be ignored without a word).
// Throws bertrt::Error "stdin: line N: ..." for a line that is not a JSON object, a missing or
// empty input_ids, a field that is not a list of 32-bit integers, a length that differs from
// input_ids, or an attention_mask value other than 0/1. Token ids are checked against the model
// later.
ForwardInput parse_forward_line(const std::string& line, size_t n);

// One input line as a JSON object with exactly the keys named in `keys` (comma-separated for the
// message), each at most once; `required` of them must be present; keys in `ignored` are allowed
// and left unread. Throws bertrt::Error "SOURCE: line N: ..." naming the problem: not JSON (with
// the parser's reason, e.g. a number out of range), not an object, an unknown or repeated key, a
// missing one.
nlohmann::json parse_json_object_line(const std::string& line, size_t n,
                                      const std::vector<std::string>& keys,
                                      const std::vector<std::string>& required,
                                      const std::string& source = "stdin",
                                      const std::vector<std::string>& ignored = {});

}  // namespace bertrt::cli
