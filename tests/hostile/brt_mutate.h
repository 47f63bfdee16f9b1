// Structure-aware mutations of a .brt model file for the fuzzer (tests/fuzz/fuzz_brt_structured.cpp):
// each edits one field of the FlatBuffer — counts, offsets, sizes, shapes, dtypes, quantization
// records, strings (long, shared, with control characters), labels, heads, the embedding head
// (pooling modes, Dense modules and their tensors, max_seq_length, prompts, similarity function),
// task records, config numbers, the training state — or the tensor bytes (NaN, infinity), and the
// file is put back together with every checksum recomputed (brt_edit.h), so the loader's checks
// beyond the checksums are what the mutation reaches.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "brt_edit.h"

namespace bertrt::hostile {

// Applies 1 to 3 random edits to `parts` and sets `options` (shared strings, checksums kept or
// left out); returns a short description of the edits (for debugging a finding).
std::string mutate(BrtParts& parts, PackOptions& options, std::minstd_rand& rng);

// A task record (metadata "task") with random fields: known and unknown names, labels that match
// the head or not, negative, zero and huge numbers.
std::string random_task_record(std::minstd_rand& rng, const std::vector<std::string>& labels);

}  // namespace bertrt::hostile
