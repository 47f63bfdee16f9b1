#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "core/error.h"
#include "fuzz_target.h"

namespace bertrt::fuzz {

std::vector<Target>& targets() {
  static std::vector<Target> all;
  return all;
}

bool register_target(const char* name, TargetFn fn) {
  targets().push_back({name, fn});
  return true;
}

bool run_one(TargetFn fn, const uint8_t* data, size_t size) {
  try {
    fn(data, size);
    return true;
  } catch (const Error&) {
    return false;  // the parser rejected the input with a message: what it must do
  }
}

MemFile::MemFile(const uint8_t* data, size_t size) {
  fd_ = memfd_create("bertrt-fuzz", MFD_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error("memfd_create failed");
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n <= 0) throw std::runtime_error("memfd write failed");
    done += size_t(n);
  }
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemFile::~MemFile() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {
std::string g_scratch;
void remove_scratch() {
  std::error_code ec;
  std::filesystem::remove_all(g_scratch, ec);
}
}  // namespace

const std::string& scratch_dir() {
  if (g_scratch.empty()) {
    // /dev/shm when there is one: the TF bundle target writes two files an input.
    const char* tmp = std::getenv("TMPDIR");
    const std::string base = tmp && *tmp                                 ? tmp
                             : std::filesystem::is_directory("/dev/shm") ? "/dev/shm"
                                                                         : "/tmp";
    std::string tmpl = base + "/bertrt-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    g_scratch = tmpl;
    std::atexit(remove_scratch);
  }
  return g_scratch;
}

void write_file(const std::string& path, const uint8_t* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  const bool ok = std::fwrite(data, 1, size, f) == size;
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write " + path);
}

}  // namespace bertrt::fuzz
