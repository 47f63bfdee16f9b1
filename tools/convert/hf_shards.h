// Sharded Hugging Face checkpoints: model.safetensors.index.json or pytorch_model.bin.index.json,
//   {"metadata": {"total_size": N}, "weight_map": {"<tensor name>": "<shard file name>", ...}}
// (transformers modeling_utils.py, load_sharded_checkpoint). The shards are opened with the
// reader for their format and presented as one CheckpointReader, tensors in shard order.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "convert/checkpoint.h"

namespace bertrt::convert {

using ShardOpener = std::function<std::unique_ptr<CheckpointReader>(const std::string& path)>;

// Opens every shard named in the index (paths relative to the index's folder) with `open_shard`.
// Throws bertrt::Error naming the index file for malformed JSON, a missing "weight_map", a shard
// path that leaves the folder, a missing shard file, a tensor the map puts in a shard that does
// not hold it, or a tensor held by two shards.
std::unique_ptr<CheckpointReader> open_sharded(const std::string& index_json, const ShardOpener& open_shard);

}  // namespace bertrt::convert
