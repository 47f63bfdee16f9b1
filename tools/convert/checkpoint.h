// The one interface every checkpoint reader of bertrt-convert implements (TF1 tensor bundles,
// torch.save zip and legacy pickles, safetensors, and their sharded forms), so the name mapping,
// `--inspect` and the writers never care where the bytes came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bertrt::convert {

// What a reader lists before any tensor bytes are read (bounded memory: nothing is loaded yet).
struct CheckpointTensor {
  std::string name;            // as stored: TF variable name or state-dict key
  std::string dtype;           // safetensors dtype names: "F32","F16","BF16","F64","I64","I32",
                               // "I16","I8","U8","BOOL"; "STRING" for TF string tensors
  std::vector<int64_t> shape;  // empty = scalar
  uint64_t nbytes = 0;         // numel * itemsize (0 for STRING)
  std::string location;        // for messages and --inspect, e.g. "bert_model.ckpt.data-00000-of-00001"
};

class CheckpointReader {
 public:
  virtual ~CheckpointReader() = default;
  // "tf1-bundle", "safetensors", "torch-zip", "torch-legacy" (sharded sets report the same name).
  virtual std::string format() const = 0;
  virtual const std::vector<CheckpointTensor>& tensors() const = 0;
  // Tensor i as C-contiguous little-endian bytes (strides resolved), checksums verified. Throws
  // bertrt::Error naming the file and the tensor (e.g. a missing shard, a crc32c mismatch).
  virtual std::vector<uint8_t> read(size_t i) const = 0;
};

}  // namespace bertrt::convert

namespace bertrt::convert {

// F32/F16/BF16/F64 bytes of `t` → f32 (F64 rounds to nearest). Throws bertrt::Error naming
// `t.location` and `t.name` for other dtypes or a byte count that does not match the shape.
std::vector<float> bytes_to_f32(const CheckpointTensor& t, const std::vector<uint8_t>& bytes);

}  // namespace bertrt::convert
