#!/usr/bin/env python3
"""Reference pre-training example builder: a Python 3 port of the instance creation of
google-research/bert create_pretraining_data.py (create_training_instances,
create_instances_from_document, create_masked_lm_predictions with do_whole_word_mask,
truncate_seq_pair), kept in the original's structure and draw order, plus the chunked stream of
bertrt's PretrainingStream (src/train/pretraining_stream.h) around it.

Input is WordPiece ids, not text, so tokenization is not compared here (the tokenizer has its own
tests): an ids file holds one sentence a line as space-separated ids, a blank line between
documents; the end of a file ends a document. Special tokens are compared by id ([CLS]/[SEP]), a
"##" piece is an id listed in --continuation, and vocab_words is range(--vocab-size).

Random numbers: with --rng shared (default) the `rng` object is random.Random's interface
(random(), randint(a, b), shuffle(x)) on std::mt19937_64 with the algorithms of
src/core/random.h, so for the same seed the C++ builder and this port make the same draws and
must produce identical examples (tests/unit/pretraining_ref_test.cpp checks it). With
--rng python it is Python's own random.Random, as in the original script: same recipe, other
numbers (for statistical comparisons).

Deliberate differences from the original, each marked DIFFERENCE below:
  1. The random-next document: where all 10 of the reference's tries hit the document itself
     (probability n^-10 for n documents), one more draw among the others, so B is always foreign.
  2. No-NSP mode (--no-nsp) is not in the reference: RoBERTa FULL-SENTENCES / DOC-SENTENCES
     packing (Liu et al. 2019, section 4.2), as bertrt implements it.
  3. The stream: documents are taken --shard-documents at a time (a shard ends early when fewer
     than 2 documents, 1 without NSP, would be left after it: those join it); each shard is an
     independent create_training_instances call whose rng is seeded by chunk_seed(seed, e, k).

Output: one JSON object a line per example in serving order, with input_ids, token_type_ids,
masked_lm_positions, masked_lm_ids, next_sentence_label (1 = random next, 0 = actual next, -1 =
no NSP).
"""

import argparse
import json
import random
import sys

M64 = (1 << 64) - 1


class MT19937_64:
  """std::mt19937_64 (C++11 [rand.predef]: the 10000th output of the default seed 5489 is
  9981545732273789042)."""

  N, M = 312, 156

  def __init__(self, seed):
    mt = [seed & M64]
    for i in range(1, self.N):
      mt.append((6364136223846793005 * (mt[-1] ^ (mt[-1] >> 62)) + i) & M64)
    self.mt = mt
    self.index = self.N

  def _twist(self):
    mt, n, m = self.mt, self.N, self.M
    for i in range(n):
      x = (mt[i] & 0xFFFFFFFF80000000) | (mt[(i + 1) % n] & 0x7FFFFFFF)
      xa = x >> 1
      if x & 1:
        xa ^= 0xB5026F5AA96619E9
      mt[i] = mt[(i + m) % n] ^ xa
    self.index = 0

  def next64(self):
    if self.index >= self.N:
      self._twist()
    y = self.mt[self.index]
    self.index += 1
    y ^= (y >> 29) & 0x5555555555555555
    y ^= (y << 17) & 0x71D67FFFEDA60000
    y ^= (y << 37) & 0xFFF7EEE000000000
    y ^= y >> 43
    return y & M64


class SharedRandom(object):
  """random.Random's random/randint/shuffle with the algorithms of src/core/random.h."""

  def __init__(self, seed):
    self.gen = MT19937_64(seed)

  def random(self):
    return (self.gen.next64() >> 11) * 2.0**-53

  def randint(self, a, b):
    span = b - a + 1
    limit = M64 - M64 % span
    while True:
      x = self.gen.next64()
      if x < limit:
        return a + x % span

  def shuffle(self, x):
    for i in range(len(x), 1, -1):
      j = self.randint(0, i - 1)
      x[i - 1], x[j] = x[j], x[i - 1]


def splitmix64(z):
  z = (z + 0x9E3779B97F4A7C15) & M64
  z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
  z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
  return z ^ (z >> 31)


def chunk_seed(seed, epoch, chunk):
  return splitmix64(splitmix64(splitmix64(seed) ^ epoch) ^ chunk)


class TrainingInstance(object):
  """A single training instance (sentence pair)."""

  def __init__(self, tokens, segment_ids, masked_lm_positions, masked_lm_labels,
               is_random_next):
    self.tokens = tokens
    self.segment_ids = segment_ids
    self.is_random_next = is_random_next
    self.masked_lm_positions = masked_lm_positions
    self.masked_lm_labels = masked_lm_labels


class Flags(object):
  pass


FLAGS = Flags()
# Counts for statistical comparisons (not in the reference): see PretrainingStats.
STATS = {"examples": 0, "random_next": 0, "forced_random_next": 0, "documents_passes": 0,
         "short_targets": 0, "masked_tokens": 0}


def create_training_instances(all_documents, max_seq_length, dupe_factor, short_seq_prob,
                              masked_lm_prob, max_predictions_per_seq, rng):
  """Create `TrainingInstance`s from documents of ids (the reading loop is the caller's)."""
  all_documents = [x for x in all_documents if x]
  rng.shuffle(all_documents)

  vocab_words = list(range(FLAGS.vocab_size))
  instances = []
  for _ in range(dupe_factor):
    if FLAGS.no_nsp:  # DIFFERENCE 2
      instances.extend(
          pack_documents(all_documents, max_seq_length, masked_lm_prob,
                         max_predictions_per_seq, vocab_words, rng))
      continue
    for document_index in range(len(all_documents)):
      instances.extend(
          create_instances_from_document(
              all_documents, document_index, max_seq_length, short_seq_prob,
              masked_lm_prob, max_predictions_per_seq, vocab_words, rng))

  rng.shuffle(instances)
  return instances


def create_instances_from_document(
    all_documents, document_index, max_seq_length, short_seq_prob,
    masked_lm_prob, max_predictions_per_seq, vocab_words, rng):
  """Creates `TrainingInstance`s for a single document."""
  document = all_documents[document_index]

  # Account for [CLS], [SEP], [SEP]
  max_num_tokens = max_seq_length - 3

  target_seq_length = max_num_tokens
  STATS["documents_passes"] += 1
  if rng.random() < short_seq_prob:
    STATS["short_targets"] += 1
    target_seq_length = rng.randint(2, max_num_tokens)

  instances = []
  current_chunk = []
  current_length = 0
  i = 0
  while i < len(document):
    segment = document[i]
    current_chunk.append(segment)
    current_length += len(segment)
    if i == len(document) - 1 or current_length >= target_seq_length:
      if current_chunk:
        # `a_end` is how many segments from `current_chunk` go into the `A`
        # (first) sentence.
        a_end = 1
        if len(current_chunk) >= 2:
          a_end = rng.randint(1, len(current_chunk) - 1)

        tokens_a = []
        for j in range(a_end):
          tokens_a.extend(current_chunk[j])

        tokens_b = []
        # Random next
        is_random_next = False
        if len(current_chunk) == 1 or rng.random() < 0.5:
          is_random_next = True
          STATS["random_next"] += 1
          STATS["forced_random_next"] += len(current_chunk) == 1
          target_b_length = target_seq_length - len(tokens_a)

          # This should rarely go for more than one iteration for large
          # corpora. However, just to be careful, we try to make sure that
          # the random document is not the same as the document
          # we're processing.
          for _ in range(10):
            random_document_index = rng.randint(0, len(all_documents) - 1)
            if random_document_index != document_index:
              break
          # DIFFERENCE 1: never the document itself.
          if random_document_index == document_index:
            random_document_index = rng.randint(0, len(all_documents) - 2)
            if random_document_index >= document_index:
              random_document_index += 1

          random_document = all_documents[random_document_index]
          random_start = rng.randint(0, len(random_document) - 1)
          for j in range(random_start, len(random_document)):
            tokens_b.extend(random_document[j])
            if len(tokens_b) >= target_b_length:
              break
          # We didn't actually use these segments so we "put them back" so
          # they don't go to waste.
          num_unused_segments = len(current_chunk) - a_end
          i -= num_unused_segments
        # Actual next
        else:
          is_random_next = False
          for j in range(a_end, len(current_chunk)):
            tokens_b.extend(current_chunk[j])
        truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)

        assert len(tokens_a) >= 1
        assert len(tokens_b) >= 1

        tokens = []
        segment_ids = []
        tokens.append(FLAGS.cls)
        segment_ids.append(0)
        for token in tokens_a:
          tokens.append(token)
          segment_ids.append(0)

        tokens.append(FLAGS.sep)
        segment_ids.append(0)

        for token in tokens_b:
          tokens.append(token)
          segment_ids.append(1)
        tokens.append(FLAGS.sep)
        segment_ids.append(1)

        (tokens, masked_lm_positions,
         masked_lm_labels) = create_masked_lm_predictions(
             tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng)
        instance = TrainingInstance(
            tokens=tokens,
            segment_ids=segment_ids,
            is_random_next=is_random_next,
            masked_lm_positions=masked_lm_positions,
            masked_lm_labels=masked_lm_labels)
        instances.append(instance)
      current_chunk = []
      current_length = 0
    i += 1

  return instances


def pack_documents(all_documents, max_seq_length, masked_lm_prob, max_predictions_per_seq,
                   vocab_words, rng):
  """DIFFERENCE 2 (not in the reference): RoBERTa FULL-SENTENCES / DOC-SENTENCES. Whole sentences
  fill one segment [CLS] A [SEP] while they fit; a longer sentence is cut into full segments;
  across documents an extra [SEP] marks the boundary."""
  max_num_tokens = max_seq_length - 2
  instances = []
  state = {"seg": [], "pending_sep": False}

  def emit():
    seg = state["seg"]
    if seg:
      tokens = [FLAGS.cls] + seg + [FLAGS.sep]
      (tokens, positions, labels) = create_masked_lm_predictions(
          tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng)
      instances.append(TrainingInstance(tokens, [0] * len(tokens), positions, labels, None))
    state["seg"] = []
    state["pending_sep"] = False

  for document in all_documents:
    if FLAGS.cross_documents:
      state["pending_sep"] = bool(state["seg"])
    else:
      emit()
    for sentence in document:
      if len(state["seg"]) + int(state["pending_sep"]) + len(sentence) > max_num_tokens:
        emit()
      if state["pending_sep"]:
        state["seg"].append(FLAGS.sep)
      state["pending_sep"] = False
      k = 0
      while len(sentence) - k > max_num_tokens - len(state["seg"]):
        take = max_num_tokens - len(state["seg"])
        state["seg"].extend(sentence[k:k + take])
        k += take
        emit()
      state["seg"].extend(sentence[k:])
  emit()
  return instances


def create_masked_lm_predictions(tokens, masked_lm_prob,
                                 max_predictions_per_seq, vocab_words, rng):
  """Creates the predictions for the masked LM objective."""

  cand_indexes = []
  for (i, token) in enumerate(tokens):
    if token == FLAGS.cls or token == FLAGS.sep:
      continue
    # Whole Word Masking means that if we mask all of the wordpieces
    # corresponding to an original word. When a word has been split into
    # WordPieces, the first token does not have any marker and any subsequence
    # tokens are prefixed with ##. So whenever we see the ## token, we
    # append it to the previous set of word indexes.
    if (FLAGS.do_whole_word_mask and len(cand_indexes) >= 1 and
        token in FLAGS.continuation):
      cand_indexes[-1].append(i)
    else:
      cand_indexes.append([i])

  rng.shuffle(cand_indexes)

  output_tokens = list(tokens)

  num_to_predict = min(max_predictions_per_seq,
                       max(1, int(round(len(tokens) * masked_lm_prob))))

  masked_lms = []
  covered_indexes = set()
  for index_set in cand_indexes:
    if len(masked_lms) >= num_to_predict:
      break
    # If adding a whole-word mask would exceed the maximum number of
    # predictions, then just skip this candidate.
    if len(masked_lms) + len(index_set) > num_to_predict:
      continue
    is_any_index_covered = False
    for index in index_set:
      if index in covered_indexes:
        is_any_index_covered = True
        break
    if is_any_index_covered:
      continue
    for index in index_set:
      covered_indexes.add(index)

      masked_token = None
      # 80% of the time, replace with [MASK]
      if rng.random() < 0.8:
        masked_token = FLAGS.mask
      else:
        # 10% of the time, keep original
        if rng.random() < 0.5:
          masked_token = tokens[index]
        # 10% of the time, replace with random word
        else:
          masked_token = vocab_words[rng.randint(0, len(vocab_words) - 1)]

      output_tokens[index] = masked_token

      masked_lms.append((index, tokens[index]))
  assert len(masked_lms) <= num_to_predict
  STATS["masked_tokens"] += len(masked_lms)
  masked_lms = sorted(masked_lms, key=lambda x: x[0])

  masked_lm_positions = [p[0] for p in masked_lms]
  masked_lm_labels = [p[1] for p in masked_lms]
  return (output_tokens, masked_lm_positions, masked_lm_labels)


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
  """Truncates a pair of sequences to a maximum sequence length."""
  while True:
    total_length = len(tokens_a) + len(tokens_b)
    if total_length <= max_num_tokens:
      break

    trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
    assert len(trunc_tokens) >= 1

    # We want to sometimes truncate from the front and sometimes from the
    # back to add more randomness and avoid biases.
    if rng.random() < 0.5:
      del trunc_tokens[0]
    else:
      trunc_tokens.pop()


def read_documents(paths):
  """The reading loop of create_training_instances on ids files (the end of a file also ends a
  document, as in bertrt)."""
  documents = []
  for path in paths:
    documents.append([])
    with open(path, "r", encoding="utf-8") as reader:
      for line in reader:
        line = line.strip()
        if not line:
          documents.append([])
          continue
        documents[-1].append([int(t) for t in line.split()])
  return [d for d in documents if d]


def shards(documents, shard_documents, min_documents):
  """DIFFERENCE 3: the documents of each chunk of PretrainingStream."""
  out, start = [], 0
  while start < len(documents):
    left = len(documents) - start
    take = shard_documents if left >= shard_documents + min_documents else left
    out.append(documents[start:start + take])
    start += take
  return out


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--input", action="append", required=True, help="ids file (repeatable)")
  p.add_argument("--continuation", help="file of the ids that are ## pieces, space separated")
  p.add_argument("--vocab-size", type=int, required=True)
  p.add_argument("--cls", type=int, required=True)
  p.add_argument("--sep", type=int, required=True)
  p.add_argument("--mask", type=int, required=True)
  p.add_argument("--max-seq-length", type=int, default=128)
  p.add_argument("--max-predictions-per-seq", type=int, default=20)
  p.add_argument("--masked-lm-prob", type=float, default=0.15)
  p.add_argument("--short-seq-prob", type=float, default=0.1)
  p.add_argument("--dupe-factor", type=int, default=10)
  p.add_argument("--dynamic-masking", action="store_true")
  p.add_argument("--whole-word-mask", action="store_true")
  p.add_argument("--no-nsp", action="store_true")
  p.add_argument("--doc-sentences", action="store_true")
  p.add_argument("--seed", type=int, default=12345)
  p.add_argument("--shard-documents", type=int, default=1000)
  p.add_argument("--epochs", type=int, default=1)
  p.add_argument("--rng", choices=["shared", "python"], default="shared")
  p.add_argument("--output", required=True)
  p.add_argument("--stats", help="write the recipe's counts here (JSON)")
  a = p.parse_args()

  FLAGS.vocab_size, FLAGS.cls, FLAGS.sep, FLAGS.mask = a.vocab_size, a.cls, a.sep, a.mask
  FLAGS.do_whole_word_mask = a.whole_word_mask
  FLAGS.no_nsp = a.no_nsp
  FLAGS.cross_documents = not a.doc_sentences
  FLAGS.continuation = set()
  if a.continuation:
    with open(a.continuation) as f:
      FLAGS.continuation = set(int(t) for t in f.read().split())
  dupe = 1 if a.dynamic_masking else a.dupe_factor

  documents = read_documents(a.input)
  chunks = shards(documents, a.shard_documents, 1 if a.no_nsp else 2)
  n = 0
  with open(a.output, "w") as out:
    for epoch in range(1, a.epochs + 1):
      for k, chunk in enumerate(chunks):
        seed = chunk_seed(a.seed, epoch if a.dynamic_masking else 0, k)
        rng = SharedRandom(seed) if a.rng == "shared" else random.Random(seed)
        for inst in create_training_instances(chunk, a.max_seq_length, dupe, a.short_seq_prob,
                                              a.masked_lm_prob, a.max_predictions_per_seq, rng):
          label = -1 if inst.is_random_next is None else int(inst.is_random_next)
          out.write(json.dumps({
              "input_ids": inst.tokens,
              "token_type_ids": inst.segment_ids,
              "masked_lm_positions": inst.masked_lm_positions,
              "masked_lm_ids": inst.masked_lm_labels,
              "next_sentence_label": label,
          }, separators=(",", ":")) + "\n")
          n += 1
  STATS["examples"] = n
  if a.stats:
    with open(a.stats, "w") as f:
      json.dump(STATS, f)
  print("%d documents, %d shards, %d examples" % (len(documents), len(chunks), n), file=sys.stderr)


if __name__ == "__main__":
  main()
