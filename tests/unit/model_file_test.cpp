// The .brt model file: every field round-trips, segments are 64-byte aligned, and truncated,
// corrupted or foreign files give a bertrt::Error that says what is wrong (never a crash; run
// this test under -fsanitize=address to check the "never a crash" part).
#include "io/model_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/half.h"
#include "test_util.h"

namespace bertrt {
namespace {

using test::read_bytes;
using test::restamped_header_crc;
using test::write_bytes;

namespace fs = std::filesystem;

using test::TempDir;

template <typename T>
TensorRecord record(const std::string& name, std::vector<int64_t> shape, DType dtype, const std::vector<T>& v) {
  TensorRecord t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.data = reinterpret_cast<const uint8_t*>(v.data());
  t.nbytes = v.size() * sizeof(T);
  return t;
}

// A small model exercising every field and dtype; the vectors own the tensor bytes.
struct Sample {
  std::vector<float> word, scalar;
  std::vector<uint16_t> ln_f16, dense_bf16;
  std::vector<int8_t> q8;
  std::vector<int32_t> q32;
  std::vector<float> m1, v1;
  ModelContents m;

  Sample() {
    for (int i = 0; i < 10 * 8; ++i) word.push_back(0.01f * static_cast<float>(i) - 0.3f);
    scalar = {42.5f};
    ln_f16 = {0x3c00, 0xc000, 0x3800, 0x0001, 0x7bff, 0x8000, 0x4200, 0x3555};  // 1,-2,.5,2^-24,65504,-0,3,~1/3
    dense_bf16 = {0x3f80, 0xc0a0, 0x4049, 0x0000, 0xbf00, 0x3e80, 0x4120, 0xc2c8};  // 1,-5,3.140625,0,-.5,.25,10,-100
    q8 = {1, 2, 3, 4, -1, -2, -3, -4, 10, 20, 30, 127};
    q32 = {1000, -250};
    m1 = {0.1f, 0.2f, 0.3f};
    v1 = {1e-8f, 2e-8f, 3e-8f};

    m.config.vocab_size = 10;
    m.config.hidden_size = 8;
    m.config.num_hidden_layers = 1;
    m.config.num_attention_heads = 2;
    m.config.intermediate_size = 16;
    m.config.hidden_act = "gelu_new";
    m.config.max_position_embeddings = 16;
    m.config.type_vocab_size = 3;
    m.config.layer_norm_eps = 1e-5f;
    m.config.pad_token_id = 1;
    m.config.initializer_range = 0.05f;
    m.config.hidden_dropout_prob = 0.2f;
    m.config.attention_probs_dropout_prob = 0.3f;
    m.heads.mlm = true;
    m.heads.nsp = false;
    m.heads.task = "sst2";
    m.heads.labels = {"negative", "positive"};
    m.tokenizer.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s", "caf\xc3\xa9", "\xe4\xb8\xad", ""};
    m.tokenizer.do_lower_case = false;
    m.tokenizer.strip_accents = false;
    m.tokenizer.tokenize_chinese_chars = false;
    m.tokenizer.max_input_chars_per_word = 77;
    m.tokenizer.unk_token = "<unk>";
    m.tokenizer.sep_token = "</s>";
    m.tokenizer.pad_token = "<pad>";
    m.tokenizer.cls_token = "<s>";
    m.tokenizer.mask_token = "<mask>";

    m.tensors.push_back(record("bert.embeddings.word_embeddings.weight", {10, 8}, DType::f32, word));
    m.tensors.push_back(record("bert.embeddings.LayerNorm.weight", {8}, DType::f16, ln_f16));
    m.tensors.push_back(record("bert.pooler.dense.weight", {4, 2}, DType::bf16, dense_bf16));
    TensorRecord q = record("classifier.weight", {3, 4}, DType::i8, q8);
    q.scales = {0.5f, 0.25f, 2.0f};
    q.zero_points = {0, 1, -1};
    q.axis = 0;
    m.tensors.push_back(q);
    TensorRecord b = record("classifier.bias", {2}, DType::i32, q32);
    b.scales = {0.001f};
    m.tensors.push_back(b);
    m.tensors.push_back(record("scalar", {}, DType::f32, scalar));
    m.tensors.push_back(record("empty", {0, 8}, DType::f32, std::vector<float>{}));

    TrainingState s;
    s.step = 123456789012;
    s.optimizer = "bert_adam";
    s.hyper = {{"lr", 1e-4}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-6}, {"weight_decay", 0.01}};
    s.schedule = {{"kind", "linear"}, {"warmup_steps", "10000"}};
    s.rng_state = {0, 1, 2, 255, 128};
    s.data_cursor = (uint64_t(1) << 40) + 7;
    s.optimizer_tensors.push_back(record("exp_avg.scalar", {3}, DType::f32, m1));
    s.optimizer_tensors.push_back(record("exp_avg_sq.scalar", {3}, DType::f32, v1));
    m.training_state = s;
    m.metadata = {{"source_format", "safetensors"}, {"converter_version", "0.1.0"}, {"note", "unicode \xc3\xa9"}};
  }
};

void expect_same_record(const TensorRecord& a, const TensorRecord& b) {
  SCOPED_TRACE(a.name);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.scales, b.scales);
  EXPECT_EQ(a.zero_points, b.zero_points);
  EXPECT_EQ(a.axis, b.axis);
  ASSERT_EQ(a.nbytes, b.nbytes);
  if (a.nbytes) {
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0);
  }
}

TEST(ModelFile, RoundTripsEveryField) {
  TempDir dir;
  const Sample s;
  const std::string path = dir.file("m.brt");
  write_model_file(path, s.m);
  OpenOptions with_state;
  with_state.training_state = true;
  ModelFile f = ModelFile::open(path, with_state);
  const ModelContents& r = f.contents();

  const BertConfig &a = s.m.config, &b = r.config;
  EXPECT_EQ(b.vocab_size, a.vocab_size);
  EXPECT_EQ(b.hidden_size, a.hidden_size);
  EXPECT_EQ(b.num_hidden_layers, a.num_hidden_layers);
  EXPECT_EQ(b.num_attention_heads, a.num_attention_heads);
  EXPECT_EQ(b.intermediate_size, a.intermediate_size);
  EXPECT_EQ(b.hidden_act, a.hidden_act);
  EXPECT_EQ(b.max_position_embeddings, a.max_position_embeddings);
  EXPECT_EQ(b.type_vocab_size, a.type_vocab_size);
  EXPECT_EQ(b.layer_norm_eps, a.layer_norm_eps);
  EXPECT_EQ(b.pad_token_id, a.pad_token_id);
  EXPECT_EQ(b.initializer_range, a.initializer_range);
  EXPECT_EQ(b.hidden_dropout_prob, a.hidden_dropout_prob);
  EXPECT_EQ(b.attention_probs_dropout_prob, a.attention_probs_dropout_prob);

  EXPECT_EQ(r.heads.mlm, true);
  EXPECT_EQ(r.heads.nsp, false);
  EXPECT_EQ(r.heads.task, "sst2");
  EXPECT_EQ(r.heads.labels, s.m.heads.labels);

  const TokenizerSpec &ta = s.m.tokenizer, &tb = r.tokenizer;
  EXPECT_EQ(tb.vocab, ta.vocab);
  EXPECT_EQ(tb.do_lower_case, false);
  EXPECT_EQ(tb.strip_accents, std::optional<bool>(false));
  EXPECT_EQ(tb.tokenize_chinese_chars, false);
  EXPECT_EQ(tb.max_input_chars_per_word, 77);
  EXPECT_EQ(tb.unk_token, "<unk>");
  EXPECT_EQ(tb.sep_token, "</s>");
  EXPECT_EQ(tb.pad_token, "<pad>");
  EXPECT_EQ(tb.cls_token, "<s>");
  EXPECT_EQ(tb.mask_token, "<mask>");

  ASSERT_EQ(r.tensors.size(), s.m.tensors.size());
  for (size_t i = 0; i < r.tensors.size(); ++i) expect_same_record(r.tensors[i], s.m.tensors[i]);

  ASSERT_TRUE(r.training_state.has_value());
  const TrainingState &sa = *s.m.training_state, &sb = *r.training_state;
  EXPECT_EQ(sb.step, sa.step);
  EXPECT_EQ(sb.optimizer, sa.optimizer);
  EXPECT_EQ(sb.hyper, sa.hyper);  // doubles stored as double: exact
  EXPECT_EQ(sb.schedule, sa.schedule);
  EXPECT_EQ(sb.rng_state, sa.rng_state);
  EXPECT_EQ(sb.data_cursor, sa.data_cursor);
  ASSERT_EQ(sb.optimizer_tensors.size(), 2u);
  for (size_t i = 0; i < 2; ++i) expect_same_record(sb.optimizer_tensors[i], sa.optimizer_tensors[i]);

  EXPECT_EQ(r.metadata, s.m.metadata);

  EXPECT_EQ(f.find("classifier.bias"), &r.tensors[4]);
  EXPECT_EQ(f.find("nope"), nullptr);
  EXPECT_THROW(f.at("nope"), Error);
}

TEST(ModelFile, TriStateAndDefaultsRoundTrip) {
  TempDir dir;
  for (std::optional<bool> strip : {std::optional<bool>(), std::optional<bool>(true), std::optional<bool>(false)}) {
    Sample s;
    s.m.tokenizer.strip_accents = strip;
    s.m.training_state.reset();
    s.m.metadata.clear();
    s.m.heads = HeadsConfig{};
    write_model_file(dir.file("t.brt"), s.m);
    const ModelFile f = ModelFile::open(dir.file("t.brt"));
    EXPECT_EQ(f.contents().tokenizer.strip_accents, strip);
    EXPECT_FALSE(f.contents().training_state.has_value());
    EXPECT_TRUE(f.contents().metadata.empty());
    EXPECT_FALSE(f.contents().heads.mlm);
    EXPECT_TRUE(f.contents().heads.labels.empty());
  }
}

// mmap returns a page-aligned base, so a 64-byte-aligned file offset is a 64-byte-aligned address.
TEST(ModelFile, SegmentsAre64ByteAlignedAndAfterTheBuffer) {
  TempDir dir;
  const Sample s;
  write_model_file(dir.file("m.brt"), s.m);
  const std::string bytes = read_bytes(dir.file("m.brt"));
  uint32_t buffer_size = 0;
  std::memcpy(&buffer_size, bytes.data(), 4);
  EXPECT_EQ(bytes.substr(8, 4), "BRT1");
  OpenOptions with_state;
  with_state.training_state = true;
  const ModelFile f = ModelFile::open(dir.file("m.brt"), with_state);
  const uint8_t* base = f.contents().tensors[0].data;  // the first segment
  auto check = [&](const TensorRecord& t) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % kSegmentAlignment, 0u) << t.name;
    EXPECT_GE(t.data, base) << t.name;
  };
  for (const TensorRecord& t : f.contents().tensors) check(t);
  for (const TensorRecord& t : f.contents().training_state->optimizer_tensors) check(t);
  // The first segment starts at the first 64-byte boundary after the FlatBuffer.
  const uint64_t first = (buffer_size + 4 + 63) / 64 * 64;
  EXPECT_EQ(std::memcmp(bytes.data() + first, s.word.data(), s.word.size() * 4), 0);
}

TEST(ModelFile, MovedModelFileKeepsPointersValid) {
  TempDir dir;
  const Sample s;
  write_model_file(dir.file("m.brt"), s.m);
  ModelFile a = ModelFile::open(dir.file("m.brt"));
  const uint8_t* p = a.find("scalar")->data;
  ModelFile b = std::move(a);
  EXPECT_EQ(b.find("scalar")->data, p);
  EXPECT_EQ(tensor_to_f32(*b.find("scalar")), std::vector<float>{42.5f});
}

TEST(TensorToF32, HalfFormatsDecodeExactly) {
  const Sample s;
  const std::vector<float> f16 = tensor_to_f32(s.m.tensors[1]);
  EXPECT_EQ(f16, (std::vector<float>{1.f, -2.f, 0.5f, std::ldexp(1.f, -24), 65504.f, -0.f, 3.f,
                                     f16_to_f32(0x3555)}));
  EXPECT_TRUE(std::signbit(f16[5]));
  EXPECT_NEAR(f16[7], 1.f / 3.f, 1e-4);  // 0x3555 is the fp16 nearest to 1/3 (ulp 2^-12)
  EXPECT_EQ(tensor_to_f32(s.m.tensors[2]),
            (std::vector<float>{1.f, -5.f, 3.140625f, 0.f, -0.5f, 0.25f, 10.f, -100.f}));
  EXPECT_EQ(tensor_to_f32(s.m.tensors[0]), s.word);
}

// Hand-computed: real = (q - zp[row]) * scale[row] for axis 0.
TEST(TensorToF32, DequantizesPerAxisAndPerTensor) {
  const Sample s;
  EXPECT_EQ(tensor_to_f32(s.m.tensors[3]),
            (std::vector<float>{0.5f, 1.f, 1.5f, 2.f,            // row 0: q * 0.5
                                -0.5f, -0.75f, -1.f, -1.25f,     // row 1: (q - 1) * 0.25
                                22.f, 42.f, 62.f, 256.f}));      // row 2: (q + 1) * 2
  EXPECT_EQ(tensor_to_f32(s.m.tensors[4]), (std::vector<float>{1000 * 0.001f, -250 * 0.001f}));
  // axis 1 on a [3, 4] tensor: the scale follows the column.
  TensorRecord t = s.m.tensors[3];
  t.axis = 1;
  t.scales = {1.f, 2.f, 3.f, 4.f};
  t.zero_points = {};
  EXPECT_EQ(tensor_to_f32(t), (std::vector<float>{1, 4, 9, 16, -1, -4, -9, -16, 10, 40, 90, 508}));
  t.scales.clear();
  EXPECT_THROW(tensor_to_f32(t), Error);  // i8 without scales has no float meaning
}

// --- damaged and foreign files ---------------------------------------------------------------------

// Opens `bytes` written to a file and expects an Error whose message contains `needle`.
void expect_open_error(const std::string& bytes, const std::string& needle) {
  TempDir dir;
  const std::string path = dir.file("bad.brt");
  write_bytes(path, bytes);
  try {
    ModelFile::open(path);
    ADD_FAILURE() << "expected bertrt::Error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

struct GoodFile {
  std::string bytes;
  uint32_t buffer_size = 0;
  GoodFile() {
    TempDir dir;
    const Sample s;
    write_model_file(dir.file("m.brt"), s.m);
    bytes = read_bytes(dir.file("m.brt"));
    std::memcpy(&buffer_size, bytes.data(), 4);
  }
};

TEST(ModelFileDamaged, TruncatedAtSeveralPoints) {
  const GoodFile g;
  expect_open_error(g.bytes.substr(0, 0), "empty file");
  expect_open_error(g.bytes.substr(0, 6), "too small");                      // inside the header
  expect_open_error(g.bytes.substr(0, 40), "truncated: the FlatBuffer needs");  // inside the FlatBuffer
  expect_open_error(g.bytes.substr(0, g.buffer_size / 2), "truncated: the FlatBuffer needs");
  expect_open_error(g.bytes.substr(0, g.buffer_size + 4), "runs past the end of the file");  // no segments
  expect_open_error(g.bytes.substr(0, g.bytes.size() - 3), "runs past the end of the file");  // in a segment
}

TEST(ModelFileDamaged, CorruptedRootOffsetFailsVerification) {
  GoodFile g;
  const uint32_t bad = 0x7ffffff0;  // root table offset far outside the buffer
  std::memcpy(&g.bytes[4], &bad, 4);
  expect_open_error(g.bytes, "FlatBuffer failed verification");
}

// Finds the unique little-endian u64 field `value` in the FlatBuffer part of the file: at a
// multiple of 8 (the builder aligns 8-byte scalars so, the whole size-prefixed buffer being a
// multiple of 8), where unaligned coincidences (the CRC's bytes, strings) cannot match.
size_t find_u64(const GoodFile& g, uint64_t value) {
  size_t at = std::string::npos;
  int found = 0;
  for (size_t i = 0; i + 8 <= g.buffer_size + size_t(4); i += 8)
    if (std::memcmp(g.bytes.data() + i, &value, 8) == 0) at = i, ++found;
  EXPECT_EQ(found, 1) << "value " << value << " found " << found << " times";
  return at;
}

TEST(ModelFileDamaged, SegmentOffsetsPastEndOrMisaligned) {
  const GoodFile good;
  const uint64_t first = (good.buffer_size + 4 + 63) / 64 * 64;  // the word embeddings' offset
  {
    GoodFile g;
    const uint64_t past = (g.bytes.size() + 63) / 64 * 64 + 64 * 1024;  // aligned, beyond the end
    std::memcpy(&g.bytes[find_u64(g, first)], &past, 8);
    expect_open_error(restamped_header_crc(g.bytes),
                      "tensor 'bert.embeddings.word_embeddings.weight': segment");
    expect_open_error(restamped_header_crc(g.bytes), "runs past the end of the file");
  }
  {
    GoodFile g;
    const uint64_t huge = ~uint64_t(0) - 63;  // offset + size would wrap around
    std::memcpy(&g.bytes[find_u64(g, first)], &huge, 8);
    expect_open_error(restamped_header_crc(g.bytes), "runs past the end of the file");
  }
  {
    GoodFile g;
    const uint64_t odd = first + 4;
    std::memcpy(&g.bytes[find_u64(g, first)], &odd, 8);
    expect_open_error(restamped_header_crc(g.bytes), "not 64-byte aligned");
  }
  {
    GoodFile g;
    const uint64_t inside = 0;
    std::memcpy(&g.bytes[find_u64(g, first)], &inside, 8);
    expect_open_error(restamped_header_crc(g.bytes), "inside the FlatBuffer");
  }
  {
    GoodFile g;  // the record's size no longer matches its shape
    const uint64_t size = 10 * 8 * 4;
    const size_t at = find_u64(g, size);
    const uint64_t wrong = size - 4;
    std::memcpy(&g.bytes[at], &wrong, 8);
    expect_open_error(restamped_header_crc(g.bytes), "needs 320 bytes, the record holds 316");
  }
}

// Flip every byte of the FlatBuffer (vtables, offsets, lengths, strings) in turn. With the checks
// (the default) every damaged file is an error: the header's CRC-32C catches any burst of up to
// 32 bits. Without them (--no-verify-checksums) each must still either open or throw
// bertrt::Error; under ASan this also proves no out-of-bounds read.
TEST(ModelFileDamaged, EveryFlippedFlatBufferByteIsAnErrorOrHarmless) {
  // Size arithmetic is the same on every 64-bit target: the native suite checks it, the emulated
  // 32-bit (armhf) suite too.
  if (sizeof(size_t) == 8) BERTRT_SKIP_UNDER_EMULATOR();
  const GoodFile g;
  TempDir dir;
  const std::string path = dir.file("flip.brt");
  for (const bool verify : {true, false}) {
    int errors = 0, opened = 0;
    for (size_t i = 0; i < g.buffer_size + 4u; ++i) {
      for (uint8_t mask : {0xffu, 0x80u, 0x01u}) {
        std::string bytes = g.bytes;
        bytes[i] = static_cast<char>(bytes[i] ^ mask);
        write_bytes(path, bytes);
        try {
          const ModelFile f = ModelFile::open(path, OpenOptions{verify});
          for (const TensorRecord& t : f.contents().tensors)
            if (t.dtype == DType::f32 || !t.scales.empty()) (void)tensor_to_f32(t);
          ++opened;
        } catch (const Error&) {
          ++errors;
        }
      }
    }
    EXPECT_GT(errors, 0);
    if (verify)
      EXPECT_EQ(opened, 0) << "damaged headers that loaded with the checks on";
    else
      EXPECT_GT(opened, 0);  // flipped vocab characters, float values etc. are readable
  }
}

TEST(ModelFileForeign, PngSafetensorsEmptyDirectoryMissing) {
  expect_open_error(std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0", 29),
                    "not a bertrt model file (expected identifier BRT1)");
  const std::string st = test::shared_dir() + "/ckpt/safetensors-samples/overall.safetensors";
  if (fs::exists(st)) expect_open_error(read_bytes(st), "not a bertrt model file (expected identifier BRT1)");
  expect_open_error("", "empty file");
  TempDir dir;
  try {
    ModelFile::open(dir.path());
    ADD_FAILURE() << "expected an error for a directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  try {
    ModelFile::open(dir.file("absent.brt"));
    ADD_FAILURE() << "expected an error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("absent.brt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

// --- atomic writes ---------------------------------------------------------------------------------

TEST(ModelFileWrite, MissingFolderIsNamedAndNothingIsLeft) {
  TempDir dir;
  const Sample s;
  const std::string folder = dir.file("no/such/folder");
  try {
    write_model_file(folder + "/m.brt", s.m);
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("folder '" + folder + "' does not exist"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(ModelFileWrite, FailedOverwriteLeavesOldFileIntact) {
  TempDir dir;
  const std::string path = dir.file("m.brt");
  const Sample good;
  write_model_file(path, good.m);
  const std::string before = read_bytes(path);

  auto expect_rejected = [&](const ModelContents& m, const std::string& needle) {
    try {
      write_model_file(path, m);
      ADD_FAILURE() << "expected bertrt::Error containing '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_EQ(read_bytes(path), before);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);  // no temp files
  };
  Sample s;
  s.m.tokenizer.vocab.clear();
  expect_rejected(s.m, "tokenizer vocab is empty");
  s = Sample();
  s.m.config.num_attention_heads = 3;  // 8 % 3 != 0
  expect_rejected(s.m, "num_attention_heads");
  s = Sample();
  s.m.tensors[0].nbytes -= 4;
  expect_rejected(s.m, "needs 320 bytes");
  s = Sample();
  s.m.tensors[1].name = s.m.tensors[0].name;
  expect_rejected(s.m, "given twice");
  s = Sample();
  s.m.tensors[3].scales.pop_back();
  expect_rejected(s.m, "2 scales for axis 0");
  s = Sample();
  s.m.training_state->optimizer_tensors[0].shape = {4};
  expect_rejected(s.m, "exp_avg.scalar");
  EXPECT_NO_THROW(ModelFile::open(path));
}

TEST(ModelFileWrite, OverwriteReplacesContents) {
  TempDir dir;
  const std::string path = dir.file("m.brt");
  Sample s;
  write_model_file(path, s.m);
  s.m.metadata["note"] = "second";
  write_model_file(path, s.m);
  EXPECT_EQ(ModelFile::open(path).contents().metadata.at("note"), "second");
}

}  // namespace
}  // namespace bertrt
