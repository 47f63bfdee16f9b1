// The .brt FlatBuffer's own checksum (schema Model.buffer_crc32c): CRC-32C of the size-prefixed
// buffer with the field's 4 bytes read as zero. The writer stores 0, checksums, then patches the
// value in; the loader finds the field through the root table's vtable and checksums the same way.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstddef>
#include <cstdint>

#include "bertrt_generated.h"
#include "core/crc32c.h"

namespace bertrt {

// Offset of Model.buffer_crc32c's 4 bytes from `base` (the size prefix), or 0 when the field is
// absent. The buffer must have passed the FlatBuffers verifier (its offsets are then in range).
inline size_t buffer_crc_field_offset(const uint8_t* base) {
  using flatbuffers::ReadScalar;
  const uint8_t* buf = base + sizeof(flatbuffers::uoffset_t);  // past the size prefix
  const uint8_t* table = buf + ReadScalar<flatbuffers::uoffset_t>(buf);
  const uint8_t* vtable = table - ReadScalar<flatbuffers::soffset_t>(table);
  const auto vt = static_cast<flatbuffers::voffset_t>(fb::Model::VT_BUFFER_CRC32C);
  if (vt >= ReadScalar<flatbuffers::voffset_t>(vtable)) return 0;  // an older vtable
  const auto field = ReadScalar<flatbuffers::voffset_t>(vtable + vt);
  return field == 0 ? 0 : static_cast<size_t>(table + field - base);
}

// CRC-32C of base[0, n) with the 4 bytes at `field` read as zero.
inline uint32_t buffer_crc(const uint8_t* base, size_t n, size_t field) {
  const uint8_t zero[4] = {0, 0, 0, 0};
  uint32_t crc = crc32c::extend(0, base, field);
  crc = crc32c::extend(crc, zero, sizeof zero);
  return crc32c::extend(crc, base + field + sizeof zero, n - field - sizeof zero);
}

}  // namespace bertrt
