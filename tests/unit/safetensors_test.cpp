// safetensors reader/writer: real files written by the safetensors library, checked against an
// independent Python reader (json + numpy) and hand-decodable bytes; one malformed file per error.
#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/json_excerpt.h"
#include "test_util.h"

namespace bertrt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string samples() { return test::shared_dir() + "/ckpt/safetensors-samples"; }
std::string tiny_bert() { return test::shared_dir() + "/ckpt/hf/inference-server_tiny_bert/model.safetensors"; }

using test::TempDir;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// 8-byte little-endian length + header JSON + data bytes, as the format lays them out.
std::string st_bytes(const std::string& header, const std::string& data, uint64_t n_override = 0) {
  const uint64_t n = n_override ? n_override : header.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + header + data;
}

// Runs `script` with /usr/bin/python3 and returns its stdout; fails the test when it exits non-zero.
std::string run_python(const std::string& script, const std::string& arg) {
  TempDir dir;
  const std::string py = dir.file("ref.py");
  write_bytes(py, script);
  const std::string cmd = "/usr/bin/python3 " + py + " '" + arg + "' 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return "";
  std::string out;
  char buf[4096];
  size_t k;
  while ((k = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, k);
  if (::pclose(pipe) != 0) {
    ADD_FAILURE() << "python reference failed:\n" << out;
    return "";
  }
  return out;
}

// Independent reader: parses the header with json, decodes data with numpy, prints every tensor
// in data-offset order with values as float64 (exact for every dtype in these files).
const char* kPythonReader = R"PY(
import json, struct, sys
import numpy as np
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
meta = h.pop('__metadata__', {})
np_dtype = {'F32': '<f4', 'F16': '<f2', 'F64': '<f8', 'I8': 'i1', 'U8': 'u1', 'I16': '<i2',
            'U16': '<u2', 'I32': '<i4', 'U32': '<u4', 'I64': '<i8', 'BOOL': '?'}
out = []
for name, t in sorted(h.items(), key=lambda kv: kv[1]['data_offsets']):
    s, e = t['data_offsets']
    raw = b[8 + n + s: 8 + n + e]
    if t['dtype'] == 'BF16':  # numpy has no bfloat16: it is the top half of a float32
        v = (np.frombuffer(raw, dtype='<u2').astype(np.uint32) << 16).view(np.float32)
    else:
        v = np.frombuffer(raw, dtype=np_dtype[t['dtype']])
    v = v.astype(np.float64)
    out.append({'name': name, 'dtype': t['dtype'], 'shape': t['shape'], 'values': v.tolist()})
print(json.dumps({'metadata': meta, 'tensors': out}))
)PY";

void expect_matches_python(const std::string& path) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not available";
  const std::string text = run_python(kPythonReader, path);
  ASSERT_FALSE(text.empty());
  const json ref = json::parse(text);
  const SafetensorsFile f = SafetensorsFile::open(path);
  const auto meta = ref["metadata"].get<std::map<std::string, std::string>>();
  EXPECT_EQ(f.metadata(), meta);
  ASSERT_EQ(f.tensors().size(), ref["tensors"].size());
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const SafetensorsTensor& t = f.tensors()[i];
    const json& r = ref["tensors"][i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, r["name"].get<std::string>());
    EXPECT_EQ(t.dtype, r["dtype"].get<std::string>());
    EXPECT_EQ(t.shape, r["shape"].get<std::vector<int64_t>>());
    const auto values = r["values"].get<std::vector<double>>();
    const bool is_float = t.dtype[0] == 'F' || t.dtype == "BF16";
    if (is_float) {
      const std::vector<float> got = f.to_f32(t.name);
      ASSERT_EQ(got.size(), values.size());
      for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], static_cast<float>(values[k])) << "element " << k;
    } else {
      const std::vector<int64_t> got = f.to_i64(t.name);
      ASSERT_EQ(got.size(), values.size());
      for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], static_cast<int64_t>(values[k])) << "element " << k;
    }
  }
}

TEST(SafetensorsRead, TinyBertMatchesPythonReader) {
  BERTRT_REQUIRE_PATH(tiny_bert());
  expect_matches_python(tiny_bert());
}

TEST(SafetensorsRead, OverallSampleMatchesPythonReader) {
  BERTRT_REQUIRE_PATH(samples() + "/overall.safetensors");
  expect_matches_python(samples() + "/overall.safetensors");
}

// The samples hold [-3, -2, -1, 0, 1, 2] in each dtype (decoded by hand from the hex dumps, e.g.
// F16 0xc200 = -3, U8 0xfd = 253, U16 0xfffd = 65533).
TEST(SafetensorsRead, PerDtypeSamplesHandDecoded) {
  BERTRT_REQUIRE_PATH(samples());
  const std::vector<float> floats = {-3, -2, -1, 0, 1, 2};
  for (const char* name : {"f", "e", "d"}) {
    const SafetensorsFile f = SafetensorsFile::open(samples() + "/" + name + ".safetensors");
    EXPECT_EQ(f.to_f32(name), floats) << name;
    EXPECT_EQ(f.metadata().at("test"), "a");
    EXPECT_EQ(f.at(name).shape, std::vector<int64_t>{6});
  }
  const std::vector<int64_t> ints = {-3, -2, -1, 0, 1, 2};
  for (const char* name : {"b", "h", "i"})
    EXPECT_EQ(SafetensorsFile::open(samples() + "/" + name + ".safetensors").to_i64(name), ints) << name;
  EXPECT_EQ(SafetensorsFile::open(samples() + "/B.safetensors").to_i64("B"),
            (std::vector<int64_t>{253, 254, 255, 0, 1, 2}));
  EXPECT_EQ(SafetensorsFile::open(samples() + "/H.safetensors").to_i64("H"),
            (std::vector<int64_t>{65533, 65534, 65535, 0, 1, 2}));
  EXPECT_EQ(SafetensorsFile::open(samples() + "/I.safetensors").to_i64("I"),
            (std::vector<int64_t>{4294967293, 4294967294, 4294967295, 0, 1, 2}));
}

TEST(SafetensorsRead, TinyBertFacts) {
  BERTRT_REQUIRE_PATH(tiny_bert());
  const SafetensorsFile f = SafetensorsFile::open(tiny_bert());
  EXPECT_TRUE(f.metadata().empty());  // README: "no __metadata__"
  // config.json: vocab 256, hidden 32, 128 positions, intermediate 64.
  EXPECT_EQ(f.at("embeddings.word_embeddings.weight").shape, (std::vector<int64_t>{256, 32}));
  EXPECT_EQ(f.at("embeddings.position_embeddings.weight").shape, (std::vector<int64_t>{128, 32}));
  EXPECT_EQ(f.at("encoder.layer.1.intermediate.dense.weight").shape, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(f.find("pooler.dense.weight"), nullptr);  // README: "no pooler weights"
  // Tensors come back in offset order, each starting where the previous ended.
  for (size_t i = 1; i < f.tensors().size(); ++i)
    EXPECT_EQ(f.tensors()[i].data, f.tensors()[i - 1].data + f.tensors()[i - 1].nbytes);
}

TEST(SafetensorsRead, LookupErrorsNameFileAndTensor) {
  BERTRT_REQUIRE_PATH(samples());
  const SafetensorsFile f = SafetensorsFile::open(samples() + "/overall.safetensors");
  try {
    f.at("nope");
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overall.safetensors"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(f.to_f32("B"), Error);  // U8 is not a float dtype
  EXPECT_THROW(f.to_i64("f"), Error);  // F32 is not an integer dtype
}

TEST(SafetensorsWrite, RoundTripAllConvertibleDtypes) {
  TempDir dir;
  const std::vector<float> f32 = {1.5f, -2.25f, 0.f, 3e-5f, 65504.f, -1e30f};
  const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x0001, 0x7bff};  // 1, -2, 2^-24, 65504
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc0a0};                  // 1, -5
  const std::vector<int64_t> i64 = {-1, 0, int64_t(1) << 40};
  const std::vector<uint8_t> flags = {1, 0, 1};
  std::vector<SafetensorsTensor> ts = {
      {"w", "F32", {2, 3}, reinterpret_cast<const uint8_t*>(f32.data()), 24},
      {"h", "F16", {4}, reinterpret_cast<const uint8_t*>(f16.data()), 8},
      {"b", "BF16", {2}, reinterpret_cast<const uint8_t*>(bf16.data()), 4},
      {"ids", "I64", {3}, reinterpret_cast<const uint8_t*>(i64.data()), 24},
      {"mask", "BOOL", {3}, flags.data(), 3},
      {"empty", "F32", {0, 4}, nullptr, 0},
      {"scalar", "F32", {}, reinterpret_cast<const uint8_t*>(f32.data()), 4},
  };
  const std::string path = dir.file("x.safetensors");
  write_safetensors(path, ts, {{"format", "pt"}});

  const SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.tensors().size(), ts.size());
  EXPECT_EQ(f.to_f32("w"), f32);
  EXPECT_EQ(f.at("w").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.to_f32("h"), (std::vector<float>{1.f, -2.f, 5.9604645e-8f, 65504.f}));
  EXPECT_EQ(f.to_f32("b"), (std::vector<float>{1.f, -5.f}));
  EXPECT_EQ(f.to_i64("ids"), i64);
  EXPECT_EQ(f.to_i64("mask"), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_TRUE(f.to_f32("empty").empty());
  EXPECT_EQ(f.at("empty").shape, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(f.to_f32("scalar"), std::vector<float>{1.5f});
  // The header is padded so the data region starts 8-byte aligned within the file.
  uint64_t n = 0;
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  // And the independent Python reader agrees with what we wrote.
  expect_matches_python(path);
}

TEST(SafetensorsWrite, RejectsBadInputAndLeavesNothing) {
  TempDir dir;
  const float x[2] = {1, 2};
  const auto* p = reinterpret_cast<const uint8_t*>(x);
  const std::string path = dir.file("bad.safetensors");
  EXPECT_THROW(write_safetensors(path, {{"a", "F32", {3}, p, 8}}), Error);               // size mismatch
  EXPECT_THROW(write_safetensors(path, {{"a", "Q4", {2}, p, 8}}), Error);                // unknown dtype
  EXPECT_THROW(write_safetensors(path, {{"a", "F32", {2}, p, 8}, {"a", "F32", {2}, p, 8}}), Error);  // dup
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir.path()));  // no temp files left behind
  try {
    write_safetensors(dir.file("missing/x.safetensors"), {{"a", "F32", {2}, p, 8}});
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("missing")), std::string::npos) << e.what();
  }
}

// --- malformed files: one per error class, each an Error whose message names the file and says
// what is wrong. -----------------------------------------------------------------------------------

// Returns the message (empty when the open did not fail).
std::string expect_open_error(const std::string& bytes, const std::string& needle) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  write_bytes(path, bytes);
  try {
    SafetensorsFile::open(path);
    ADD_FAILURE() << "expected bertrt::Error containing '" << needle << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg.substr(0, 400);
    EXPECT_NE(msg.find(needle), std::string::npos) << msg.substr(0, 400);
    return msg;
  }
  return "";
}

const std::string kData6(6, '\x01');  // 6 bytes: a U8 [6] tensor

TEST(SafetensorsMalformed, TooSmallForHeaderLength) { expect_open_error("abc", "too small"); }

TEST(SafetensorsMalformed, EmptyFile) { expect_open_error("", "too small"); }

TEST(SafetensorsMalformed, HeaderPastFileEnd) {
  const std::string h = R"({"a":{"dtype":"U8","shape":[6],"data_offsets":[0,6]}})";
  expect_open_error(st_bytes(h, kData6, h.size() + 100), "past the end of the file");
  expect_open_error(st_bytes(h, kData6, uint64_t(1) << 62), "exceeds the 100 MB limit");
}

TEST(SafetensorsMalformed, JsonSyntaxError) {
  expect_open_error(st_bytes(R"({"a":{"dtype":"U8",)", kData6), "not valid JSON");
  expect_open_error(st_bytes("[1, 2]", ""), "must be a JSON object");
}

TEST(SafetensorsMalformed, UnknownDtype) {
  expect_open_error(st_bytes(R"({"a":{"dtype":"Q4","shape":[6],"data_offsets":[0,6]}})", kData6),
                    "tensor 'a': unknown dtype 'Q4'");
}

TEST(SafetensorsMalformed, ShapeTimesItemsizeMismatch) {
  expect_open_error(st_bytes(R"({"a":{"dtype":"F32","shape":[6],"data_offsets":[0,6]}})", kData6),
                    "tensor 'a': shape [6] x 4 bytes");
  expect_open_error(st_bytes(R"({"a":{"dtype":"U8","shape":[-6],"data_offsets":[0,6]}})", kData6),
                    "shape entries must be non-negative");
  // numel overflowing 64 bits must not wrap around to a small, "matching" size.
  expect_open_error(
      st_bytes(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", ""), "tensor 'a'");
}

TEST(SafetensorsMalformed, OffsetsOutOfRange) {
  expect_open_error(st_bytes(R"({"a":{"dtype":"U8","shape":[6],"data_offsets":[0,6]}})", "abc"),
                    "tensor 'a': data_offsets [0, 6] run past the end");
  expect_open_error(st_bytes(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[6,0]}})", kData6),
                    "end before begin");
  expect_open_error(st_bytes(R"({"a":{"dtype":"U8","shape":[6],"data_offsets":[0]}})", kData6),
                    "'data_offsets' must be [begin, end]");
}

TEST(SafetensorsMalformed, OverlappingTensors) {
  expect_open_error(st_bytes(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", kData6),
                    "tensor 'b': data_offsets [2, 6] overlap tensor 'a'");
}

TEST(SafetensorsMalformed, HoleOrTrailingBytes) {
  expect_open_error(st_bytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})", kData6),
                    "tensor 'b': data_offsets start at 4 leaving a hole");
  expect_open_error(st_bytes(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", kData6),
                    "trailing bytes");
}

TEST(SafetensorsMalformed, DuplicateNameAndBadMetadata) {
  expect_open_error(st_bytes(R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},)"
                             R"("a":{"dtype":"U8","shape":[3],"data_offsets":[3,6]}})", kData6),
                    "names tensor 'a' twice");
  expect_open_error(st_bytes(R"({"__metadata__":{"k":1},"a":{"dtype":"U8","shape":[6],"data_offsets":[0,6]}})",
                             kData6),
                    "__metadata__['k'] must be a string");
}

// A bad value is quoted by its kind and size, not dumped: a value nested 200,000 deep overflowed
// the stack in nlohmann's dump (a crash instead of an error), and a flat one of 100,000 entries
// made a megabyte-long message.
TEST(SafetensorsMalformed, DeepOrHugeValuesQuotedShort) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_open_error(st_bytes("{\"a\":" + deep + "}", ""),
                    "expected an object, got an array of 1 entries");
  std::string flat = "[0";
  for (int i = 0; i < 100000; ++i) flat += ",1";
  flat += "]";
  const std::string msg =
      expect_open_error(st_bytes("{\"a\":" + flat + "}", ""), "got an array of 100001 entries");
  EXPECT_LT(msg.size(), 400u) << msg.substr(0, 400);
}

TEST(JsonExcerpt, ScalarsAsWrittenLongOnesCutOnACharacter) {
  EXPECT_EQ(json_excerpt(json(42)), "42");
  EXPECT_EQ(json_excerpt(json("bert")), "\"bert\"");
  EXPECT_EQ(json_excerpt(json::object({{"k", 1}, {"l", 2}})), "an object of 2 keys");
  const std::string cut = json_excerpt(json(std::string(100, 'x')));
  EXPECT_EQ(cut.size(), kJsonExcerptChars);
  EXPECT_EQ(cut.substr(cut.size() - 3), "...");
  // "é" is 2 bytes: a cut between them would leave invalid UTF-8 in the message.
  std::string accents;
  for (int i = 0; i < 40; ++i) accents += "\xc3\xa9";
  const std::string a = json_excerpt(json(accents));
  const std::string kept = a.substr(0, a.size() - 3);
  EXPECT_EQ((kept.size() - 1) % 2, 0u) << a;  // the opening quote, then whole characters
  EXPECT_LE(a.size(), kJsonExcerptChars);
}

TEST(SafetensorsMalformed, MissingPathAndDirectory) {
  TempDir dir;
  EXPECT_THROW(SafetensorsFile::open(dir.file("absent.safetensors")), Error);
  try {
    SafetensorsFile::open(dir.path());
    FAIL() << "expected bertrt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace bertrt
