// What a path given to bertrt-convert is, and the reader for any supported weights file.
#pragma once

#include <memory>
#include <string>

#include "convert/checkpoint.h"

namespace bertrt::convert {

struct InputPaths {
  enum class Kind { hf, tf1 };
  Kind kind = Kind::hf;
  std::string dir;      // the folder holding the config and the vocab
  std::string weights;  // weights file, shard index (*.index.json) or TF checkpoint prefix
  std::string config;   // config.json (HF) or bert_config.json (TF1)
  std::string vocab;    // dir/vocab.txt (may not exist; the converter reports it)
};

// A folder with config.json (weights: model.safetensors, model.safetensors.index.json,
// pytorch_model.bin, pytorch_model.bin.index.json, first found, the order transformers prefers),
// a folder with bert_config.json and one TF checkpoint (*.index), or a weights file itself (its
// folder holds the config). Throws bertrt::Error naming the path and what was looked for.
InputPaths find_input(const std::string& path);

// The reader for one weights path: .safetensors, .bin/.pt/.pth (torch.save zip or legacy),
// *.index.json (HF shards), a TF bundle's .index file or prefix. Throws bertrt::Error naming the
// path when it is none of these.
std::unique_ptr<CheckpointReader> open_checkpoint(const std::string& path);

// Fails (naming `what` and the path) where the .brt output `path` exists and is not a .brt model
// file: an -o naming the input's safetensors, config.json or TF index (a slip of the shell) would
// replace the checkpoint.
void check_replaceable_brt(const std::string& what, const std::string& path);

// True when `path` is a .brt file: its identifier "BRT1" at byte 8, after the u32 size and the
// FlatBuffer's root offset (schema/bertrt.fbs).
bool is_brt_file(const std::string& path);

}  // namespace bertrt::convert
