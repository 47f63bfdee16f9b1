// Typed fields of the JSON files of a checkpoint folder (config.json, tokenizer_config.json, the
// sentence-transformers module configs). Errors name the file and the field and quote the value.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace bertrt::convert {

// The file's JSON, whatever its top level; throws bertrt::Error naming the file when it cannot be
// read or is not JSON.
nlohmann::json read_json_file(const std::string& path);
// The file's top-level object; throws bertrt::Error naming the file when it cannot be read, is
// not JSON or is not an object.
nlohmann::json read_json_object(const std::string& path);
// The key is there and not null (Hugging Face writes null for "unset").
bool present(const nlohmann::json& j, const char* key);
// Absent or null: `fallback` (get_int without one: an error saying the field fixes the shapes).
int get_int(const std::string& path, const nlohmann::json& j, const char* key,
            std::optional<int> fallback);
float get_float(const std::string& path, const nlohmann::json& j, const char* key, float fallback);
bool get_bool(const std::string& path, const nlohmann::json& j, const char* key, bool fallback);
std::string get_string(const std::string& path, const nlohmann::json& j, const char* key,
                       const std::string& fallback);

}  // namespace bertrt::convert
