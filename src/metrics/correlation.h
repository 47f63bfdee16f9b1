// Correlation metrics for regression (STS-B), computed as scipy.stats computes them. Inputs have
// the same length ≥ 2, else bertrt::Error. Results in [-1, 1]; NaN when a side is constant
// (scipy returns nan there too, with a warning).
#pragma once

#include <vector>

namespace bertrt {

// Pearson's r: Σ(x−x̄)(y−ȳ) / sqrt(Σ(x−x̄)² Σ(y−ȳ)²), in double (scipy.stats.pearsonr).
double pearson(const std::vector<double>& x, const std::vector<double>& y);

// 1-based ranks; tied values share the average of the ranks they span
// (scipy.stats.rankdata(method="average")): [10, 20, 20, 30] → [1, 2.5, 2.5, 4].
std::vector<double> average_ranks(const std::vector<double>& x);

// Spearman's ρ: Pearson's r of the average ranks (scipy.stats.spearmanr).
double spearman(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace bertrt
