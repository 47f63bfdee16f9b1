#include "capi/batch.h"

#include "capi/api_error.h"

namespace bertrt::capi {

EncoderInputs batch_inputs(const bertrt_model& m, const bertrt_batch* batch, const char* fn) {
  require(batch, fn, "batch");
  const BertConfig& c = m.loaded.model->config();
  const bertrt_batch& b = *batch;
  if (b.batch_size < 1)
    api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: batch.batch_size must be ≥ 1, got {}", fn,
             b.batch_size);
  if (b.seq_len < 1)
    api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: batch.seq_len must be ≥ 1, got {}", fn, b.seq_len);
  if (b.seq_len > c.max_position_embeddings)
    api_fail(BERTRT_E_INVALID_ARGUMENT,
             "{}: batch.seq_len {} exceeds the model's max_position_embeddings {}", fn, b.seq_len,
             c.max_position_embeddings);
  require(b.input_ids, fn, "batch.input_ids");
  const size_t n = size_t(b.batch_size) * size_t(b.seq_len);
  for (size_t i = 0; i < n; ++i) {
    if (b.input_ids[i] < 0 || b.input_ids[i] >= c.vocab_size)
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: batch.input_ids[{}] = {} is outside [0, {}) (vocab_size)", fn, i,
               b.input_ids[i], c.vocab_size);
    if (b.token_type_ids && (b.token_type_ids[i] < 0 || b.token_type_ids[i] >= c.type_vocab_size))
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: batch.token_type_ids[{}] = {} is outside [0, {}) (type_vocab_size)", fn, i,
               b.token_type_ids[i], c.type_vocab_size);
    if (b.attention_mask && b.attention_mask[i] != 0 && b.attention_mask[i] != 1)
      api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: batch.attention_mask[{}] = {} must be 0 or 1", fn, i,
               b.attention_mask[i]);
  }
  return EncoderInputs{b.batch_size, b.seq_len, b.input_ids, b.token_type_ids, b.attention_mask};
}

}  // namespace bertrt::capi
