// Every fuzz target on every file of tests/fuzz/regressions/<target>/ (inputs that once crashed,
// hung or ran out of memory) and tests/fuzz/corpus/<target>/ (the seeds), in the normal build
// without libFuzzer: each must come back or throw bertrt::Error, nothing else.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz_target.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> target_names() {
  std::vector<std::string> names;
  for (const auto& t : bertrt::fuzz::targets()) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  return names;
}

bertrt::fuzz::TargetFn target_fn(const std::string& name) {
  for (const auto& t : bertrt::fuzz::targets())
    if (name == t.name) return t.fn;
  return nullptr;
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

struct Replayed {
  size_t files = 0, accepted = 0;
};

// Runs every file of `dir` through target `name`.
Replayed replay(const std::string& name, const fs::path& dir) {
  const bertrt::fuzz::TargetFn fn = target_fn(name);
  Replayed r;
  for (const fs::path& f : files_in(dir)) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(f.string());
    ++r.files;
    EXPECT_NO_THROW(r.accepted += bertrt::fuzz::run_one(
                        fn, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  }
  return r;
}

std::vector<fs::path> subfolders(const fs::path& dir) {
  std::vector<fs::path> dirs;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory()) dirs.push_back(e.path());
  return dirs;
}

class FuzzTarget : public ::testing::TestWithParam<std::string> {};

// The seeds are real files: the target must parse at least one of them all the way (a target
// that rejects every seed, e.g. because its input framing is wrong, would fuzz only the errors).
TEST_P(FuzzTarget, SeedCorpusIsParsedCleanly) {
  const fs::path dir = fs::path(bertrt::test::source_dir()) / "tests/fuzz/corpus" / GetParam();
  const Replayed r = replay(GetParam(), dir);
  EXPECT_GT(r.files, 0u) << "no seed files in " << dir;
  EXPECT_GT(r.accepted, 0u) << "every seed in " << dir << " was rejected";
}

INSTANTIATE_TEST_SUITE_P(All, FuzzTarget, ::testing::ValuesIn(target_names()),
                         [](const auto& info) { return info.param; });

fs::path regressions_dir(const std::string& name) {
  return fs::path(bertrt::test::source_dir()) / "tests/fuzz/regressions" / name;
}

// The targets that have regression inputs (one test each, none for the others).
std::vector<std::string> targets_with_regressions() {
  std::vector<std::string> names;
  for (const std::string& n : target_names())
    if (!files_in(regressions_dir(n)).empty()) names.push_back(n);
  return names;
}

class FuzzRegression : public ::testing::TestWithParam<std::string> {};

TEST_P(FuzzRegression, InputsAreRejectedOrParsedCleanly) {
  EXPECT_GT(replay(GetParam(), regressions_dir(GetParam())).files, 0u);
}

INSTANTIATE_TEST_SUITE_P(All, FuzzRegression, ::testing::ValuesIn(targets_with_regressions()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FuzzRegression);

TEST(FuzzTargets, EveryTargetHasASeedFolderAndEveryFolderATarget) {
  const std::vector<std::string> names = target_names();
  EXPECT_EQ(names.size(), 16u);
  for (const char* kind : {"corpus", "regressions"})
    for (const fs::path& dir :
         subfolders(fs::path(bertrt::test::source_dir()) / "tests/fuzz" / kind))
      EXPECT_TRUE(std::count(names.begin(), names.end(), dir.filename().string()))
          << dir << " names no fuzz target";
}

}  // namespace
