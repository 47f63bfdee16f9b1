// Checksums of the .brt tensor segments (schema Tensor.crc32c): written for every weight and
// optimizer moment, required and verified on load (a flipped bit names the file and the tensor),
// skippable for trusted files; a file written before checksums is refused, naming how to re-save
// it, and loads when the checks are skipped (then `bertrt info` says it carries none). Expected
// CRCs come from the bit-at-a-time definition of CRC-32C, not from core/crc32c.h.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "bertrt_generated.h"
#include "core/error.h"
#include "io/model_file.h"
#include "test_util.h"

namespace bertrt {
namespace {

using test::crc32c_bitwise;
using test::read_bytes;
using test::write_bytes;

using test::TempDir;

// A minimal valid model: config, vocab, two weights and one optimizer moment.
struct Small {
  std::vector<float> a, b, m;
  ModelContents c;
  Small() {
    for (int i = 0; i < 48; ++i) a.push_back(0.25f * float(i) - 3.0f);
    for (int i = 0; i < 7; ++i) b.push_back(float(i * i));
    m = {1e-3f, -2e-3f, 5.0f};
    c.config.vocab_size = 6;
    c.config.hidden_size = 8;
    c.config.num_hidden_layers = 1;
    c.config.num_attention_heads = 2;
    c.config.intermediate_size = 16;
    c.config.max_position_embeddings = 6;
    c.config.pad_token_id = 0;
    c.tokenizer.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"};
    c.tensors.push_back(rec("bert.embeddings.word_embeddings.weight", {6, 8}, a));
    c.tensors.push_back(rec("classifier.bias", {7}, b));
    TrainingState s;
    s.step = 3;
    s.optimizer = "adamw";
    s.optimizer_tensors.push_back(rec("exp_avg.classifier.bias", {3}, m));
    c.training_state = s;
  }
  static TensorRecord rec(const std::string& name, std::vector<int64_t> shape,
                          const std::vector<float>& v) {
    TensorRecord t;
    t.name = name;
    t.shape = std::move(shape);
    t.data = reinterpret_cast<const uint8_t*>(v.data());
    t.nbytes = v.size() * sizeof(float);
    return t;
  }
};

// Opens with the training state read (what resuming a run and `bertrt info` do).
OpenOptions with_state(bool verify = true) {
  OpenOptions o;
  o.verify_checksums = verify;
  o.training_state = true;
  return o;
}

void expect_error(const std::function<void()>& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "expected bertrt::Error";
  } catch (const Error& e) {
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(ModelFileChecksum, EverySegmentCarriesTheCrc32cOfItsBytes) {
  TempDir dir;
  const Small s;
  write_model_file(dir.file("m.brt"), s.c);
  const ModelFile f = ModelFile::open(dir.file("m.brt"), with_state());
  EXPECT_EQ(f.segments(), 3u);
  EXPECT_EQ(f.checksummed_segments(), 3u);
  EXPECT_TRUE(f.checksums_verified());
  for (const TensorRecord& t : f.contents().tensors) {
    ASSERT_TRUE(t.crc32c.has_value()) << t.name;
    EXPECT_EQ(*t.crc32c, crc32c_bitwise(t.data, t.nbytes)) << t.name;
  }
  const TensorRecord& mo = f.contents().training_state->optimizer_tensors.at(0);
  ASSERT_TRUE(mo.crc32c.has_value());
  EXPECT_EQ(*mo.crc32c, crc32c_bitwise(mo.data, mo.nbytes));
}

TEST(ModelFileChecksum, AFlippedWeightOrMomentBitNamesFileAndTensor) {
  TempDir dir;
  const Small s;
  for (int which = 0; which < 3; ++which) {
    const std::string path = dir.file("m" + std::to_string(which) + ".brt");
    write_model_file(path, s.c);
    std::string name;
    {
      const ModelFile f = ModelFile::open(path, with_state());
      const TensorRecord& t = which < 2 ? f.contents().tensors[which]
                                        : f.contents().training_state->optimizer_tensors[0];
      name = t.name;
      // The segment's place in the file: its bytes are found there once (distinct values).
      std::string bytes = read_bytes(path);
      const size_t seg_at =
          bytes.find(std::string(reinterpret_cast<const char*>(t.data), t.nbytes));
      ASSERT_NE(seg_at, std::string::npos);
      const size_t at = seg_at + t.nbytes / 2;
      bytes[at] = static_cast<char>(bytes[at] ^ 0x10);
      write_bytes(path + ".bad", bytes);
    }
    expect_error([&] { ModelFile::open(path + ".bad", with_state()); },
                 {path + ".bad", "tensor '" + name + "'", "checksum mismatch"});
    // Skipping the check loads the damaged bytes as they are: the documented trade for trusted
    // files.
    const ModelFile g = ModelFile::open(path + ".bad", with_state(false));
    EXPECT_FALSE(g.checksums_verified());
  }
}

TEST(ModelFileChecksum, DefaultFollowsEnvironmentAndSetter) {
  ASSERT_EQ(::unsetenv("BERTRT_VERIFY_CHECKSUMS"), 0);
  EXPECT_TRUE(default_verify_checksums());
  ::setenv("BERTRT_VERIFY_CHECKSUMS", "0", 1);
  EXPECT_FALSE(default_verify_checksums());
  ::setenv("BERTRT_VERIFY_CHECKSUMS", "1", 1);
  EXPECT_TRUE(default_verify_checksums());
  set_default_verify_checksums(false);  // the CLI flag wins over the environment
  EXPECT_FALSE(default_verify_checksums());
  set_default_verify_checksums(true);
  EXPECT_TRUE(default_verify_checksums());
  ::unsetenv("BERTRT_VERIFY_CHECKSUMS");
}

// A file as bertrt wrote it before checksums existed: Tensor tables without the crc32c field.
std::string write_file_without_checksums(const std::string& path, const std::vector<float>& w) {
  const std::vector<int64_t> shape = {int64_t(w.size())};
  auto build = [&](uint64_t offset) {
    flatbuffers::FlatBufferBuilder b;
    b.ForceDefaults(true);
    const auto config = fb::CreateConfigDirect(b, 6, 8, 1, 2, 16, "gelu", 6);
    const std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"};
    const auto tok = fb::CreateTokenizer(b, b.CreateVectorOfStrings(vocab));
    std::vector<flatbuffers::Offset<fb::Tensor>> ts = {
        fb::CreateTensorDirect(b, "classifier.bias", &shape, fb::DType::f32, offset, w.size() * 4)};
    const auto root = fb::CreateModelDirect(b, 1, config, tok, &ts);
    fb::FinishSizePrefixedModelBuffer(b, root);
    return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  };
  const std::string probe = build(0);
  const uint64_t offset = (probe.size() + 63) / 64 * 64;
  std::string bytes = build(offset);
  EXPECT_EQ(bytes.size(), probe.size());
  bytes.resize(offset, '\0');
  bytes.append(reinterpret_cast<const char*>(w.data()), w.size() * 4);
  write_bytes(path, bytes);
  return path;
}

TEST(ModelFileChecksum, OldFilesWithoutChecksumsAreRefusedUnlessTold) {
  TempDir dir;
  const std::vector<float> w = {1, 2, 3, 4, 5, 6, 7};
  const std::string path = write_file_without_checksums(dir.file("old.brt"), w);
  // Refused by default, naming how to re-save it and how to load it unchecked.
  expect_error([&] { ModelFile::open(path); },
               {path, "carries no checksum, and checksums are required",
                "bertrt-convert --no-verify-checksums " + path + " -o NEW.brt",
                "BERTRT_VERIFY_CHECKSUMS=0"});
  // Loaded when the user vouches for it.
  const ModelFile f = ModelFile::open(path, OpenOptions{false});
  ASSERT_EQ(f.contents().tensors.size(), 1u);
  EXPECT_FALSE(f.contents().tensors[0].crc32c.has_value());
  EXPECT_EQ(f.checksummed_segments(), 0u);
  EXPECT_EQ(tensor_to_f32(f.contents().tensors[0]), w);
  // Re-written by this build, it gains checksums.
  ModelContents c = f.contents();
  write_model_file(dir.file("new.brt"), c);
  EXPECT_EQ(ModelFile::open(dir.file("new.brt")).checksummed_segments(), 1u);

  // The CLI: refused, then described unchecked; bertrt-convert re-saves it as the error says
  // (both are built beside the tests).
  const std::string cli = test::cli_binary();
  if (!cli.empty()) {
    const std::string out = dir.file("info.txt");
    EXPECT_NE(std::system((cli + " info " + path + " > " + out + " 2>&1").c_str()), 0);
    EXPECT_NE(read_bytes(out).find("carries no checksum"), std::string::npos) << read_bytes(out);
    ASSERT_EQ(std::system((cli + " info --no-verify-checksums " + path + " > " + out + " 2>&1").c_str()), 0)
        << read_bytes(out);
    EXPECT_NE(read_bytes(out).find("checksums  none"), std::string::npos) << read_bytes(out);
    ASSERT_EQ(std::system((cli + " info " + dir.file("new.brt") + " > " + out + " 2>&1").c_str()),
              0);
    EXPECT_NE(read_bytes(out).find("checksums  CRC-32C on 1 of 1 segments and the header, all "
                                   "verified"),
              std::string::npos)
        << read_bytes(out);
    const std::string conv = test::build_dir() + "/bertrt-convert";
    if (std::ifstream(conv).good()) {
      ASSERT_EQ(std::system((conv + " --no-verify-checksums " + path + " -o " + dir.file("re.brt") +
                             " -q > " + out + " 2>&1").c_str()),
                0)
          << read_bytes(out);
      const ModelFile r = ModelFile::open(dir.file("re.brt"));
      EXPECT_EQ(r.checksummed_segments(), 1u);
      EXPECT_TRUE(r.header_checksummed());
      EXPECT_EQ(tensor_to_f32(r.contents().tensors[0]), w);
    }
  }
}

TEST(ModelFileChecksum, CliRefusesACorruptFileUnlessTold) {
  const std::string cli = test::cli_binary();
  if (cli.empty()) GTEST_SKIP() << "the bertrt CLI cannot run here (not built, or under emulation)";
  TempDir dir;
  const Small s;
  const std::string path = dir.file("m.brt");
  write_model_file(path, s.c);
  std::string bytes = read_bytes(path);
  const std::string seg(reinterpret_cast<const char*>(s.b.data()), s.b.size() * 4);
  const size_t at = bytes.find(seg);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 5] = static_cast<char>(bytes[at + 5] ^ 0x01);
  write_bytes(path, bytes);
  const std::string out = dir.file("out.txt");
  auto run = [&](const std::string& cmd) {
    const int rc = std::system((cmd + " > " + out + " 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  EXPECT_EQ(run(cli + " info " + path), 1);
  EXPECT_NE(read_bytes(out).find("tensor 'classifier.bias': checksum mismatch"), std::string::npos)
      << read_bytes(out);
  EXPECT_EQ(run(cli + " info --no-verify-checksums " + path), 0) << read_bytes(out);
  EXPECT_NE(read_bytes(out).find("not verified (checks skipped)"), std::string::npos);
  EXPECT_EQ(run("BERTRT_VERIFY_CHECKSUMS=0 " + cli + " info " + path), 0) << read_bytes(out);
}

// The header (config, vocabulary, heads, metadata) has its own CRC (Model.buffer_crc32c): a
// flipped bit in a vocabulary token, which the tensors' CRCs do not cover, fails the load; the
// stored value is the CRC of the buffer with the field read as zero, from the bitwise definition.
TEST(ModelFileChecksum, AFlippedHeaderBitIsCaughtByTheHeaderChecksum) {
  TempDir dir;
  Small s;
  s.c.tokenizer.vocab.back() = "zebra";  // a token found once in the file
  const std::string path = dir.file("m.brt");
  write_model_file(path, s.c);
  std::string bytes = read_bytes(path);
  uint32_t size = 0;
  std::memcpy(&size, bytes.data(), 4);
  {
    const ModelFile f = ModelFile::open(path);
    EXPECT_TRUE(f.header_checksummed());
    // Stored = CRC of [0, 4 + size) with the 4 bytes of the field zeroed: find them as the only
    // place where zeroing 4 aligned bytes gives the stored value.
    const auto* root = fb::GetSizePrefixedModel(bytes.data());
    ASSERT_TRUE(root->buffer_crc32c().has_value());
    const uint32_t stored = *root->buffer_crc32c();
    int matches = 0;
    for (size_t at = 4; at + 4 <= size + size_t(4); at += 4) {
      uint32_t v;
      std::memcpy(&v, bytes.data() + at, 4);
      if (v != stored) continue;
      std::string zeroed = bytes.substr(0, size + 4);
      std::memset(zeroed.data() + at, 0, 4);
      matches += crc32c_bitwise(reinterpret_cast<const uint8_t*>(zeroed.data()), zeroed.size()) ==
                 stored;
    }
    EXPECT_EQ(matches, 1);
  }
  const size_t at = bytes.find("zebra");
  ASSERT_NE(at, std::string::npos);
  ASSERT_LT(at, size_t(size) + 4);
  bytes[at + 2] = static_cast<char>(bytes[at + 2] ^ 0x04);  // "zefra": still a valid vocab
  write_bytes(path + ".bad", bytes);
  expect_error([&] { ModelFile::open(path + ".bad"); },
               {path + ".bad", "checksum mismatch in the model's header"});
  const ModelFile g = ModelFile::open(path + ".bad", OpenOptions{false});
  EXPECT_EQ(g.contents().tokenizer.vocab.back(), "zefra");  // loaded as it is, when told
}

TEST(ModelFileChecksum, OldFilesWithoutAHeaderChecksumLoadOnlyUnchecked) {
  TempDir dir;
  const std::string path = write_file_without_checksums(dir.file("old.brt"), {1, 2, 3});
  expect_error([&] { ModelFile::open(path); }, {path, "the model's header carries no checksum"});
  const ModelFile f = ModelFile::open(path, OpenOptions{false});
  EXPECT_FALSE(f.header_checksummed());
  write_model_file(dir.file("new.brt"), f.contents());  // re-written, it gains one
  EXPECT_TRUE(ModelFile::open(dir.file("new.brt")).header_checksummed());
}

}  // namespace
}  // namespace bertrt
