// Internal to the torch reader: from an unpickled torch.save object to named tensor views of
// storages (listing rules in torch_reader.h), and the strided copy that makes them C-order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "convert/pickle.h"

namespace bertrt::convert::torch_detail {

// A storage as its persistent id names it:
//   zip:    ('storage', torch.FloatStorage, key, location, numel)
//   legacy: ('storage', torch.FloatStorage, root_key, location, numel, view_metadata)
// with view_metadata None or (view_key, offset, view_numel) in elements of the root storage.
struct StorageRef {
  std::string key;  // the root storage's key (zip record data/KEY; legacy key list entry)
  std::string dtype;
  size_t itemsize = 0;
  uint64_t numel = 0;        // elements of the root storage
  uint64_t view_offset = 0;  // legacy views: where the view starts in the root storage
  uint64_t view_numel = 0;   // elements the tensor may address (numel when not a view)
};

// A tensor: storage[storage_offset + sum(i_k * stride_k)] for each index i of `shape`.
struct TensorRef {
  std::string name;
  StorageRef storage;
  uint64_t storage_offset = 0;  // elements, relative to the view
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
  uint64_t numel = 0;
};

// Decodes a persistent id value. `what` names the source in messages.
StorageRef parse_storage(const pickle::Value& pid, const std::string& what);

// Every tensor under `root`, named by dotted paths, in pickle order. Checks shapes, strides and
// that each tensor stays inside its storage (view_numel); throws bertrt::Error naming the tensor.
std::vector<TensorRef> collect_tensors(const pickle::Document& doc, const std::string& what);

// C-order copy of `t` from `storage` (the root storage's bytes, at least numel * itemsize), with
// every element byte-swapped when `swap` (a big-endian file).
std::vector<uint8_t> gather(const TensorRef& t, const uint8_t* storage, bool swap);

// True when `t` is C-contiguous from the first element of its (unviewed) storage, so its bytes
// are the storage's first numel * itemsize bytes.
bool is_whole_storage(const TensorRef& t);

// Reverses the bytes of each `itemsize`-byte element of p[0, n).
void byteswap(uint8_t* p, size_t n, size_t itemsize);

}  // namespace bertrt::convert::torch_detail
