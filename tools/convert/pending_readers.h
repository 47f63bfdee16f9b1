// TEMPORARY (until the tfckpt/torchckpt branches are merged): declarations of the readers other
// branches provide in tools/convert/tf_bundle.h and torch_reader.h.
#pragma once

#include <memory>
#include <string>

#include "convert/checkpoint.h"

namespace bertrt::convert {
std::unique_ptr<CheckpointReader> open_tf_bundle(const std::string& prefix);
std::unique_ptr<CheckpointReader> open_torch_checkpoint(const std::string& path);
}  // namespace bertrt::convert
