#include "tasks/squad_features.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "tokenizer/offsets.h"

namespace bertrt {
namespace {

// Window starts over n context pieces (run_squad.py doc_spans).
std::vector<size_t> window_starts(size_t n, size_t length, size_t stride) {
  std::vector<size_t> starts;
  for (size_t start = 0;;) {
    starts.push_back(start);
    if (start + std::min(length, n - start) >= n) return starts;
    start += std::min(length, stride);
  }
}

// Targets as run_qa.py prepare_train_features: first/last piece overlapping [s, e) when the window
// holds it whole.
void set_targets(SquadFeature& f, const SquadAnswer& a) {
  const int64_t s = int64_t(a.byte_start), e = int64_t(a.byte_start + a.text.size());
  const int b = f.context_begin, last = f.context_end - 1;
  if (!(f.offset_begin[b] <= s && f.offset_end[last] >= e)) return;  // stays 0, 0
  int start = b;
  while (start <= last && f.offset_begin[start] <= s) ++start;
  int end = last;
  while (end >= b && f.offset_end[end] >= e) --end;
  f.start_position = start - 1;
  f.end_position = end + 1;
}

// Indices of the n largest values (ties: lower index first), as np.argsort(x)[-1:-n-1:-1] up to
// tie order.
std::vector<int> top_n(const std::vector<float>& x, int n) {
  std::vector<int> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  const size_t k = std::min(idx.size(), size_t(std::max(n, 0)));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int a, int b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
  idx.resize(k);
  return idx;
}

}  // namespace

std::vector<SquadFeature> make_squad_features(const Tokenizer& tokenizer,
                                              const std::vector<SquadExample>& examples,
                                              const SquadFeatureOptions& o,
                                              SquadFeatureStats* stats) {
  if (o.doc_stride < 1) fail("SQuAD: doc_stride must be ≥ 1, got {}", o.doc_stride);
  if (o.max_query_length < 1) fail("SQuAD: max_query_length must be ≥ 1, got {}", o.max_query_length);
  SquadFeatureStats st;
  std::vector<SquadFeature> out;
  const std::string* cached_context = nullptr;  // questions of one paragraph share its context
  std::vector<TokenSpan> ctx;
  std::vector<int32_t> ctx_ids;
  for (size_t i = 0; i < examples.size(); ++i) {
    const SquadExample& ex = examples[i];
    if (!cached_context || *cached_context != ex.context) {
      ctx = tokenize_with_offsets(tokenizer, ex.context);
      std::vector<std::string> toks;
      for (const TokenSpan& t : ctx) toks.push_back(t.token);
      ctx_ids = tokenizer.convert_tokens_to_ids(toks);
      cached_context = &ex.context;
    }
    std::vector<int32_t> q = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(ex.question));
    if (q.size() > size_t(o.max_query_length)) {
      q.resize(size_t(o.max_query_length));
      ++st.truncated_questions;
    }
    const long budget = long(o.max_seq_length) - long(q.size()) - 3;
    if (budget < 1)
      fail("SQuAD: question {}: max_seq_length {} leaves no room for context after {} question "
           "pieces and 3 special tokens",
           ex.id, o.max_seq_length, q.size());
    if (ctx.empty()) fail("SQuAD: question {}: the context has no tokens", ex.id);
    const std::vector<size_t> starts = window_starts(ctx.size(), size_t(budget), size_t(o.doc_stride));
    for (size_t w = 0; w < starts.size(); ++w) {
      SquadFeature f;
      f.example = i;
      f.window = int(w);
      auto push = [&](int32_t id, int32_t type, int64_t b, int64_t e) {
        f.input_ids.push_back(id);
        f.token_type_ids.push_back(type);
        f.offset_begin.push_back(b);
        f.offset_end.push_back(e);
      };
      push(tokenizer.cls_id(), 0, -1, -1);
      for (int32_t id : q) push(id, 0, -1, -1);
      push(tokenizer.sep_id(), 0, -1, -1);
      f.context_begin = int(f.input_ids.size());
      const size_t end = std::min(ctx.size(), starts[w] + size_t(budget));
      for (size_t k = starts[w]; k < end; ++k)
        push(ctx_ids[k], 1, int64_t(ctx[k].begin), int64_t(ctx[k].end));
      f.context_end = int(f.input_ids.size());
      push(tokenizer.sep_id(), 1, -1, -1);
      if (!ex.answers.empty()) {
        set_targets(f, ex.answers.front());
        if (f.start_position == 0) ++st.answers_outside;
      }
      out.push_back(std::move(f));
    }
  }
  st.examples = examples.size();
  st.features = out.size();
  if (stats) *stats = st;
  return out;
}

std::vector<SquadPrediction> postprocess_squad(const std::vector<SquadExample>& examples,
                                               const std::vector<SquadFeature>& features,
                                               const std::vector<std::vector<float>>& start_logits,
                                               const std::vector<std::vector<float>>& end_logits,
                                               const SquadPostprocessOptions& o) {
  if (start_logits.size() != features.size() || end_logits.size() != features.size())
    fail("SQuAD: {} start and {} end logit arrays for {} features", start_logits.size(),
         end_logits.size(), features.size());
  struct Candidate {
    float score;
    int64_t begin, end;
  };
  std::vector<std::vector<Candidate>> cands(examples.size());
  for (size_t fi = 0; fi < features.size(); ++fi) {
    const SquadFeature& f = features[fi];
    const size_t T = f.input_ids.size();
    if (start_logits[fi].size() != T || end_logits[fi].size() != T)
      fail("SQuAD: feature {}: {} start / {} end logits for {} positions", fi,
           start_logits[fi].size(), end_logits[fi].size(), T);
    if (f.example >= examples.size())
      fail("SQuAD: feature {} belongs to example {} of {}", fi, f.example, examples.size());
    for (int s : top_n(start_logits[fi], o.n_best))
      for (int e : top_n(end_logits[fi], o.n_best)) {
        if (s < f.context_begin || s >= f.context_end || e < f.context_begin || e >= f.context_end)
          continue;
        if (e < s || e - s + 1 > o.max_answer_length) continue;
        cands[f.example].push_back(
            {start_logits[fi][size_t(s)] + end_logits[fi][size_t(e)], f.offset_begin[size_t(s)],
             f.offset_end[size_t(e)]});
      }
  }
  std::vector<SquadPrediction> out(examples.size());
  for (size_t i = 0; i < examples.size(); ++i) {
    std::vector<Candidate>& c = cands[i];
    if (c.empty()) continue;  // no valid span: empty answer, as run_qa.py
    std::stable_sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    if (c.size() > size_t(o.n_best)) c.resize(size_t(o.n_best));
    double z = 0;  // softmax over the kept candidates, max subtracted
    for (const Candidate& k : c) z += std::exp(double(k.score) - double(c[0].score));
    SquadPrediction& p = out[i];
    p.score = c[0].score;
    p.probability = float(1.0 / z);
    p.byte_begin = c[0].begin;
    p.byte_end = c[0].end;
    p.text = examples[i].context.substr(size_t(p.byte_begin), size_t(p.byte_end - p.byte_begin));
  }
  return out;
}

}  // namespace bertrt
