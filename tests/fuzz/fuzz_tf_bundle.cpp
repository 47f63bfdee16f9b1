// A whole TF tensor bundle: the input is both the .index (SSTable + BundleHeaderProto +
// BundleEntryProto per tensor) and its one data shard, so entries' offsets/sizes/crc32c point at
// real bytes and every tensor is read.
#include "convert/tf_bundle.h"
#include "fuzz_target.h"

BERTRT_FUZZ_TARGET(tf_bundle) {
  const std::string prefix = bertrt::fuzz::scratch_dir() + "/model.ckpt";
  bertrt::fuzz::write_file(prefix + ".index", data, size);
  bertrt::fuzz::write_file(prefix + ".data-00000-of-00001", data, size);
  const auto reader = bertrt::convert::open_tf_bundle(prefix);
  for (size_t i = 0; i < reader->tensors().size(); ++i) {
    try {
      (void)reader->read(i);
    } catch (const bertrt::Error&) {
    }
  }
}
