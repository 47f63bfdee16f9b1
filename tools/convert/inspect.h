// `bertrt-convert --inspect`: the tensors (name, dtype, shape, bytes) of any input the converter
// reads (HF folder, .safetensors, .bin/.pt/.pth, shard index, TF prefix/.index) or of a .brt.
#pragma once

#include <string>
#include <vector>

#include "convert/checkpoint.h"

namespace bertrt::convert {

struct Inspection {
  std::string path;
  std::string format;  // reader format ("safetensors", "torch-zip", ...) or "brt"
  std::vector<CheckpointTensor> tensors;  // dtypes as safetensors names (a .brt's f32 → "F32")
};

// Reads headers only (no tensor bytes). Throws bertrt::Error naming the path.
Inspection inspect_path(const std::string& path);
// One line per tensor: name, dtype, [shape], bytes; then a total line.
std::string inspection_text(const Inspection& in);
// {"path", "format", "total_bytes", "tensors": [{"name", "dtype", "shape", "bytes", "location"}]}
std::string inspection_json(const Inspection& in);

}  // namespace bertrt::convert
