// scan_segment: the loader's one pass over a tensor's bytes, checksum and value check together.
#include <algorithm>
#include <cstring>

#include "core/crc32c.h"
#include "io/model_file.h"

namespace bertrt {

namespace {

// Bytes hashed and then checked while still in the L1/L2 cache: the segment is read from memory
// (or the page cache) once.
constexpr size_t kBlockBytes = 16 << 10;

// Index of the first element of p[0, n) whose exponent bits are all ones (inf or NaN), or -1. The
// OR of the comparisons vectorises; the index is searched only in a block that has one.
template <typename U, U kExponent>
int64_t first_non_finite(const uint8_t* p, size_t n) {
  const size_t count = n / sizeof(U);
  U bad = 0;
  for (size_t i = 0; i < count; ++i) {
    U v;
    std::memcpy(&v, p + i * sizeof(U), sizeof v);
    bad |= static_cast<U>((v & kExponent) == kExponent);
  }
  if (!bad) return -1;
  for (size_t i = 0; i < count; ++i) {
    U v;
    std::memcpy(&v, p + i * sizeof(U), sizeof v);
    if ((v & kExponent) == kExponent) return static_cast<int64_t>(i);
  }
  return -1;
}

int64_t check_block(const uint8_t* p, size_t n, DType dtype) {
  switch (dtype) {
    case DType::f32: return first_non_finite<uint32_t, 0x7f800000u>(p, n);
    case DType::f16: return first_non_finite<uint16_t, 0x7c00u>(p, n);
    case DType::bf16: return first_non_finite<uint16_t, 0x7f80u>(p, n);
    case DType::i8:
    case DType::i32: return -1;
  }
  return -1;
}

}  // namespace

int64_t scan_segment(const uint8_t* p, size_t n, DType dtype, uint32_t* crc) {
  const size_t item = dtype_size(dtype);
  for (size_t at = 0; at < n; at += kBlockBytes) {
    const size_t len = std::min(kBlockBytes, n - at);  // a multiple of every itemsize
    if (crc) *crc = crc32c::extend(*crc, p + at, len);
    const int64_t bad = check_block(p + at, len, dtype);
    if (bad >= 0) return static_cast<int64_t>(at / item) + bad;
  }
  return -1;
}

}  // namespace bertrt
