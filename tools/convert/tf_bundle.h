// Reader of TensorFlow tensor bundles (tf.train.Saver V2 checkpoints, SavedModel variables):
// PREFIX.index, an SSTable whose empty key holds a BundleHeaderProto and whose other keys are
// tensor names mapped to BundleEntryProto (dtype, shape, shard, offset, size, masked crc32c),
// and PREFIX.data-NNNNN-of-MMMMM shards holding the raw little-endian tensor bytes
// (tensorflow/core/protobuf/tensor_bundle.proto, tensorflow/core/util/tensor_bundle/).
#pragma once

#include <memory>
#include <string>

#include "convert/checkpoint.h"

namespace bertrt::convert {

// Opens the bundle at `path`: a prefix ("dir/bert_model.ckpt"), the .index file itself, or a
// directory holding exactly one *.index. Listing reads only the .index; read(i) maps the data
// shard of tensor i on first use and verifies its offset/size and crc32c.
// Tensors come in index (sorted name) order. dtypes: F32 F64 I32 U8 I16 I8 I64 BOOL BF16 F16,
// and STRING, whose read() returns TF's serialized layout (varint64 lengths, masked crc32c of
// the lengths, then the bytes; nbytes = 0 in the listing).
// Throws bertrt::Error naming the file (and tensor) for: a missing or malformed .index, a
// big-endian bundle, a partitioned (sliced) variable, an unsupported dtype, a shape whose byte
// size disagrees with the entry's size; read(): a missing shard, bytes past the shard's end, a
// crc32c mismatch.
std::unique_ptr<CheckpointReader> open_tf_bundle(const std::string& path);

}  // namespace bertrt::convert
