// SQuAD v1.1 (Rajpurkar et al. 2016): the official JSON read into one example per question, with
// every answer's offset checked against the context, and selection by article (SQuAD here has no
// train split: the shared file's articles 0–29 train, 30–39 evaluate; split by article, never by
// question, so no context is seen in both).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace bertrt {

struct SquadAnswer {
  std::string text;
  size_t char_start = 0;  // answer_start as in the JSON: code points (Python str indices)
  size_t byte_start = 0;  // the same position in bytes of the UTF-8 context
};

struct SquadExample {
  std::string id;        // the question id ("56be4db0acb8001400a502ec")
  std::string question;
  std::string context;   // the paragraph, verbatim
  std::vector<SquadAnswer> answers;  // empty when predicting
  size_t article = 0;    // index of the article in the file
};

struct SquadDataset {
  std::vector<std::string> titles;     // one per article
  std::vector<SquadExample> examples;  // in file order (article, paragraph, question)
};

// Reads the official JSON ({"data": [{"title", "paragraphs": [{"context", "qas": [{"id",
// "question", "answers": [{"answer_start", "text"}]}]}]}]}). Throws bertrt::Error naming the file
// for unreadable or malformed JSON or a missing field (with its article/paragraph/question), and
// for an answer whose text is not the context at its answer_start:
//   "FILE: question ID: answer 'TEXT' at offset N does not match the context there ('...')".
SquadDataset read_squad(const std::string& path);

// The examples of articles [first, last) (0-based); throws bertrt::Error when the range is empty
// or beyond the dataset's articles.
std::vector<SquadExample> select_articles(const SquadDataset& data, size_t first, size_t last);

}  // namespace bertrt
