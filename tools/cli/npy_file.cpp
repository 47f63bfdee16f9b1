#include "npy_file.h"

#include <fmt/format.h>

#include <cstdint>

#include "core/atomic_file.h"
#include "core/error.h"

namespace bertrt::cli {

void write_npy(const std::string& path, const char* descr, size_t itemsize, const void* x,
               size_t rows, size_t cols) {
  // The header dict, padded with spaces and ended by '\n' so that the data starts at a multiple
  // of 64 bytes (numpy's own writer aligns so since 1.14).
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}", descr, rows,
                  cols);
  const size_t preamble = 10;  // magic (6), version (2), header length (2)
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 65535) fail("{}: the .npy header is too long", path);
  AtomicFile out(path);
  const uint8_t magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, sizeof magic);
  const uint8_t len[2] = {uint8_t(header.size() & 0xff), uint8_t(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), header.size());
  out.write(x, rows * cols * itemsize);
  out.commit();
}

}  // namespace bertrt::cli
