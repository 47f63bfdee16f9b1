#include "metrics/classification.h"

#include <cmath>
#include <map>

#include "core/error.h"

namespace bertrt {
namespace {

void check_sizes(const char* metric, size_t predictions, size_t labels) {
  if (predictions != labels)
    fail("{}: {} predictions for {} gold labels", metric, predictions, labels);
  if (labels == 0) fail("{}: no examples", metric);
}

}  // namespace

double accuracy(const std::vector<int>& predictions, const std::vector<int>& labels) {
  check_sizes("accuracy", predictions.size(), labels.size());
  size_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) correct += predictions[i] == labels[i];
  return double(correct) / double(labels.size());
}

double f1_positive(const std::vector<int>& predictions, const std::vector<int>& labels,
                   int positive) {
  check_sizes("f1", predictions.size(), labels.size());
  double tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const bool p = predictions[i] == positive, t = labels[i] == positive;
    tp += p && t;
    fp += p && !t;
    fn += !p && t;
  }
  const double denom = 2 * tp + fp + fn;
  return denom > 0 ? 2 * tp / denom : 0.0;
}

double matthews_corrcoef(const std::vector<int>& predictions, const std::vector<int>& labels) {
  check_sizes("matthews", predictions.size(), labels.size());
  std::map<int, double> predicted, truth;  // per-class counts p_k, t_k
  double correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    predicted[predictions[i]] += 1;
    truth[labels[i]] += 1;
    correct += predictions[i] == labels[i];
  }
  const double s = double(labels.size());
  double pt = 0, pp = 0, tt = 0;
  for (const auto& [k, p] : predicted) {
    pp += p * p;
    const auto it = truth.find(k);
    if (it != truth.end()) pt += p * it->second;
  }
  for (const auto& kv : truth) tt += kv.second * kv.second;
  const double cov_ytyp = correct * s - pt;
  const double cov_ypyp = s * s - pp;
  const double cov_ytyt = s * s - tt;
  if (cov_ypyp * cov_ytyt == 0) return 0.0;
  return cov_ytyp / std::sqrt(cov_ytyt * cov_ypyp);
}

}  // namespace bertrt
