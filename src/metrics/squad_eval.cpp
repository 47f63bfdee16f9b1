#include "metrics/squad_eval.h"

#include <utf8proc.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "tokenizer/unicode_text.h"  // Python str.lower() / str.split() semantics

namespace bertrt {
namespace {

// Python 3 string.punctuation.
bool is_ascii_punctuation(char32_t c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
         (c >= 123 && c <= 126);
}

// Python re \w for str patterns: str.isalnum() (letters L*, numbers N*) or '_'.
bool is_word_char(char32_t c) {
  if (c == U'_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

// re.sub(r'\b(a|an|the)\b', ' ', text): a whole word a / an / the becomes one space.
std::u32string remove_articles(const std::u32string& t) {
  std::u32string out;
  for (size_t i = 0; i < t.size();) {
    const bool boundary_before = i == 0 || !is_word_char(t[i - 1]);
    size_t matched = 0;
    if (boundary_before) {
      for (const std::u32string& w : {std::u32string(U"a"), std::u32string(U"an"), std::u32string(U"the")}) {
        if (t.compare(i, w.size(), w) == 0 &&
            (i + w.size() == t.size() || !is_word_char(t[i + w.size()]))) {
          matched = w.size();
          break;
        }
      }
    }
    if (matched) {
      out.push_back(U' ');
      i += matched;
    } else {
      out.push_back(t[i++]);
    }
  }
  return out;
}

std::vector<std::string> normalized_tokens(const std::string& text) {
  std::vector<std::string> tokens;
  const std::string n = normalize_squad_answer(text);
  size_t start = 0;
  while (start < n.size()) {
    size_t space = n.find(' ', start);
    if (space == std::string::npos) space = n.size();
    tokens.push_back(n.substr(start, space - start));
    start = space + 1;
  }
  return tokens;
}

double token_f1(const std::vector<std::string>& pred, const std::vector<std::string>& gold) {
  std::map<std::string, int> counts;
  for (const std::string& t : gold) ++counts[t];
  int same = 0;  // Counter(pred) & Counter(gold)
  for (const std::string& t : pred) {
    auto it = counts.find(t);
    if (it != counts.end() && it->second > 0) --it->second, ++same;
  }
  if (same == 0) return 0.0;
  const double precision = double(same) / double(pred.size());
  const double recall = double(same) / double(gold.size());
  return 2 * precision * recall / (precision + recall);
}

void check_gold(const std::vector<std::string>& gold) {
  if (gold.empty()) fail("SQuAD metric: a question without gold answers");
}

}  // namespace

std::string normalize_squad_answer(const std::string& text) {
  std::u32string cps, lowered, kept;
  unicode::decode_utf8(text, cps);
  unicode::append_lower(cps.data(), cps.data() + cps.size(), lowered);
  for (char32_t c : lowered)
    if (!is_ascii_punctuation(c)) kept.push_back(c);
  const std::u32string no_articles = remove_articles(kept);
  std::string out;  // ' '.join(text.split())
  bool pending_space = false;
  for (char32_t c : no_articles) {
    if (unicode::is_python_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' '), pending_space = false;
    unicode::append_utf8(c, out);
  }
  return out;
}

double squad_exact_match(const std::string& prediction, const std::vector<std::string>& gold) {
  check_gold(gold);
  const std::string p = normalize_squad_answer(prediction);
  for (const std::string& g : gold)
    if (normalize_squad_answer(g) == p) return 1.0;
  return 0.0;
}

double squad_f1(const std::string& prediction, const std::vector<std::string>& gold) {
  check_gold(gold);
  const std::vector<std::string> p = normalized_tokens(prediction);
  double best = 0;
  for (const std::string& g : gold) best = std::max(best, token_f1(p, normalized_tokens(g)));
  return best;
}

SquadScores squad_scores(const std::vector<std::string>& predictions,
                         const std::vector<std::vector<std::string>>& gold) {
  if (predictions.size() != gold.size())
    fail("SQuAD metric: {} predictions for {} questions", predictions.size(), gold.size());
  if (gold.empty()) fail("SQuAD metric: no questions");
  SquadScores s;
  for (size_t i = 0; i < gold.size(); ++i) {
    s.exact_match += squad_exact_match(predictions[i], gold[i]);
    s.f1 += squad_f1(predictions[i], gold[i]);
  }
  s.questions = gold.size();
  s.exact_match /= double(gold.size());
  s.f1 /= double(gold.size());
  return s;
}

}  // namespace bertrt
