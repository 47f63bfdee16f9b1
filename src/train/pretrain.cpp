#include "train/pretrain.h"

#include <numeric>

#include "core/error.h"

namespace bertrt {

Batch slice_batch(const Batch& b, int begin, int count) {
  if (begin < 0 || count < 1 || begin + count > b.batch_size)
    fail("slice [{}, {}) of a batch of {}", begin, begin + count, b.batch_size);
  const size_t T = size_t(b.seq_len), lo = size_t(begin) * T, hi = size_t(begin + count) * T;
  Batch s;
  s.batch_size = count, s.seq_len = b.seq_len;
  s.input_ids.assign(b.input_ids.begin() + lo, b.input_ids.begin() + hi);
  s.token_type_ids.assign(b.token_type_ids.begin() + lo, b.token_type_ids.begin() + hi);
  s.attention_mask.assign(b.attention_mask.begin() + lo, b.attention_mask.begin() + hi);
  for (size_t i = 0; i < b.masked_lm_positions.size(); ++i) {
    const size_t pos = size_t(b.masked_lm_positions[i]);
    if (pos < lo || pos >= hi) continue;
    s.masked_lm_positions.push_back(int32_t(pos - lo));
    s.masked_lm_ids.push_back(b.masked_lm_ids[i]);
  }
  s.next_sentence_labels.assign(b.next_sentence_labels.begin() + begin,
                                b.next_sentence_labels.begin() + begin + count);
  return s;
}

EncoderInputs batch_inputs(const Batch& b) {
  return EncoderInputs{b.batch_size, b.seq_len, b.input_ids.data(), b.token_type_ids.data(),
                       b.attention_mask.data()};
}

Targets batch_targets(const Batch& b) {
  Targets t;
  t.mlm_positions = b.masked_lm_positions.data();
  t.mlm_labels = b.masked_lm_ids.data();
  t.num_masked = int(b.masked_lm_positions.size());
  t.nsp_labels = b.next_sentence_labels.data();
  return t;
}

PretrainEval evaluate_pretraining(BertModel& model, Backend& be,
                                  const std::vector<PretrainingExample>& examples, int batch_size,
                                  int seq_len, int32_t pad_id) {
  PretrainEval e;
  double mlm_loss_sum = 0, nsp_loss_sum = 0;
  int64_t mlm_correct = 0, nsp_correct = 0, nsp_count = 0;
  for (size_t begin = 0; begin < examples.size(); begin += batch_size) {
    const Batch b = make_pretraining_batch(examples, begin, batch_size, seq_len, pad_id);
    const ForwardResult r = model.forward(be, batch_inputs(b), batch_targets(b), false);
    mlm_loss_sum += r.mlm.loss * r.mlm.count;
    mlm_correct += r.mlm.correct;
    e.masked += r.mlm.count;
    nsp_loss_sum += r.nsp.loss * r.nsp.count;
    nsp_correct += r.nsp.correct;
    nsp_count += r.nsp.count;
    e.examples += b.batch_size;
  }
  if (e.masked) e.mlm_loss = mlm_loss_sum / e.masked, e.mlm_accuracy = double(mlm_correct) / e.masked;
  if (nsp_count) e.nsp_loss = nsp_loss_sum / nsp_count, e.nsp_accuracy = double(nsp_correct) / nsp_count;
  return e;
}

std::vector<Batch> split_batch(const Batch& b, int K) {
  if (K < 1 || b.batch_size % K != 0)
    fail("--batch-size {} is not a multiple of --gradient-accumulation-steps {}", b.batch_size, K);
  if (K == 1) return {b};
  std::vector<Batch> parts;
  for (int k = 0; k < K; ++k)
    parts.push_back(slice_batch(b, k * (b.batch_size / K), b.batch_size / K));
  return parts;
}

void stream_micro_batches(PretrainingStream& stream, int64_t first_step, int64_t last_step, int K,
                          const MicroBatchFn& on_micro_batch) {
  for (int64_t step = first_step; step <= last_step; ++step) {
    const std::vector<Batch> parts = split_batch(stream.next(), K);
    for (int k = 0; k < K; ++k) on_micro_batch(step, k, K, parts[size_t(k)]);
  }
}

void pretrain(Trainer& trainer, PretrainingStream& stream, int64_t total_steps,
              const std::function<void(const PretrainStepLog&)>& on_step,
              const MicroBatchFn& on_micro_batch) {
  const int K = trainer.options().gradient_accumulation_steps;
  StepClock clock;
  while (trainer.steps_done() < total_steps) {
    const Batch b = stream.next();
    const std::vector<Batch> parts = split_batch(b, K);
    std::vector<MicroBatch> micro;
    for (const Batch& p : parts) micro.push_back({batch_inputs(p), batch_targets(p)});
    if (on_micro_batch)
      for (int k = 0; k < K; ++k) on_micro_batch(trainer.steps_done() + 1, k, K, parts[size_t(k)]);
    PretrainStepLog log;
    log.result = trainer.step(micro);
    log.tokens_per_second =
        clock.lap(std::accumulate(b.attention_mask.begin(), b.attention_mask.end(), int64_t(0)));
    log.elapsed_seconds = clock.elapsed_seconds();
    log.step = trainer.steps_done();
    log.total_steps = total_steps;
    log.epoch = stream.epoch();
    if (on_step) on_step(log);
  }
}

}  // namespace bertrt
