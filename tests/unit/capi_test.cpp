// The C API (include/bertrt/bertrt.h) called from C++: loading from a path and a buffer, queries,
// tokenization with offsets, inference on caller batches, the trainer, and every kind of bad
// input the issue names (null handle, wrong-size buffer, a file that fails verification, a batch
// longer than max_position_embeddings, a trainer step after a failed one): an error status, a
// message naming the argument, nothing written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bertrt/bertrt.h"
#include "embed/embedder.h"
#include "embed/embedding_precision.h"
#include "io/model_io.h"
#include "model_runs.h"
#include "test_util.h"

namespace bertrt {
namespace {

namespace fs = std::filesystem;

std::string vocab_path() { return test::data_dir() + "/vocab/bert-base-uncased-vocab.txt"; }
std::string sst2_path(const char* split) {
  return test::data_dir() + "/glue/SST-2/" + split + ".tsv";
}

// The first `lines` lines of `from` (header included) into `to`.
void head_lines(const std::string& from, const std::string& to, int lines) {
  std::ifstream in(from);
  std::ofstream out(to);
  std::string line;
  for (int i = 0; i < lines && std::getline(in, line); ++i) out << line << '\n';
}

class CapiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_data(vocab_path()) || !test::have_data(sst2_path("train")))
      GTEST_SKIP() << "no vocab or SST-2 data";
    dir_ = fs::temp_directory_path() /
           ("capi_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    tokenizer_ = std::make_unique<Tokenizer>(Vocab::load(vocab_path()), TokenizerOptions{});
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // A tiny model (test::tiny_config with the real vocabulary) with `heads`, saved to dir_/name.
  std::string write_model(const std::string& name, const HeadsConfig& heads) {
    BertConfig c = test::tiny_config();
    c.vocab_size = tokenizer_->vocab().size();
    BertModel m(c, heads);
    m.init_weights(7);
    const std::string path = (dir_ / name).string();
    save_model(path, m, *tokenizer_, {});
    return path;
  }
  bertrt_model* load(const std::string& path) {
    bertrt_model_options o;
    bertrt_model_options_init(&o);
    o.num_threads = 1;
    bertrt_model* m = nullptr;
    EXPECT_EQ(bertrt_model_load(path.c_str(), &o, &m), BERTRT_OK) << bertrt_last_error();
    return m;
  }
  // SST-2 options of the short trainer runs: batch 16, one epoch, lr 1e-3, 24 pieces.
  static bertrt_finetune_options short_run_options() {
    bertrt_finetune_options o;
    bertrt_finetune_options_init(&o);
    o.task = "sst2", o.batch_size = 16, o.epochs = 1, o.learning_rate = 1e-3f;
    o.max_seq_length = 24;
    return o;
  }
  // The losses of `steps` one-step calls of a trainer made with `o` on the model file `model`,
  // saved to dir_/out when out is given; model and trainer freed after.
  std::vector<double> step_losses(const std::string& model, const bertrt_finetune_options& o,
                                  const std::string& train, int steps, const std::string& out = "") {
    bertrt_model* m = load(model);
    bertrt_trainer* t = nullptr;
    std::vector<double> losses;
    EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_OK) << bertrt_last_error();
    for (int i = 0; t && i < steps; ++i) {
      bertrt_step_metrics s{};
      EXPECT_EQ(bertrt_trainer_step(t, 1, &s), BERTRT_OK) << bertrt_last_error();
      losses.push_back(s.loss);
    }
    if (t && !out.empty()) {
      EXPECT_EQ(bertrt_trainer_save(t, (dir_ / out).c_str()), BERTRT_OK) << bertrt_last_error();
    }
    bertrt_trainer_free(t);
    bertrt_model_free(m);
    return losses;
  }
  HeadsConfig sequence_heads() {
    HeadsConfig h;
    h.labels = {"neg", "pos"};
    return h;
  }
  fs::path dir_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

// A batch of B rows of the model's encodings of `texts`, padded to the longest.
struct TextBatch {
  std::vector<int32_t> ids, types, mask;
  bertrt_batch batch{};
};
TextBatch text_batch(const Tokenizer& tok, const std::vector<std::string>& texts) {
  TextBatch b;
  size_t T = 0;
  std::vector<Encoding> enc;
  for (const auto& t : texts)
    enc.push_back(tok.encode(t, std::nullopt)), T = std::max(T, enc.back().input_ids.size());
  for (const Encoding& e : enc)
    for (size_t t = 0; t < T; ++t) {
      const bool in = t < e.input_ids.size();
      b.ids.push_back(in ? e.input_ids[t] : tok.pad_id());
      b.types.push_back(0);
      b.mask.push_back(in);
    }
  b.batch =
      bertrt_batch{int32_t(texts.size()), int32_t(T), b.ids.data(), b.types.data(), b.mask.data()};
  return b;
}

TEST_F(CapiTest, LoadsFromPathAndBufferAndAnswersQueries) {
  HeadsConfig h = sequence_heads();
  h.mlm = true;
  const std::string path = write_model("m.brt", h);
  bertrt_model* a = load(path);
  ASSERT_NE(a, nullptr);
  const std::string bytes = test::read_bytes(path);
  bertrt_model_options o;
  bertrt_model_options_init(&o);
  o.num_threads = 1;
  bertrt_model* b = nullptr;
  ASSERT_EQ(bertrt_model_load_buffer(bytes.data(), bytes.size(), &o, &b), BERTRT_OK)
      << bertrt_last_error();

  bertrt_config c{};
  ASSERT_EQ(bertrt_model_config(b, &c), BERTRT_OK);
  EXPECT_EQ(c.vocab_size, tokenizer_->vocab().size());
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.max_position_embeddings, 24);
  bertrt_heads heads{};
  ASSERT_EQ(bertrt_model_heads(b, &heads), BERTRT_OK);
  EXPECT_EQ(heads.kind, BERTRT_HEAD_SEQUENCE_CLASSIFICATION);
  EXPECT_EQ(heads.num_labels, 2);
  EXPECT_EQ(heads.has_mlm, 1);
  EXPECT_EQ(heads.int8, 0);
  const char* label = nullptr;
  ASSERT_EQ(bertrt_model_label(b, 1, &label), BERTRT_OK);
  EXPECT_STREQ(label, "pos");
  EXPECT_EQ(bertrt_model_label(b, 2, &label), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("index 2"), std::string::npos)
      << bertrt_last_error();
  const char* token = nullptr;
  ASSERT_EQ(bertrt_model_token(b, tokenizer_->cls_id(), &token), BERTRT_OK);
  EXPECT_STREQ(token, "[CLS]");

  // The buffer's model computes what the file's does.
  TextBatch tb = text_batch(*tokenizer_, {"a gorgeous, witty movie", "dull"});
  std::vector<float> sa(4), sb(4);
  ASSERT_EQ(bertrt_classify(a, &tb.batch, sa.data(), sa.size()), BERTRT_OK) << bertrt_last_error();
  ASSERT_EQ(bertrt_classify(b, &tb.batch, sb.data(), sb.size()), BERTRT_OK) << bertrt_last_error();
  EXPECT_EQ(sa, sb);
  bertrt_model_free(a);
  bertrt_model_free(b);
}

TEST_F(CapiTest, TokenizesPairsWithOffsetsIntoTheirTexts) {
  bertrt_model* m = load(write_model("m.brt", sequence_heads()));
  ASSERT_NE(m, nullptr);
  const std::string a = "Héllo, unaffable World!", b = "Second text";
  size_t n = 0;
  // Sizing call: capacity 0 fails but reports the length.
  EXPECT_EQ(bertrt_tokenize(m, a.c_str(), b.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0, &n),
            BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("capacity 0"), std::string::npos);
  ASSERT_GT(n, 4u);
  std::vector<int32_t> ids(n), types(n), mask(n);
  std::vector<int64_t> off(2 * n);
  ASSERT_EQ(bertrt_tokenize(m, a.c_str(), b.c_str(), 0, ids.data(), types.data(), mask.data(),
                            off.data(), n, &n),
            BERTRT_OK)
      << bertrt_last_error();
  // The ids are the tokenizer's encoding (the tokenizer itself is checked against the reference
  // BERT tokenizer in tokenizer_test); the offsets cut each piece out of its own text.
  const Encoding e = tokenizer_->encode(a, b);
  EXPECT_EQ(ids, e.input_ids);
  EXPECT_EQ(types, e.token_type_ids);
  for (size_t i = 0; i < n; ++i) {
    const std::string piece = tokenizer_->vocab().token(ids[i]);
    if (piece == "[CLS]" || piece == "[SEP]") {
      EXPECT_EQ(off[2 * i], -1);
      continue;
    }
    const std::string& text = types[i] == 0 ? a : b;
    ASSERT_LE(size_t(off[2 * i + 1]), text.size());
    std::string sub = text.substr(size_t(off[2 * i]), size_t(off[2 * i + 1] - off[2 * i]));
    std::string want = piece.rfind("##", 0) == 0 ? piece.substr(2) : piece;
    for (char& ch : sub) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    // Accent stripping: the piece "hello" covers the original characters "Héllo".
    if (sub == "h\xc3\xa9llo") sub = "hello";
    EXPECT_EQ(sub, want) << "piece " << i;
  }
  // Truncation (longest first) keeps a prefix of each text, offsets still aligned.
  size_t t = 0;
  std::vector<int64_t> off8(16);
  ASSERT_EQ(bertrt_tokenize(m, a.c_str(), b.c_str(), 8, ids.data(), types.data(), nullptr,
                            off8.data(), n, &t),
            BERTRT_OK);
  EXPECT_EQ(t, 8u);
  EXPECT_EQ(off8[2], off[2]);
  // Latin-1 "café" is refused, as the CLI refuses it: the tokenizer would drop the byte and
  // read "caf" (it did, with BERTRT_OK).
  EXPECT_EQ(bertrt_tokenize(m, "ok", "caf\xe9 ok", 0, ids.data(), nullptr, nullptr, nullptr, n, &t),
            BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(),
               "bertrt_tokenize: text_b: byte 4 (0xE9) is not UTF-8; the text must be UTF-8 (the "
               "tokenizer would drop that byte and read other words)");
  EXPECT_EQ(bertrt_tokenize(m, "\xff", nullptr, 0, ids.data(), nullptr, nullptr, nullptr, n, &t),
            BERTRT_E_INVALID_ARGUMENT);
  bertrt_model_free(m);
}

TEST_F(CapiTest, EncoderHeadsAndFillMaskMatchTheLibrary) {
  HeadsConfig h = sequence_heads();
  h.mlm = true;
  const std::string path = write_model("m.brt", h);
  bertrt_model* m = load(path);
  ASSERT_NE(m, nullptr);
  TextBatch tb = text_batch(*tokenizer_, {"the cat sat", "a much longer sentence here"});
  const int B = tb.batch.batch_size, T = tb.batch.seq_len, H = 32;
  std::vector<float> hidden(size_t(B) * T * H), pooled(size_t(B) * H), scores(size_t(B) * 2);
  ASSERT_EQ(bertrt_encode(m, &tb.batch, hidden.data(), hidden.size(), pooled.data(), pooled.size()),
            BERTRT_OK)
      << bertrt_last_error();
  ASSERT_EQ(bertrt_classify(m, &tb.batch, scores.data(), scores.size()), BERTRT_OK);
  // The same model run through the library directly (the C API adds no arithmetic).
  LoadedModel lm = load_model(path);
  auto be = make_backend("cpu");
  lm.model->forward(*be, EncoderInputs{B, T, tb.ids.data(), tb.types.data(), tb.mask.data()}, {},
                    false);
  EXPECT_TRUE(test::rel_close(hidden.data(),
                              std::vector<float>(lm.model->last_hidden_state(),
                                                 lm.model->last_hidden_state() + hidden.size()),
                              1e-6f));
  EXPECT_TRUE(test::rel_close(scores.data(), lm.model->logits(), 1e-6f));

  std::vector<bertrt_fill_candidate> c(6);
  size_t count = 0;
  ASSERT_EQ(bertrt_fill_mask(m, "the [MASK] sat on the [MASK]", 3, c.data(), c.size(), &count),
            BERTRT_OK)
      << bertrt_last_error();
  EXPECT_EQ(count, 6u);
  EXPECT_EQ(c[0].position, 2);
  EXPECT_GE(c[0].probability, c[1].probability);
  EXPECT_GE(c[1].probability, c[2].probability);
  // A size query (out NULL) said "capacity 0 is too small" whatever capacity was passed.
  count = 0;
  EXPECT_EQ(bertrt_fill_mask(m, "a [MASK]", 3, nullptr, 10, &count), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(count, 3u);
  EXPECT_STREQ(bertrt_last_error(),
               "bertrt_fill_mask: out is NULL: 1 [MASK] × 3 candidates need 3 entries (*count says "
               "so)");
  EXPECT_EQ(bertrt_fill_mask(m, "no mask here", 3, c.data(), c.size(), &count),
            BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_fill_mask(m, "caf\xe9 [MASK]", 3, c.data(), c.size(), &count),
            BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("bertrt_fill_mask: text: byte 4 (0xE9)"),
            std::string::npos)
      << bertrt_last_error();
  std::string words;
  for (int i = 0; i < 30; ++i) words += "word ";
  EXPECT_EQ(bertrt_fill_mask(m, (words + "[MASK]").c_str(), 1, c.data(), c.size(), &count),
            BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("max_position_embeddings"), std::string::npos);
  // A head the model lacks.
  std::vector<float> s(size_t(B) * T);
  EXPECT_EQ(bertrt_spans(m, &tb.batch, s.data(), s.data(), s.size()), BERTRT_E_UNSUPPORTED);
  EXPECT_NE(std::string(bertrt_last_error()).find("question answering"), std::string::npos);
  bertrt_model_free(m);
}

// The backend is the caller's choice: the scalar reference (and Vulkan where built and a device
// exists) compute what cpu computes, within fp32 reordering (the backends' own tests bound each
// op; 1e-5 of the tensor's scale covers the whole tiny model).
TEST_F(CapiTest, BackendsAreSelectable) {
  const std::string path = write_model("m.brt", sequence_heads());
  TextBatch tb = text_batch(*tokenizer_, {"the cat sat", "a much longer sentence here"});
  std::vector<std::string> names = {"cpu", "reference", "checked"};
#ifdef BERTRT_HAVE_VULKAN
  names.push_back("vulkan");
#endif
  std::vector<float> want;
  for (const std::string& name : names) {
    bertrt_model_options o;
    bertrt_model_options_init(&o);
    o.backend = name.c_str();
    o.num_threads = 1;
    bertrt_model* m = nullptr;
    const bertrt_status st = bertrt_model_load(path.c_str(), &o, &m);
    if (name == "vulkan" && st != BERTRT_OK) {  // no device here: an error, not a crash
      EXPECT_EQ(m, nullptr);
      EXPECT_NE(std::string(bertrt_last_error()).find("options.backend"), std::string::npos);
      continue;
    }
    ASSERT_EQ(st, BERTRT_OK) << name << ": " << bertrt_last_error();
    std::vector<float> h(size_t(tb.batch.batch_size) * tb.batch.seq_len * 32);
    ASSERT_EQ(bertrt_encode(m, &tb.batch, h.data(), h.size(), nullptr, 0), BERTRT_OK)
        << name << ": " << bertrt_last_error();
    if (want.empty())
      want = h;
    else
      EXPECT_TRUE(test::rel_close(h.data(), want, 1e-5f)) << name;
    bertrt_model_free(m);
  }
  // Options that would be ignored or read as something else are refused, naming the field.
  const std::pair<void (*)(bertrt_model_options&), const char*> bad[] = {
      {[](bertrt_model_options& o) { o.device = 0; },
       "options.device 0 selects a Vulkan device: it needs backend \"vulkan\" (got \"cpu\")"},
      {[](bertrt_model_options& o) { o.device = -5; },
       "options.device must be ≥ 0 (a Vulkan device) or -1 (the default), got -5"},
      {[](bertrt_model_options& o) { o.verify_checksums = 7; },
       "options.verify_checksums must be 0 or 1, got 7"}};
  for (const auto& [set, message] : bad) {
    bertrt_model_options o;
    bertrt_model_options_init(&o);
    set(o);
    bertrt_model* m = nullptr;
    EXPECT_EQ(bertrt_model_load(path.c_str(), &o, &m), BERTRT_E_INVALID_ARGUMENT) << message;
    EXPECT_EQ(m, nullptr);
    EXPECT_NE(std::string(bertrt_last_error()).find(message), std::string::npos)
        << bertrt_last_error();
  }
}

TEST_F(CapiTest, NullHandlesAndArgumentsAreErrorsNamingThem) {
  bertrt_batch batch{};
  float out[4];
  EXPECT_EQ(bertrt_classify(nullptr, &batch, out, 4), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(), "bertrt_classify: argument 'model' is NULL");
  EXPECT_EQ(bertrt_model_load(nullptr, nullptr, nullptr), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(), "bertrt_model_load: argument 'path' is NULL");
  EXPECT_EQ(bertrt_trainer_step(nullptr, 1, nullptr), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(), "bertrt_trainer_step: argument 'trainer' is NULL");
  EXPECT_EQ(
      bertrt_tokenize(nullptr, "x", nullptr, 0, nullptr, nullptr, nullptr, nullptr, 0, nullptr),
      BERTRT_E_INVALID_ARGUMENT);
  bertrt_model_free(nullptr);  // accepted
  bertrt_trainer_free(nullptr);
  bertrt_model* m = load(write_model("m.brt", sequence_heads()));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(bertrt_classify(m, nullptr, out, 4), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(), "bertrt_classify: argument 'batch' is NULL");
  std::vector<int32_t> ids{101, 102};
  bertrt_batch b{1, 2, nullptr, nullptr, nullptr};
  EXPECT_EQ(bertrt_classify(m, &b, out, 4), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(), "bertrt_classify: argument 'batch.input_ids' is NULL");
  // The message is per thread: another thread has none.
  std::string other = "unset";
  std::thread([&] { other = bertrt_last_error(); }).join();
  EXPECT_EQ(other, "");
  bertrt_model_free(m);
}

TEST_F(CapiTest, WrongSizeBuffersAndBadBatchesWriteNothing) {
  bertrt_model* m = load(write_model("m.brt", sequence_heads()));
  ASSERT_NE(m, nullptr);
  TextBatch tb = text_batch(*tokenizer_, {"one", "two words"});
  std::vector<float> out(4, -7.0f);
  EXPECT_EQ(bertrt_classify(m, &tb.batch, out.data(), 3), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(bertrt_last_error()).find("capacity is 3 floats, the output [2, 2] needs 4"),
      std::string::npos)
      << bertrt_last_error();
  EXPECT_EQ(out, std::vector<float>(4, -7.0f));
  std::vector<float> hidden(10, -7.0f);
  EXPECT_EQ(bertrt_encode(m, &tb.batch, hidden.data(), hidden.size(), nullptr, 0),
            BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("last_hidden_capacity"), std::string::npos);
  EXPECT_EQ(hidden, std::vector<float>(10, -7.0f));

  // Longer than max_position_embeddings (24).
  std::vector<int32_t> ids(2 * 25, 1000);
  bertrt_batch longb{2, 25, ids.data(), nullptr, nullptr};
  std::vector<float> s(4, -7.0f);
  EXPECT_EQ(bertrt_classify(m, &longb, s.data(), s.size()), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(),
               "bertrt_classify: batch.seq_len 25 exceeds the model's max_position_embeddings 24");
  EXPECT_EQ(s, std::vector<float>(4, -7.0f));
  // An id outside the vocabulary, a mask value that is not 0/1.
  std::vector<int32_t> bad{101, 999999};
  bertrt_batch badb{1, 2, bad.data(), nullptr, nullptr};
  EXPECT_EQ(bertrt_classify(m, &badb, s.data(), s.size()), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("batch.input_ids[1] = 999999"),
            std::string::npos);
  std::vector<int32_t> okids{101, 102}, mask{1, 2};
  bertrt_batch maskb{1, 2, okids.data(), nullptr, mask.data()};
  EXPECT_EQ(bertrt_classify(m, &maskb, s.data(), s.size()), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("batch.attention_mask[1] = 2"),
            std::string::npos);
  bertrt_model_free(m);
}

TEST_F(CapiTest, AFileThatFailsVerificationIsRefusedAndLeftAsItWas) {
  const std::string path = write_model("m.brt", sequence_heads());
  std::string bytes = test::read_bytes(path);
  bytes[bytes.size() - 100] ^= 0x40;  // a weight byte (the tensor segments end the file)
  test::write_bytes(path, bytes);
  bertrt_model* m = reinterpret_cast<bertrt_model*>(1);
  EXPECT_EQ(bertrt_model_load(path.c_str(), nullptr, &m), BERTRT_E_MODEL);
  EXPECT_EQ(m, nullptr);
  const std::string msg = bertrt_last_error();
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("checksum"), std::string::npos) << msg;
  EXPECT_EQ(test::read_bytes(path), bytes);
  // From a buffer: the message names the buffer, not a temporary path.
  EXPECT_EQ(bertrt_model_load_buffer(bytes.data(), bytes.size() / 2, nullptr, &m), BERTRT_E_MODEL);
  EXPECT_EQ(std::string(bertrt_last_error()).rfind("bertrt_model_load_buffer: <buffer>", 0), 0u)
      << bertrt_last_error();
  EXPECT_EQ(bertrt_model_load((dir_ / "missing.brt").c_str(), nullptr, &m), BERTRT_E_IO);
  EXPECT_NE(std::string(bertrt_last_error()).find("missing.brt"), std::string::npos);
  bertrt_model_options o;
  bertrt_model_options_init(&o);
  o.backend = "tpu";
  EXPECT_EQ(bertrt_model_load(path.c_str(), &o, &m), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.backend"), std::string::npos);
}

TEST_F(CapiTest, OneModelServesSeveralThreads) {
  bertrt_model* m = load(write_model("m.brt", sequence_heads()));
  ASSERT_NE(m, nullptr);
  // Different batch shapes per thread, each result compared with the same call made alone.
  const std::vector<std::vector<std::string>> inputs = {
      {"a gorgeous, witty movie"},
      {"dull and long", "not good"},
      {"the best film of the year", "x", "y z"},
      {"one more sentence with many more words than the others have"}};
  std::vector<std::vector<float>> alone;
  std::vector<TextBatch> batches;
  for (const auto& in : inputs) {
    batches.push_back(text_batch(*tokenizer_, in));
    std::vector<float> s(in.size() * 2);
    ASSERT_EQ(bertrt_classify(m, &batches.back().batch, s.data(), s.size()), BERTRT_OK);
    alone.push_back(s);
  }
  for (auto& b : batches)
    b.batch = bertrt_batch{b.batch.batch_size, b.batch.seq_len, b.ids.data(), b.types.data(),
                           b.mask.data()};
  std::vector<int> mismatches(inputs.size(), 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < inputs.size(); ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::vector<float> s(alone[t].size());
        size_t n = 0;
        int32_t ids[64];
        if (bertrt_classify(m, &batches[t].batch, s.data(), s.size()) != BERTRT_OK ||
            s != alone[t] ||
            bertrt_tokenize(m, inputs[t][0].c_str(), nullptr, 0, ids, nullptr, nullptr, nullptr, 64,
                            &n) != BERTRT_OK)
          ++mismatches[t];
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(inputs.size(), 0));
  bertrt_model_free(m);
}

TEST_F(CapiTest, TrainerFineTunesEvaluatesAndSavesAsTheCliDoes) {
  BERTRT_SKIP_UNDER_EMULATOR();
  const std::string train = (dir_ / "train.tsv").string(), dev = (dir_ / "dev.tsv").string();
  head_lines(sst2_path("train"), train, 65);
  head_lines(sst2_path("dev"), dev, 33);
  bertrt_model* m = load(write_model("init.brt", HeadsConfig{}));
  ASSERT_NE(m, nullptr);
  bertrt_finetune_options o;
  bertrt_finetune_options_init(&o);
  EXPECT_EQ(o.batch_size, 32);
  EXPECT_FLOAT_EQ(o.learning_rate, 2e-5f);
  o.task = "sst2";
  o.batch_size = 16;
  o.epochs = 1;
  o.learning_rate = 1e-3f;
  o.max_seq_length = 24;
  bertrt_trainer* t = nullptr;
  ASSERT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_OK) << bertrt_last_error();
  // The task's head, whose labels the SST-2 file spells 0/1: named as `bertrt predict` names them.
  const char* label = nullptr;
  ASSERT_EQ(bertrt_model_label(m, 0, &label), BERTRT_OK);
  EXPECT_STREQ(label, "negative");
  ASSERT_EQ(bertrt_model_label(m, 1, &label), BERTRT_OK);
  EXPECT_STREQ(label, "positive");
  int64_t total = 0;
  ASSERT_EQ(bertrt_trainer_total_steps(t, &total), BERTRT_OK);
  EXPECT_EQ(total, 4);  // 64 rows / 16
  std::vector<bertrt_step_metrics> seen;
  ASSERT_EQ(bertrt_trainer_set_progress(
                t,
                [](const bertrt_step_metrics* s, void* user) {
                  static_cast<std::vector<bertrt_step_metrics>*>(user)->push_back(*s);
                  return 0;
                },
                &seen),
            BERTRT_OK);
  bertrt_step_metrics last{};
  ASSERT_EQ(bertrt_trainer_step(t, 3, &last), BERTRT_OK) << bertrt_last_error();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(last.step, 3);
  EXPECT_TRUE(std::isfinite(last.loss));
  ASSERT_EQ(bertrt_trainer_step(t, 10, &last), BERTRT_OK);  // stops at the end
  EXPECT_EQ(last.step, 4);
  EXPECT_EQ(bertrt_trainer_step(t, 1, &last), BERTRT_E_STATE);  // as step_batch says
  EXPECT_NE(std::string(bertrt_last_error()).find("training is finished (4 of 4 steps)"),
            std::string::npos);
  char json[1024];
  size_t len = 0;
  EXPECT_EQ(bertrt_trainer_evaluate(t, dev.c_str(), json, 4, &len), BERTRT_E_INVALID_ARGUMENT);
  ASSERT_EQ(bertrt_trainer_evaluate(t, dev.c_str(), json, sizeof json, &len), BERTRT_OK)
      << bertrt_last_error();
  EXPECT_EQ(len, std::strlen(json) + 1);
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["task"], "sst2");
  EXPECT_EQ(j["examples"], 32);
  EXPECT_TRUE(j.contains("accuracy"));
  const std::string out = (dir_ / "sst2.brt").string();
  ASSERT_EQ(bertrt_trainer_save(t, out.c_str()), BERTRT_OK) << bertrt_last_error();
  bertrt_trainer_free(t);
  // The saved file is a fine-tuned model the CLI's eval reads (task recorded).
  bertrt_model* f = load(out);
  ASSERT_NE(f, nullptr);
  const char* task = nullptr;
  ASSERT_EQ(bertrt_model_task(f, &task), BERTRT_OK);
  EXPECT_STREQ(task, "sst2");
  bertrt_heads h{};
  ASSERT_EQ(bertrt_model_heads(f, &h), BERTRT_OK);
  EXPECT_EQ(h.kind, BERTRT_HEAD_SEQUENCE_CLASSIFICATION);
  bertrt_model_free(f);
  bertrt_model_free(m);

  // QAT: the saved file is int8.
  bertrt_model* q = load(write_model("init2.brt", HeadsConfig{}));
  o.qat = 1;
  o.max_steps = 2;
  ASSERT_EQ(bertrt_trainer_create(q, &o, train.c_str(), &t), BERTRT_OK) << bertrt_last_error();
  ASSERT_EQ(bertrt_trainer_step(t, 2, nullptr), BERTRT_OK) << bertrt_last_error();
  const std::string qout = (dir_ / "q.brt").string();
  ASSERT_EQ(bertrt_trainer_save(t, qout.c_str()), BERTRT_OK) << bertrt_last_error();
  EXPECT_EQ(bertrt_trainer_step(t, 1, nullptr), BERTRT_E_STATE);
  bertrt_trainer_free(t);
  bertrt_model_free(q);
  bertrt_model* i8 = load(qout);
  ASSERT_NE(i8, nullptr);
  ASSERT_EQ(bertrt_model_heads(i8, &h), BERTRT_OK);
  EXPECT_EQ(h.int8, 1);
  TextBatch tb = text_batch(*tokenizer_, {"a fine film"});
  float s[2];
  EXPECT_EQ(bertrt_classify(i8, &tb.batch, s, 2), BERTRT_OK) << bertrt_last_error();
  bertrt_trainer* none = nullptr;
  EXPECT_EQ(bertrt_trainer_create(i8, &o, train.c_str(), &none), BERTRT_E_UNSUPPORTED);
  EXPECT_NE(std::string(bertrt_last_error()).find("int8"), std::string::npos);
  bertrt_model_free(i8);
}

TEST_F(CapiTest, TrainerTakesCallerBatches) {
  BERTRT_SKIP_UNDER_EMULATOR();
  const std::string dev = (dir_ / "dev.tsv").string();
  head_lines(sst2_path("dev"), dev, 17);
  bertrt_model* m = load(write_model("init.brt", HeadsConfig{}));
  ASSERT_NE(m, nullptr);
  bertrt_finetune_options o;
  bertrt_finetune_options_init(&o);
  o.task = "sst2";
  o.max_seq_length = 24;
  o.learning_rate = 1e-3f;
  bertrt_trainer* t = nullptr;
  EXPECT_EQ(bertrt_trainer_create(m, &o, nullptr, &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.max_steps must be > 0"),
            std::string::npos);
  o.max_steps = 2;
  ASSERT_EQ(bertrt_trainer_create(m, &o, nullptr, &t), BERTRT_OK) << bertrt_last_error();
  // A dev set is checked before any training: a header-only one is refused, naming the file.
  const std::string header = (dir_ / "header.tsv").string();
  std::ofstream(header) << "sentence\tlabel\n";
  EXPECT_EQ(bertrt_trainer_check_data(t, header.c_str()), BERTRT_E_IO);
  EXPECT_NE(std::string(bertrt_last_error()).find("bertrt_trainer_check_data: data_path: "),
            std::string::npos)
      << bertrt_last_error();
  EXPECT_NE(std::string(bertrt_last_error()).find("header.tsv"), std::string::npos)
      << bertrt_last_error();
  EXPECT_EQ(bertrt_trainer_check_data(t, dir_.c_str()), BERTRT_E_IO);
  EXPECT_EQ(bertrt_trainer_check_data(t, nullptr), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_trainer_check_data(nullptr, dev.c_str()), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_trainer_check_data(t, dev.c_str()), BERTRT_OK) << bertrt_last_error();
  EXPECT_EQ(bertrt_trainer_step(t, 1, nullptr), BERTRT_E_STATE);
  EXPECT_NE(std::string(bertrt_last_error()).find("bertrt_trainer_step_batch"), std::string::npos);
  TextBatch tb = text_batch(*tokenizer_, {"a gorgeous, witty movie", "dull and long"});
  const int32_t bad[] = {1, 2}, labels[] = {1, 0};
  EXPECT_EQ(bertrt_trainer_step_batch(t, &tb.batch, bad, nullptr, nullptr),
            BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(),
               "bertrt_trainer_step_batch: labels[1] = 2 is outside [0, 2) (the task's labels)");
  EXPECT_EQ(bertrt_trainer_step_batch(t, &tb.batch, nullptr, nullptr, nullptr),
            BERTRT_E_INVALID_ARGUMENT);
  const float scores[] = {0.5f, 1.0f};  // a regression's targets, given to a classifier
  EXPECT_EQ(bertrt_trainer_step_batch(t, &tb.batch, labels, scores, nullptr),
            BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(),
               "bertrt_trainer_step_batch: task sst2 is a classification: pass labels and NULL "
               "for scores");
  bertrt_step_metrics s{};
  ASSERT_EQ(bertrt_trainer_step_batch(t, &tb.batch, labels, nullptr, &s), BERTRT_OK)
      << bertrt_last_error();
  EXPECT_EQ(s.step, 1);
  EXPECT_TRUE(std::isfinite(s.loss));
  ASSERT_EQ(bertrt_trainer_step_batch(t, &tb.batch, labels, nullptr, &s), BERTRT_OK);
  EXPECT_EQ(s.step, 2);
  EXPECT_EQ(bertrt_trainer_step_batch(t, &tb.batch, labels, nullptr, &s), BERTRT_E_STATE);
  EXPECT_NE(std::string(bertrt_last_error()).find("finished (2 of 2 steps)"), std::string::npos);
  char json[1024];
  ASSERT_EQ(bertrt_trainer_evaluate(t, dev.c_str(), json, sizeof json, nullptr), BERTRT_OK)
      << bertrt_last_error();
  EXPECT_EQ(nlohmann::json::parse(json)["examples"], 16);
  EXPECT_EQ(bertrt_trainer_save(t, ""), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(), "bertrt_trainer_save: path is empty");
  EXPECT_EQ(bertrt_trainer_evaluate(t, dir_.c_str(), json, sizeof json, nullptr),
            BERTRT_E_IO);
  EXPECT_NE(std::string(bertrt_last_error()).find(": is a folder, not a file"), std::string::npos)
      << bertrt_last_error();
  bertrt_trainer_free(t);
  bertrt_model_free(m);
  // STS-B's scores lie in [0, 5], as its files are read (99 and -99 trained, with BERTRT_OK).
  m = load(write_model("init_stsb.brt", HeadsConfig{}));
  ASSERT_NE(m, nullptr);
  o.task = "stsb";
  ASSERT_EQ(bertrt_trainer_create(m, &o, nullptr, &t), BERTRT_OK) << bertrt_last_error();
  const float far[] = {99.0f, -99.0f}, edges[] = {5.0f, 0.0f};
  EXPECT_EQ(bertrt_trainer_step_batch(t, &tb.batch, nullptr, far, &s), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_STREQ(bertrt_last_error(),
               "bertrt_trainer_step_batch: scores[0] = 99 is outside [0, 5] (stsb)");
  EXPECT_EQ(bertrt_trainer_step_batch(t, &tb.batch, nullptr, edges, &s), BERTRT_OK)
      << bertrt_last_error();
  bertrt_trainer_free(t);
  bertrt_model_free(m);
}

// options.hidden_dropout_prob / attention_probs_dropout_prob are `finetune
// --hidden-dropout-prob / --attention-probs-dropout-prob`: the same seeded masks, so two trainers
// with them take the same steps, and other steps than without them.
TEST_F(CapiTest, TrainerHiddenDropoutIsSeededAndChangesTheSteps) {
  BERTRT_SKIP_UNDER_EMULATOR();
  const std::string train = (dir_ / "train.tsv").string();
  head_lines(sst2_path("train"), train, 33);
  auto losses = [&](float p, float attention) {
    bertrt_finetune_options o = short_run_options();
    EXPECT_EQ(o.hidden_dropout_prob, 0.0f);
    o.hidden_dropout_prob = p, o.attention_probs_dropout_prob = attention;
    return step_losses(write_model("init.brt", HeadsConfig{}), o, train, 2);
  };
  const std::vector<double> drop = losses(0.1f, 0.0f);
  ASSERT_EQ(drop.size(), 2u);
  EXPECT_EQ(drop, losses(0.1f, 0.0f));
  EXPECT_NE(drop, losses(0.0f, 0.0f));
  const std::vector<double> both = losses(0.1f, 0.1f);
  EXPECT_EQ(both, losses(0.1f, 0.1f));
  EXPECT_NE(both, drop);
}

// options.freeze_embeddings / freeze_layers / recompute are `finetune --freeze-embeddings
// --freeze-layers K --recompute`: recomputation takes the same steps bit for bit, and the frozen
// tensors come out of the saved file as they went in while the others move.
TEST_F(CapiTest, TrainerMemoryOptionsFreezeAndRecompute) {
  BERTRT_SKIP_UNDER_EMULATOR();
  const std::string train = (dir_ / "train.tsv").string();
  head_lines(sst2_path("train"), train, 33);
  const std::string init = write_model("init.brt", HeadsConfig{});
  auto run = [&](int freeze_embeddings, int freeze_layers, int recompute, const std::string& out) {
    bertrt_finetune_options o = short_run_options();
    EXPECT_EQ(o.freeze_embeddings + o.freeze_layers + o.recompute, 0);  // the CLI's defaults
    o.freeze_embeddings = freeze_embeddings, o.freeze_layers = freeze_layers;
    o.recompute = recompute;
    return step_losses(init, o, train, 2, out);
  };
  const std::vector<double> plain = run(0, 0, 0, "plain.brt");
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(run(0, 0, 1, "recompute.brt"), plain);
  run(1, 1, 1, "frozen.brt");
  const LoadedModel before = load_model(init);
  for (const char* name : {"plain.brt", "recompute.brt", "frozen.brt"}) {
    SCOPED_TRACE(name);
    const LoadedModel after = load_model((dir_ / name).string());
    const bool frozen_run = std::string(name) == "frozen.brt";
    int compared = 0;
    for (const ParamInfo& p : before.model->layout().params()) {
      const ParamInfo* q = after.model->layout().find(p.name);
      if (!q || p.name.rfind("bert.", 0) != 0) continue;  // the task head is new
      const bool frozen = frozen_run && (p.name.rfind("bert.embeddings.", 0) == 0 ||
                                         p.name.rfind("bert.encoder.layer.0.", 0) == 0);
      const bool same = std::memcmp(before.model->params() + p.offset,
                                    after.model->params() + q->offset, p.numel * sizeof(float)) == 0;
      EXPECT_EQ(same, frozen) << p.name;
      ++compared;
    }
    EXPECT_GT(compared, 10);
  }
  // Bad values are named, before the model changes.
  bertrt_model* m = load(init);
  bertrt_finetune_options o;
  bertrt_finetune_options_init(&o);
  o.task = "sst2", o.max_seq_length = 24;
  bertrt_trainer* t = nullptr;
  o.freeze_layers = 3;  // the tiny model has 2 layers
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.freeze_layers must be in [0, 2]"),
            std::string::npos)
      << bertrt_last_error();
  o.freeze_layers = -1;
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  o.freeze_layers = 0, o.freeze_embeddings = 2;
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.freeze_embeddings"), std::string::npos);
  o.freeze_embeddings = 0, o.recompute = 1, o.qat = 1;
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.recompute with options.qat"),
            std::string::npos);
  o.recompute = 0, o.qat = 2;
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.qat must be 0 or 1, got 2"),
            std::string::npos)
      << bertrt_last_error();
  o.qat = 0;
  o.struct_size = sizeof(o) + 8;  // a newer header than this library
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.struct_size"), std::string::npos);
  EXPECT_EQ(t, nullptr);
  bertrt_heads h{};
  ASSERT_EQ(bertrt_model_heads(m, &h), BERTRT_OK);
  EXPECT_EQ(h.kind, BERTRT_HEAD_NONE);
  // A program built against an older header (the struct ended before the memory options) keeps
  // working: what lies past its struct_size is not read (here an out-of-range freeze_layers).
  o.struct_size = uint32_t(offsetof(bertrt_finetune_options, freeze_embeddings));
  o.freeze_layers = 99;
  ASSERT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_OK) << bertrt_last_error();
  bertrt_trainer_free(t);
  bertrt_model_free(m);
}

TEST_F(CapiTest, BadTrainerOptionsAndDataLeaveTheModelAsItWas) {
  const std::string train = (dir_ / "train.tsv").string();
  head_lines(sst2_path("train"), train, 17);
  bertrt_model* m = load(write_model("init.brt", HeadsConfig{}));
  ASSERT_NE(m, nullptr);
  bertrt_finetune_options o;
  bertrt_finetune_options_init(&o);
  bertrt_trainer* t = nullptr;
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.task"), std::string::npos);
  o.task = "sst2";
  o.learning_rate = -1;
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.learning_rate"), std::string::npos);
  o.learning_rate = 1e-3f;
  o.hidden_dropout_prob = 1.0f;
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.hidden_dropout_prob"),
            std::string::npos);
  o.hidden_dropout_prob = 0.0f;
  o.attention_probs_dropout_prob = -0.1f;
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.attention_probs_dropout_prob"),
            std::string::npos);
  o.attention_probs_dropout_prob = 0.0f;
  o.max_seq_length = 25;
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("max_position_embeddings"), std::string::npos);
  o.max_seq_length = 24;
  const std::string cola = test::data_dir() + "/glue/CoLA/dev.tsv";  // not SST-2's format
  o.task = "sst2";
  EXPECT_EQ(bertrt_trainer_create(m, &o, cola.c_str(), &t), BERTRT_E_IO);
  EXPECT_NE(std::string(bertrt_last_error()).find("train_path"), std::string::npos)
      << bertrt_last_error();
  // A generic TSV task's errors name the options' fields, not the CLI's flags.
  o.task = "tsv", o.text_column = "5", o.label_column = "1", o.labels = "0,1";
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error())
                .find("options.text_column 5 is out of range: the file has 2 columns"),
            std::string::npos)
      << bertrt_last_error();
  o.text_column = "0", o.labels = "0,0";
  EXPECT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("options.labels: '0' appears twice"),
            std::string::npos)
      << bertrt_last_error();
  EXPECT_EQ(t, nullptr);
  bertrt_heads h{};
  ASSERT_EQ(bertrt_model_heads(m, &h), BERTRT_OK);
  EXPECT_EQ(h.kind, BERTRT_HEAD_NONE);  // no head was put on by the failed calls
  bertrt_model_free(m);
}

TEST_F(CapiTest, AStepAfterAFailedOneIsRefusedAndNothingIsSaved) {
  const std::string train = (dir_ / "train.tsv").string();
  head_lines(sst2_path("train"), train, 33);
  // A learning rate of 1e30 without warm-up: the first update makes the weights huge, the
  // second step's loss is not finite (the trainer then refuses the update and throws).
  bertrt_model* m = load(write_model("init.brt", HeadsConfig{}));
  ASSERT_NE(m, nullptr);
  bertrt_finetune_options o;
  bertrt_finetune_options_init(&o);
  o.task = "sst2";
  o.batch_size = 8;
  o.max_seq_length = 24;
  o.learning_rate = 1e30f;
  o.warmup_ratio = 0;
  bertrt_trainer* t = nullptr;
  ASSERT_EQ(bertrt_trainer_create(m, &o, train.c_str(), &t), BERTRT_OK) << bertrt_last_error();
  bertrt_step_metrics last{};
  EXPECT_EQ(bertrt_trainer_step(t, 5, &last), BERTRT_E_FAILED);
  EXPECT_EQ(last.step, 1);  // the last step that went through
  const std::string first = bertrt_last_error();
  EXPECT_NE(first.find("non-finite"), std::string::npos) << first;
  EXPECT_EQ(bertrt_trainer_step(t, 1, nullptr), BERTRT_E_STATE);
  const std::string second = bertrt_last_error();
  EXPECT_EQ(second.rfind("bertrt_trainer_step: a previous step failed", 0), 0u) << second;
  EXPECT_NE(second.find(first), std::string::npos);
  // An existing output stays as it was; no new one appears.
  const std::string keep = (dir_ / "keep.brt").string(), fresh = (dir_ / "fresh.brt").string();
  test::write_bytes(keep, "the last good model");
  EXPECT_EQ(bertrt_trainer_save(t, keep.c_str()), BERTRT_E_STATE);
  EXPECT_EQ(bertrt_trainer_save(t, fresh.c_str()), BERTRT_E_STATE);
  EXPECT_EQ(test::read_bytes(keep), "the last good model");
  EXPECT_FALSE(fs::exists(fresh));
  bertrt_trainer_free(t);
  bertrt_model_free(m);
}

// The output check behind Python's finetune: what the save would refuse, refused before any work,
// through links too; a writable path is left with nothing new in its folder.
TEST_F(CapiTest, CheckOutputRefusesWhatTheSaveWouldRefuse) {
  const std::string ok = (dir_ / "out.brt").string();
  EXPECT_EQ(bertrt_check_output(ok.c_str()), BERTRT_OK) << bertrt_last_error();
  EXPECT_TRUE(fs::is_empty(dir_));
  fs::create_symlink("nodir/x.brt", dir_ / "lnk.brt");
  const struct {
    std::string path, error;
  } bad[] = {
      {(dir_ / "nodir" / "x.brt").string(), (dir_ / "nodir" / "x.brt").string() + ": folder '" +
                                                (dir_ / "nodir").string() + "' does not exist"},
      {dir_.string(), dir_.string() + ": is a folder, expected a file path"},
      {(dir_ / "lnk.brt").string(), (dir_ / "lnk.brt").string() + " (the link's target " +
                                        (dir_ / "nodir/x.brt").string() + "): folder '" +
                                        (dir_ / "nodir").string() + "' does not exist"},
  };
  for (const auto& b : bad) {
    EXPECT_EQ(bertrt_check_output(b.path.c_str()), BERTRT_E_IO) << b.path;
    EXPECT_EQ(bertrt_last_error(), b.error);
  }
  EXPECT_EQ(bertrt_check_output(nullptr), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_check_output(""), BERTRT_E_INVALID_ARGUMENT);
}

TEST_F(CapiTest, StatusStringsAndVersion) {
  EXPECT_STREQ(bertrt_status_string(BERTRT_OK), "ok");
  EXPECT_STREQ(bertrt_status_string(BERTRT_E_STATE), "invalid state");
  // CMakeLists.txt checks the header's macros against project(VERSION); the library agrees.
  EXPECT_STREQ(bertrt_version(), BERTRT_VERSION_STRING);
  EXPECT_EQ(std::string(bertrt_version()),
            std::to_string(BERTRT_VERSION_MAJOR) + "." + std::to_string(BERTRT_VERSION_MINOR) +
                "." + std::to_string(BERTRT_VERSION_PATCH));
}

// bertrt_model_label: the head's own names, else its task's (a converted classifier whose config
// has no id2label, fine-tuned for sst2), else the stored labels.
TEST_F(CapiTest, LabelsAreTheModelsOwnElseItsTasks) {
  BERTRT_SKIP_UNDER_EMULATOR();
  auto label_of = [&](const HeadsConfig& h, int32_t i) {
    bertrt_model* m = load(write_model("labels.brt", h));
    const char* label = nullptr;
    EXPECT_EQ(bertrt_model_label(m, i, &label), BERTRT_OK) << bertrt_last_error();
    std::string s = label ? label : "";
    bertrt_model_free(m);
    return s;
  };
  HeadsConfig h;
  h.kind = HeadKind::kSequenceClassification;
  h.labels = {"NEGATIVE", "POSITIVE"};
  h.task = "sst2";
  EXPECT_EQ(label_of(h, 1), "POSITIVE");
  h.labels = {"LABEL_0", "LABEL_1"};
  EXPECT_EQ(label_of(h, 1), "positive");
  h.task = "mrpc";
  EXPECT_EQ(label_of(h, 0), "not_equivalent");
  h.task.clear();
  EXPECT_EQ(label_of(h, 1), "LABEL_1");
}

}  // namespace
}  // namespace bertrt

namespace bertrt {
namespace {

// bertrt_embed / bertrt_rerank: the library's embed_texts / rerank_scores, and their argument
// checks (the numbers against sentence-transformers: tests/reference/st_check.py).
TEST_F(CapiTest, EmbedAndRerankMatchTheLibraryAndCheckTheirArguments) {
  HeadsConfig eh;
  eh.embedding = EmbeddingConfig{};
  eh.embedding->pooling.mean_tokens = true;
  eh.embedding->prompts = {{"query", "query: "}};
  const std::string emb_path = write_model("emb.brt", eh);
  HeadsConfig rh;
  rh.kind = HeadKind::kRegression;
  const std::string rr_path = write_model("rr.brt", rh);
  bertrt_model* m = load(emb_path);
  bertrt_model* r = load(rr_path);
  ASSERT_TRUE(m && r);

  const char* texts[] = {"a gorgeous movie", "", "dull"};
  int32_t dim = 0;
  ASSERT_EQ(bertrt_embedding_dim(m, nullptr, &dim), BERTRT_OK) << bertrt_last_error();
  EXPECT_EQ(dim, test::tiny_config().hidden_size);
  std::vector<float> got(3 * size_t(dim));
  bertrt_embed_options o;
  bertrt_embed_options_init(&o);
  o.prompt_name = "query";
  ASSERT_EQ(bertrt_embed(m, texts, 3, &o, got.data(), got.size()), BERTRT_OK) << bertrt_last_error();
  {
    const LoadedModel lm = load_model(emb_path);
    auto be = make_backend("cpu");
    EmbedOptions eo;
    eo.prompt_name = "query";
    const std::vector<float> want =
        embed_texts(*lm.model, *lm.tokenizer, *be, {texts[0], texts[1], texts[2]}, eo);
    EXPECT_EQ(got, want);
  }
  o.dimensions = 4;
  ASSERT_EQ(bertrt_embedding_dim(m, &o, &dim), BERTRT_OK);
  EXPECT_EQ(dim, 4);

  // Errors: each names the argument; nothing is written.
  std::vector<float> small(5, -7.0f);
  EXPECT_EQ(bertrt_embed(m, texts, 3, &o, small.data(), small.size()), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("capacity is 5 floats, [3, 4] needs 12"),
            std::string::npos) << bertrt_last_error();
  EXPECT_EQ(small, std::vector<float>(5, -7.0f));
  EXPECT_EQ(bertrt_embed(m, nullptr, 3, &o, got.data(), got.size()), BERTRT_E_INVALID_ARGUMENT);
  const char* with_null[] = {"a", nullptr};
  EXPECT_EQ(bertrt_embed(m, with_null, 2, &o, got.data(), got.size()), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("texts[1] is NULL"), std::string::npos);
  const char* bad_utf8[] = {"\xff"};
  EXPECT_EQ(bertrt_embed(m, bad_utf8, 1, &o, got.data(), got.size()), BERTRT_E_INVALID_ARGUMENT);
  o.dimensions = 1000;
  EXPECT_EQ(bertrt_embed(m, texts, 3, &o, got.data(), got.size()), BERTRT_E_UNSUPPORTED);
  EXPECT_NE(std::string(bertrt_last_error()).find("--dimensions 1000 is outside"), std::string::npos);
  o.dimensions = 0;
  o.struct_size = 1;
  EXPECT_EQ(bertrt_embed(m, texts, 3, &o, got.data(), got.size()), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_embedding_dim(r, nullptr, &dim), BERTRT_E_UNSUPPORTED);  // no embedding head
  EXPECT_NE(std::string(bertrt_last_error()).find("no sentence-embedding head"), std::string::npos);
  EXPECT_EQ(bertrt_embed(m, texts, 0, nullptr, nullptr, 0), BERTRT_OK);  // nothing to do

  float scores[3] = {0, 0, 0}, logits[3] = {0, 0, 0};
  ASSERT_EQ(bertrt_rerank(r, "is it good", texts, 3, 0, scores, 3), BERTRT_OK) << bertrt_last_error();
  ASSERT_EQ(bertrt_rerank(r, "is it good", texts, 3, 1, logits, 3), BERTRT_OK);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(scores[i], 1.0f / (1.0f + std::exp(-logits[i])));
  EXPECT_EQ(bertrt_rerank(r, "q", texts, 3, 0, scores, 2), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_rerank(r, nullptr, texts, 3, 0, scores, 3), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_rerank(r, "q", texts, 3, 2, scores, 3), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_rerank(m, "q", texts, 3, 0, scores, 3), BERTRT_E_UNSUPPORTED);  // not a reranker
  bertrt_model_free(m);
  bertrt_model_free(r);
}

// bertrt_quantize_embeddings: embed/embedding_precision.h's codes (those against
// sentence-transformers: embedding_precision_test, st_check.py), and its argument checks.
TEST(CapiQuantize, CodesAndArguments) {
  const float e[] = {-1.0f, 0.5f, 2.0f, 0.0f, 1.0f, -0.25f};  // 2 × 3
  uint8_t out[6] = {};
  ASSERT_EQ(bertrt_quantize_embeddings(e, 2, 3, "uint8", nullptr, out, 6), BERTRT_OK)
      << bertrt_last_error();
  const QuantizationRanges r = calibration_ranges(e, 2, 3);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 6),
            quantize_embeddings(e, 2, 3, EmbeddingPrecision::kUint8, &r));
  const float ranges[] = {-2.0f, -2.0f, -2.0f, 2.0f, 2.0f, 2.0f};  // lowest, then highest
  ASSERT_EQ(bertrt_quantize_embeddings(e, 2, 3, "int8", ranges, out, 6), BERTRT_OK);
  QuantizationRanges given;
  given.min = {-2.0f, -2.0f, -2.0f};
  given.max = {2.0f, 2.0f, 2.0f};
  EXPECT_EQ(std::vector<uint8_t>(out, out + 6),
            quantize_embeddings(e, 2, 3, EmbeddingPrecision::kInt8, &given));
  EXPECT_EQ(bertrt_quantized_width("ubinary", 3), 1u);
  EXPECT_EQ(bertrt_quantized_width("int8", 3), 3u);
  EXPECT_EQ(bertrt_quantized_width("fp16", 3), 0u);
  ASSERT_EQ(bertrt_quantize_embeddings(e, 2, 3, "ubinary", nullptr, out, 2), BERTRT_OK);
  EXPECT_EQ(out[0], 0x60);  // 0.5 and 2.0 positive: the second and third highest bits
  EXPECT_EQ(out[1], 0x40);

  EXPECT_EQ(bertrt_quantize_embeddings(e, 2, 3, "int8", nullptr, out, 5), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("capacity is 5 bytes, [2, 3] needs 6"),
            std::string::npos) << bertrt_last_error();
  EXPECT_EQ(bertrt_quantize_embeddings(e, 2, 3, "fp16", nullptr, out, 6), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("'fp16' is not one of"), std::string::npos);
  EXPECT_EQ(bertrt_quantize_embeddings(e, 2, 3, "float32", nullptr, out, 6), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_quantize_embeddings(e, 2, 3, nullptr, nullptr, out, 6), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_quantize_embeddings(nullptr, 2, 3, "int8", nullptr, out, 6), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_EQ(bertrt_quantize_embeddings(e, 2, 0, "int8", nullptr, out, 6), BERTRT_E_INVALID_ARGUMENT);
  const float reversed[] = {2.0f, 2.0f, 2.0f, -2.0f, -2.0f, -2.0f};
  EXPECT_EQ(bertrt_quantize_embeddings(e, 2, 3, "int8", reversed, out, 6), BERTRT_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(bertrt_last_error()).find("ranges[:, 0] = [2, -2] is not a finite range"),
            std::string::npos) << bertrt_last_error();
  EXPECT_EQ(bertrt_quantize_embeddings(e, 0, 3, "int8", nullptr, nullptr, 0), BERTRT_OK);
}

}  // namespace
}  // namespace bertrt
