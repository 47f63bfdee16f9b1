// TEMPORARY stubs, removed when the real readers are merged.
#include "convert/pending_readers.h"

#include "core/error.h"

namespace bertrt::convert {
std::unique_ptr<CheckpointReader> open_tf_bundle(const std::string& prefix) {
  fail("{}: the TF1 bundle reader is not in this build yet", prefix);
}
std::unique_ptr<CheckpointReader> open_torch_checkpoint(const std::string& path) {
  fail("{}: the torch.save reader is not in this build yet", path);
}
}  // namespace bertrt::convert
