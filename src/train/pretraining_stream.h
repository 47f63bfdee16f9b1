// Endless fixed-shape pre-training batches streamed from a corpus larger than memory, resumable.
//
// The corpus is read a chunk ("shard") of documents at a time; each chunk is turned into examples
// as create_training_instances does for one input file of the reference (documents shuffled,
// dupe_factor passes, examples shuffled; NSP's random next segment comes from another document of
// the same chunk), then served in batches. When a chunk is used up the next one is read; after the
// last file the stream wraps around to the first (a new epoch). Memory holds one chunk: at most
// shard_documents + 2 documents while building it, and its examples.
//
// Masking: static (the default, as the reference's TFRecords): every epoch yields the same
// examples, each document's examples made dupe_factor times with different masks and pairs.
// Dynamic (RoBERTa §4.1): dupe_factor 1 and fresh pairs and masks every epoch.
//
// Randomness: chunk k of epoch e draws from std::mt19937_64(chunk_seed(seed, e', k)), e' = e
// with dynamic masking and 0 with static masking, through core/random.h. So the position in the
// stream (epoch, chunk, cursor, examples used) is the whole state: no RNG state is stored, and a
// saved state restores on any platform (mt19937_64's operator<< text differs between libstdc++,
// which adds its internal index, and libc++).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "train/corpus.h"
#include "train/pretraining_data.h"

namespace bertrt {

struct StreamOptions {
  // Sequence layout, masking, NSP, whole-word masking and the seed. recipe.dupe_factor is ignored:
  // the stream sets it from dupe_factor / dynamic_masking below.
  PretrainingOptions recipe;
  int batch_size = 32;
  int dupe_factor = 10;          // static masking: examples made this many times per chunk
  bool dynamic_masking = false;  // fresh pairs and masks each epoch (dupe_factor must be 1)
  size_t shard_documents = 500;  // documents per chunk (memory bound)
  bool split_sentences = true;   // CorpusOptions::split_sentences for every file
};

// Token ids the examples need. vocab_size bounds the random replacement ids.
struct SpecialIds {
  int32_t cls = 0, sep = 0, mask = 0, pad = 0;
  int vocab_size = 0;
};

struct StreamStats {
  int64_t epoch = 1;                         // 1-based epoch of the chunk being served
  uint64_t chunk = 0;                        // its 0-based index within the epoch
  size_t chunks_built = 0;                   // since construction (or restore)
  size_t documents = 0, peak_documents = 0;  // documents held while building a chunk (0 after)
  size_t examples = 0, peak_examples = 0;    // examples held (the chunk's + at most B−1 carried)
  PretrainingStats recipe;                   // counts of the latest chunk
  CorpusStats corpus;  // lines/bytes read for the latest chunk (look-ahead included)
};

// The seed of chunk `chunk` of epoch `epoch`: three rounds of the splitmix64 finalizer,
// mix(mix(mix(seed) ^ epoch) ^ chunk), mix(z) = splitmix64 step (Steele et al. 2014) of z.
uint64_t chunk_seed(uint64_t seed, uint64_t epoch, uint64_t chunk);

class PretrainingStream {
 public:
  // Streams over `files` (e.g. from expand_corpus_paths), each line through `tokenize`. Reads and
  // builds the first chunk at once, so corpus errors come before any training. Throws
  // bertrt::Error naming the files when they hold no non-blank line, no token, or fewer than 2
  // documents with NSP; on invalid options (batch_size < 1, shard_documents < 2 with NSP,
  // dupe_factor < 1, dynamic masking with dupe_factor > 1, and those of
  // create_pretraining_examples).
  PretrainingStream(std::vector<std::string> files, TokenizeFn tokenize, const StreamOptions& opts,
                    const SpecialIds& ids);
  // All documents already in memory (kept by reference: they must outlive the stream), one chunk
  // per epoch, dynamic masking (fresh pairs and masks each epoch).
  PretrainingStream(const Documents& docs, const PretrainingOptions& opts, int batch_size,
                    int32_t cls, int32_t sep, int32_t mask, int32_t pad, int vocab_size);

  // The next batch_size examples, padded to recipe.max_seq_length (every batch has that shape).
  // Examples left at the end of a chunk lead the next batch, so nothing is dropped.
  Batch next();
  // 1-based epoch of the newest example served.
  int64_t epoch() const { return stats_.epoch; }
  const StreamStats& stats() const { return stats_; }
  const StreamOptions& options() const { return opts_; }

  // The position in the stream as text bytes (format below). A stream constructed with the same
  // options and files and given this state by restore_state yields exactly the batches this one
  // yields next. Format, one "key value" a line, UTF-8:
  //   bertrt-pretraining-stream 1
  //   config <options, batch size and file names + sizes, as one line>
  //   epoch <1-based>  chunk <0-based index in the epoch>
  //   file <index>  offset <byte offset of the chunk's first line>  line <its 1-based number>
  //   position <examples of the chunk already served>
  std::vector<uint8_t> save_state() const;
  // Rebuilds the chunk named by `state` and skips its served examples. Throws bertrt::Error when
  // the state is malformed or was saved with other data options, batch size or corpus files.
  void restore_state(const std::vector<uint8_t>& state);

 private:
  struct Position {
    CorpusCursor cursor;
    int64_t epoch = 1;
    uint64_t chunk = 0;
  };
  void check_options() const;
  std::string config_line() const;
  // Builds the examples of the chunk at `at` into examples_, after the `keep` unserved ones.
  void load(const Position& at, size_t keep);

  StreamOptions opts_;
  SpecialIds ids_;
  std::vector<std::string> files_;
  std::vector<uint64_t> file_sizes_;
  TokenizeFn tokenize_;
  const Documents* memory_ = nullptr;  // the in-memory source, when used

  Position current_;  // the chunk whose examples are being served
  CorpusCursor next_cursor_;
  bool current_is_last_ = false;  // the current chunk ends the epoch
  std::vector<PretrainingExample> examples_;
  size_t carried_ = 0;  // examples_[0, carried_) came from earlier chunks
  size_t served_ = 0;   // examples_[0, served_) are used
  StreamStats stats_;
};

}  // namespace bertrt
