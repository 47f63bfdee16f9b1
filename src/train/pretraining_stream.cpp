#include "train/pretraining_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <sstream>
#include <utility>

#include "core/error.h"

namespace bertrt {

namespace {

// One splitmix64 step from state z (Steele, Lea & Flood 2014): a bijective 64-bit mix, so distinct
// (seed, epoch, chunk) give well-spread mt19937_64 seeds.
uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr const char* kStateMagic = "bertrt-pretraining-stream";
constexpr int kStateVersion = 1;

}  // namespace

uint64_t chunk_seed(uint64_t seed, uint64_t epoch, uint64_t chunk) {
  return mix(mix(mix(seed) ^ epoch) ^ chunk);
}

PretrainingStream::PretrainingStream(std::vector<std::string> files, TokenizeFn tokenize,
                                     const StreamOptions& opts, const SpecialIds& ids)
    : opts_(opts), ids_(ids), files_(std::move(files)), tokenize_(std::move(tokenize)) {
  if (files_.empty()) fail("pre-training stream: no corpus file");
  namespace fs = std::filesystem;
  for (const std::string& f : files_) {
    std::error_code ec;
    if (!fs::is_regular_file(f, ec)) fail("{}: corpus file not found or not a regular file", f);
    file_sizes_.push_back(static_cast<uint64_t>(fs::file_size(f, ec)));
    if (ec) fail("{}: cannot read the file size: {}", f, ec.message());
  }
  check_options();
  load(Position{}, 0);
}

PretrainingStream::PretrainingStream(const Documents& docs, const PretrainingOptions& opts,
                                     int batch_size, int32_t cls, int32_t sep, int32_t mask,
                                     int32_t pad, int vocab_size)
    : ids_{cls, sep, mask, pad, vocab_size}, memory_(&docs) {
  opts_.recipe = opts;
  opts_.batch_size = batch_size;
  opts_.dupe_factor = 1;
  opts_.dynamic_masking = true;
  opts_.shard_documents = docs.size();
  check_options();
  load(Position{}, 0);
}

void PretrainingStream::check_options() const {
  const StreamOptions& o = opts_;
  if (o.batch_size < 1) fail("pre-training stream: batch size must be ≥ 1, got {}", o.batch_size);
  if (o.dupe_factor < 1)
    fail("pre-training stream: dupe factor must be ≥ 1, got {}", o.dupe_factor);
  if (o.dynamic_masking && o.dupe_factor != 1)
    fail(
        "pre-training stream: dynamic masking draws fresh masks every epoch, so the dupe factor "
        "must be 1 (got {})",
        o.dupe_factor);
  if (!memory_ && o.shard_documents < (o.recipe.nsp ? 2u : 1u))
    fail("pre-training stream: shard of {} document(s); need ≥ {} ({})", o.shard_documents,
         o.recipe.nsp ? 2 : 1,
         o.recipe.nsp ? "NSP draws the random next segment from another document of the shard"
                      : "a shard holds at least one document");
}

void PretrainingStream::load(const Position& at, size_t keep) {
  PretrainingOptions recipe = opts_.recipe;
  recipe.dupe_factor = opts_.dynamic_masking ? 1 : opts_.dupe_factor;
  const uint64_t seed_epoch = opts_.dynamic_masking ? static_cast<uint64_t>(at.epoch) : 0;
  std::mt19937_64 rng(chunk_seed(recipe.seed, seed_epoch, at.chunk));

  std::vector<PretrainingExample> built;
  PretrainingStats recipe_stats;
  if (memory_) {
    stats_.documents = memory_->size();
    built = create_pretraining_examples(*memory_, recipe, ids_.cls, ids_.sep, ids_.mask,
                                        ids_.vocab_size, rng, &recipe_stats);
    next_cursor_ = CorpusCursor{};
    current_is_last_ = true;
  } else {
    CorpusOptions co;
    co.split_sentences = opts_.split_sentences;
    const size_t min_docs = recipe.nsp ? 2 : 1;
    CorpusChunk c =
        read_corpus_chunk(files_, at.cursor, opts_.shard_documents, min_docs, tokenize_, co);
    // A chunk from the start that reaches the end holds the whole corpus: check it as a corpus.
    if (at.cursor == CorpusCursor{} && c.last)
      check_corpus_chunk(c, describe_files(files_), min_docs);
    if (c.documents.empty())
      fail(
          "{}: no document at byte {} of file {} (did the corpus change since the state was "
          "saved?)",
          describe_files(files_), at.cursor.offset, at.cursor.file);
    stats_.documents = c.documents.size();
    built = create_pretraining_examples(c.documents, recipe, ids_.cls, ids_.sep, ids_.mask,
                                        ids_.vocab_size, rng, &recipe_stats);
    next_cursor_ = c.next;
    current_is_last_ = c.last;
    stats_.corpus = c.stats;
  }  // the chunk's documents are freed here
  stats_.peak_documents = std::max(stats_.peak_documents, stats_.documents);
  stats_.documents = 0;

  // The unserved examples of the previous buffer lead the new one.
  std::vector<PretrainingExample> buffer;
  buffer.reserve(keep + built.size());
  std::move(examples_.end() - static_cast<std::ptrdiff_t>(keep), examples_.end(),
            std::back_inserter(buffer));
  std::move(built.begin(), built.end(), std::back_inserter(buffer));
  examples_ = std::move(buffer);
  carried_ = keep;
  served_ = 0;

  current_ = at;
  stats_.epoch = at.epoch;
  stats_.chunk = at.chunk;
  ++stats_.chunks_built;
  stats_.recipe = recipe_stats;
  stats_.examples = examples_.size();
  stats_.peak_examples = std::max(stats_.peak_examples, stats_.examples);
}

Batch PretrainingStream::next() {
  const size_t B = static_cast<size_t>(opts_.batch_size);
  while (examples_.size() - served_ < B) {
    Position at;
    at.cursor = next_cursor_;
    at.epoch = current_.epoch + (current_is_last_ ? 1 : 0);
    at.chunk = current_is_last_ ? 0 : current_.chunk + 1;
    load(at, examples_.size() - served_);
  }
  Batch b = make_pretraining_batch(examples_, served_, opts_.batch_size,
                                   opts_.recipe.max_seq_length, ids_.pad);
  served_ += B;
  return b;
}

std::string PretrainingStream::config_line() const {
  const StreamOptions& o = opts_;
  const PretrainingOptions& r = o.recipe;
  std::string s = fmt::format(
      "seed={} batch={} max_seq_length={} max_predictions={} masked_lm_prob={} "
      "short_seq_prob={} nsp={} cross_documents={} whole_word={} dupe={} dynamic={} shard={} "
      "split_sentences={} vocab={}",
      r.seed, o.batch_size, r.max_seq_length, r.max_predictions_per_seq, r.masked_lm_prob,
      r.short_seq_prob, int(r.nsp), int(r.cross_documents), int(r.whole_word_mask), o.dupe_factor,
      int(o.dynamic_masking), o.shard_documents, int(o.split_sentences), ids_.vocab_size);
  if (memory_) return s + fmt::format(" memory_documents={}", memory_->size());
  // File names without folders (a run may resume from elsewhere) and sizes (a changed file
  // invalidates the byte offsets).
  for (size_t f = 0; f < files_.size(); ++f)
    s += fmt::format(" file={}:{}", std::filesystem::path(files_[f]).filename().string(),
                     file_sizes_[f]);
  return s;
}

std::vector<uint8_t> PretrainingStream::save_state() const {
  // After next(), the carried examples are all served (a chunk is loaded only when fewer than B
  // are left, and then B are served), so the position within the current chunk is enough.
  if (served_ < carried_) fail("pre-training stream: internal error: carried examples unserved");
  const std::string text = fmt::format(
      "{} {}\nconfig {}\nepoch {}\nchunk {}\nfile {}\noffset {}\nline {}\nposition {}\n",
      kStateMagic, kStateVersion, config_line(), current_.epoch, current_.chunk,
      current_.cursor.file, current_.cursor.offset, current_.cursor.line, served_ - carried_);
  return std::vector<uint8_t>(text.begin(), text.end());
}

void PretrainingStream::restore_state(const std::vector<uint8_t>& state) {
  std::istringstream in(std::string(state.begin(), state.end()));
  auto bad = [](const std::string& what) {
    fail("pre-training data cursor: {} (not a state written by PretrainingStream::save_state)",
         what);
  };
  std::string line;
  auto field = [&](const char* key) -> std::string {
    if (!std::getline(in, line)) bad(fmt::format("missing '{}'", key));
    const std::string prefix = std::string(key) + " ";
    if (line.compare(0, prefix.size(), prefix) != 0)
      bad(fmt::format("expected '{}' line, got '{}'", key, line.substr(0, 60)));
    return line.substr(prefix.size());
  };
  auto number = [&](const char* key) -> uint64_t {
    const std::string v = field(key);
    size_t used = 0;
    uint64_t n = 0;
    try {
      n = std::stoull(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size()) bad(fmt::format("'{}' is not a number: '{}'", key, v));
    return n;
  };
  if (number(kStateMagic) != static_cast<uint64_t>(kStateVersion)) bad("unsupported version");
  const std::string saved = field("config"), now = config_line();
  if (saved != now)
    fail(
        "pre-training data cursor: saved with data options/corpus `{}`, this run has `{}`; resume "
        "with the same data flags, batch size and corpus files",
        saved, now);
  Position at;
  at.epoch = static_cast<int64_t>(number("epoch"));
  at.chunk = number("chunk");
  at.cursor.file = number("file");
  at.cursor.offset = number("offset");
  at.cursor.line = number("line");
  const uint64_t position = number("position");
  if (at.epoch < 1) bad("epoch must be ≥ 1");
  if (!memory_ &&
      (at.cursor.file >= files_.size() || at.cursor.offset > file_sizes_[at.cursor.file]))
    bad(fmt::format("file {} offset {} is outside the corpus", at.cursor.file, at.cursor.offset));
  examples_.clear();
  load(at, 0);
  if (position > examples_.size())
    bad(fmt::format("position {} is past the chunk's {} examples", position, examples_.size()));
  served_ = static_cast<size_t>(position);
}

}  // namespace bertrt
