// Safetensors files as a CheckpointReader: one file, or the shards a Hugging Face
// model.safetensors.index.json names. The files are memory-mapped and tensors are handed out as
// views into the mappings, so converting an f32 checkpoint to f32 copies no weight bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "convert/checkpoint.h"

namespace bertrt::convert {

// Readers whose tensors already lie in memory as C-contiguous little-endian bytes (a mapping)
// implement this too; conversion then points the output at them instead of copying.
class ZeroCopyReader {
 public:
  virtual ~ZeroCopyReader() = default;
  // Bytes of tensor i (tensors()[i].nbytes of them), valid while the reader lives; nullptr when
  // this tensor cannot be viewed in place.
  virtual const uint8_t* view(size_t i) const = 0;
};

// The bytes of tensor i without a copy when `r` can give them, else nullptr.
const uint8_t* tensor_view(const CheckpointReader& r, size_t i);

// One .safetensors file. Throws bertrt::Error naming the file for a malformed header (see
// io/safetensors.h for what is checked).
std::unique_ptr<CheckpointReader> open_safetensors(const std::string& path);

}  // namespace bertrt::convert
