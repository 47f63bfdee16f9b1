#include "test_util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "io/buffer_crc.h"

namespace bertrt::test {

std::string restamped_header_crc(std::string bytes) {
  uint32_t size = 0;
  std::memcpy(&size, bytes.data(), 4);
  auto* base = reinterpret_cast<uint8_t*>(bytes.data());
  const size_t field = buffer_crc_field_offset(base);
  if (field == 0) throw std::runtime_error("restamped_header_crc: no buffer_crc32c field");
  flatbuffers::WriteScalar(base + field, buffer_crc(base, size + size_t(4), field));
  return bytes;
}

static std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

std::string source_dir() { return env_or("BERTRT_SOURCE_DIR", BERTRT_SOURCE_DIR_DEFAULT); }
std::string build_dir() { return env_or("BERTRT_BUILD_DIR", BERTRT_BUILD_DIR_DEFAULT); }
std::string shared_dir() { return env_or("BERTRT_SHARED", source_dir() + "/../shared"); }
std::string data_dir() { return env_or("BERTRT_DATA", shared_dir() + "/data"); }
bool have_data(const std::string& path) { return std::filesystem::exists(path); }

int mapped_pages(const void* p, size_t pages, bool exclusive) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const int fd = ::open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return -1;
  std::vector<uint64_t> e(pages);
  const auto at = off_t(reinterpret_cast<uintptr_t>(p) / page * sizeof(uint64_t));
  const ssize_t got = ::pread(fd, e.data(), pages * sizeof(uint64_t), at);
  ::close(fd);
  if (got != ssize_t(pages * sizeof(uint64_t))) return -1;
  int n = 0;
  for (uint64_t x : e) n += (x >> 63) & (exclusive ? (x >> 56) & 1 : 1);
  return n;
}

bool have_torch() {
  static const bool ok =
      std::system((std::string(kPython) + " -c 'import torch' > /dev/null 2>&1").c_str()) == 0;
  return ok;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "bertrt_test_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed: " + tmpl);
  path_ = tmpl;
}

std::string TempDir::write(const std::string& name, const std::string& bytes) const {
  const std::string p = file(name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace bertrt::test
