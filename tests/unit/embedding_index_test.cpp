// The embedding index file of `bertrt search` (embed/embedding_index.h): round trip, what a changed
// model, corpus or option reports, and refusal of damaged files, each naming the file.
#include "embed/embedding_index.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "test_util.h"

namespace bertrt {
namespace {

EmbeddingIndexKey key() {
  EmbeddingIndexKey k;
  k.model_bytes = 1234;
  k.model_crc32c = 0xdeadbeef;
  k.corpus_bytes = 56;
  k.corpus_crc32c = 0x01020304;
  k.options = R"({"dimensions":0,"normalize":true})";
  return k;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void expect_refused(const std::string& path, const std::string& what) {
  try {
    EmbeddingIndex::open(path);
    ADD_FAILURE() << "opened " << path << ", expected an error about " << what;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path, 0), 0u) << msg;  // starts with the file's name
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

TEST(EmbeddingIndex, RoundTrip) {
  test::TempDir dir;
  const std::vector<float> e = {0.5f, -1.f, 2.f, 0.f, 1e-30f, -3.25f};  // 3 × 2
  write_embedding_index(dir.file("i.index"), key(), e.data(), 3, 2);
  const EmbeddingIndex index = EmbeddingIndex::open(dir.file("i.index"));
  const EmbeddingIndexView& v = index.view();
  EXPECT_EQ(v.count, 3u);
  EXPECT_EQ(v.dim, 2u);
  EXPECT_TRUE(v.key == key());
  EXPECT_EQ(std::memcmp(v.embeddings, e.data(), e.size() * sizeof(float)), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.embeddings) % 64, 0u);  // the data starts 64-aligned
}

TEST(EmbeddingIndex, EmptyCorpusRoundTrips) {
  test::TempDir dir;
  write_embedding_index(dir.file("i.index"), key(), nullptr, 0, 8);
  EXPECT_EQ(EmbeddingIndex::open(dir.file("i.index")).view().count, 0u);
}

TEST(EmbeddingIndex, DifferenceNamesWhatChanged) {
  EXPECT_EQ(embedding_index_difference(key(), key()), "");
  EmbeddingIndexKey other = key();
  other.model_crc32c = 0xdeadbeee;
  EXPECT_EQ(embedding_index_difference(key(), other),
            "the model file (indexed: 1234 bytes, CRC-32C deadbeef; now: 1234 bytes, CRC-32C "
            "deadbeee)");
  other = key();
  other.corpus_bytes = 57;
  other.options = R"({"dimensions":8,"normalize":true})";
  const std::string d = embedding_index_difference(key(), other);
  EXPECT_NE(d.find("the corpus file (indexed: 56 bytes"), std::string::npos) << d;
  EXPECT_NE(d.find("; the embed options (indexed: {\"dimensions\":0"), std::string::npos) << d;
}

TEST(EmbeddingIndex, DamagedFilesAreRefusedNamingTheFile) {
  test::TempDir dir;
  const std::vector<float> e(4 * 3, 0.25f);
  write_embedding_index(dir.file("good.index"), key(), e.data(), 4, 3);
  const std::string good = read_all(dir.file("good.index"));

  std::string bytes = good;
  bytes.resize(bytes.size() - 5);
  expect_refused(dir.write("truncated.index", bytes), "the file is truncated");
  expect_refused(dir.write("empty.index", ""), "not a bertrt embedding index");
  bytes = good;
  bytes[0] = 'X';
  expect_refused(dir.write("magic.index", bytes), "no \"BRTINDEX\" magic");
  bytes = good;
  bytes[8] = 2;
  expect_refused(dir.write("version.index", bytes),
                 "format version 2; this bertrt reads version 1");
  bytes = good;
  bytes[bytes.size() - 10] ^= 1;  // a bit of the last embedding
  expect_refused(dir.write("flipped.index", bytes), "CRC-32C mismatch");
  bytes = good;
  bytes[12] = 0;  // dim 0
  expect_refused(dir.write("dim.index", bytes), "dim 0 is outside");
  bytes = good;
  std::memset(&bytes[16], 0xff, 8);  // a count no file can hold
  expect_refused(dir.write("count.index", bytes), "larger than any file");
  expect_refused(dir.write("trailing.index", good + "x"), "makes it");
}

TEST(EmbeddingIndex, NonFiniteValuesAreRefusedEvenWithAGoodCrc) {
  test::TempDir dir;
  std::vector<float> e(2 * 2, 1.f);
  e[3] = std::numeric_limits<float>::infinity();
  write_embedding_index(dir.file("inf.index"), key(), e.data(), 2, 2);
  expect_refused(dir.file("inf.index"), "embedding 1 has a non-finite value at dimension 1");
}

TEST(EmbeddingIndex, FileCrcIsCrc32cOfTheBytes) {
  test::TempDir dir;
  uint64_t n = 0;
  const std::string path = dir.write("f.txt", "123456789");
  EXPECT_EQ(file_crc32c(path, &n), 0xE3069283u);  // the CRC-32C check value (RFC 3720)
  EXPECT_EQ(n, 9u);
}

}  // namespace
}  // namespace bertrt
