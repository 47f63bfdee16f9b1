// Errors: one exception type carrying a message a user can act on (file, field, what was expected).
// The CLI catches it at the top and prints one line with a non-zero exit code.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace bertrt {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// fail("{}: line {}: expected a label, got '{}'", path, line, text)
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace bertrt
