// A fixed-size pool of worker threads (pthreadpool) for the CPU backend's row and elementwise ops
// and its GEMM splits. One pool per CpuBackend; the calling thread works too.
//
// Determinism: parallel_for hands out tiles of [0, n) whose bounds depend only on n, the grain and
// the pool size, and every caller writes disjoint outputs per index, so results never depend on
// which thread ran which tile. Reductions are split so that each output is summed by one thread
// in the serial order (see cpu_backend.cpp), never by combining per-thread partials.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>

struct pthreadpool;

namespace bertrt::cpu {

// The CPUs this process may run on (its affinity mask; at least 1).
int usable_cpus();

// `requested` capped at usable_cpus(): a thread more than the CPUs only waits, and the pool waits
// by spinning, so on 2 CPUs a BERT-mini forward took 1.3 ms with 2 threads and 160-600 ms with 3.
int usable_threads(int requested);

// BERTRT_NUM_THREADS when set to a positive integer, else usable_cpus(); capped by
// usable_threads(). Throws bertrt::Error naming the variable for a value that is not a positive int.
int default_num_threads();

class ThreadPool {
 public:
  // threads ≤ 0: default_num_threads(); 1: no worker threads, everything runs inline. A positive
  // count is taken as it is (tests split work 3 ways on 2 CPUs); callers that take a user's count
  // pass it through usable_threads().
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  // The pthreadpool itself (null with one thread), for libraries that take one (XNNPACK).
  pthreadpool* handle() const { return pool_; }

  // Calls f(begin, end) over tiles covering [0, n), in parallel. Tiles hold at least `grain`
  // items (so tiny ops run inline on the caller) and there are about 4 per thread (balance when
  // the other core is busy). f must not throw.
  template <class F>
  void parallel_for(size_t n, size_t grain, F&& f) {
    if (n == 0) return;
    if (threads_ <= 1 || n <= grain) {
      f(size_t{0}, n);
      return;
    }
    size_t tile = (n + 4 * threads_ - 1) / (4 * threads_);
    if (tile < grain) tile = grain;
    using Fn = std::remove_reference_t<F>;
    run(n, tile, &call<Fn>, const_cast<void*>(static_cast<const void*>(&f)));
  }

 private:
  template <class Fn>
  static void call(void* ctx, size_t begin, size_t count) {
    (*static_cast<Fn*>(ctx))(begin, begin + count);
  }
  void run(size_t n, size_t tile, void (*fn)(void*, size_t, size_t), void* ctx);

  int threads_ = 1;
  pthreadpool* pool_ = nullptr;
};

}  // namespace bertrt::cpu
