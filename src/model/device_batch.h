// The batch in backend memory. BertModel::forward hands the caller's host batch to the backend in
// two uploads (every int tensor in one block, the float ones in another) and keeps the host copy,
// which is what the host-side bookkeeping reads (label counts, accuracy, span targets).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/device_array.h"
#include "model/encoder.h"
#include "model/targets.h"

namespace bertrt {

class DeviceBatch {
 public:
  // Uploads `in` and `t` (host) to `be`, and the additive attention mask into mask_add [B·T]
  // (backend memory; 0 keep, −10000 drop as in google-research/bert modeling.py; none for a
  // packed batch, EncoderInputs::cu_seqlens, whose positions restart per sequence). Span positions
  // are clamped as Hugging Face does (span_head.h). Checks nothing: the caller validated `in`.
  void upload(Backend& be, const EncoderInputs& in, const Targets& t, float* mask_add);

  // In backend memory: input_ids, token_type_ids (zeros when the caller gave none); the
  // attention_mask is nullptr (it is mask_add now). Targets: nullptr where the caller's were.
  EncoderInputs inputs;
  const int32_t* position_ids = nullptr;  // [B·T] t for every row
  Targets targets;
  // The same targets on the host (span positions clamped), valid until the next upload.
  Targets host;

 private:
  std::vector<int32_t> ints_, cu_;  // cu_: a packed batch's cu_seqlens (host; inputs points here)
  std::vector<float> floats_;
  DeviceArray<int32_t> dev_ints_;
  DeviceArray<float> dev_floats_;
};

}  // namespace bertrt
