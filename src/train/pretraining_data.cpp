#include "train/pretraining_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/error.h"
#include "core/random.h"

namespace bertrt {

namespace {

// The double nearest to the shortest decimal that round-trips `f` (0.15f → 0.15, not
// 0.15000000596): the reference computes with the decimal flag value in double precision.
double as_decimal(float f) {
  const std::string s = fmt::format("{}", f);
  double d = f;
  std::from_chars(s.data(), s.data() + s.size(), d);
  return d;
}

using Ids = std::vector<int32_t>;

struct Recipe {
  std::vector<const std::vector<Ids>*> docs;  // in the shuffled order of create_training_instances
  const PretrainingOptions& opts;
  int32_t cls, sep, mask;
  int vocab_size;
  double short_seq_prob;
  std::mt19937_64& rng;
  PretrainingStats& stats;
  bool continues_word(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < opts.continuation.size() && opts.continuation[id];
  }
};

// truncate_seq_pair: drop one token at a time from the longer of a and b (b on ties), from the
// front or the back with probability 1/2 each, "to add more randomness and avoid biases". The
// drops move the ends of two windows and the vectors are cut once: erasing from the front token
// by token was quadratic in a long line's length (a one-line 2 MB document took minutes).
void truncate_seq_pair(Ids& a, Ids& b, size_t max_num_tokens, std::mt19937_64& rng) {
  size_t a0 = 0, a1 = a.size(), b0 = 0, b1 = b.size();
  while ((a1 - a0) + (b1 - b0) > max_num_tokens) {
    const bool in_a = a1 - a0 > b1 - b0;
    size_t& front = in_a ? a0 : b0;
    size_t& back = in_a ? a1 : b1;
    if (random_unit(rng) < 0.5)
      ++front;
    else
      --back;
  }
  a.erase(a.begin() + static_cast<std::ptrdiff_t>(a1), a.end());
  a.erase(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(a0));
  b.erase(b.begin() + static_cast<std::ptrdiff_t>(b1), b.end());
  b.erase(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b0));
}

// create_masked_lm_predictions: candidates are the non-[CLS]/[SEP] positions, one per set, or with
// whole-word masking a word's first piece and its following "##" pieces together (a "##" piece
// right after a [SEP] joins the word before it, as in the reference). The shuffled sets are taken
// while they fit into num_to_predict (a set that would overflow it is skipped); each chosen
// position becomes [MASK] with p 0.8, stays with p 0.1, becomes a uniformly random vocab id with
// p 0.1. Positions come out sorted.
void mask_tokens(const Recipe& r, PretrainingExample& ex) {
  Ids& ids = ex.input_ids;
  // Sets as ranges of `members`: a "##" piece always extends the last set, so each set's
  // members are contiguous there.
  std::vector<int32_t> members;
  std::vector<std::pair<uint32_t, uint32_t>> sets;  // [begin, end) into members
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == r.cls || ids[i] == r.sep) continue;
    members.push_back(static_cast<int32_t>(i));
    const auto m = static_cast<uint32_t>(members.size());
    if (r.opts.whole_word_mask && !sets.empty() && r.continues_word(ids[i]))
      sets.back().second = m;
    else
      sets.emplace_back(m - 1, m);
  }
  random_shuffle(sets, r.rng);
  const size_t num_to_predict = static_cast<size_t>(
      num_masked_predictions(ids.size(), r.opts.masked_lm_prob, r.opts.max_predictions_per_seq));
  std::vector<std::pair<int32_t, int32_t>> masked;  // (position, original id)
  for (const auto& [begin, end] : sets) {
    if (masked.size() >= num_to_predict) break;
    if (masked.size() + (end - begin) > num_to_predict) continue;
    // (The reference also skips sets already covered; ours are disjoint, so none is.)
    for (uint32_t k = begin; k < end; ++k) {
      const int32_t pos = members[k];
      masked.emplace_back(pos, ids[pos]);
      if (random_unit(r.rng) < 0.8) {
        ids[pos] = r.mask;
      } else if (random_unit(r.rng) < 0.5) {
        // keep the original token
      } else {
        ids[pos] = static_cast<int32_t>(random_int(r.rng, 0, r.vocab_size - 1));
      }
    }
  }
  std::sort(masked.begin(), masked.end());
  for (const auto& [pos, id] : masked) {
    ex.masked_lm_positions.push_back(pos);
    ex.masked_lm_ids.push_back(id);
  }
  r.stats.masked_tokens += masked.size();
}

PretrainingExample assemble(const Recipe& r, const Ids& a, const Ids& b, int32_t label) {
  PretrainingExample ex;
  ex.input_ids.reserve(a.size() + b.size() + 3);
  ex.input_ids.push_back(r.cls);
  ex.input_ids.insert(ex.input_ids.end(), a.begin(), a.end());
  ex.input_ids.push_back(r.sep);
  ex.token_type_ids.assign(ex.input_ids.size(), 0);
  if (r.opts.nsp) {
    ex.input_ids.insert(ex.input_ids.end(), b.begin(), b.end());
    ex.input_ids.push_back(r.sep);
    ex.token_type_ids.resize(ex.input_ids.size(), 1);
  }
  ex.next_sentence_label = label;
  mask_tokens(r, ex);
  return ex;
}

// The reference's choice of the random-next document: up to 10 draws over all documents until
// one is not `self`. Where all 10 hit `self` (probability n^-10; about 1e-3 with 2 documents) the
// reference would use `self`; we draw once more among the others, so B is always foreign.
size_t random_other_document(const Recipe& r, size_t self) {
  const int64_t n = static_cast<int64_t>(r.docs.size());
  size_t pick = self;
  for (int attempt = 0; attempt < 10 && pick == self; ++attempt)
    pick = static_cast<size_t>(random_int(r.rng, 0, n - 1));
  if (pick == self) {
    ++r.stats.same_document_redraws;
    pick = static_cast<size_t>(random_int(r.rng, 0, n - 2));
    if (pick >= self) ++pick;
  }
  return pick;
}

// create_instances_from_document: gather lines into a chunk until it reaches target_seq_length,
// then split it into A | B.
void examples_from_document(const Recipe& r, size_t doc_index,
                            std::vector<PretrainingExample>& out) {
  const auto& doc = *r.docs[doc_index];
  const size_t max_num_tokens = static_cast<size_t>(r.opts.max_seq_length) - 3;
  // Mostly fill the sequence; with short_seq_prob use a shorter one, to reduce the mismatch
  // between pre-training and fine-tuning sequence lengths (reference comment).
  size_t target = max_num_tokens;
  ++r.stats.documents_passes;
  if (random_unit(r.rng) < r.short_seq_prob) {
    target = static_cast<size_t>(random_int(r.rng, 2, static_cast<int64_t>(max_num_tokens)));
    ++r.stats.short_targets;
  }

  std::vector<const Ids*> chunk;
  size_t chunk_len = 0;
  for (size_t i = 0; i < doc.size(); ++i) {
    chunk.push_back(&doc[i]);
    chunk_len += doc[i].size();
    if (i + 1 != doc.size() && chunk_len < target) continue;

    // A takes the first a_end lines of the chunk.
    size_t a_end = 1;
    if (chunk.size() >= 2)
      a_end = static_cast<size_t>(random_int(r.rng, 1, static_cast<int64_t>(chunk.size()) - 1));
    Ids a, b;
    for (size_t j = 0; j < a_end; ++j) a.insert(a.end(), chunk[j]->begin(), chunk[j]->end());

    int32_t label = 0;
    const bool forced = chunk.size() == 1;
    if (forced || random_unit(r.rng) < 0.5) {
      label = 1;
      ++r.stats.random_next;
      r.stats.forced_random_next += forced;
      const size_t target_b = target > a.size() ? target - a.size() : 0;
      const auto& rdoc = *r.docs[random_other_document(r, doc_index)];
      const size_t start =
          static_cast<size_t>(random_int(r.rng, 0, static_cast<int64_t>(rdoc.size()) - 1));
      for (size_t j = start; j < rdoc.size(); ++j) {
        b.insert(b.end(), rdoc[j].begin(), rdoc[j].end());
        if (b.size() >= target_b) break;
      }
      // The lines after A were not used: "put them back" so they start the next chunk.
      i -= chunk.size() - a_end;
    } else {
      for (size_t j = a_end; j < chunk.size(); ++j)
        b.insert(b.end(), chunk[j]->begin(), chunk[j]->end());
    }
    truncate_seq_pair(a, b, max_num_tokens, r.rng);
    out.push_back(assemble(r, a, b, label));
    chunk.clear();
    chunk_len = 0;
  }
}

// No NSP (RoBERTa FULL-SENTENCES / DOC-SENTENCES, Liu et al. 2019 §4.2): whole sentences are
// packed into one segment while they fit into max_seq_length − 2 tokens; a sentence longer than
// a segment is cut into full segments. Across documents (FULL-SENTENCES) an extra [SEP] marks the
// boundary; otherwise each document ends its last segment.
void pack_documents(const Recipe& r, std::vector<PretrainingExample>& out) {
  const size_t max_num_tokens = static_cast<size_t>(r.opts.max_seq_length) - 2;
  Ids seg;
  bool pending_sep = false;
  auto emit = [&] {
    if (!seg.empty()) out.push_back(assemble(r, seg, {}, -1));
    seg.clear();
    pending_sep = false;
  };
  for (const auto* doc : r.docs) {
    if (r.opts.cross_documents)
      pending_sep = !seg.empty();
    else
      emit();
    for (const Ids& sentence : *doc) {
      if (seg.size() + pending_sep + sentence.size() > max_num_tokens) emit();
      if (pending_sep) seg.push_back(r.sep);
      pending_sep = false;
      size_t k = 0;
      while (sentence.size() - k > max_num_tokens - seg.size()) {
        const size_t take = max_num_tokens - seg.size();
        seg.insert(seg.end(), sentence.begin() + k, sentence.begin() + k + take);
        k += take;
        emit();
      }
      seg.insert(seg.end(), sentence.begin() + k, sentence.end());
    }
  }
  emit();
}

void check_options(const PretrainingOptions& o, int vocab_size) {
  const int min_len = o.nsp ? 5 : 3;
  if (o.max_seq_length < min_len)
    fail(
        "pre-training: max_seq_length {} is too small (need ≥ {}: [CLS] A [SEP]{} with a token "
        "in each segment)",
        o.max_seq_length, min_len, o.nsp ? " B [SEP]" : "");
  if (o.max_predictions_per_seq < 1)
    fail("pre-training: max_predictions_per_seq must be ≥ 1, got {}", o.max_predictions_per_seq);
  if (!(o.masked_lm_prob >= 0.f && o.masked_lm_prob <= 1.f))
    fail("pre-training: masked_lm_prob must be in [0, 1], got {}", o.masked_lm_prob);
  if (!(o.short_seq_prob >= 0.f && o.short_seq_prob <= 1.f))
    fail("pre-training: short_seq_prob must be in [0, 1], got {}", o.short_seq_prob);
  if (o.dupe_factor < 1) fail("pre-training: dupe_factor must be ≥ 1, got {}", o.dupe_factor);
  if (o.whole_word_mask && o.continuation.empty())
    fail("pre-training: whole-word masking needs the vocab's \"##\" pieces (continuation)");
  if (vocab_size < 1) fail("pre-training: vocab_size must be ≥ 1, got {}", vocab_size);
}

}  // namespace

int num_masked_predictions(size_t n, float masked_lm_prob, int max_predictions) {
  // std::nearbyint rounds half to even in the default rounding mode, like Python 3's round().
  const double r = std::nearbyint(static_cast<double>(n) * as_decimal(masked_lm_prob));
  return static_cast<int>(std::min<double>(max_predictions, std::max(1.0, r)));
}

std::vector<bool> wordpiece_continuations(const Vocab& vocab) {
  std::vector<bool> c(vocab.size());
  for (int i = 0; i < vocab.size(); ++i) c[i] = vocab.token(i).rfind("##", 0) == 0;
  return c;
}

std::vector<PretrainingExample> create_pretraining_examples(const Documents& documents,
                                                            const PretrainingOptions& opts,
                                                            int32_t cls, int32_t sep, int32_t mask,
                                                            int vocab_size, std::mt19937_64& rng,
                                                            PretrainingStats* stats) {
  check_options(opts, vocab_size);
  if (documents.empty()) fail("pre-training: no documents");
  if (opts.nsp && documents.size() < 2)
    fail(
        "pre-training: {} document, need at least 2 for next-sentence prediction (the random "
        "next segment comes from another document); add documents separated by a blank line",
        documents.size());
  for (size_t d = 0; d < documents.size(); ++d) {
    if (documents[d].empty()) fail("pre-training: document {} is empty", d);
    for (const auto& line : documents[d])
      if (line.empty()) fail("pre-training: document {} has an empty line", d);
  }

  PretrainingStats st;
  Recipe r{{}, opts, cls, sep, mask, vocab_size, as_decimal(opts.short_seq_prob), rng, st};
  // The reference shuffles the documents, then walks them in that order dupe_factor times.
  for (const auto& d : documents) r.docs.push_back(&d);
  random_shuffle(r.docs, rng);
  std::vector<PretrainingExample> out;
  for (int dupe = 0; dupe < opts.dupe_factor; ++dupe) {
    if (opts.nsp) {
      for (size_t d = 0; d < r.docs.size(); ++d) examples_from_document(r, d, out);
    } else {
      pack_documents(r, out);
    }
  }
  random_shuffle(out, rng);
  st.examples = out.size();
  if (stats) *stats = st;
  return out;
}

Batch make_pretraining_batch(const std::vector<PretrainingExample>& examples, size_t begin,
                             int batch_size, int seq_len, int32_t pad_id) {
  if (begin >= examples.size())
    fail("pre-training batch: start {} is past the last of {} examples", begin, examples.size());
  if (batch_size < 1 || seq_len < 1)
    fail("pre-training batch: batch_size {} and seq_len {} must be ≥ 1", batch_size, seq_len);
  Batch b;
  b.batch_size = static_cast<int>(std::min<size_t>(batch_size, examples.size() - begin));
  b.seq_len = seq_len;
  const size_t T = static_cast<size_t>(seq_len), BT = b.batch_size * T;
  b.input_ids.assign(BT, pad_id);
  b.token_type_ids.assign(BT, 0);
  b.attention_mask.assign(BT, 0);
  for (int i = 0; i < b.batch_size; ++i) {
    const PretrainingExample& ex = examples[begin + i];
    if (ex.input_ids.size() > T)
      fail("pre-training batch: example {} has {} tokens, more than seq_len {}", begin + i,
           ex.input_ids.size(), seq_len);
    const size_t row = i * T;
    std::copy(ex.input_ids.begin(), ex.input_ids.end(), b.input_ids.begin() + row);
    std::copy(ex.token_type_ids.begin(), ex.token_type_ids.end(), b.token_type_ids.begin() + row);
    std::fill_n(b.attention_mask.begin() + row, ex.input_ids.size(), 1);
    for (size_t k = 0; k < ex.masked_lm_positions.size(); ++k) {
      b.masked_lm_positions.push_back(static_cast<int32_t>(row) + ex.masked_lm_positions[k]);
      b.masked_lm_ids.push_back(ex.masked_lm_ids[k]);
    }
    b.next_sentence_labels.push_back(ex.next_sentence_label);
  }
  return b;
}

}  // namespace bertrt
