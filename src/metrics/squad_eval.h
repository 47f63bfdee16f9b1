// SQuAD v1.1 exact match and F1, as the official evaluate-v1.1.py computes them: both strings
// normalised (normalize_answer), EM = normalised strings equal, F1 = bag-of-tokens overlap F1;
// each prediction scored against every gold answer and the best kept.
#pragma once

#include <string>
#include <vector>

namespace bertrt {

// evaluate-v1.1.py normalize_answer on Python 3 str semantics: lower-case (str.lower()), remove
// the ASCII punctuation of string.punctuation, replace the words a / an / the (regex
// \b(a|an|the)\b with Unicode word characters: letters, digits, '_') by a space, then split on
// whitespace (str.split()) and join with single spaces.
std::string normalize_squad_answer(const std::string& text);

// Max over `gold` (must be non-empty, else bertrt::Error) of exact match (0 or 1) / token F1.
double squad_exact_match(const std::string& prediction, const std::vector<std::string>& gold);
double squad_f1(const std::string& prediction, const std::vector<std::string>& gold);

struct SquadScores {
  double exact_match = 0, f1 = 0;  // means over questions, fractions (the script prints ×100)
  size_t questions = 0;
};

// Means over questions; predictions[i] answers the question whose gold answers are gold[i].
SquadScores squad_scores(const std::vector<std::string>& predictions,
                         const std::vector<std::vector<std::string>>& gold);

}  // namespace bertrt
