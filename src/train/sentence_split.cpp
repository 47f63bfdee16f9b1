#include "train/sentence_split.h"

#include <array>
#include <cctype>

namespace bertrt {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_closer(char c) { return c == '"' || c == '\'' || c == ')' || c == ']'; }
bool is_opener(char c) { return c == '"' || c == '\'' || c == '(' || c == '['; }

// The word that ends at `end` (exclusive, the index of the terminal punctuation).
std::string_view word_before(std::string_view s, size_t end) {
  size_t b = end;
  while (b > 0 && !is_space(s[b - 1])) --b;
  return s.substr(b, end - b);
}

bool is_abbreviation(std::string_view w) {
  static constexpr std::array<std::string_view, 24> kAbbrev = {
      "Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Jr", "Sr", "vs", "etc", "e.g", "i.e",
      "No", "Vol", "Fig", "Gen", "Col", "Lt", "Capt", "Rev", "Inc", "Ltd", "Co", "approx"};
  for (std::string_view a : kAbbrev)
    if (w == a) return true;
  if (w.size() == 1 && std::isupper(static_cast<unsigned char>(w[0]))) return true;  // initials
  // Dotted acronyms: "U.S", "U.K" (the final '.' is the terminal one).
  if (w.size() >= 3 && w[1] == '.' && std::isupper(static_cast<unsigned char>(w[0]))) return true;
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<std::string_view> split_sentences(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c != '.' && c != '!' && c != '?') continue;
    size_t j = i + 1;
    while (j < s.size() && is_closer(s[j])) ++j;
    if (j >= s.size() || !is_space(s[j])) continue;
    size_t k = j;
    while (k < s.size() && is_space(s[k])) ++k;
    if (k >= s.size()) break;
    const unsigned char next = static_cast<unsigned char>(s[k]);
    if (!(std::isupper(next) || std::isdigit(next) || is_opener(s[k]))) continue;
    if (c == '.' && is_abbreviation(word_before(s, i))) continue;
    const std::string_view piece = trim(s.substr(start, j - start));
    if (!piece.empty()) out.push_back(piece);
    start = k;
    i = k - 1;
  }
  const std::string_view last = trim(s.substr(start));
  if (!last.empty()) out.push_back(last);
  return out;
}

}  // namespace bertrt
