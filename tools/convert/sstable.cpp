#include "convert/sstable.h"

#include <snappy.h>

#include "core/crc32c.h"
#include "convert/varint.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace bertrt::convert {
namespace {

// leveldb table/format.h: footer = metaindex handle, index handle (varints, padded to 40 bytes),
// then the 64-bit magic; each block is followed by 1 type byte and a 4-byte masked crc32c.
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;
constexpr size_t kTrailerSize = 5;
constexpr uint8_t kNoCompression = 0;
constexpr uint8_t kSnappyCompression = 1;
// No real index block is near this (TF writes 256 KiB blocks); a bigger claim is corruption.
constexpr size_t kMaxBlockSize = size_t(64) << 20;

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

class TableParser {
 public:
  TableParser(const uint8_t* data, size_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}

  std::vector<SstableEntry> entries() {
    if (size_ < kFooterSize)
      fail("{}: not a TF index (table): {} bytes, shorter than the 48-byte footer", path_, size_);
    const uint8_t* footer = data_ + size_ - kFooterSize;
    const uint64_t magic = load_le64(footer + 40);
    if (magic != kTableMagic)
      fail("{}: not a TF index (table): footer magic 0x{:016x}, expected 0x{:016x} (truncated or "
           "not a tensor bundle)",
           path_, magic, kTableMagic);
    const uint8_t* p = footer;
    const uint8_t* end = footer + 40;
    BlockHandle metaindex = handle(&p, end, "footer metaindex handle");
    (void)metaindex;  // TF bundles keep no meta blocks (filters); nothing to read there.
    BlockHandle index = handle(&p, end, "footer index handle");

    std::vector<SstableEntry> out;
    std::string index_block = block(index, "index block");
    for_each_entry(index_block, "index block", [&](std::string&&, std::string&& value) {
      const auto* q = reinterpret_cast<const uint8_t*>(value.data());
      BlockHandle h = handle(&q, q + value.size(), "index entry");
      std::string data_block = block(h, "data block");
      for_each_entry(data_block, "data block", [&](std::string&& k, std::string&& v) {
        if (!out.empty() && k <= out.back().key)
          fail("{}: data block at offset {}: keys out of order ('{}' after '{}')", path_,
               h.offset, k, out.back().key);
        out.push_back({std::move(k), std::move(v)});
      });
    });
    return out;
  }

 private:
  BlockHandle handle(const uint8_t** p, const uint8_t* end, const char* what) const {
    BlockHandle h;
    if (!get_varint64(p, end, &h.offset) || !get_varint64(p, end, &h.size))
      fail("{}: corrupt {} (bad varint)", path_, what);
    return h;
  }

  // The contents of the block at `h`, crc-checked and decompressed.
  std::string block(const BlockHandle& h, const char* what) const {
    const uint64_t limit = size_ - kFooterSize;
    if (h.offset > limit || h.size > limit - h.offset || kTrailerSize > limit - h.offset - h.size)
      fail("{}: {} handle (offset {}, size {}) runs past the end of the {}-byte file (truncated?)",
           path_, what, h.offset, h.size, size_);
    const uint8_t* b = data_ + h.offset;
    const size_t n = static_cast<size_t>(h.size);
    const uint8_t type = b[n];
    const uint32_t stored = crc32c::unmask(load_le32(b + n + 1));
    const uint32_t actual = crc32c::value(b, n + 1);  // the crc covers the type byte too
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    // Fuzz builds only (tests/fuzz/fuzz.cmake): mutated blocks go on to the block parser instead
    // of all stopping here. Every other build checks.
    constexpr bool kCheckCrc = false;
#else
    constexpr bool kCheckCrc = true;
#endif
    if (kCheckCrc && stored != actual)
      fail("{}: {} at offset {}: crc32c mismatch (stored 0x{:08x}, computed 0x{:08x}): the file is "
           "corrupt",
           path_, what, h.offset, stored, actual);
    const char* src = reinterpret_cast<const char*>(b);
    if (type == kNoCompression) return std::string(src, n);
    if (type != kSnappyCompression)
      fail("{}: {} at offset {}: unknown compression type {} (expected 0 none or 1 snappy)", path_,
           what, h.offset, type);
    size_t len = 0;
    // Snappy expands at most ~21x (a 3-byte copy yields 64 bytes); bound the claimed length
    // before allocating so a corrupt header cannot ask for gigabytes.
    if (!snappy::GetUncompressedLength(src, n, &len) || len > kMaxBlockSize || len > 32 * n + 64)
      fail("{}: {} at offset {}: bad snappy data (uncompressed length unreadable or implausible)",
           path_, what, h.offset);
    std::string out;
    if (!snappy::Uncompress(src, n, &out) || out.size() != len)
      fail("{}: {} at offset {}: bad snappy data", path_, what, h.offset);
    return out;
  }

  // leveldb table/block.cc: entries are (varint32 shared, varint32 non_shared, varint32 value_len,
  // key suffix, value); the block ends with fixed32 restart offsets and their fixed32 count.
  template <typename Fn>
  void for_each_entry(const std::string& block, const char* what, Fn&& fn) const {
    const auto* b = reinterpret_cast<const uint8_t*>(block.data());
    const size_t n = block.size();
    if (n < 4) fail("{}: {}: {} bytes, too short for its restart count", path_, what, n);
    const uint32_t num_restarts = load_le32(b + n - 4);
    if (num_restarts > (n - 4) / 4)
      fail("{}: {}: restart count {} does not fit the {}-byte block", path_, what, num_restarts, n);
    const uint8_t* p = b;
    const uint8_t* end = b + n - 4 - 4 * size_t(num_restarts);
    std::string key;
    while (p < end) {
      uint32_t shared, non_shared, value_len;
      if (!get_varint32(&p, end, &shared) || !get_varint32(&p, end, &non_shared) ||
          !get_varint32(&p, end, &value_len))
        fail("{}: {}: corrupt entry header (bad varint) at byte {}", path_, what, p - b);
      if (shared > key.size())
        fail("{}: {}: entry at byte {} shares {} key bytes but the previous key has {}", path_,
             what, p - b, shared, key.size());
      if (non_shared > size_t(end - p) || value_len > size_t(end - p) - non_shared)
        fail("{}: {}: entry at byte {} (key {} + value {} bytes) runs past the block end", path_,
             what, p - b, non_shared, value_len);
      key.resize(shared);
      key.append(reinterpret_cast<const char*>(p), non_shared);
      p += non_shared;
      std::string value(reinterpret_cast<const char*>(p), value_len);
      p += value_len;
      fn(std::string(key), std::move(value));
    }
  }

  const uint8_t* data_;
  size_t size_;
  const std::string& path_;
};

}  // namespace

std::vector<SstableEntry> read_sstable(const uint8_t* data, size_t size, const std::string& path) {
  return TableParser(data, size, path).entries();
}

std::vector<SstableEntry> read_sstable_file(const std::string& path) {
  MappedFile file = MappedFile::open(path);
  return read_sstable(file.data(), file.size(), path);
}

}  // namespace bertrt::convert
