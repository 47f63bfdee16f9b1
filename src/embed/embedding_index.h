// The embedding index file of `bertrt search`: a corpus's embeddings, computed once, with what they
// depend on (the model file, the corpus file, the embed options), so that a later run can tell
// whether they still hold. Little-endian, version 1:
//
//   offset  size  field
//        0     8  magic "BRTINDEX"
//        8     4  format version (1)
//       12     4  dim: embedding width, 1 … 65536
//       16     8  count: embeddings (corpus lines)
//       24     8  model_bytes: size of the model file
//       32     8  corpus_bytes: size of the corpus file
//       40     4  model_crc32c: CRC-32C of the model file's bytes
//       44     4  corpus_crc32c: CRC-32C of the corpus file's bytes
//       48     4  options_bytes: length of the options text, at most 65536
//       52     …  options: the embed options as canonical JSON (UTF-8)
//              …  zero bytes up to the next multiple of 64 (the data's offset)
//              …  count × dim float32, row-major (finite)
//              4  CRC-32C of every byte before it
//
// The reader checks every field, the exact file size and the CRC before any embedding is used: a
// truncated, foreign or edited file is an error naming the file and what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/mapped_file.h"

namespace bertrt {

// What an index's embeddings depend on: when any of it differs, they are not the embeddings the
// caller would compute.
struct EmbeddingIndexKey {
  uint64_t model_bytes = 0, corpus_bytes = 0;
  uint32_t model_crc32c = 0, corpus_crc32c = 0;
  std::string options;  // the embed options, canonical JSON

  bool operator==(const EmbeddingIndexKey& o) const {
    return model_bytes == o.model_bytes && corpus_bytes == o.corpus_bytes &&
           model_crc32c == o.model_crc32c && corpus_crc32c == o.corpus_crc32c &&
           options == o.options;
  }
};

// An index's contents; `embeddings` points into the bytes it was parsed from.
struct EmbeddingIndexView {
  EmbeddingIndexKey key;
  uint32_t dim = 0;
  uint64_t count = 0;
  const float* embeddings = nullptr;  // [count, dim]
};

inline constexpr uint32_t kEmbeddingIndexVersion = 1;
inline constexpr uint32_t kEmbeddingIndexMaxDim = 65536;
inline constexpr uint32_t kEmbeddingIndexMaxOptions = 65536;

// Parses and verifies an index held in data[0, size) (4-byte aligned). Throws bertrt::Error
// starting with `name` (the file): bad magic, another version, a field out of range, a size that
// is not the one the header implies (truncated or trailing bytes), non-zero padding, options that
// are not UTF-8, a CRC mismatch, a non-finite value.
EmbeddingIndexView parse_embedding_index(const uint8_t* data, size_t size, const std::string& name);

// An index file, mapped and verified; the view's embeddings live as long as it does.
class EmbeddingIndex {
 public:
  // Throws bertrt::Error naming `path` when it cannot be read or parse_embedding_index refuses it.
  static EmbeddingIndex open(const std::string& path);
  const EmbeddingIndexView& view() const { return view_; }

 private:
  MappedFile file_;
  EmbeddingIndexView view_;
};

// Writes `path` atomically (a failed write leaves an old file untouched). Throws bertrt::Error
// naming the path; dim and options outside the format's limits are errors too.
void write_embedding_index(const std::string& path, const EmbeddingIndexKey& key,
                           const float* embeddings, uint64_t count, uint32_t dim);

// What differs from `stored` to `wanted`, in words ("the model file (…)", "the corpus file (…)",
// "the embed options (…)", joined by "; "); empty when nothing does.
std::string embedding_index_difference(const EmbeddingIndexKey& stored,
                                       const EmbeddingIndexKey& wanted);

// CRC-32C and size of a file's bytes (the key's model and corpus fields). Throws bertrt::Error
// naming `path` when it cannot be read.
uint32_t file_crc32c(const std::string& path, uint64_t* bytes);

}  // namespace bertrt
