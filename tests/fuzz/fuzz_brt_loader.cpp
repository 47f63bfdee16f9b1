// The .brt loader: size, identifier, FlatBuffer verifier, segments and their CRC-32C, dtypes,
// quantization records, config and vocab (ModelFile::open), then every tensor view read back as
// float (tensor_to_f32), as the model loader does.
#include "fuzz_target.h"
#include "io/model_file.h"

BERTRT_FUZZ_TARGET(brt_loader) {
  bertrt::fuzz::MemFile file(data, size);
  // Half the inputs skip the checksums so mutations of tensor bytes reach the views.
  bertrt::OpenOptions options;
  options.verify_checksums = size % 2 == 0;
  const bertrt::ModelFile m = bertrt::ModelFile::open(file.path(), options);
  for (const bertrt::TensorRecord& t : m.contents().tensors) {
    volatile float sink = 0;
    for (float x : bertrt::tensor_to_f32(t)) sink = sink + x;
  }
  if (m.contents().training_state)
    for (const bertrt::TensorRecord& t : m.contents().training_state->optimizer_tensors)
      (void)bertrt::tensor_to_f32(t);
}
