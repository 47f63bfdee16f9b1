#include "train/task_inference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace bertrt {
namespace {

// Runs the items in batches of similar length (sorted by length, so little padding: evaluation
// has no reason to keep the file order inside a batch) and calls fn(batch, order, begin) after
// each forward; order[begin + i] is the item in row i.
template <class Item, class MakeBatch, class Fn>
HeadLoss for_each_batch(BertModel& model, Backend& be, const std::vector<Item>& items,
                        int batch_size, bool with_targets, MakeBatch make, Fn fn) {
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return items[a].input_ids.size() < items[b].input_ids.size();
  });
  HeadLoss loss;
  for (size_t begin = 0; begin < items.size(); begin += size_t(batch_size)) {
    const TaskBatch b = make(order, begin);
    const ForwardResult r =
        model.forward(be, b.inputs(), with_targets ? b.targets() : Targets{}, /*training=*/false);
    loss.sum += r.cls.loss * r.cls.count;
    loss.count += r.cls.count;
    fn(b, order, begin);
  }
  return loss;
}

}  // namespace

SequenceOutputs run_sequences(BertModel& model, Backend& be, const std::vector<EncodedExample>& items,
                              int batch_size, int32_t pad_id, bool with_targets) {
  const bool regression = model.heads().resolved_kind() == HeadKind::kRegression;
  const int K = model.heads().num_labels();
  SequenceOutputs out;
  out.rows.resize(items.size());
  out.loss = for_each_batch(
      model, be, items, batch_size, with_targets,
      [&](const std::vector<size_t>& order, size_t begin) {
        return make_sequence_batch(items, order, begin, batch_size, pad_id, regression);
      },
      [&](const TaskBatch& b, const std::vector<size_t>& order, size_t begin) {
        const float* z = model.logits().data();
        for (int i = 0; i < b.B; ++i)
          out.rows[order[begin + i]].assign(z + size_t(i) * K, z + size_t(i + 1) * K);
      });
  return out;
}

TokenOutputs run_tokens(BertModel& model, Backend& be, const std::vector<NerFeature>& items,
                        int batch_size, int32_t pad_id) {
  const int K = model.heads().num_labels();
  TokenOutputs out;
  out.logits.resize(items.size());
  out.loss = for_each_batch(
      model, be, items, batch_size, /*with_targets=*/true,
      [&](const std::vector<size_t>& order, size_t begin) {
        return make_ner_batch(items, order, begin, batch_size, pad_id);
      },
      [&](const TaskBatch& b, const std::vector<size_t>& order, size_t begin) {
        const float* z = model.logits().data();  // [B·T, K]
        for (int i = 0; i < b.B; ++i) {
          const size_t f = order[begin + i], T_f = items[f].input_ids.size();
          const float* row = z + size_t(i) * b.T * K;
          out.logits[f].assign(row, row + T_f * K);
        }
      });
  return out;
}

SpanOutputs run_spans(BertModel& model, Backend& be, const std::vector<SquadFeature>& items,
                      int batch_size, int32_t pad_id, bool with_targets) {
  SpanOutputs out;
  out.start.resize(items.size());
  out.end.resize(items.size());
  out.loss = for_each_batch(
      model, be, items, batch_size, with_targets,
      [&](const std::vector<size_t>& order, size_t begin) {
        return make_squad_batch(items, order, begin, batch_size, pad_id);
      },
      [&](const TaskBatch& b, const std::vector<size_t>& order, size_t begin) {
        const float* s = model.start_logits().data();  // [B, T]
        const float* e = model.end_logits().data();
        for (int i = 0; i < b.B; ++i) {
          const size_t f = order[begin + i], T_f = items[f].input_ids.size();
          out.start[f].assign(s + size_t(i) * b.T, s + size_t(i) * b.T + T_f);
          out.end[f].assign(e + size_t(i) * b.T, e + size_t(i) * b.T + T_f);
        }
      });
  return out;
}

std::vector<float> softmax(const std::vector<float>& z) {
  std::vector<float> p(z.size());
  if (z.empty()) return p;
  const float mx = *std::max_element(z.begin(), z.end());
  double s = 0;
  for (size_t k = 0; k < z.size(); ++k) s += std::exp(double(z[k]) - mx);
  for (size_t k = 0; k < z.size(); ++k) p[k] = float(std::exp(double(z[k]) - mx) / s);
  return p;
}

int argmax(const std::vector<float>& row) {
  return int(std::max_element(row.begin(), row.end()) - row.begin());
}

}  // namespace bertrt
