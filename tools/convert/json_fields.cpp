#include "convert/json_fields.h"

#include <cstdint>
#include <fstream>

#include "core/error.h"
#include "core/json_excerpt.h"

namespace bertrt::convert {

using nlohmann::json;

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON ({})", path, e.what());
  }
}

json read_json_object(const std::string& path) {
  json j = read_json_file(path);
  if (!j.is_object()) fail("{}: expected a JSON object", path);
  return j;
}

bool present(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

int get_int(const std::string& path, const json& j, const char* key, std::optional<int> fallback) {
  if (!present(j, key)) {
    if (fallback) return *fallback;
    fail("{}: field '{}' is missing (it fixes the tensor shapes)", path, key);
  }
  const json& v = j[key];
  if (!v.is_number_integer())
    fail("{}: field '{}' must be an integer, got {}", path, key, json_excerpt(v));
  if (v.get<long long>() < INT32_MIN || v.get<long long>() > INT32_MAX)
    fail("{}: field '{}' = {} is outside the 32-bit range", path, key, json_excerpt(v));
  return v.get<int>();
}

float get_float(const std::string& path, const json& j, const char* key, float fallback) {
  if (!present(j, key)) return fallback;
  if (!j[key].is_number())
    fail("{}: field '{}' must be a number, got {}", path, key, json_excerpt(j[key]));
  return j[key].get<float>();
}

bool get_bool(const std::string& path, const json& j, const char* key, bool fallback) {
  if (!present(j, key)) return fallback;
  if (!j[key].is_boolean())
    fail("{}: field '{}' must be true or false, got {}", path, key, json_excerpt(j[key]));
  return j[key].get<bool>();
}

std::string get_string(const std::string& path, const json& j, const char* key, const std::string& fallback) {
  if (!present(j, key)) return fallback;
  if (!j[key].is_string())
    fail("{}: field '{}' must be a string, got {}", path, key, json_excerpt(j[key]));
  return j[key].get<std::string>();
}

}  // namespace bertrt::convert
