#include "metrics/correlation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace bertrt {
namespace {

void check_sizes(const char* metric, size_t x, size_t y) {
  if (x != y) fail("{}: {} predictions for {} gold values", metric, x, y);
  if (x < 2) fail("{}: needs at least 2 values, got {}", metric, x);
}

void check_finite(const char* metric, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) fail("{}: value {} is {}, expected a finite number", metric, i, v[i]);
}

}  // namespace

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  check_sizes("pearson", x.size(), y.size());
  check_finite("pearson", x);
  check_finite("pearson", y);
  const double n = double(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;  // two-pass: no cancellation from large means
  for (size_t i = 0; i < x.size(); ++i) {
    const double dx = x[i] - mx, dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx == 0 || syy == 0) return std::numeric_limits<double>::quiet_NaN();
  // Rounding can push |r| a hair past 1; scipy clips the same way.
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

std::vector<double> average_ranks(const std::vector<double>& x) {
  check_finite("rank", x);
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && x[order[j]] == x[order[i]]) ++j;
    const double rank = (double(i + 1) + double(j)) / 2;  // mean of ranks i+1 .. j
    for (size_t k = i; k < j; ++k) ranks[order[k]] = rank;
    i = j;
  }
  return ranks;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  check_sizes("spearman", x.size(), y.size());
  return pearson(average_ranks(x), average_ranks(y));
}

}  // namespace bertrt
