// The CPU backend's one pool of threads: every parallel op, bertrt's GEMM splits and OpenBLAS's
// calls (OpenBLAS itself runs single-threaded under it) go through parallel_for. The calling
// thread works too.
//
// Made for cores that other programs share (a device's app, UI, a second model):
// - Work is handed out in tiles that any thread claims from a shared counter, so a thread the OS
//   has descheduled holds up only the tile it is running; the others take the rest.
// - Waits spin briefly, then sleep on a futex: a worker that finds no work, and a caller waiting
//   for a straggler, give their core back instead of spinning on it. `spin` (BERTRT_SPIN, the
//   CLI's --spin) makes them spin longer, for cores that run nothing else.
// - Adaptive width: unless the user fixed the thread count, the pool measures how long its
//   threads wait for a CPU (the kernel's per-thread run delay, /proc/thread-self/schedstat) and
//   runs on fewer threads while other programs keep the cores busy, probing back up (with
//   growing pauses between failed probes) until it runs on all of them again.
//
// Determinism: parallel_for hands out tiles of [0, n) and every caller writes disjoint outputs
// per index, so results never depend on which thread ran which tile, nor on how many threads
// there were. Reductions are split so that each output is summed by one thread in the serial
// order (see cpu_backend.cpp), never by combining per-thread partials.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

struct pthreadpool;

namespace bertrt::cpu {

// The CPUs this process may run on (its affinity mask; at least 1).
int usable_cpus();

// `requested` capped at usable_cpus(): a thread more than the CPUs only waits for a CPU.
int usable_threads(int requested);

// BERTRT_NUM_THREADS when set to a positive integer (or the CLI's --threads), else
// usable_cpus(); capped by usable_threads(). Throws bertrt::Error naming the variable for a value
// that is not a positive int.
int default_num_threads();
// Whether the user fixed the count (BERTRT_NUM_THREADS or --threads): then it never adapts.
bool num_threads_fixed();
// BERTRT_SPIN (1/true/yes/on or 0/false/no/off; unset: off) or the CLI's --spin. Throws
// bertrt::Error naming the variable for another value.
bool spin_waits();
// The CLI's --threads (> 0) and --spin: they take the place of the environment variables for
// every pool made afterwards. threads 0 leaves BERTRT_NUM_THREADS in charge.
void set_thread_overrides(int threads, bool spin);

// The adaptive width's rule, apart from its measurements (ThreadPool feeds it the kernel's
// per-thread run delays; tests feed it numbers).
class WidthPolicy {
 public:
  // Above this share of runnable time spent waiting for a CPU the cores are contended: with t of
  // our threads and o busy programs on c cores, each runnable thread gets c / (t + o) of a core,
  // so the share is 1 - c / (t + o): 1/3 for 2 threads and one other program on 2 cores. An
  // idle machine shows a few % (wake-up latency).
  static constexpr double kContended = 0.15;
  // Below it the active threads had their cores: a narrowed pool probes one thread wider.
  static constexpr double kFree = 0.05;
  // Pauses before a probe: doubled after each probe that found the cores still busy (a window
  // at the wider width costs some speed), back to the first after one that kept the width.
  static constexpr int64_t kFirstProbeNs = 100'000'000, kMaxProbeNs = 3'200'000'000;

  explicit WidthPolicy(int threads) : threads_(threads), width_(threads), min_width_(threads) {}
  // One window's measurements: `waited`, the share of our threads' runnable time (on a CPU or
  // waiting for one) spent waiting; `runnable`, how many of them were runnable on average;
  // `cpus`, the cores the process may use. Returns the width for the next window.
  int update(int64_t now_ns, double waited, double runnable, int cpus);
  // The full width again (no measurements to go by).
  void reset() { width_ = threads_, probing_ = false; }

  int width() const { return width_; }
  uint64_t narrowed() const { return narrowed_; }
  uint64_t widened() const { return widened_; }
  uint64_t failed_probes() const { return failed_probes_; }
  int min_width() const { return min_width_; }

 private:
  int threads_, width_, min_width_;
  bool probing_ = false;
  int probe_from_ = 0;
  int64_t next_probe_ = 0, probe_pause_ = kFirstProbeNs;
  uint64_t narrowed_ = 0, widened_ = 0, failed_probes_ = 0;
};

class ThreadPool {
 public:
  // threads ≤ 0: default_num_threads(), adaptive unless num_threads_fixed(); 1: no worker
  // threads, everything runs inline. A positive count is taken as it is and fixed (tests split
  // work 3 ways on 2 CPUs); callers that take a user's count pass it through usable_threads().
  // Waits spin as spin_waits() says.
  explicit ThreadPool(int threads = 0);
  // The same with each setting explicit (tests).
  ThreadPool(int threads, bool adaptive, bool spin);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The pool's size: the most threads a parallel region uses.
  int threads() const { return threads_; }
  // The threads the next parallel region will use (threads() unless the adaptive width is lower).
  int active_threads() const { return width_.load(std::memory_order_relaxed); }
  // Sets the width of the next regions (clamped to [1, threads()]); an adaptive pool's rule
  // changes it again at its next window. For tests: results do not depend on it.
  void set_active_threads(int width);
  bool adaptive() const { return adaptive_; }
  bool spin() const { return spin_; }

  // A pthreadpool of threads() threads for XNNPACK (made at the first call), or null when the
  // pool has one thread or runs narrower now (XNNPACK then runs on the caller alone).
  pthreadpool* xnnpack_pool();

  // Calls f(begin, end) over tiles covering [0, n), in parallel. Tiles hold at least `grain`
  // items (so tiny ops run inline on the caller) and there are about 4 per active thread; any
  // thread takes the next unclaimed one. f must not throw. A call from inside a tile, or while
  // another thread runs a region on this pool, runs inline.
  template <class F>
  void parallel_for(size_t n, size_t grain, F&& f) {
    if (n == 0) return;
    const int width = threads_ > 1 ? begin_region() : 1;
    if (width <= 1 || n <= grain) {
      if (threads_ > 1) note_inline();
      f(size_t{0}, n);
      return;
    }
    size_t tile = (n + kTilesPerThread * width - 1) / (kTilesPerThread * width);
    if (tile < grain) tile = grain;
    using Fn = std::remove_reference_t<F>;
    run(width, n, tile, &call<Fn>, const_cast<void*>(static_cast<const void*>(&f)));
  }

  // What the pool did since it was made (each field a count unless named otherwise).
  struct Stats {
    uint64_t regions = 0;         // parallel regions run on more than one thread
    uint64_t inline_regions = 0;  // regions the caller ran alone (small, nested, busy or width 1)
    uint64_t tiles = 0;           // tiles of the parallel regions
    uint64_t worker_tiles = 0;    // of those, tiles the worker threads ran
    uint64_t wakes = 0;           // futex wakes of sleeping workers
    uint64_t join_sleeps = 0;     // regions whose caller slept waiting for a straggler
    double join_wait_ms = 0;      // time callers waited for stragglers after their last tile
    uint64_t narrowed = 0;        // adaptive: times the width went down
    uint64_t widened = 0;         // adaptive: probes that kept a wider width
    uint64_t failed_probes = 0;   // adaptive: probes given up (the cores were still busy)
    int min_width = 0;            // the narrowest width used
  };
  Stats stats() const;
  // One line: "2 threads (adaptive, now 1; ...): 1234 regions, ...".
  std::string summary() const;

 private:
  static constexpr size_t kTilesPerThread = 4;
  struct Impl;

  template <class Fn>
  static void call(void* ctx, size_t begin, size_t count) {
    (*static_cast<Fn*>(ctx))(begin, begin + count);
  }
  // The width for a region about to start (1: run inline), after the adaptive check.
  int begin_region();
  void note_inline();
  void run(int width, size_t n, size_t tile, void (*fn)(void*, size_t, size_t), void* ctx);

  int threads_ = 1;
  bool adaptive_ = false;
  bool spin_ = false;
  std::atomic<int> width_{1};
  std::unique_ptr<Impl> impl_;
};

}  // namespace bertrt::cpu
