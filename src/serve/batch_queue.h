// The queue between the HTTP threads and the one thread that runs the model: bounded (a full queue
// refuses, the caller answers 429), and drained in batches that pack the requests of several
// clients into one forward up to a token budget (TEI's --max-batch-tokens).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace bertrt::serve {

// T has `std::string key` (requests of one key can share a forward: the same model, route and
// options) and `size_t tokens` (what the request puts in the forward).
template <typename T>
class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity) : capacity_(capacity) {}

  // false when the queue holds `capacity` requests already or is closed.
  bool push(std::shared_ptr<T> job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_ || jobs_.size() >= capacity_) return false;
      jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
    return true;
  }

  // Waits for a request; returns the oldest one and, in queue order, the later ones of its key
  // while their tokens fit in max_tokens with it (the oldest goes alone when it is larger) and
  // max_jobs allows. Requests of other keys keep their places. Empty once closed and drained.
  std::vector<std::shared_ptr<T>> take(size_t max_tokens, size_t max_jobs) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !jobs_.empty(); });
    std::vector<std::shared_ptr<T>> batch;
    if (jobs_.empty()) return batch;
    batch.push_back(std::move(jobs_.front()));
    jobs_.pop_front();
    size_t tokens = batch[0]->tokens;
    for (auto it = jobs_.begin(); it != jobs_.end() && batch.size() < max_jobs;) {
      if ((*it)->key == batch[0]->key && tokens + (*it)->tokens <= max_tokens) {
        tokens += (*it)->tokens;
        batch.push_back(std::move(*it));
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
    return batch;
  }

  // From now on push refuses; take returns what is left, then nothing.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return jobs_.size();
  }
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<T>> jobs_;
  bool closed_ = false;
};

}  // namespace bertrt::serve
