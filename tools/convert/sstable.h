// Reader of leveldb-format tables ("SSTables"), the container of TensorFlow's tensor-bundle
// .index files (tensorflow/core/lib/io/{format,block,table}.cc, same layout as leveldb's
// table/format.cc): data blocks of prefix-compressed key/value entries with a restart array,
// an index block pointing at them, a 48-byte footer ending in a magic number, and after each
// block a 5-byte trailer (compression type: 0 none, 1 snappy; masked crc32c of block + type).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bertrt::convert {

struct SstableEntry {
  std::string key;
  std::string value;
};

// Every key/value pair of the table held in data[0, size), in table (sorted key) order. Every
// block crc is verified. Throws bertrt::Error naming `path` and what is wrong (bad magic,
// truncated file, block handle past the end, crc mismatch, bad varint, bad prefix-compression,
// bad snappy data, unknown compression type); lengths are bounded by the file size (and, for
// snappy, by 64 MiB per block) before anything is allocated.
std::vector<SstableEntry> read_sstable(const uint8_t* data, size_t size, const std::string& path);

// The same for a file on disk (memory-mapped while it is read).
std::vector<SstableEntry> read_sstable_file(const std::string& path);

}  // namespace bertrt::convert
