// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as leveldb and TensorFlow use it to
// check table blocks and tensor bytes, plus their "mask" of stored checksums. One implementation
// for the whole project: the converter checks TF bundles with it, the .brt writer and loader
// checksum every tensor segment with it (io/model_file.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace bertrt::crc32c {

// crc32c of data[0, n) continued from `crc` (the crc32c of the bytes before them; 0 to start).
uint32_t extend(uint32_t crc, const void* data, size_t n);
inline uint32_t value(const void* data, size_t n) { return extend(0, data, n); }
// The table-driven version extend() falls back to without SSE4.2 or ARMv8 CRC32 (exposed for the
// tests).
uint32_t extend_portable(uint32_t crc, const void* data, size_t n);
// What extend() runs on this CPU, chosen once at run time: "sse4.2" (x86-64 crc32), "armv8-crc"
// (aarch64 crc32c*, HWCAP_CRC32) or "portable".
const char* implementation();

// leveldb/TF store masked checksums, because the crc of a string that embeds its own crc is
// degenerate (leveldb util/crc32c.h): rotate right by 15 bits and add a constant.
constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline uint32_t mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace bertrt::crc32c
