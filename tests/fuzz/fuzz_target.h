// One fuzz target per parser (tests/fuzz/fuzz_*.cpp). A target is written once with
// BERTRT_FUZZ_TARGET(name) and built two ways:
// - with libFuzzer (BERTRT_FUZZ=ON, clang -fsanitize=fuzzer,...; BERTRT_LIBFUZZER defined): the
// body
//   becomes LLVMFuzzerTestOneInput, one executable per target;
// - in the normal build: the body is registered under `name`, and fuzz_regression_test feeds it
//   every file of tests/fuzz/regressions/<name>/ and tests/fuzz/corpus/<name>/.
// A body calls the parser and returns; bertrt::Error is the parser rejecting its input (expected);
// any other exception, a crash, a sanitizer report, a hang or an out-of-memory is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"  // targets catch bertrt::Error

namespace bertrt::fuzz {

using TargetFn = void (*)(const uint8_t* data, size_t size);

struct Target {
  const char* name;
  TargetFn fn;
};
// Targets registered so far (the regression test's static registrars fill it).
std::vector<Target>& targets();
bool register_target(const char* name, TargetFn fn);

// Runs `fn` and swallows bertrt::Error only; true when the input was accepted (no Error).
bool run_one(TargetFn fn, const uint8_t* data, size_t size);

// `bytes` as a file: an anonymous in-memory file (memfd) named /proc/self/fd/N, for parsers that
// open a path (and memory-map it). Closed (and freed) by the destructor.
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size);
  ~MemFile();
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A private folder for the process (for parsers that look files up by name, such as a TF bundle's
// .index and .data shards), created on first use under $TMPDIR or /tmp and removed at exit.
const std::string& scratch_dir();
// Writes `bytes` to `path` (replacing it); throws std::runtime_error if it cannot.
void write_file(const std::string& path, const uint8_t* data, size_t size);

}  // namespace bertrt::fuzz

#ifdef BERTRT_LIBFUZZER
#define BERTRT_FUZZ_REGISTER_(name, fn)                                     \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    ::bertrt::fuzz::run_one(fn, data, size);                                \
    return 0;                                                               \
  }
#else
#define BERTRT_FUZZ_REGISTER_(name, fn) \
  static const bool bertrt_fuzz_registered_ = ::bertrt::fuzz::register_target(#name, fn);
#endif

#define BERTRT_FUZZ_TARGET(name)                                   \
  static void bertrt_fuzz_body_(const uint8_t* data, size_t size); \
  BERTRT_FUZZ_REGISTER_(name, bertrt_fuzz_body_)                   \
  static void bertrt_fuzz_body_(const uint8_t* data, size_t size)
