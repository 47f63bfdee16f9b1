// Reader and writer for the safetensors format (https://github.com/huggingface/safetensors):
// 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {str: str}, "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}}
// then the data region; offsets are relative to the start of the data region, must cover it with
// no holes or overlaps, and e - b == numel * itemsize. Data is little-endian and NOT necessarily
// aligned (a header length that is not a multiple of 8 is legal), so read it with memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "core/mapped_file.h"

namespace bertrt {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;  // "F32","F16","BF16","F64","I64","I32","I16","I8","U8","U16","U32","U64","BOOL",...
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // reader: points into the mapping; writer: caller memory
  size_t nbytes = 0;
};

// Bytes per element of a safetensors dtype name; 0 when the name is unknown.
size_t safetensors_dtype_size(const std::string& dtype);

class SafetensorsFile {
 public:
  // Memory-maps and validates `path`; throws bertrt::Error naming the file (and the tensor).
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // by data offset
  const SafetensorsTensor* find(const std::string& name) const;  // nullptr if absent
  const SafetensorsTensor& at(const std::string& name) const;    // throws naming file + tensor
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // F32/F16/BF16/F64 -> f32 (F64 rounds to nearest). Throws for other dtypes.
  std::vector<float> to_f32(const std::string& name) const;
  // I64/I32/I16/I8/U8/U16/U32/U64/BOOL -> i64. Throws for float dtypes and U64 values > INT64_MAX.
  std::vector<int64_t> to_i64(const std::string& name) const;

 private:
  MappedFile file_;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Writes `tensors` (in the given order, each `nbytes` from `data`) and `metadata` atomically: temp
// file in the same folder, fsync, rename. The header is space-padded to a multiple of 8 bytes, as
// the safetensors library does, so data starts 8-byte aligned. Throws bertrt::Error for a
// duplicate or empty name, an unknown dtype, nbytes != numel * itemsize, or a missing folder.
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
// The same into `out` (named by out.path()), without committing it: for outputs of several files.
void write_safetensors(AtomicFile& out, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace bertrt
