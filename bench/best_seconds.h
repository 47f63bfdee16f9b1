// The timing rule of the bench programs: the fastest of repeated calls (after one warm-up call,
// at least 3, up to `budget_s` seconds or 200 calls). On a shared machine the minimum is the
// least disturbed figure.
#pragma once

#include <algorithm>
#include <chrono>

namespace bertrt::bench {

template <class F>
double best_seconds(F&& f, double budget_s) {
  f();  // warm-up: page faults, thread pool start
  double best = 1e30, total = 0;
  for (int r = 0; r < 200 && (r < 3 || total < budget_s); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
  }
  return best;
}

}  // namespace bertrt::bench
