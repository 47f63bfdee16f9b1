// The C API's error boundary: every entry point runs its body through guard(), which turns the
// C++ exceptions of the library into a status code and the thread-local last-error message, so
// no exception crosses into C and bad input never aborts.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include "bertrt/bertrt.h"

namespace bertrt::capi {

// An error with its status (the library's own bertrt::Error maps to a status by where it came
// from: guard's `fallback`).
class ApiError : public std::runtime_error {
 public:
  ApiError(bertrt_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  bertrt_status status() const { return status_; }

 private:
  bertrt_status status_;
};

template <typename... Args>
[[noreturn]] void api_fail(bertrt_status status, fmt::format_string<Args...> format,
                           Args&&... args) {
  throw ApiError(status, fmt::format(format, std::forward<Args>(args)...));
}

// Fails with BERTRT_E_INVALID_ARGUMENT "<fn>: argument '<name>' is NULL".
template <typename T>
void require(const T* p, const char* fn, const char* name) {
  if (!p) api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: argument '{}' is NULL", fn, name);
}

// Fails with BERTRT_E_INVALID_ARGUMENT naming the byte when `text` is not UTF-8: the tokenizer
// would drop those bytes and read other words (the CLI refuses such lines: core/utf8.h).
void require_utf8(const char* text, const char* fn, const char* name);

// Why `path`, which is not a regular file, cannot be read as one: "is a folder, not a file" or
// "no such file".
inline const char* not_a_file_reason(const char* path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) ? "is a folder, not a file" : "no such file";
}

// Copies the caller's option struct over `o` (set to the defaults by its _init): an older header's
// smaller struct keeps working, its newer fields at their defaults (bertrt.h "Option structs").
template <typename Options>
void copy_options(Options& o, const Options& given, const char* fn, const char* init) {
  if (given.struct_size < sizeof(uint32_t) || given.struct_size > sizeof(Options))
    api_fail(BERTRT_E_INVALID_ARGUMENT,
             "{}: options.struct_size {} is not a size this library knows (at most {}; call {})",
             fn, given.struct_size, sizeof(Options), init);
  std::memcpy(&o, &given, given.struct_size);
}

void set_last_error(const std::string& message);
void clear_last_error();

// Runs body(); OK when it returns, else the status of what it threw (bertrt::Error → fallback)
// with its message as the last error.
template <typename F>
bertrt_status guard(bertrt_status fallback, F&& body) noexcept;

bertrt_status status_of_current_exception(bertrt_status fallback) noexcept;

template <typename F>
bertrt_status guard(bertrt_status fallback, F&& body) noexcept {
  try {
    body();
    return BERTRT_OK;
  } catch (...) {
    return status_of_current_exception(fallback);
  }
}

}  // namespace bertrt::capi
