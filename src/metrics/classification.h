// Classification metrics over label ids, computed as scikit-learn computes them. Every function
// takes predictions and gold labels of the same non-zero length and throws bertrt::Error naming
// the metric otherwise. Results are fractions (accuracy 0..1, Matthews -1..1), not percentages.
#pragma once

#include <vector>

namespace bertrt {

// Fraction of predictions equal to the gold label (sklearn accuracy_score).
double accuracy(const std::vector<int>& predictions, const std::vector<int>& labels);

// F1 of class `positive` (sklearn f1_score, average="binary", pos_label=positive; MRPC's metric):
// 2·TP / (2·TP + FP + FN); 0 when there are no true or predicted positives (sklearn's
// zero_division=0 result).
double f1_positive(const std::vector<int>& predictions, const std::vector<int>& labels,
                   int positive = 1);

// Matthews correlation coefficient (sklearn matthews_corrcoef; CoLA's metric), the multi-class
// form of Gorodkin 2004 over the confusion matrix C:
//   (c·s − Σ_k p_k·t_k) / sqrt((s² − Σ_k p_k²)(s² − Σ_k t_k²)),
// c = correct, s = samples, p_k / t_k = predicted / true count of class k; for two classes it is
// (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)). 0 when the denominator is 0 (one class
// only in predictions or gold), as sklearn returns.
double matthews_corrcoef(const std::vector<int>& predictions, const std::vector<int>& labels);

}  // namespace bertrt
