// Reader of torch.save files (pytorch_model.bin, *.pt) that executes nothing: the pickle goes
// through the restricted unpickler (convert/pickle.h) and tensors are rebuilt from its value tree.
//
// Formats (torch/serialization.py):
// - zip (torch >= 1.6, starts with "PK"): <archive>/data.pkl is the pickle, storage KEY is the
//   record <archive>/data/KEY (stored uncompressed; read through libzip, CRC checked), and the
//   optional <archive>/byteorder record says "little" or "big" (absent in older files = little).
//   <archive> is the folder of the first record, as torch's own reader takes it.
// - legacy (pre-1.6, _use_new_zipfile_serialization=False): pickles of the magic number
//   0x1950a86a20f9469cfc6c, the protocol version 1001, sys_info {little_endian, ...}, the object,
//   and the list of storage keys; then, for each key IN THAT LIST'S ORDER, an int64 element count
//   and the raw bytes. Legacy storage views (view_metadata in the persistent id) are supported.
//
// What is listed: every tensor reachable from the root through dicts (OrderedDict included),
// lists and tuples, named by its dotted path of keys: {"state_dict": {"fc.weight": t}} lists
// "state_dict.fc.weight", a list element "opt.0". Integer keys print as decimal; a bare tensor at
// the root is named "". Non-tensor values (epoch, config strings, floats) are skipped, as is the
// `_metadata` BUILD state of a state dict. Stripping a wrapper such as "state_dict."/"model." is
// the name mapping's job. Tensors come from torch._utils._rebuild_tensor(_v2) and
// _rebuild_parameter(_with_state); storages F32, F64, F16, BF16, I64, I32, I16, I8, U8, BOOL.
// Tied weights (one tensor object under two keys) are listed under both names.
//
// Checked at open (bertrt::Error naming the file and the tensor or record): refused pickle
// globals/opcodes, a missing data.pkl or storage record, a storage shorter than a tensor's
// storage_offset + extent of its sizes/strides, negative sizes/strides, duplicate names, bad
// legacy magic/protocol, a legacy storage whose element count disagrees with its persistent id.
// read() returns C-order little-endian bytes: strides resolved (transposed, sliced, stride-0
// broadcast views), shared storages copied per tensor, big-endian files byte-swapped.
#pragma once

#include <memory>
#include <string>

#include "convert/checkpoint.h"

namespace bertrt::convert {

// format() is "torch-zip" or "torch-legacy". Memory: nothing is loaded at open but the pickle;
// each read() reads its tensor's storage (one zip record, or pread from the legacy file) and, for
// the usual whole-storage contiguous tensor, returns that buffer without a second copy.
// read() may be called from several threads. Throws bertrt::Error (see above).
std::unique_ptr<CheckpointReader> open_torch_checkpoint(const std::string& path);

}  // namespace bertrt::convert
