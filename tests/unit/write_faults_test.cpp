// Writes that fail part-way (the file-size limit of RLIMIT_FSIZE stands in for a full disk: the
// kernel fails write() with EFBIG once SIGXFSZ is ignored): a clear error naming the file, the
// previous file intact, no temp file left — for a .brt, a safetensors file and a multi-file output
// whose files are synced before any is renamed. Each write runs in a forked child (gtest death
// test) so the limit does not reach the test runner.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "core/atomic_file.h"
#include "core/error.h"
#include "io/model_file.h"
#include "io/safetensors.h"
#include "test_util.h"

namespace bertrt {
namespace {

using test::read_bytes;

namespace fs = std::filesystem;
using test::TempDir;

// In the death-test child: runs `write` under a file-size limit of `limit` bytes and exits 0 when
// it threw a bertrt::Error whose message holds `needle` (otherwise says what went wrong).
[[noreturn]] void write_under_limit(const std::function<void()>& write, rlim_t limit,
                                    const std::string& needle) {
  std::signal(SIGXFSZ, SIG_IGN);
  const rlimit r{limit, limit};
  if (setrlimit(RLIMIT_FSIZE, &r) != 0) _exit(3);
  try {
    write();
    std::fprintf(stderr, "no error\n");
    _exit(1);
  } catch (const Error& e) {
    if (std::string(e.what()).find(needle) == std::string::npos) {
      std::fprintf(stderr, "message: %s\n", e.what());
      _exit(2);
    }
    _exit(0);
  }
}

void expect_write_fails_under_limit(const std::function<void()>& write, rlim_t limit,
                                    const std::string& needle) {
  EXPECT_EXIT(write_under_limit(write, limit, needle), ::testing::ExitedWithCode(0), "");
}

size_t entries(const std::string& dir) {
  return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

ModelContents model_with(const std::vector<float>& w) {
  ModelContents c;
  c.config.vocab_size = 6;
  c.config.hidden_size = 8;
  c.config.num_hidden_layers = 1;
  c.config.num_attention_heads = 2;
  c.config.intermediate_size = 16;
  c.tokenizer.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"};
  TensorRecord t;
  t.name = "w";
  t.shape = {int64_t(w.size())};
  t.data = reinterpret_cast<const uint8_t*>(w.data());
  t.nbytes = w.size() * 4;
  c.tensors.push_back(t);
  return c;
}

TEST(WriteFaults, ModelFilePastTheSizeLimitKeepsThePreviousFile) {
  TempDir dir;
  const std::string path = dir.file("m.brt");
  const std::vector<float> small(16, 1.0f), big(64 * 1024, 2.0f);  // 256 KB of weights
  write_model_file(path, model_with(small));
  const std::string before = read_bytes(path);
  const ModelContents c = model_with(big);
  expect_write_fails_under_limit([&] { write_model_file(path, c); }, 64 * 1024,
                                 path + ": write failed after");
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(entries(dir.path()), 1u);  // no temp file
  EXPECT_NO_THROW(ModelFile::open(path));
}

// -o onto a symbolic link (a "latest" link to a run's model, say) writes the file it names, in
// that file's folder, and keeps the link; a dangling link's target is created.
TEST(WriteFaults, AnOutputThatIsASymbolicLinkIsWrittenThrough) {
  TempDir dir;
  fs::create_directory(dir.file("run1"));
  const std::string real = dir.file("run1/model.brt"), link = dir.file("latest.brt");
  write_model_file(real, model_with(std::vector<float>(16, 1.0f)));
  fs::create_symlink("run1/model.brt", link);  // relative, as ln -s makes it
  write_model_file(link, model_with(std::vector<float>(16, 2.0f)));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_bytes(link), read_bytes(real));
  EXPECT_NE(read_bytes(real).find(std::string(reinterpret_cast<const char*>(
                std::vector<float>(16, 2.0f).data()), 64)),
            std::string::npos);
  EXPECT_EQ(entries(dir.file("run1")), 1u);  // no temp file left
  EXPECT_EQ(entries(dir.path()), 2u);        // run1, the link

  const std::string dangling = dir.file("next.brt");
  fs::create_symlink(dir.file("run1/new.brt"), dangling);
  write_model_file(dangling, model_with(std::vector<float>(16, 3.0f)));
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_NO_THROW(ModelFile::open(dir.file("run1/new.brt")));

  // A link to a FIFO (or a device: `ln -s /dev/null out.brt`) is not replaced by the rename.
  const std::string fifo = dir.file("fifo"), to_fifo = dir.file("to_fifo.brt");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink("fifo", to_fifo);
  try {
    write_model_file(to_fifo, model_with(std::vector<float>(16, 5.0f)));
    ADD_FAILURE() << "a FIFO was written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a device, FIFO or socket, not a regular file"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::is_fifo(fifo));

  const std::string loop = dir.file("loop.brt");
  fs::create_symlink("loop.brt", loop);
  try {
    write_model_file(loop, model_with(std::vector<float>(16, 4.0f)));
    ADD_FAILURE() << "a link to itself was written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too many levels of symbolic links"), std::string::npos)
        << e.what();
  }
}

// check_writable's errors say what is wrong with the folder, and a name at NAME_MAX's edge is
// written (its temp file's name was 11 bytes too long: "cannot write in folder").
TEST(WriteFaults, CheckWritableNamesTheProblemAndLongNamesAreWritten) {
  TempDir dir;
  const std::string file = dir.file("file.brt");
  std::ofstream(file) << "x";
  auto error = [](const std::string& path) -> std::string {
    try {
      check_writable(path);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error(file + "/x.brt"), file + "/x.brt: '" + file + "' is not a folder");
  EXPECT_EQ(error(dir.file("no/x.brt")),
            dir.file("no/x.brt") + ": folder '" + dir.file("no") + "' does not exist");
  fs::create_symlink("self/x", dir.file("self"));  // a loop through a folder component
  EXPECT_EQ(error(dir.file("self/z.brt")), dir.file("self/z.brt") + ": folder '" +
                                               dir.file("self") +
                                               "': Too many levels of symbolic links");
  EXPECT_EQ(error(dir.file("ok.brt")), "");
  const std::string longest = dir.file(std::string(251, 'n') + ".brt");  // 255 bytes
  EXPECT_EQ(error(longest), "");
  write_model_file(longest, model_with(std::vector<float>(16, 1.0f)));
  EXPECT_NO_THROW(ModelFile::open(longest));
  EXPECT_EQ(entries(dir.path()), 3u);  // file.brt, self, the long one: no temp or probe left
}

TEST(WriteFaults, SafetensorsPastTheSizeLimitKeepsThePreviousFile) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  const std::vector<float> small(4, 1.0f), big(64 * 1024, 2.0f);
  auto tensors = [](const std::vector<float>& v) {
    SafetensorsTensor t;
    t.name = "w";
    t.dtype = "F32";
    t.shape = {int64_t(v.size())};
    t.data = reinterpret_cast<const uint8_t*>(v.data());
    t.nbytes = v.size() * 4;
    return std::vector<SafetensorsTensor>{t};
  };
  write_safetensors(path, tensors(small));
  const std::string before = read_bytes(path);
  expect_write_fails_under_limit([&] { write_safetensors(path, tensors(big)); }, 64 * 1024, path);
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(entries(dir.path()), 1u);
}

// Several files synced first, then renamed: the failing third file leaves all three old ones.
TEST(WriteFaults, MultiFileOutputIsAllOrNothing) {
  TempDir dir;
  const std::vector<std::string> names = {dir.file("a"), dir.file("b"), dir.file("c")};
  for (const std::string& n : names) std::ofstream(n) << "old " << n;
  const std::string big(128 * 1024, 'x');
  expect_write_fails_under_limit(
      [&] {
        std::deque<AtomicFile> files;
        for (size_t i = 0; i < names.size(); ++i) {
          AtomicFile& f = files.emplace_back(names[i]);
          const std::string text = i == 2 ? big : "new";
          f.write(text.data(), text.size());
        }
        for (AtomicFile& f : files) f.sync();
        for (AtomicFile& f : files) f.commit();
      },
      64 * 1024, names[2] + ": write failed after");
  for (const std::string& n : names) EXPECT_EQ(read_bytes(n), "old " + n);
  EXPECT_EQ(entries(dir.path()), 3u);
}

}  // namespace
}  // namespace bertrt
