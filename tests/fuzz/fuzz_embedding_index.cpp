// The embedding index of `bertrt search` (embed/embedding_index.h): magic, version, sizes, options
// text, padding, CRC-32C, finite values. The first byte chooses: odd, the trailing CRC is
// recomputed over the rest so that mutations reach the checks behind it; even, taken as it is.
#include <cstring>
#include <vector>

#include "core/crc32c.h"
#include "embed/embedding_index.h"
#include "fuzz_target.h"

BERTRT_FUZZ_TARGET(embedding_index) {
  if (size < 1) return;
  std::vector<uint32_t> aligned((size - 1 + 3) / 4 + 1);  // the parser wants 4-byte alignment
  auto* bytes = reinterpret_cast<uint8_t*>(aligned.data());
  std::memcpy(bytes, data + 1, size - 1);
  const size_t n = size - 1;
  if ((data[0] & 1) && n >= 4) {
    const uint32_t crc = bertrt::crc32c::extend(0, bytes, n - 4);
    std::memcpy(bytes + n - 4, &crc, 4);
  }
  const bertrt::EmbeddingIndexView v = bertrt::parse_embedding_index(bytes, n, "fuzz.index");
  // An accepted index keeps its promises: every value readable and finite.
  float sum = 0;
  for (size_t i = 0; i < size_t(v.count) * v.dim; ++i) sum += v.embeddings[i] * 0.0f;
  if (sum != 0.0f) __builtin_trap();
}
