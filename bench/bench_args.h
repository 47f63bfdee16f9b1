// The bench programs' command lines: --json, a positive integer option, --help, and an error that
// names the argument it could not use (exit 2). One place, so that every program answers alike.
#pragma once

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace bertrt::bench {

// argv[i] is `name` followed by a whole positive number (all of it: "1x" and "abc" are not):
// stores it, advances i and returns true.
inline bool positive_int_option(int argc, char** argv, int& i, const char* name, int& out) {
  if (std::strcmp(argv[i], name) != 0) return false;
  const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
  char* end = nullptr;
  errno = 0;
  const long n = v ? std::strtol(v, &end, 10) : 0;
  if (!v || *end != '\0' || errno != 0 || n < 1 || n > INT_MAX) {
    std::fprintf(stderr, "%s: %s needs a whole number ≥ 1, got '%s'\n", argv[0], name,
                 v ? v : "(nothing)");
    std::exit(2);
  }
  out = static_cast<int>(n);
  ++i;
  return true;
}

// Any argument the program does not know: --help prints the usage (exit 0); anything else names
// the argument, then the usage (exit 2).
[[noreturn]] inline void usage_exit(char** argv, int i, const char* usage) {
  const bool help = std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0;
  if (!help) std::fprintf(stderr, "%s: unknown argument '%s'\n", argv[0], argv[i]);
  std::fprintf(help ? stdout : stderr, usage, argv[0]);
  std::exit(help ? 0 : 2);
}

// A command line of --json alone (or --help): whether --json was given.
inline bool json_only_args(int argc, char** argv, const char* usage) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0)
      json = true;
    else
      usage_exit(argv, i, usage);
  }
  return json;
}

}  // namespace bertrt::bench
