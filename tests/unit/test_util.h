// Helpers shared by the unit tests: where the real data lives, and skipping when it is absent.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace bertrt::test {

// ../shared (or $BERTRT_SHARED): checkpoints, tokenizer cases, data.
std::string shared_dir();
// $BERTRT_DATA, else shared_dir()/data.
std::string data_dir();
// The build directory (for generated reference files and built tools).
std::string build_dir();
std::string source_dir();
// True when `path` exists; otherwise GTEST_SKIP-worthy, unless BERTRT_REQUIRE_DATA=1 makes it fatal.
bool have_data(const std::string& path);

// The Python the reference scripts run with: Debian's, which has torch (not the first on PATH).
constexpr const char* kPython = "/usr/bin/python3";
// True when kPython can `import torch` (checked once).
bool have_torch();

// Passes when max |got − want| / max |want| ≤ tol over the whole tensor (a reference comparison's
// error relative to the tensor's scale); reports the worst element otherwise. `floor` bounds the
// denominator from below, for tensors whose exact value is (near) zero, so that fp32 rounding noise
// is measured against the scale of the terms summed into them.
inline ::testing::AssertionResult rel_close(const float* got, const std::vector<float>& want,
                                            double tol, double floor = 1e-30) {
  double max_want = floor, max_diff = 0;
  size_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_want = std::max(max_want, std::fabs(double(want[i])));
    const double d = std::fabs(double(got[i]) - want[i]);
    if (d > max_diff) max_diff = d, worst = i;
  }
  if (max_diff / max_want <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "relative error " << max_diff / max_want << " > " << tol << ", worst at [" << worst
         << "] got " << got[worst] << " want " << want[worst] << " (max |want| " << max_want << ")";
}

// Sets an environment variable for a scope and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// An environment switch: set, non-empty and not "0".
inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

// True under an instruction-set emulator: the aarch64/armhf test presets set BERTRT_TEST_EMULATED=1
// (qemu-user runs this code ~40x slower). The exhaustive sweeps and the thread-count tests then
// take a sparser sample or smaller sizes: the same code paths and checks, fewer points.
inline bool emulated() { return env_flag("BERTRT_TEST_EMULATED"); }

// True where the exhaustive sweeps and the thread-count tests take a sparser sample: under an
// emulator (above), or in a sanitizer build (the asan preset sets BERTRT_TEST_SPARSE=1), where a
// sweep's millionth point checks no memory access or UB that its thousandth did not.
inline bool sparse() { return emulated() || env_flag("BERTRT_TEST_SPARSE"); }

// Skips the test under an emulator. For arch-independent logic only (training loops, file-format
// sweeps, corpus-wide tokenizer checks, the C API's bookkeeping) that costs tens of seconds under
// qemu-user: the native suite runs it, and no kernel or numeric path is behind it. The emulated
// suites keep every test of a kernel, a SIMD path or a numeric result.
#define BERTRT_SKIP_UNDER_EMULATOR()                          \
  if (::bertrt::test::emulated())                             \
  GTEST_SKIP() << "arch-independent logic, run by the native " \
                  "suite (BERTRT_TEST_EMULATED)"

// The `bertrt` CLI built beside the tests, or "" where it cannot run here: not built, or an
// emulated test run (qemu-user runs the test binaries; the CLI's own ARM run is ci_arm.sh's).
inline std::string cli_binary() {
  const std::string cli = build_dir() + "/bertrt";
  if (emulated() || !std::ifstream(cli).good()) return "";
  return cli;
}

// How many of the pages [p, p + pages·page) the process maps now (/proc/self/pagemap's present
// bit); −1 where pagemap cannot be read. Under qemu-user it describes the emulator's addresses.
// exclusive: only those mapped by this process alone (bit 56), which leaves out the shared zero
// page that a read of never-written anonymous memory maps (present, but no memory of its own).
int mapped_pages(const void* p, size_t pages, bool exclusive = false);

// A whole file as bytes, and bytes written to a file (corruption and truncation tests).
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

// A .brt's bytes with the header's CRC-32C stamped again after an edit of the FlatBuffer
// (io/buffer_crc.h): a consistent file laid out otherwise (another tool, a crafted file) reaches
// the checks behind that CRC.
std::string restamped_header_crc(std::string brt_bytes);

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) bit by bit, as RFC 3720 B.4 defines it:
// the oracle of the table-driven and SSE4.2 implementations.
inline uint32_t crc32c_bitwise(const uint8_t* p, size_t n) {
  uint32_t c = ~0u;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

// A fresh folder per test under the system temp dir, removed with everything in it afterwards.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `bytes` to file(name) and returns that path.
  std::string write(const std::string& name, const std::string& bytes) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace bertrt::test

// Skips the test (visibly) when the data is missing; fails it instead under BERTRT_REQUIRE_DATA=1.
#define BERTRT_REQUIRE_PATH(path)                                                      \
  do {                                                                                 \
    if (!::bertrt::test::have_data(path)) {                                            \
      if (std::getenv("BERTRT_REQUIRE_DATA") && std::string(std::getenv("BERTRT_REQUIRE_DATA")) == "1") \
        FAIL() << "required data missing: " << (path);                                 \
      GTEST_SKIP() << "data missing (set BERTRT_DATA): " << (path);                     \
    }                                                                                  \
  } while (0)
