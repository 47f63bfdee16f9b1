// A JSON value as an error message quotes it: a scalar as written (cut to kJsonExcerptChars), an
// array or object by its kind and size. Never the nested text: dumping a value nested 100,000
// deep recurses that deep (a stack overflow), and a flat one of a million entries would make a
// megabyte-long error line.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace bertrt {

inline constexpr size_t kJsonExcerptChars = 40;

inline std::string json_excerpt(const nlohmann::json& v) {
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " entries";
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " keys";
  std::string s = v.dump();
  if (s.size() > kJsonExcerptChars) {
    size_t cut = kJsonExcerptChars - 3;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 whole
    s = s.substr(0, cut) + "...";
  }
  return s;
}

}  // namespace bertrt
