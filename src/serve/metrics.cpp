#include "serve/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace bertrt::serve {

namespace {

// Request and queue latencies: 1 ms to 60 s.
std::vector<double> seconds_bounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

std::string bound_text(double b) { return fmt::format("{}", b); }

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t i = size_t(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep,
                       i < bounds_.size() ? bound_text(bounds_[i]) : "+Inf", cumulative);
  }
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, braces, sum_, name, braces, count_);
}

Metrics::Metrics()
    : batch_requests_({1, 2, 4, 8, 16, 32, 64, 128, 256}),
      batch_tokens_({16, 64, 256, 512, 1024, 2048, 4096, 8192, 16384}),
      inference_(seconds_bounds()),
      queue_wait_(seconds_bounds()) {}

void Metrics::request(const std::string& route, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{route, status}];
  auto it = durations_.find(route);
  if (it == durations_.end())
    it = durations_.emplace(std::piecewise_construct, std::forward_as_tuple(route),
                            std::forward_as_tuple(seconds_bounds()))
             .first;
  it->second.observe(seconds);
}

void Metrics::batch(size_t requests, size_t tokens, double seconds,
                    const std::vector<double>& waits) {
  ++batches_;
  tokens_ += tokens;
  batch_requests_.observe(double(requests));
  batch_tokens_.observe(double(tokens));
  inference_.observe(seconds);
  for (double w : waits) queue_wait_.observe(w);
}

std::string Metrics::render(size_t queue_size, size_t queue_capacity) const {
  std::string out;
  out += "# HELP bertrt_requests_total HTTP requests answered, by route and status code.\n"
         "# TYPE bertrt_requests_total counter\n";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, n] : requests_)
      out += fmt::format("bertrt_requests_total{{route=\"{}\",code=\"{}\"}} {}\n", key.first,
                         key.second, n);
    out += "# HELP bertrt_request_duration_seconds Time from a request's arrival to its answer.\n"
           "# TYPE bertrt_request_duration_seconds histogram\n";
    for (const auto& [route, h] : durations_)
      h.render(out, "bertrt_request_duration_seconds", fmt::format("route=\"{}\"", route));
  }
  out += fmt::format(
      "# HELP bertrt_queue_size Requests waiting for the model.\n"
      "# TYPE bertrt_queue_size gauge\nbertrt_queue_size {}\n"
      "# HELP bertrt_queue_capacity Requests the queue holds before it answers 429.\n"
      "# TYPE bertrt_queue_capacity gauge\nbertrt_queue_capacity {}\n"
      "# HELP bertrt_batches_total Forwards run by the batching thread.\n"
      "# TYPE bertrt_batches_total counter\nbertrt_batches_total {}\n"
      "# HELP bertrt_tokens_total Tokens run through the model.\n"
      "# TYPE bertrt_tokens_total counter\nbertrt_tokens_total {}\n",
      queue_size, queue_capacity, batches_.load(), tokens_.load());
  out += "# HELP bertrt_batch_requests Requests packed into one forward.\n"
         "# TYPE bertrt_batch_requests histogram\n";
  batch_requests_.render(out, "bertrt_batch_requests", "");
  out += "# HELP bertrt_batch_tokens Tokens in one forward.\n"
         "# TYPE bertrt_batch_tokens histogram\n";
  batch_tokens_.render(out, "bertrt_batch_tokens", "");
  out += "# HELP bertrt_inference_duration_seconds Time of one batch's forward.\n"
         "# TYPE bertrt_inference_duration_seconds histogram\n";
  inference_.render(out, "bertrt_inference_duration_seconds", "");
  out += "# HELP bertrt_queue_duration_seconds Time a request waited in the queue.\n"
         "# TYPE bertrt_queue_duration_seconds histogram\n";
  queue_wait_.render(out, "bertrt_queue_duration_seconds", "");
  return out;
}

}  // namespace bertrt::serve
