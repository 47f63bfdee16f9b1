// Little-endian base-128 varints (protobuf wire format, leveldb's table format) and fixed-width
// little-endian loads, decoded from a bounded byte range. Decoders return false on a truncated or
// over-long varint so the caller can name the file and the field in its error.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bertrt::convert {

// Reads a varint of at most 64 bits from [*p, end); advances *p. False when the bytes end inside
// it or it is longer than 10 bytes / overflows 64 bits.
inline bool get_varint64(const uint8_t** p, const uint8_t* end, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    const uint8_t b = *(*p)++;
    if (shift == 63 && (b & 0x7e)) return false;  // bits beyond 64
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

// As get_varint64, but the value must fit 32 bits (leveldb's varint32 fields).
inline bool get_varint32(const uint8_t** p, const uint8_t* end, uint32_t* out) {
  uint64_t v;
  if (!get_varint64(p, end, &v) || v > 0xffffffffu) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

inline uint32_t load_le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint64_t load_le64(const uint8_t* p) {
  return uint64_t(load_le32(p)) | uint64_t(load_le32(p + 4)) << 32;
}

}  // namespace bertrt::convert
