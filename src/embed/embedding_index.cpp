#include "embed/embedding_index.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/atomic_file.h"
#include "core/crc32c.h"
#include "core/error.h"
#include "core/utf8.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the index's header and floats are read and written in host byte order");

namespace bertrt {

namespace {

constexpr char kMagic[8] = {'B', 'R', 'T', 'I', 'N', 'D', 'E', 'X'};
constexpr size_t kFixedHeader = 52;  // up to the options text
constexpr size_t kAlign = 64;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store(std::vector<uint8_t>& out, size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof v);
}

size_t data_offset(size_t options_bytes) {
  return (kFixedHeader + options_bytes + kAlign - 1) / kAlign * kAlign;
}

std::string short_options(const std::string& s) {
  return s.size() <= 200 ? s : s.substr(0, 200) + "…";
}

}  // namespace

EmbeddingIndexView parse_embedding_index(const uint8_t* data, size_t size,
                                         const std::string& name) {
  if (size < kFixedHeader + 4 || std::memcmp(data, kMagic, sizeof kMagic) != 0)
    fail("{}: not a bertrt embedding index (no \"BRTINDEX\" magic{})", name,
         size < kFixedHeader + 4 ? fmt::format(", {} bytes", size) : "");
  const uint32_t version = load<uint32_t>(data + 8);
  if (version != kEmbeddingIndexVersion)
    fail("{}: embedding index format version {}; this bertrt reads version {}", name, version,
         kEmbeddingIndexVersion);
  EmbeddingIndexView v;
  v.dim = load<uint32_t>(data + 12);
  v.count = load<uint64_t>(data + 16);
  v.key.model_bytes = load<uint64_t>(data + 24);
  v.key.corpus_bytes = load<uint64_t>(data + 32);
  v.key.model_crc32c = load<uint32_t>(data + 40);
  v.key.corpus_crc32c = load<uint32_t>(data + 44);
  const uint32_t options_bytes = load<uint32_t>(data + 48);
  if (v.dim < 1 || v.dim > kEmbeddingIndexMaxDim)
    fail("{}: dim {} is outside [1, {}]", name, v.dim, kEmbeddingIndexMaxDim);
  if (options_bytes > kEmbeddingIndexMaxOptions)
    fail("{}: options_bytes {} is above {}", name, options_bytes, kEmbeddingIndexMaxOptions);
  const size_t offset = data_offset(options_bytes);
  // The size the header implies, without overflow: offset + count·dim·4 + 4 == size.
  const size_t room = size >= offset + 4 ? size - offset - 4 : 0;
  const size_t row_bytes = size_t(v.dim) * sizeof(float);
  if (size < offset + 4 || v.count > room / row_bytes || v.count * row_bytes != room)
    fail(
        "{}: {} bytes, but its header ({} embeddings of {} dimensions) makes it {}; the file is "
        "truncated or was changed",
        name, size, v.count, v.dim,
        v.count <= (SIZE_MAX - offset - 4) / row_bytes
            ? std::to_string(offset + v.count * row_bytes + 4)
            : std::string("larger than any file"));
  v.key.options.assign(reinterpret_cast<const char*>(data) + kFixedHeader, options_bytes);
  if (first_invalid_utf8(v.key.options) != std::string::npos)
    fail("{}: the options text is not UTF-8", name);
  for (size_t i = kFixedHeader + options_bytes; i < offset; ++i)
    if (data[i] != 0) fail("{}: non-zero padding byte at offset {}", name, i);
  const uint32_t stored = load<uint32_t>(data + size - 4);
  const uint32_t crc = crc32c::extend(0, data, size - 4);
  if (stored != crc)
    fail("{}: CRC-32C mismatch (stored {:08x}, computed {:08x}): the file is damaged", name, stored,
         crc);
  if (reinterpret_cast<uintptr_t>(data + offset) % alignof(float) != 0)
    fail("{}: the embeddings are not aligned in memory", name);
  v.embeddings = reinterpret_cast<const float*>(data + offset);
  const size_t n = size_t(v.count) * v.dim;
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(v.embeddings[i]))
      fail("{}: embedding {} has a non-finite value at dimension {}", name, i / v.dim, i % v.dim);
  return v;
}

EmbeddingIndex EmbeddingIndex::open(const std::string& path) {
  EmbeddingIndex index;
  index.file_ = MappedFile::open(path);
  static const uint8_t kEmpty[4] = {};
  const uint8_t* p = index.file_.data() ? index.file_.data() : kEmpty;
  index.view_ = parse_embedding_index(p, index.file_.size(), path);
  return index;
}

void write_embedding_index(const std::string& path, const EmbeddingIndexKey& key,
                           const float* embeddings, uint64_t count, uint32_t dim) {
  if (dim < 1 || dim > kEmbeddingIndexMaxDim)
    fail("{}: dim {} is outside [1, {}]", path, dim, kEmbeddingIndexMaxDim);
  if (key.options.size() > kEmbeddingIndexMaxOptions)
    fail("{}: the embed options take {} bytes, more than the index format's {}", path,
         key.options.size(), kEmbeddingIndexMaxOptions);
  const size_t offset = data_offset(key.options.size());
  std::vector<uint8_t> header(offset, 0);
  std::memcpy(header.data(), kMagic, sizeof kMagic);
  store(header, 8, kEmbeddingIndexVersion);
  store(header, 12, dim);
  store(header, 16, count);
  store(header, 24, key.model_bytes);
  store(header, 32, key.corpus_bytes);
  store(header, 40, key.model_crc32c);
  store(header, 44, key.corpus_crc32c);
  store(header, 48, uint32_t(key.options.size()));
  std::memcpy(header.data() + kFixedHeader, key.options.data(), key.options.size());
  const size_t data_bytes = size_t(count) * dim * sizeof(float);
  uint32_t crc = crc32c::extend(0, header.data(), header.size());
  crc = crc32c::extend(crc, embeddings, data_bytes);
  AtomicFile out(path);
  out.write(header.data(), header.size());
  out.write(embeddings, data_bytes);
  out.write(&crc, sizeof crc);
  out.commit();
}

std::string embedding_index_difference(const EmbeddingIndexKey& stored,
                                       const EmbeddingIndexKey& wanted) {
  std::vector<std::string> parts;
  if (stored.model_crc32c != wanted.model_crc32c || stored.model_bytes != wanted.model_bytes)
    parts.push_back(fmt::format(
        "the model file (indexed: {} bytes, CRC-32C {:08x}; now: {} bytes, CRC-32C {:08x})",
        stored.model_bytes, stored.model_crc32c, wanted.model_bytes, wanted.model_crc32c));
  if (stored.corpus_crc32c != wanted.corpus_crc32c || stored.corpus_bytes != wanted.corpus_bytes)
    parts.push_back(fmt::format(
        "the corpus file (indexed: {} bytes, CRC-32C {:08x}; now: {} bytes, CRC-32C {:08x})",
        stored.corpus_bytes, stored.corpus_crc32c, wanted.corpus_bytes, wanted.corpus_crc32c));
  if (stored.options != wanted.options)
    parts.push_back(fmt::format("the embed options (indexed: {}; now: {})",
                                short_options(stored.options), short_options(wanted.options)));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

uint32_t file_crc32c(const std::string& path, uint64_t* bytes) {
  const MappedFile f = MappedFile::open(path);
  if (bytes) *bytes = f.size();
  return f.size() ? crc32c::extend(0, f.data(), f.size()) : 0;
}

}  // namespace bertrt
