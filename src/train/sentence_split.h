// A small rule-based sentence splitter for paragraph-per-line corpora.
//
// Why: the original pre-training recipe (create_pretraining_data.py) expects ONE SENTENCE a line
// and always draws a random B for a chunk of a single line. On a paragraph-a-line corpus such as
// the shared enwiki extract, 40% of chunks are single lines, so NSP labels come out ~70% "random"
// instead of the paper's 50/50. Splitting paragraphs into sentences first restores the input the
// recipe was written for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bertrt {

// Splits after '.', '!' or '?' (plus any closing quotes/brackets) when white space and then an
// upper-case ASCII letter, a digit or an opening quote/bracket follow — except after common
// abbreviations ("Mr.", "Dr.", "St.", "e.g.", "U.S.") and single-letter initials ("J. Smith").
// Non-ASCII text passes through unchanged (a split needs the ASCII cues above). Pieces are
// returned without surrounding white space; never empty pieces.
std::vector<std::string_view> split_sentences(std::string_view paragraph);

}  // namespace bertrt
