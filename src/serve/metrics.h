// The counters and histograms of GET /metrics, in Prometheus' text exposition format (version
// 0.0.4): requests by route and status, queue depth, batch sizes and tokens, latencies.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace bertrt::serve {

// A cumulative histogram of fixed bucket bounds (Prometheus' le="..." buckets, +Inf last).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // name_bucket{le="..."}, name_sum, name_count lines; `labels` ("route=\"/embed\"") may be empty.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; one more for +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
  mutable std::mutex mutex_;
};

class Metrics {
 public:
  Metrics();
  // One answered request: its route ("/embed"), status and seconds from arrival to answer.
  void request(const std::string& route, int status, double seconds);
  // One forward of the batching thread: the requests and tokens in it, the seconds it took, and
  // each request's wait in the queue.
  void batch(size_t requests, size_t tokens, double seconds, const std::vector<double>& waits);
  // Prometheus text; queue_size and queue_capacity are read when rendered.
  std::string render(size_t queue_size, size_t queue_capacity) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (route, status) -> count
  std::map<std::string, Histogram> durations_;  // route -> request seconds
  Histogram batch_requests_, batch_tokens_, inference_, queue_wait_;
  std::atomic<uint64_t> batches_{0}, tokens_{0};
};

}  // namespace bertrt::serve
