#include "backends/cpu/thread_pool.h"

#include <pthreadpool.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/error.h"

namespace bertrt::cpu {

int usable_cpus() {
  // The affinity mask, not the machine: taskset, cpusets and Android's big-core pinning leave the
  // process fewer CPUs than hardware_concurrency() counts.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int usable_threads(int requested) { return std::min(requested, usable_cpus()); }

int default_num_threads() {
  if (const char* env = std::getenv("BERTRT_NUM_THREADS"); env && *env) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 1 || v > 1024)
      fail("BERTRT_NUM_THREADS: '{}' is not a thread count (expected an integer in [1, 1024])", env);
    return usable_threads(static_cast<int>(v));
  }
  return usable_cpus();
}

ThreadPool::ThreadPool(int threads) : threads_(threads > 0 ? threads : default_num_threads()) {
  if (threads_ > 1) {
    pool_ = pthreadpool_create(static_cast<size_t>(threads_));
    if (!pool_) fail("cpu backend: could not create a pool of {} threads", threads_);
  }
}

ThreadPool::~ThreadPool() {
  if (pool_) pthreadpool_destroy(pool_);
}

void ThreadPool::run(size_t n, size_t tile, void (*fn)(void*, size_t, size_t), void* ctx) {
  pthreadpool_parallelize_1d_tile_1d(pool_, fn, ctx, n, tile, 0);
}

}  // namespace bertrt::cpu
