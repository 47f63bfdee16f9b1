#include "train/pretrain.h"

#include <numeric>

namespace bertrt {

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

void pretrain(Trainer& trainer, PretrainingStream& stream, int64_t total_steps,
              const std::function<void(const PretrainStepLog&)>& on_step) {
  StepClock clock;
  while (trainer.steps_done() < total_steps) {
    const Batch b = stream.next();
    PretrainStepLog log;
    log.result = trainer.step(batch_inputs(b), batch_targets(b));
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
