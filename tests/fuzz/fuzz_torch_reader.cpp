// torch.save files, both formats: the zip archive (libzip, data.pkl, data/KEY records, byteorder)
// and the legacy pickle sequence (magic, protocol, sys_info, object, storage keys, raw storages);
// every listed tensor is then read (strides resolved, byte order swapped).
#include "convert/torch_reader.h"
#include "fuzz_target.h"

BERTRT_FUZZ_TARGET(torch_reader) {
  bertrt::fuzz::MemFile file(data, size);
  const auto reader = bertrt::convert::open_torch_checkpoint(file.path());
  for (size_t i = 0; i < reader->tensors().size(); ++i) {
    try {
      (void)reader->read(i);
    } catch (const bertrt::Error&) {
      // One bad tensor: the others are still read.
    }
  }
}
