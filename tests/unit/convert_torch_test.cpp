// The torch.save reader (zip and legacy) and its restricted unpickler. Expected tensors come from
// the real writer: tests/reference/make_torch_files.py saves cases with torch.save (zip/legacy,
// pickle protocols 2 and 4) and writes what torch.load gives as safetensors; the real files in
// ../shared/ckpt are cross-checked the same way (torch.load(weights_only=True)). Every element is
// compared byte for byte. Malicious pickles (os.system via REDUCE, _load_from_bytes) must be
// refused with the global named and must not run; malformed input gives a named error.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "convert/pickle.h"
#include "convert/torch_reader.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "test_util.h"

namespace bertrt::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool require_data() {
  const char* v = std::getenv("BERTRT_REQUIRE_DATA");
  return v && std::string(v) == "1";
}

// The generated files live in BUILD/reference/torch, made once and shared by the test processes
// ctest starts (one per test): under an exclusive flock, regenerated when absent, older than the
// generator, or made with another set of sample files. Not ok() when python3/torch is missing
// (tests then skip visibly, or fail under BERTRT_REQUIRE_DATA=1).
class Generated {
 public:
  static Generated& get() {
    static Generated g;
    return g;
  }
  bool ok() const { return ok_; }
  bool failed() const { return failed_; }
  const std::string& why() const { return why_; }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  const json& index() const { return index_; }

  // The real torch files in ../shared/ckpt that torch.load can read (broken.pt is not one).
  static std::vector<std::string> sample_files() {
    std::vector<std::string> out;
    const std::string dir = test::shared_dir() + "/ckpt/torch-samples";
    if (fs::exists(dir))
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".pt" &&
            e.path().filename() != "src_pytorch_tests_reader_test_data_broken.pt")
          out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    for (const char* hf : {"/ckpt/hf/camphr_ner_bert/pytorch_model.bin",
                           "/ckpt/hf/camphr_bert_2019-10-20a/pytorch_model.bin"})
      if (fs::exists(test::shared_dir() + hf)) out.push_back(test::shared_dir() + hf);
    return out;
  }

 private:
  Generated() : dir_(test::build_dir() + "/reference/torch") {
    const std::string script = test::source_dir() + "/tests/reference/make_torch_files.py";
    const std::vector<std::string> samples = sample_files();
    fs::create_directories(test::build_dir() + "/reference");
    const int lock = ::open((dir_ + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
    if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
      why_ = "cannot lock " + dir_ + ".lock";
      failed_ = true;
      return;
    }
    if (!load_fresh(script, samples.size())) {
      if (!test::have_torch()) {
        why_ = std::string(test::kPython) + " with torch is not available";
        ::close(lock);
        return;
      }
      fs::remove_all(dir_);
      std::string cmd = "/usr/bin/python3 " + script + " " + dir_;
      for (const std::string& s : samples) cmd += " '" + s + "'";
      cmd += " > " + dir_ + ".log 2>&1";
      if (std::system(cmd.c_str()) != 0 || !load_fresh(script, samples.size())) {
        std::ifstream log(dir_ + ".log");
        why_ = "make_torch_files.py failed: " + std::string(std::istreambuf_iterator<char>(log), {});
        failed_ = true;
      }
    }
    ::close(lock);  // releases the flock
    ok_ = !failed_;
  }

  bool load_fresh(const std::string& script, size_t samples) {
    const std::string index = dir_ + "/index.json";
    std::error_code ec;
    if (!fs::exists(index) || fs::last_write_time(index, ec) < fs::last_write_time(script, ec)) return false;
    std::ifstream(index) >> index_;
    return index_["samples"].size() == samples;
  }

  std::string dir_;
  bool ok_ = false;
  bool failed_ = false;
  std::string why_;
  json index_;
};

#define REQUIRE_GENERATED()                                                   \
  do {                                                                        \
    const Generated& g_ = Generated::get();                                   \
    if (!g_.ok()) {                                                           \
      if (g_.failed() || require_data()) FAIL() << g_.why();                   \
      GTEST_SKIP() << "torch reference files not generated: " << g_.why();   \
    }                                                                         \
  } while (0)

std::string error_of(const std::string& path) {
  try {
    open_torch_checkpoint(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string pickle_error(const std::string& bytes) {
  try {
    pickle::unpickle(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, "t.pkl");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const CheckpointTensor* find(const CheckpointReader& r, const std::string& name, size_t* index = nullptr) {
  for (size_t i = 0; i < r.tensors().size(); ++i)
    if (r.tensors()[i].name == name) {
      if (index) *index = i;
      return &r.tensors()[i];
    }
  return nullptr;
}

// Every tensor of `path` equals the expected safetensors file: names in order, dtype, shape,
// nbytes and every byte.
void expect_matches(const std::string& path, const std::string& expected_path, const std::string& format) {
  SCOPED_TRACE(path);
  std::unique_ptr<CheckpointReader> r = open_torch_checkpoint(path);
  if (!format.empty()) {
    EXPECT_EQ(r->format(), format);
  }
  const SafetensorsFile expected = SafetensorsFile::open(expected_path);
  ASSERT_EQ(r->tensors().size(), expected.tensors().size());
  for (size_t i = 0; i < expected.tensors().size(); ++i) {
    const SafetensorsTensor& e = expected.tensors()[i];
    const CheckpointTensor& t = r->tensors()[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(t.name, e.name);
    EXPECT_EQ(t.dtype, e.dtype);
    EXPECT_EQ(t.shape, e.shape);
    EXPECT_EQ(t.nbytes, e.nbytes);
    EXPECT_EQ(t.location, path);
    const std::vector<uint8_t> bytes = r->read(i);
    ASSERT_EQ(bytes.size(), e.nbytes);
    EXPECT_TRUE(e.nbytes == 0 || std::memcmp(bytes.data(), e.data, e.nbytes) == 0) << "bytes differ";
  }
}

// --- files written by torch.save here ----------------------------------------------------------

TEST(TorchReader, EveryGeneratedFileMatchesTorchLoad) {
  REQUIRE_GENERATED();
  const Generated& g = Generated::get();
  std::set<std::string> formats;
  for (const json& f : g.index()["files"]) {
    expect_matches(g.file(f["file"]), g.file(f["expected"]), f["format"]);
    formats.insert(f["format"].get<std::string>());
  }
  // 4 cases x {zip, legacy} x {protocol 2, 4}, a big-endian zip, a legacy storage view
  EXPECT_EQ(g.index()["files"].size(), 18u);
  EXPECT_EQ(formats, (std::set<std::string>{"torch-zip", "torch-legacy"}));
}

TEST(TorchReader, DtypesViewsAndNamesByHand) {
  REQUIRE_GENERATED();
  const Generated& g = Generated::get();
  for (const char* fmt : {"zip", "legacy"}) {
    SCOPED_TRACE(fmt);
    auto dtypes = open_torch_checkpoint(g.file(std::string("dtypes.") + fmt + ".p2.pt"));
    std::vector<std::string> dt;
    for (const CheckpointTensor& t : dtypes->tensors()) dt.push_back(t.dtype);
    EXPECT_EQ(dt, (std::vector<std::string>{"F32", "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"}));

    auto views = open_torch_checkpoint(g.file(std::string("views.") + fmt + ".p2.pt"));
    size_t i;
    ASSERT_TRUE(find(*views, "scalar", &i));
    EXPECT_TRUE(views->tensors()[i].shape.empty());
    EXPECT_EQ(bytes_to_f32(views->tensors()[i], views->read(i)), std::vector<float>{3.25f});
    ASSERT_TRUE(find(*views, "empty", &i));
    EXPECT_EQ(views->tensors()[i].shape, (std::vector<int64_t>{0, 4}));
    EXPECT_TRUE(views->read(i).empty());
    // transposed is base.t(): element [c][r] of it is base[r][c].
    size_t ti, bi;
    ASSERT_TRUE(find(*views, "transposed", &ti) && find(*views, "base", &bi));
    EXPECT_EQ(views->tensors()[ti].shape, (std::vector<int64_t>{6, 4}));
    const auto tr = bytes_to_f32(views->tensors()[ti], views->read(ti));
    const auto base = bytes_to_f32(views->tensors()[bi], views->read(bi));
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 6; ++c) EXPECT_EQ(tr[c * 4 + r], base[r * 6 + c]);
    ASSERT_TRUE(find(*views, "row", &i));  // base[2]: storage offset 12
    const auto row = bytes_to_f32(views->tensors()[i], views->read(i));
    EXPECT_EQ(row, std::vector<float>(base.begin() + 12, base.begin() + 18));

    auto nested = open_torch_checkpoint(g.file(std::string("nested.") + fmt + ".p2.pt"));
    for (const char* name : {"state_dict.emb.weight", "state_dict.fc.weight", "state_dict.bn.num_batches_tracked",
                             "history.0", "history.1.0", "7", "param"})
      EXPECT_TRUE(find(*nested, name)) << name;
    EXPECT_EQ(find(*nested, "state_dict.bn.num_batches_tracked")->dtype, "I64");
    size_t a, b;  // one tensor object under two keys (memo BINGET): both listed, same bytes
    ASSERT_TRUE(find(*nested, "decoder.weight", &a) && find(*nested, "embeddings.weight", &b));
    EXPECT_EQ(nested->read(a), nested->read(b));
    EXPECT_EQ(nested->tensors().size(), 16u);  // state dict 10, history 2, "7", tied 2, param
  }
}

// --- real files in ../shared/ckpt ----------------------------------------------------------------

TEST(TorchReader, SharedSamplesMatchTorchLoad) {
  BERTRT_REQUIRE_PATH(test::shared_dir() + "/ckpt/torch-samples");
  REQUIRE_GENERATED();
  const Generated& g = Generated::get();
  EXPECT_EQ(g.index()["samples"].size(), Generated::sample_files().size());
  EXPECT_GE(g.index()["samples"].size(), 31u);  // 29 torch-samples + 2 HF folders
  for (const json& s : g.index()["samples"]) expect_matches(s["file"], g.file(s["expected"]), "");
}

TEST(TorchReader, CamphrNerBertZip) {
  const std::string path = test::shared_dir() + "/ckpt/hf/camphr_ner_bert/pytorch_model.bin";
  BERTRT_REQUIRE_PATH(path);
  auto r = open_torch_checkpoint(path);
  EXPECT_EQ(r->format(), "torch-zip");
  EXPECT_EQ(r->tensors().size(), 24u);
  size_t i;
  ASSERT_TRUE(find(*r, "bert.embeddings.position_ids", &i));
  EXPECT_EQ(r->tensors()[i].dtype, "I64");
  EXPECT_EQ(r->tensors()[i].shape, (std::vector<int64_t>{1, 16}));
  const std::vector<uint8_t> ids = r->read(i);  // torch.arange(16): hand-checkable
  ASSERT_EQ(ids.size(), 16u * 8);
  for (int64_t k = 0; k < 16; ++k) {
    int64_t v;
    std::memcpy(&v, ids.data() + 8 * k, 8);
    EXPECT_EQ(v, k);
  }
  ASSERT_TRUE(find(*r, "bert.embeddings.word_embeddings.weight", &i));
  EXPECT_EQ(r->tensors()[i].dtype, "F32");
  EXPECT_EQ(r->tensors()[i].shape, (std::vector<int64_t>{402, 16}));
}

TEST(TorchReader, CamphrBertLegacy) {
  const std::string path = test::shared_dir() + "/ckpt/hf/camphr_bert_2019-10-20a/pytorch_model.bin";
  BERTRT_REQUIRE_PATH(path);
  auto r = open_torch_checkpoint(path);
  EXPECT_EQ(r->format(), "torch-legacy");
  EXPECT_EQ(r->tensors().size(), 39u);  // no "bert." prefix, 2 layers, pooler
  EXPECT_EQ(r->tensors()[0].name, "embeddings.word_embeddings.weight");
  EXPECT_EQ(r->tensors()[0].shape, (std::vector<int64_t>{121, 16}));
  const std::vector<float> w = bytes_to_f32(r->tensors()[0], r->read(0));
  for (float x : w) ASSERT_TRUE(std::isfinite(x) && std::fabs(x) < 10) << x;
}

TEST(TorchReader, BrokenSampleIsNotATorchFile) {
  const std::string path = test::shared_dir() + "/ckpt/torch-samples/src_pytorch_tests_reader_test_data_broken.pt";
  BERTRT_REQUIRE_PATH(path);
  EXPECT_NE(error_of(path).find("not a torch.save file"), std::string::npos) << error_of(path);
}

// --- security ------------------------------------------------------------------------------------

TEST(TorchSecurity, PickleThatCallsOsSystemIsRefusedAndNothingRuns) {
  REQUIRE_GENERATED();
  const Generated& g = Generated::get();
  ASSERT_EQ(g.index()["malicious"].size(), 5u);
  for (const json& m : g.index()["malicious"]) {
    const std::string file = g.file(m["file"]);
    const std::string marker = m["marker"];
    SCOPED_TRACE(file);
    if (!m["proof"].is_null()) {  // the same payload did run under torch.load in the generator
      EXPECT_TRUE(fs::exists(m["proof"].get<std::string>()));
    }
    ASSERT_FALSE(fs::exists(marker));
    const std::string err = error_of(file);
    EXPECT_EQ(err.rfind(file, 0), 0u) << err;  // names the file
    EXPECT_NE(err.find("pickle global '" + m["global"].get<std::string>() + "' is not allowed"), std::string::npos)
        << err;
    EXPECT_NE(err.find("collections.OrderedDict, torch._utils._rebuild_tensor"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(marker));
  }
}

TEST(TorchSecurity, GlobalsOutsideTheAllowlistAreRefusedInThePickle) {
  EXPECT_NE(pickle_error(std::string("\x80\x02" "cbuiltins\neval\n.", 17)).find("pickle global 'builtins.eval' is not allowed"),
            std::string::npos);
  // STACK_GLOBAL (protocol 4) is checked the same way.
  const std::string sg = std::string("\x80\x04\x8c\x02os\x8c\x06system\x93.", 15);
  EXPECT_NE(pickle_error(sg).find("pickle global 'os.system' is not allowed"), std::string::npos) << pickle_error(sg);
  EXPECT_NE(pickle_error(std::string("\x80\x02" "ctorch.storage\n_load_from_bytes\n.", 34))
                .find("'torch.storage._load_from_bytes' is not allowed"),
            std::string::npos);
  EXPECT_FALSE(pickle::is_allowed_global("torch.load"));
  EXPECT_TRUE(pickle::is_allowed_global("torch._utils._rebuild_tensor_v2"));
}

// --- the unpickler on hand-written bytes ---------------------------------------------------------

pickle::Document parse(const std::string& bytes) {
  return pickle::unpickle(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, "t.pkl");
}

TEST(Unpickler, ValuesByHand) {
  // pickle.dumps({'a': [1, -2, 1.5, None, True], 'b': (b'xy', 'z')}, protocol=3) (CPython 3.11).
  const std::string p = std::string(
      "\x80\x03\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71\x02\x28\x4b\x01\x4a\xfe"
      "\xff\xff\xff\x47\x3f\xf8\x00\x00\x00\x00\x00\x00\x4e\x88\x65\x58\x01\x00\x00\x00\x62\x71"
      "\x03\x43\x02\x78\x79\x71\x04\x58\x01\x00\x00\x00\x7a\x71\x05\x86\x71\x06\x75\x2e", 64);
  const pickle::Document d = parse(p);
  ASSERT_EQ(d.root->kind, pickle::Kind::Dict);
  ASSERT_EQ(d.root->entries.size(), 2u);
  const pickle::Value* list = d.root->entries[0].second;
  ASSERT_EQ(list->items.size(), 5u);
  EXPECT_EQ(list->items[0]->integer, 1);
  EXPECT_EQ(list->items[1]->integer, -2);
  EXPECT_EQ(list->items[2]->number, 1.5);
  EXPECT_EQ(list->items[3]->kind, pickle::Kind::None);
  EXPECT_TRUE(list->items[4]->boolean);
  const pickle::Value* tup = d.root->entries[1].second;
  EXPECT_EQ(tup->items[0]->kind, pickle::Kind::Bytes);
  EXPECT_EQ(tup->items[0]->text, "xy");
  EXPECT_EQ(d.end, p.size());
  // LONG1: -1 in one byte; 2**64 does not fit int64 and stays a big int.
  EXPECT_EQ(parse(std::string("\x80\x02\x8a\x01\xff.", 6)).root->integer, -1);
  EXPECT_EQ(parse(std::string("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", 14)).root->kind,
            pickle::Kind::BigInt);
  // OrderedDict() via REDUCE becomes a dict.
  EXPECT_EQ(parse(std::string("\x80\x02" "ccollections\nOrderedDict\n)R.", 30)).root->kind, pickle::Kind::Dict);
}

TEST(Unpickler, MalformedPicklesAreNamedErrors) {
  struct Case {
    std::string bytes, message;
  };
  const Case cases[] = {
      {std::string("\x80\x02X\x10\x00\x00\x00" "abc", 10), "t.pkl: pickle byte 2: truncated: needs 16 more bytes, 3 left"},
      {std::string("\x80\x02N", 3), "t.pkl: pickle byte 3: truncated"},  // no STOP
      {std::string("\x80\x02\xff.", 4), "t.pkl: pickle byte 2: unknown opcode 0xff"},
      {std::string("\x80\x02I1\n.", 6), "opcode INT (0x49) is not supported"},
      {std::string("\x80\x02h\x05.", 5), "t.pkl: pickle byte 2: memo index 5 was never set (0 entries)"},
      {std::string("\x80\x02Nq\x00j\x07\x00\x00\x00.", 11), "memo index 7 was never set (1 entries)"},
      {std::string("\x80\x02R.", 4), "stack underflow"},
      {std::string("\x80\x02t.", 4), "no MARK to pop to"},
      {std::string("\x80\x02]K\x01K\x02s.", 9), "SETITEM(S) on a list, expected a dict"},
      {std::string("\x80\x02}K\x01" "a.", 6), "APPEND(S) on a dict, expected a list"},
      {std::string("\x80\x02}(K\x01u.", 7), "SETITEMS with an odd number (1) of keys and values"},
      {std::string("\x80\x02(K\x01K\x02u.", 8), "stack underflow"},  // no dict below the MARK
      // A length of 2**62 must not be allocated: it is checked against the bytes left.
      {std::string("\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x40.", 12), "truncated: needs 4611686018427387904 more bytes"},
      {std::string("\x80\x04\x95\xff\xff\xff\xff\x00\x00\x00\x00N.", 13), "truncated"},
      {std::string("\x80\x02K\x01K\x02\x93.", 7), "STACK_GLOBAL of a int and a int, expected two strings"},
      {std::string("\x80\x02K\x01)R.", 6), "REDUCE of a int, expected a global"},
      {std::string("", 0), "no pickle here"},
  };
  for (const Case& c : cases) {
    const std::string err = pickle_error(c.bytes);
    EXPECT_NE(err.find(c.message), std::string::npos) << "got: " << err << "\nwant: " << c.message;
  }
}

// --- malformed files -----------------------------------------------------------------------------

TEST(TorchReader, MalformedFilesAreNamedErrors) {
  REQUIRE_GENERATED();
  const Generated& g = Generated::get();
  const json& bad = g.index()["malformed"];
  auto expect_error = [&](const std::string& key, const std::string& want) {
    const std::string file = g.file(bad[key]["file"]);
    const std::string err = error_of(file);
    EXPECT_EQ(err.rfind(file, 0), 0u) << err;  // starts with the file
    EXPECT_NE(err.find(want), std::string::npos) << key << ": " << err << "\nwant: " << want;
  };
  expect_error("no_data_pkl", "zip has no record '" + bad["no_data_pkl"]["record"].get<std::string>() + "' (the pickle)");
  expect_error("no_storage", "zip has no record '" + bad["no_storage"]["record"].get<std::string>() +
                                 "' (storage of tensor 'bf16')");
  expect_error("short_storage", "zip record '" + bad["short_storage"]["record"].get<std::string>() +
                                    "' has 30 bytes, but tensor 'f32' uses a 15-element F32 storage (60 bytes)");
  expect_error("overrun", "tensor 'w' needs storage element 11 (offset 2, shape 10, stride 1) but storage '0' has 4 elements");
  // Aliasing views: refused when opened, before any tensor is read (each read the whole storage).
  expect_error("aliased", "its tensors stand for 314572800 bytes, but its storages hold only "
                          "1048576: tensors that alias or broadcast the same storage elements may "
                          "stand for at most 4 times the bytes stored");
  expect_error("broadcast", "its tensors stand for 268435456 bytes, but its storages hold only 4");
  expect_error("bad_magic", "not a torch.save file: the first pickle is not torch's magic number");
  expect_error("truncated_storage", "storage '");
  expect_error("truncated_storage", "the file has");

  test::TempDir dir;
  std::ofstream(dir.file("empty.pt")).close();
  EXPECT_NE(error_of(dir.file("empty.pt")).find("not a torch.save file"), std::string::npos) << error_of(dir.file("empty.pt"));
  EXPECT_NE(error_of(dir.file("missing.pt")).find("missing.pt: cannot open"), std::string::npos);
  std::ofstream(dir.file("junk.pt"), std::ios::binary) << "PK\x03\x04 not really a zip";
  EXPECT_NE(error_of(dir.file("junk.pt")).find("not a readable zip file"), std::string::npos) << error_of(dir.file("junk.pt"));
}

}  // namespace
}  // namespace bertrt::convert
