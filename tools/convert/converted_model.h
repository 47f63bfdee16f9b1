// The result of converting a checkpoint, and the shared step that turns planned tensors into the
// records write_model_file stores (bounded memory: zero-copy views where the bytes can be used as
// they are, one converted copy otherwise).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "convert/checkpoint.h"
#include "io/model_file.h"

namespace bertrt::convert {

// "bertrt-convert 0.2.0": the metadata's converter_version (project(VERSION), core/version.h).
std::string converter_version();

struct ConvertOptions {
  DType dtype = DType::f32;    // storage dtype of the weights in the .brt
  std::string vocab;           // overrides <input folder>/vocab.txt when set
  bool drop_unknown = false;   // drop (with a warning) tensors bertrt does not know instead of failing
  // The pooler is not used (a sentence-transformers Transformer module, saved without one): an
  // absent pooler is still initialised, but without a warning.
  bool pooler_unused = false;
  // Called after each tensor: bytes of source tensors handled so far, and in all.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// contents.tensors point into `storage` or into the reader's mappings: keep the whole object
// alive (it is movable) until write_model_file has run.
struct ConvertedModel {
  ModelContents contents;
  std::vector<std::string> warnings;
  std::unique_ptr<CheckpointReader> reader;
  std::deque<std::vector<uint8_t>> storage;
};

// One output tensor: `name` with `shape`, from reader tensor `source` (transposed for TF kernels).
struct PlannedTensor {
  std::string name;
  size_t source = 0;
  bool transpose = false;
  std::vector<int64_t> shape;
};

// Appends each planned tensor to m.contents.tensors as `dtype`, checking the source is a finite
// float tensor whose element count matches `shape`. Bytes already in `dtype` and viewable in
// place (safetensors mappings) are not copied.
void emit_tensors(ConvertedModel& m, const std::vector<PlannedTensor>& plan, const ConvertOptions& opts);

// A tensor made by the converter (not read from the checkpoint): stored in m.storage.
void emit_owned(ConvertedModel& m, std::string name, std::vector<int64_t> shape, const std::vector<float>& values,
                DType dtype);

}  // namespace bertrt::convert
