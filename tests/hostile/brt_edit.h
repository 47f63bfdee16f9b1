// A .brt model file taken apart into its FlatBuffer's fields (the FlatBuffers object API) and the
// bytes after the FlatBuffer, and put back together with every checksum recomputed: what an
// attacker does to a file whose checksums catch damage, not malice. Used by the hostile-file
// generator (make_hostile_models), the structure-aware fuzzer's mutator (brt_mutate.h) and tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bertrt_generated.h"

namespace bertrt::hostile {

struct BrtParts {
  // The FlatBuffer's fields. Tensor offsets (weights and optimizer moments) are relative to the
  // start of `data` (modulo 2^64: an offset before it, into the FlatBuffer, stays one).
  fb::ModelT model;
  // The file's bytes from the first 64-byte boundary after the FlatBuffer to its end.
  std::string data;
};

// The parts of a file, or nullopt when its bytes are no .brt FlatBuffer that passes the verifier,
// or one whose string vectors would decode to more than max_decoded bytes (many entries sharing
// one string: unpacking them is the cost the loader refuses to pay).
std::optional<BrtParts> take_apart(const std::string& file, uint64_t max_decoded = 64u << 20);

struct PackOptions {
  // Strings of equal text stored once (FlatBufferBuilder::CreateSharedString), as no bertrt writer
  // does: many vocabulary entries, labels or names then point at one string.
  bool share_strings = false;
  // Checksums recomputed over the final bytes: every tensor's that carries the field (a segment
  // outside the file keeps the value it has) and the header's when the model carries the field.
  bool checksums = true;
};

// The file: the FlatBuffer, zero padding to 64 bytes, `data`.
std::string put_together(const BrtParts& parts, const PackOptions& options = {});

// Appends `bytes` to parts.data at the next 64-byte boundary; returns its relative offset.
uint64_t append_segment(BrtParts& parts, const std::string& bytes);

// Rewrites parts.data to hold only the bytes some segment uses, each range once, 64-byte aligned,
// as the writer lays them out (segments that share bytes keep sharing them): after an edit
// replaced a segment by a new one, the old one's bytes no longer lie outside every tensor.
// Segments outside the data are left as they are.
void compact(BrtParts& parts);

// A tensor record pointing at [rel_offset, + size) of the data, with a checksum field to fill.
std::unique_ptr<fb::TensorT> make_tensor(const std::string& name, std::vector<int64_t> shape,
                                         fb::DType dtype, uint64_t rel_offset, uint64_t size);

// The record named `name` among the weights, or nullptr.
fb::TensorT* find_tensor(BrtParts& parts, const std::string& name);

}  // namespace bertrt::hostile
