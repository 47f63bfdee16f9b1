// The streamed pre-training data: corpus chunks over many files (cursor, look-ahead, file ends),
// folder expansion, bounded memory on a corpus much larger than a shard, batches that drop
// nothing, static vs dynamic masking across epochs, and save/restore of the stream position.
#include "train/pretraining_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "train/corpus.h"

namespace bertrt {
namespace {

namespace fs = std::filesystem;

template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no bertrt::Error thrown; expected one mentioning '" << parts.at(0) << "'";
  } catch (const Error& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message '" << e.what() << "' lacks '" << p << "'";
  }
}

std::string write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Words "dD_L_K" (document D, line L, word K) → a fixed id, so documents can be recognised.
std::vector<int32_t> word_ids(const std::string& line) {
  std::vector<int32_t> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) {
    int d = 0, l = 0, k = 0;
    if (std::sscanf(w.c_str(), "d%d_%d_%d", &d, &l, &k) != 3) continue;
    out.push_back(1000 + d * 100 + l * 10 + k);  // < 10 lines, < 10 words a line
  }
  return out;
}
int doc_of(int32_t id) { return (id - 1000) / 100; }

// Document d: 1 + d % 4 lines of 1 + (d + l) % 5 words.
std::string document_text(int d) {
  std::string s;
  for (int l = 0; l < 1 + d % 4; ++l) {
    for (int k = 0; k < 1 + (d + l) % 5; ++k) s += fmt::format("d{}_{}_{} ", d, l, k);
    s += "\n";
  }
  return s;
}

// Documents [first, last) as a file, blank lines between them (and extra blank lines here and
// there, which must not matter); `trailing_blank` false ends the file right after the last line.
std::string corpus_text(int first, int last, bool trailing_blank = true) {
  std::string s = first % 3 == 0 ? "\n\n" : "";
  for (int d = first; d < last; ++d) {
    s += document_text(d);
    if (d + 1 < last || trailing_blank) s += d % 5 == 0 ? "\n \n" : "\n";
  }
  return s;
}

std::vector<int> first_docs(const Documents& docs) {
  std::vector<int> v;
  for (const auto& d : docs) v.push_back(doc_of(d[0][0]));
  return v;
}

std::vector<int> range(int a, int b) {
  std::vector<int> v;
  for (int i = a; i < b; ++i) v.push_back(i);
  return v;
}

// ------------------------------------------------------------------------- corpus chunks ------

TEST(CorpusChunks, WalkThreeFilesAndJoinASmallTail) {
  test::TempDir dir;
  // 0..6 | 7..9 (no trailing blank line: the file end ends document 9) | 10..12
  const std::vector<std::string> files = {write(dir.file("a.txt"), corpus_text(0, 7)),
                                          write(dir.file("b.txt"), corpus_text(7, 10, false)),
                                          write(dir.file("c.txt"), corpus_text(10, 13))};
  CorpusCursor at;
  std::vector<std::vector<int>> chunks;
  for (int guard = 0; guard < 10; ++guard) {
    const CorpusChunk c = read_corpus_chunk(files, at, 4, 2, word_ids);
    chunks.push_back(first_docs(c.documents));
    if (c.last) {
      EXPECT_EQ(c.next, CorpusCursor{});
      break;
    }
    at = c.next;
  }
  // 13 documents in shards of 4 with ≥ 2 left for the next: 4, 4, then 5 (1 would be left).
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0], range(0, 4));
  EXPECT_EQ(chunks[1], range(4, 8));  // crosses from a.txt into b.txt
  EXPECT_EQ(chunks[2], range(8, 13));

  // The whole corpus at once, and the lines of document 9 stay its own (not joined to 10).
  const CorpusChunk all = read_corpus_chunk(files, {}, SIZE_MAX, 1, word_ids);
  EXPECT_EQ(first_docs(all.documents), range(0, 13));
  for (const auto& d : all.documents)
    for (const auto& line : d)
      for (int32_t id : line) EXPECT_EQ(doc_of(id), doc_of(d[0][0]));
  EXPECT_TRUE(all.last);
}

TEST(CorpusChunks, CursorResumesMidFileWithLineNumbers) {
  test::TempDir dir;
  const std::vector<std::string> files = {write(dir.file("a.txt"), corpus_text(0, 9))};
  const CorpusChunk c = read_corpus_chunk(files, {}, 3, 2, word_ids);
  ASSERT_FALSE(c.last);
  EXPECT_EQ(c.next.file, 0u);
  // The cursor is the byte after the blank line that ended document 2, and its line number.
  const std::string text = corpus_text(0, 9);
  std::string before = corpus_text(0, 3);
  EXPECT_EQ(text.compare(0, before.size(), before), 0);
  EXPECT_EQ(c.next.offset, before.size());
  EXPECT_EQ(c.next.line, size_t(std::count(before.begin(), before.end(), '\n')) + 1);
  const CorpusChunk d = read_corpus_chunk(files, c.next, 3, 2, word_ids);
  EXPECT_EQ(first_docs(d.documents), range(3, 6));
}

TEST(CorpusChunks, FoldersExpandToSortedTxtFiles) {
  test::TempDir dir;
  fs::create_directories(dir.file("f"));
  write(dir.file("f/b.txt"), "x\n");
  write(dir.file("f/a.txt"), "x\n");
  write(dir.file("f/notes.md"), "x\n");
  fs::create_directories(dir.file("f/sub.txt"));  // a folder named .txt is not a file
  const std::string single = write(dir.file("z.txt"), "x\n");
  EXPECT_EQ(expand_corpus_paths({single, dir.file("f")}),
            (std::vector<std::string>{single, dir.file("f/a.txt"), dir.file("f/b.txt")}));
  fs::create_directories(dir.file("empty"));
  expect_error([&] { expand_corpus_paths({dir.file("empty")}); }, {dir.file("empty"), ".txt"});
  expect_error([&] { expand_corpus_paths({dir.file("nope")}); }, {dir.file("nope"), "not found"});
}

// ------------------------------------------------------------------------------- stream -------

constexpr int32_t kCls = 1, kSep = 2, kMask = 3, kPad = 0;
const SpecialIds kIds{kCls, kSep, kMask, kPad, 2000};

StreamOptions small_options() {
  StreamOptions so;
  so.recipe.max_seq_length = 24;
  so.recipe.max_predictions_per_seq = 4;
  so.batch_size = 5;
  so.dupe_factor = 3;
  so.shard_documents = 6;
  so.split_sentences = false;
  return so;
}

PretrainingStream make_stream(const std::vector<std::string>& files, const StreamOptions& so) {
  return PretrainingStream(files, word_ids, so, kIds);
}

bool same(const Batch& a, const Batch& b) {
  return a.batch_size == b.batch_size && a.input_ids == b.input_ids &&
         a.token_type_ids == b.token_type_ids && a.attention_mask == b.attention_mask &&
         a.masked_lm_positions == b.masked_lm_positions && a.masked_lm_ids == b.masked_lm_ids &&
         a.next_sentence_labels == b.next_sentence_labels;
}

// Row r of a batch as (ids, types, label), padding removed: for comparing example sequences.
using Row = std::tuple<std::vector<int32_t>, std::vector<int32_t>, int32_t>;
std::vector<Row> rows(const Batch& b) {
  std::vector<Row> out;
  for (int r = 0; r < b.batch_size; ++r) {
    const size_t at = size_t(r) * b.seq_len;
    size_t n = 0;
    while (n < size_t(b.seq_len) && b.attention_mask[at + n]) ++n;
    out.emplace_back(
        std::vector<int32_t>(b.input_ids.begin() + at, b.input_ids.begin() + at + n),
        std::vector<int32_t>(b.token_type_ids.begin() + at, b.token_type_ids.begin() + at + n),
        b.next_sentence_labels[r]);
  }
  return out;
}

TEST(PretrainingStream, MemoryStaysBoundedOnALargeCorpus) {
  test::TempDir dir;
  // One 40-document file, and a corpus of 60 copies of it in 6 files (2,400 documents).
  const std::string one = corpus_text(0, 40);
  std::string ten;
  for (int i = 0; i < 10; ++i) ten += one;
  std::vector<std::string> files;
  for (int f = 0; f < 6; ++f) files.push_back(write(dir.file(fmt::format("c{}.txt", f)), ten));
  const StreamOptions so = small_options();
  PretrainingStream s = make_stream(files, so);
  size_t batches = 0;
  while (s.epoch() < 2 && batches < 100000) {
    s.next();
    ++batches;
  }
  ASSERT_EQ(s.epoch(), 2) << "wrapped around the files into a second epoch";
  const StreamStats& st = s.stats();
  // Documents held: one shard, plus at most 1 joined tail document (NSP needs 2 left).
  EXPECT_LE(st.peak_documents, so.shard_documents + 1);
  EXPECT_EQ(st.documents, 0u) << "documents are freed once the shard's examples are built";
  // Examples held: a document of L lines gives at most L examples (each takes ≥ 1 line) per
  // dupe; ours have ≤ 4 lines; plus < B carried from the previous shard.
  EXPECT_LE(st.peak_examples, (so.shard_documents + 1) * 4 * so.dupe_factor + so.batch_size - 1);
  EXPECT_GE(st.chunks_built, 2400u / 7);
  std::printf(
      "2,400 documents: %zu batches per epoch, %zu shards, peak %zu documents / %zu examples\n",
      batches, st.chunks_built, st.peak_documents, st.peak_examples);
}

TEST(PretrainingStream, BatchesDropNothingAcrossShards) {
  test::TempDir dir;
  const std::vector<std::string> files = {write(dir.file("a.txt"), corpus_text(0, 25)),
                                          write(dir.file("b.txt"), corpus_text(25, 33))};
  StreamOptions one = small_options();
  one.batch_size = 1;
  StreamOptions seven = small_options();
  seven.batch_size = 7;  // does not divide a shard's examples: leftovers lead the next batch
  PretrainingStream a = make_stream(files, one), b = make_stream(files, seven);
  std::vector<Row> ra, rb;
  while (rb.size() < 700) {
    const Batch x = b.next();
    EXPECT_EQ(x.batch_size, 7);
    for (auto& r : rows(x)) rb.push_back(r);
  }
  while (ra.size() < rb.size())
    for (auto& r : rows(a.next())) ra.push_back(r);
  EXPECT_EQ(ra, rb);
  EXPECT_GE(b.epoch(), 2);
}

TEST(PretrainingStream, StaticRepeatsEpochsDynamicDoesNot) {
  test::TempDir dir;
  const std::vector<std::string> files = {write(dir.file("a.txt"), corpus_text(0, 20))};
  for (const bool dynamic : {false, true}) {
    SCOPED_TRACE(dynamic ? "dynamic" : "static");
    StreamOptions so = small_options();
    so.batch_size = 1;
    so.dynamic_masking = dynamic;
    so.dupe_factor = dynamic ? 1 : 2;
    PretrainingStream s = make_stream(files, so);
    std::vector<Row> epoch1, epoch2;
    while (s.epoch() == 1) {
      const Batch b = s.next();
      (s.epoch() == 1 ? epoch1 : epoch2).push_back(rows(b)[0]);
    }
    while (s.epoch() == 2) {
      const Batch b = s.next();
      if (s.epoch() == 2) epoch2.push_back(rows(b)[0]);
    }
    if (dynamic)
      EXPECT_NE(epoch1, epoch2);  // fresh pairs and masks (even the count may differ)
    else
      EXPECT_EQ(epoch1, epoch2);
  }
}

// Take k batches, save, take m more; a fresh stream restored from the state gives the same m.
void check_resume(const std::vector<std::string>& files, const StreamOptions& so,
                  const TokenizeFn& tok, const std::vector<size_t>& ks, size_t m) {
  for (size_t k : ks) {
    SCOPED_TRACE("after " + std::to_string(k) + " batches");
    PretrainingStream a(files, tok, so, kIds);
    for (size_t i = 0; i < k; ++i) a.next();
    const std::vector<uint8_t> state = a.save_state();
    std::vector<Batch> want;
    for (size_t i = 0; i < m; ++i) want.push_back(a.next());
    PretrainingStream b(files, tok, so, kIds);
    b.restore_state(state);
    for (size_t i = 0; i < m; ++i) ASSERT_TRUE(same(b.next(), want[i])) << "batch " << i;
    EXPECT_EQ(b.epoch(), a.epoch());
    EXPECT_EQ(b.save_state(), a.save_state());
  }
}

TEST(PretrainingStream, RestoredStreamYieldsExactlyTheSameBatches) {
  test::TempDir dir;
  const std::vector<std::string> files = {write(dir.file("a.txt"), corpus_text(0, 17)),
                                          write(dir.file("b.txt"), corpus_text(17, 30, false))};
  StreamOptions so = small_options();
  // 0: at the start; others land mid-shard, on shard ends and past an epoch end.
  check_resume(files, so, word_ids, {0, 1, 9, 23, 40, 77, 150}, 60);
  so.dynamic_masking = true;
  so.dupe_factor = 1;
  check_resume(files, so, word_ids, {3, 31, 95}, 60);
  so.recipe.nsp = false;
  so.recipe.whole_word_mask = true;
  so.recipe.continuation.assign(2000, false);
  for (int i = 1000; i < 2000; i += 3) so.recipe.continuation[i] = true;
  check_resume(files, so, word_ids, {5, 44}, 40);
}

TEST(PretrainingStream, RestoreOnRealTextAcrossShards) {
  const std::string corpus = test::data_dir() + "/corpus/enwiki/enwiki_valid_1000docs.txt";
  const std::string vocab = test::data_dir() + "/vocab/bert-base-uncased-vocab.txt";
  BERTRT_REQUIRE_PATH(corpus);
  BERTRT_REQUIRE_PATH(vocab);
  const Tokenizer tok(Vocab::load(vocab), TokenizerOptions{});
  test::TempDir dir;
  // The first 400 lines in two files.
  std::ifstream in(corpus);
  std::string line, a, b;
  for (int i = 0; i < 400 && std::getline(in, line); ++i) (i < 200 ? a : b) += line + "\n";
  const std::vector<std::string> files = {write(dir.file("a.txt"), a), write(dir.file("b.txt"), b)};
  StreamOptions so;
  so.batch_size = 8;
  so.shard_documents = 12;
  so.dupe_factor = 2;
  const TokenizeFn fn = [&](const std::string& l) {
    return tok.convert_tokens_to_ids(tok.tokenize(l));
  };
  const SpecialIds ids{tok.cls_id(), tok.sep_id(), tok.mask_id(), tok.pad_id(), tok.vocab().size()};
  PretrainingStream probe(files, fn, so, ids);
  EXPECT_LE(probe.stats().peak_documents, 13u);
  for (size_t k : {size_t(0), size_t(37), size_t(120)}) {
    SCOPED_TRACE(k);
    PretrainingStream x(files, fn, so, ids);
    for (size_t i = 0; i < k; ++i) x.next();
    const auto state = x.save_state();
    PretrainingStream y(files, fn, so, ids);
    y.restore_state(state);
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(same(x.next(), y.next())) << "batch " << i;
  }
}

TEST(PretrainingStream, RestoreRejectsOtherOptionsAndBadStates) {
  test::TempDir dir;
  const std::vector<std::string> files = {write(dir.file("a.txt"), corpus_text(0, 12))};
  StreamOptions so = small_options();
  PretrainingStream a = make_stream(files, so);
  a.next();
  const std::vector<uint8_t> state = a.save_state();
  const std::string text(state.begin(), state.end());
  EXPECT_EQ(text.rfind("bertrt-pretraining-stream 1\nconfig ", 0), 0u) << text;

  StreamOptions other = so;
  other.recipe.seed = 1;
  PretrainingStream b = make_stream(files, other);
  expect_error([&] { b.restore_state(state); }, {"seed=1", "seed=12345", "same data flags"});
  other = so;
  other.dupe_factor = 4;
  PretrainingStream c = make_stream(files, other);
  expect_error([&] { c.restore_state(state); }, {"dupe=4"});
  PretrainingStream e = make_stream(files, so);
  const std::string junk = "hello\n";
  expect_error([&] { e.restore_state({junk.begin(), junk.end()}); }, {"data cursor"});
  std::string cut = text.substr(0, text.find("position"));
  expect_error([&] { e.restore_state({cut.begin(), cut.end()}); }, {"position"});

  // A corpus file that changed size.
  write(dir.file("a.txt"), corpus_text(0, 13));
  PretrainingStream d = make_stream(files, so);
  expect_error([&] { d.restore_state(state); }, {"a.txt:"});
}

TEST(PretrainingStream, ErrorsNameTheFiles) {
  test::TempDir dir;
  const std::string empty = write(dir.file("empty.txt"), "");
  const std::string blank = write(dir.file("blank.txt"), "\n \n\n");
  const std::string one = write(dir.file("one.txt"), document_text(3));
  StreamOptions so = small_options();
  expect_error([&] { make_stream({empty}, so); }, {"empty.txt", "empty"});
  expect_error([&] { make_stream({empty, blank}, so); }, {"empty.txt", "blank.txt", "empty"});
  expect_error([&] { make_stream({one}, so); }, {"one.txt", "1 document", "next-sentence"});
  StreamOptions no_nsp = so;
  no_nsp.recipe.nsp = false;
  EXPECT_NO_THROW(make_stream({one}, no_nsp));  // one document is enough without NSP
  StreamOptions bad = so;
  bad.dynamic_masking = true;
  expect_error([&] { make_stream({one}, bad); }, {"dupe factor must be 1", "got 3"});
  bad = so;
  bad.shard_documents = 1;
  expect_error([&] { make_stream({one}, bad); }, {"shard of 1", "another document"});
  expect_error([&] { make_stream({dir.file("missing.txt")}, so); }, {"missing.txt", "not found"});
  // A binary file (a .brt passed as --corpus) trained on its bytes' UTF-8 runs.
  const std::string bin =
      write(dir.file("model.brt"), document_text(3) + std::string("BRT1\0\x01", 6));
  expect_error([&] { make_stream({bin}, no_nsp); }, {"model.brt", "holds a NUL byte", "binary"});
}

TEST(PretrainingStream, InMemoryDocumentsStillWork) {
  Documents docs;
  for (int d = 0; d < 10; ++d) docs.push_back({{1000 + d * 100, 1001 + d * 100}, {1002 + d * 100}});
  PretrainingOptions opts;
  opts.max_seq_length = 16;
  PretrainingStream s(docs, opts, 4, kCls, kSep, kMask, kPad, 2000);
  for (int i = 0; i < 20; ++i) {
    const Batch b = s.next();
    EXPECT_EQ(b.batch_size, 4);
    EXPECT_EQ(b.seq_len, 16);
  }
  EXPECT_GE(s.epoch(), 2);
  const auto state = s.save_state();
  std::vector<Batch> want;
  for (int i = 0; i < 5; ++i) want.push_back(s.next());
  PretrainingStream t(docs, opts, 4, kCls, kSep, kMask, kPad, 2000);
  t.restore_state(state);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(same(t.next(), want[i]));
}

}  // namespace
}  // namespace bertrt
