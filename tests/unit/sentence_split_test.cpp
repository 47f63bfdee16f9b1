#include "train/sentence_split.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"

namespace bertrt {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (auto p : split_sentences(s)) out.emplace_back(p);
  return out;
}

TEST(SentenceSplit, SplitsOnTerminalPunctuationBeforeACapital) {
  EXPECT_EQ(split("It rained. Then it stopped! Did it? Yes."),
            (std::vector<std::string>{"It rained.", "Then it stopped!", "Did it?", "Yes."}));
  EXPECT_EQ(split("He said \"go.\" She went."),
            (std::vector<std::string>{"He said \"go.\"", "She went."}));
  EXPECT_EQ(split("Born in 1990. 2015 was his year."),
            (std::vector<std::string>{"Born in 1990.", "2015 was his year."}));
}

TEST(SentenceSplit, KeepsAbbreviationsInitialsDecimalsAndLowerCaseContinuations) {
  EXPECT_EQ(split("Mr. Smith met Dr. Jones in St. Louis."),
            (std::vector<std::string>{"Mr. Smith met Dr. Jones in St. Louis."}));
  EXPECT_EQ(split("J. R. R. Tolkien wrote it."), (std::vector<std::string>{"J. R. R. Tolkien wrote it."}));
  EXPECT_EQ(split("It grew 3.5 percent in the U.S. economy."),
            (std::vector<std::string>{"It grew 3.5 percent in the U.S. economy."}));
  EXPECT_EQ(split("see fig. below. it is small."),
            (std::vector<std::string>{"see fig. below. it is small."}));
}

TEST(SentenceSplit, NoEmptyPiecesAndWhitespaceTrimmed) {
  EXPECT_TRUE(split("").empty());
  EXPECT_TRUE(split("   ").empty());
  EXPECT_EQ(split("  One.   Two.  "), (std::vector<std::string>{"One.", "Two."}));
}

// On the real corpus, splitting must keep every non-space byte (nothing lost or duplicated).
TEST(SentenceSplit, RealCorpusKeepsEveryCharacter) {
  const std::string path = test::data_dir() + "/corpus/enwiki/enwiki_valid_1000docs.txt";
  BERTRT_REQUIRE_PATH(path);
  std::ifstream in(path);
  std::string line;
  size_t lines = 0, pieces = 0;
  auto squeeze = [](std::string_view s) {
    std::string r;
    for (char c : s) if (c != ' ' && c != '\t') r += c;
    return r;
  };
  while (std::getline(in, line)) {
    std::string joined;
    for (auto p : split_sentences(line)) joined += squeeze(p), ++pieces;
    ASSERT_EQ(joined, squeeze(line)) << "line " << lines + 1;
    ++lines;
  }
  EXPECT_GT(pieces, lines);  // paragraphs do get split
}

}  // namespace
}  // namespace bertrt
