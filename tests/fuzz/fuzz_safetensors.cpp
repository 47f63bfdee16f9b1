// safetensors: header length, JSON header, offsets covering the data region, then every tensor
// converted as the converter reads it (to_f32 for float dtypes, to_i64 for integer ones).
#include "fuzz_target.h"
#include "io/safetensors.h"

BERTRT_FUZZ_TARGET(safetensors) {
  bertrt::fuzz::MemFile file(data, size);
  const bertrt::SafetensorsFile f = bertrt::SafetensorsFile::open(file.path());
  for (const bertrt::SafetensorsTensor& t : f.tensors()) {
    try {
      (void)f.to_f32(t.name);
    } catch (const bertrt::Error&) {
      (void)f.to_i64(t.name);
    }
  }
}
