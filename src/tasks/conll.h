// CoNLL-2003 named-entity data: "word POS chunk NER" a line, a blank line between sentences,
// optional "-DOCSTART- -X- -X- O" document lines (skipped). Tags are IOB2 (every entity starts
// with B-); the shared files are IOB2 already (README; checked by tasks_conll_test). The original
// 2003 release is IOB1 (I- starts an entity unless it follows one of the same type): its
// entity-initial I-X tags are rewritten to B-X, which leaves IOB2 input unchanged and gives the
// same entities seqeval reads from either.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace bertrt {

// The CoNLL-2003 label set, in the order of the Hugging Face conll2003 dataset:
// O B-PER I-PER B-ORG I-ORG B-LOC I-LOC B-MISC I-MISC.
const std::vector<std::string>& conll2003_labels();

struct NerSentence {
  std::vector<std::string> words;
  std::vector<int> tags;  // one id per word, index into the label set
  size_t line = 0;        // 1-based line of the first word (for messages)
};

struct ConllStats {
  size_t sentences = 0, words = 0, docstarts = 0;
  size_t iob1_fixes = 0;  // I-X tags that started an entity and became B-X (0 for IOB2 input)
};

// Reads a CoNLL-2003 file. `columns` is the expected field count (4) and `tag_column` the NER
// column (3, 0-based); fields are separated by spaces or tabs. Throws bertrt::Error naming the
// file and the 1-based line for: a line with another number of fields ("expected 4
// space-separated columns (word POS chunk NER), got N"), a tag not in `labels` ("tag 'X' is not
// one of {...}"), a missing/empty file, or no sentences.
std::vector<NerSentence> read_conll(const std::string& path,
                                    const std::vector<std::string>& labels = conll2003_labels(),
                                    ConllStats* stats = nullptr, int columns = 4,
                                    int tag_column = 3);

}  // namespace bertrt
