#include "train/finetune.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/random.h"

namespace bertrt {

std::vector<EncodedExample> encode_examples(const Tokenizer& tokenizer,
                                            const std::vector<TextExample>& examples,
                                            int max_seq_length) {
  std::vector<EncodedExample> out;
  out.reserve(examples.size());
  for (const TextExample& e : examples) {
    Encoding enc = tokenizer.encode(e.text_a, e.text_b, max_seq_length, /*pad=*/false);
    out.push_back({std::move(enc.input_ids), std::move(enc.token_type_ids), e.label});
  }
  return out;
}

ClassificationBatch make_classification_batch(const std::vector<EncodedExample>& examples,
                                              const std::vector<size_t>& order, size_t begin,
                                              int batch_size, int32_t pad_id) {
  ClassificationBatch b;
  b.B = int(std::min<size_t>(batch_size, order.size() - begin));
  for (int i = 0; i < b.B; ++i)
    b.T = std::max(b.T, int(examples[order[begin + i]].input_ids.size()));
  const size_t n = size_t(b.B) * b.T;
  b.input_ids.assign(n, pad_id);
  b.token_type_ids.assign(n, 0);
  b.attention_mask.assign(n, 0);
  for (int i = 0; i < b.B; ++i) {
    const EncodedExample& e = examples[order[begin + i]];
    std::copy(e.input_ids.begin(), e.input_ids.end(), b.input_ids.begin() + size_t(i) * b.T);
    std::copy(e.token_type_ids.begin(), e.token_type_ids.end(),
              b.token_type_ids.begin() + size_t(i) * b.T);
    std::fill_n(b.attention_mask.begin() + size_t(i) * b.T, e.input_ids.size(), 1);
    b.labels.push_back(e.label);
  }
  return b;
}

ClassificationEval evaluate_classification(BertModel& model, Backend& be,
                                           const std::vector<EncodedExample>& examples,
                                           int batch_size, int32_t pad_id) {
  ClassificationEval ev;
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  const int K = model.heads().num_labels();
  double loss_sum = 0;
  int64_t correct = 0, counted = 0;
  for (size_t begin = 0; begin < examples.size(); begin += batch_size) {
    const ClassificationBatch b = make_classification_batch(examples, order, begin, batch_size, pad_id);
    Targets t;
    t.labels = b.labels.data();
    const ForwardResult r = model.forward(be, b.inputs(), t, false);
    loss_sum += r.cls.loss * r.cls.count;
    correct += r.cls.correct;
    counted += r.cls.count;
    for (int i = 0; i < b.B; ++i) {
      const float* z = model.logits().data() + size_t(i) * K;
      const float mx = *std::max_element(z, z + K);
      std::vector<float> p(K);
      double s = 0;
      for (int k = 0; k < K; ++k) s += p[k] = std::exp(z[k] - mx);
      for (float& x : p) x = float(x / s);
      ev.predictions.push_back(int(std::max_element(z, z + K) - z));
      ev.probabilities.push_back(std::move(p));
    }
  }
  ev.examples = int64_t(examples.size());
  if (counted) ev.loss = loss_sum / counted, ev.accuracy = double(correct) / counted;
  return ev;
}

void finetune(Trainer& trainer, const std::vector<EncodedExample>& train, int batch_size,
              int64_t total_steps, uint64_t seed, int32_t pad_id,
              const std::function<void(const FinetuneStepLog&)>& on_step) {
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  size_t cursor = order.size();
  int64_t epoch = 0;
  StepClock clock;
  while (trainer.steps_done() < total_steps) {
    if (cursor >= order.size()) {
      random_shuffle(order, rng);
      cursor = 0;
      ++epoch;
    }
    const ClassificationBatch b = make_classification_batch(train, order, cursor, batch_size, pad_id);
    cursor += b.B;
    Targets t;
    t.labels = b.labels.data();
    FinetuneStepLog log;
    log.result = trainer.step(b.inputs(), t);
    log.tokens_per_second =
        clock.lap(std::accumulate(b.attention_mask.begin(), b.attention_mask.end(), int64_t(0)));
    log.elapsed_seconds = clock.elapsed_seconds();
    log.step = trainer.steps_done();
    log.total_steps = total_steps;
    log.epoch = epoch;
    if (on_step) on_step(log);
  }
}

}  // namespace bertrt
