// A caller's bertrt_batch checked against the model before anything runs: shape, the sequence
// length against max_position_embeddings, ids, token types and mask values in range. The errors
// name the field (batch.seq_len, batch.input_ids[i], ...).
#pragma once

#include "bertrt/bertrt.h"
#include "capi/handles.h"
#include "model/encoder.h"

namespace bertrt::capi {

EncoderInputs batch_inputs(const bertrt_model& m, const bertrt_batch* batch, const char* fn);

}  // namespace bertrt::capi
