// See thread_pool.h.
#include "backends/cpu/thread_pool.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthreadpool.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "core/error.h"

namespace bertrt::cpu {
namespace {

std::atomic<int> g_threads_override{0};
std::atomic<int> g_spin_override{-1};

// Set on the pool's workers for good, and on a caller while it runs tiles: a parallel_for from
// inside a tile runs inline.
thread_local bool tl_in_pool = false;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#endif
}

// Iterations of relax() that take about `ns`, from one measurement per process (a pause is 10
// cycles on some x86 cores and 140 on others), so the spin loops need no clock.
uint64_t spin_iterations(int64_t ns) {
  static const double ns_per_iter = [] {
    constexpr int kProbe = 2048;
    double best = 1e9;
    for (int round = 0; round < 3; ++round) {  // the fastest: a round the OS interrupted is slow
      const int64_t t0 = now_ns();
      for (int i = 0; i < kProbe; ++i) relax();
      best = std::min(best, static_cast<double>(now_ns() - t0) / kProbe);
    }
    return std::max(best, 0.5);
  }();
  return static_cast<uint64_t>(static_cast<double>(ns) / ns_per_iter) + 1;
}

// How long a wait spins before it sleeps. Between the ops of a forward the gap is a few µs, so
// a worker that spins this long catches the next op without a wake-up (tens of µs on a VM);
// after it, the core goes back to the OS. With spin (dedicated cores) the waits spin 5 ms.
constexpr int64_t kWorkerSpinNs = 50'000, kJoinSpinNs = 20'000, kDedicatedSpinNs = 5'000'000;

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "futex words are std::atomic<uint32_t>");

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}

// The kernel's scheduler statistics of one thread: time on a CPU and time runnable but waiting
// for one (run_delay), both in ns. Needs CONFIG_SCHED_INFO (set by Debian, Android and most
// distributions); without it the pool does not adapt.
struct SchedTimes {
  int64_t cpu = 0, delay = 0;
};

int open_schedstat() {
  int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {  // kernels before 3.17
    const std::string path =
        fmt::format("/proc/self/task/{}/schedstat", static_cast<long>(syscall(SYS_gettid)));
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  return fd;
}

bool add_schedstat(int fd, SchedTimes* t) {
  if (fd < 0) return false;
  char buf[128];
  const ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
  if (got <= 0) return false;
  buf[got] = '\0';
  char* end = nullptr;
  const long long cpu = std::strtoll(buf, &end, 10);
  char* end2 = nullptr;
  const long long delay = std::strtoll(end, &end2, 10);
  if (end == buf || end2 == end) return false;
  t->cpu += cpu, t->delay += delay;
  return true;
}

// The schedstat file of the thread calling parallel_for (the pool's caller), opened once per
// thread.
struct CallerSchedstat {
  int fd = -2;  // -2: not opened yet
  ~CallerSchedstat() {
    if (fd >= 0) close(fd);
  }
  int get() {
    if (fd == -2) fd = open_schedstat();
    return fd;
  }
};
thread_local CallerSchedstat tl_caller_schedstat;

// The adaptive width is evaluated at most this often, over windows holding at least
// kMinRunnableNs of the threads' runnable time (time on a CPU plus time waiting for one).
constexpr int64_t kWindowNs = 20'000'000, kMinRunnableNs = 5'000'000;

bool parse_switch(const char* name, const char* env, bool otherwise) {
  if (!env || !*env) return otherwise;
  const std::string v = env;
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  fail("{}: '{}' is not a switch (expected 1, true, yes, on, 0, false, no or off)", name, v);
}

}  // namespace

int usable_cpus() {
  // The affinity mask, not the machine: taskset, cpusets and Android's big-core pinning leave the
  // process fewer CPUs than hardware_concurrency() counts.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int usable_threads(int requested) { return std::min(requested, usable_cpus()); }

namespace {

// BERTRT_NUM_THREADS's value, or 0 when unset.
int env_num_threads() {
  const char* env = std::getenv("BERTRT_NUM_THREADS");
  if (!env || !*env) return 0;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v < 1 || v > 1024)
    fail("BERTRT_NUM_THREADS: '{}' is not a thread count (expected an integer in [1, 1024])", env);
  return static_cast<int>(v);
}

}  // namespace

int default_num_threads() {
  const int over = g_threads_override.load(std::memory_order_relaxed);
  if (over > 0) return usable_threads(over);
  if (const int env = env_num_threads(); env > 0) return usable_threads(env);
  return usable_cpus();
}

bool num_threads_fixed() {
  return g_threads_override.load(std::memory_order_relaxed) > 0 || env_num_threads() > 0;
}

bool spin_waits() {
  const int over = g_spin_override.load(std::memory_order_relaxed);
  if (over >= 0) return over != 0;
  return parse_switch("BERTRT_SPIN", std::getenv("BERTRT_SPIN"), false);
}

void set_thread_overrides(int threads, bool spin) {
  g_threads_override.store(threads > 0 ? threads : 0, std::memory_order_relaxed);
  g_spin_override.store(spin ? 1 : -1, std::memory_order_relaxed);
}

// --- the pool ------------------------------------------------------------------------------------

namespace {

struct alignas(64) Worker {
  std::atomic<uint32_t> wake{0};      // futex word: the number of the last region signalled
  std::atomic<uint32_t> sleeping{0};  // 1 while it sleeps (or is about to) on `wake`
  std::atomic<int> stat_fd{-1};       // its schedstat file, opened by the thread itself
  std::atomic<uint64_t> tiles{0};     // tiles it ran
  std::thread thread;
};

}  // namespace

struct ThreadPool::Impl {
  int threads = 1;
  uint64_t worker_spin = 0, join_spin = 0;  // iterations of relax()
  std::unique_ptr<Worker[]> workers;        // [1, threads); 0 is the caller
  std::atomic<bool> started{false};  // the workers exist (made at the first region)
  std::atomic<bool> stop{false};

  // The region being run: written by the caller before it publishes `work` (release); read by a
  // thread only after it claimed a tile, which the caller waits for before the next region.
  void (*fn)(void*, size_t, size_t) = nullptr;
  void* ctx = nullptr;
  size_t n = 0, tile = 0;
  uint32_t seq = 0;  // regions published (wraps; workers compare for change)
  // The tiles of the region (high half) and the next unclaimed one (low half), in one word so
  // that a claim is one compare-and-swap: whoever wins tile k of the region the word describes
  // may read the region's fields, whatever region it was woken for.
  alignas(64) std::atomic<uint64_t> work{0};
  alignas(64) std::atomic<uint32_t> done{0};  // futex word: tiles finished
  std::atomic<uint32_t> caller_waiting{0};
  std::mutex run_mutex;  // one region at a time; a second caller runs inline

  // Counters: those of regions under run_mutex, the rest atomic.
  Stats st;
  int64_t join_wait_ns = 0;
  std::atomic<uint64_t> inline_regions{0};

  // Adaptive width (under ctl_mutex).
  std::mutex ctl_mutex;
  std::atomic<int64_t> next_eval{0};
  bool have_base = false, sched_ok = true;
  const void* base_caller = nullptr;
  SchedTimes base;
  int64_t base_wall = 0;
  std::unique_ptr<WidthPolicy> policy;

  std::once_flag xnn_once;
  pthreadpool* xnn = nullptr;

  void start();
  void worker_main(int index);
  uint64_t run_tiles();
  void evaluate(int64_t now, std::atomic<int>& width, int cpus);
};

void ThreadPool::Impl::start() {
  workers = std::make_unique<Worker[]>(static_cast<size_t>(threads));
  for (int i = 1; i < threads; ++i) workers[i].thread = std::thread([this, i] { worker_main(i); });
  started.store(true, std::memory_order_release);
}

// Claims and runs tiles of the published region until none is left; returns how many it ran.
uint64_t ThreadPool::Impl::run_tiles() {
  uint64_t ran = 0;
  uint64_t s = work.load(std::memory_order_acquire);
  for (;;) {
    const auto next = static_cast<uint32_t>(s), count = static_cast<uint32_t>(s >> 32);
    if (next >= count) return ran;
    if (!work.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                    std::memory_order_acquire))
      continue;
    const size_t begin = static_cast<size_t>(next) * tile;
    fn(ctx, begin, std::min(tile, n - begin));
    ++ran;
    // The last tile wakes a caller that went to sleep (seq_cst: pairs with its flag and load).
    if (done.fetch_add(1, std::memory_order_seq_cst) + 1 == count &&
        caller_waiting.load(std::memory_order_seq_cst))
      futex_wake(&done, 1);
    s = work.load(std::memory_order_acquire);
  }
}

void ThreadPool::Impl::worker_main(int index) {
  tl_in_pool = true;
  Worker& w = workers[index];
  w.stat_fd.store(open_schedstat(), std::memory_order_release);
  uint32_t seen = 0;
  for (;;) {
    uint32_t v = w.wake.load(std::memory_order_acquire);
    for (uint64_t k = worker_spin; v == seen && k != 0; --k) {
      relax();
      v = w.wake.load(std::memory_order_acquire);
    }
    if (v == seen) {
      // Sleep. The flag, then the re-check, both seq_cst: the caller stores `wake`, then reads
      // the flag, so one of the two sees the other's store and no wake-up is lost.
      w.sleeping.store(1, std::memory_order_seq_cst);
      while ((v = w.wake.load(std::memory_order_seq_cst)) == seen) futex_wait(&w.wake, seen);
      w.sleeping.store(0, std::memory_order_relaxed);
    }
    seen = v;
    if (stop.load(std::memory_order_acquire)) return;
    const uint64_t ran = run_tiles();
    if (ran) w.tiles.fetch_add(ran, std::memory_order_relaxed);
  }
}

// Narrows the width while the threads wait for CPUs, probes wider when they do not (see the
// constants above). Runs on a caller between regions, at most once per kWindowNs.
void ThreadPool::Impl::evaluate(int64_t now, std::atomic<int>& width, int cpus) {
  std::unique_lock<std::mutex> lock(ctl_mutex, std::try_to_lock);
  if (!lock.owns_lock() || !sched_ok || now < next_eval.load(std::memory_order_relaxed)) return;
  next_eval.store(now + kWindowNs, std::memory_order_relaxed);
  SchedTimes t;
  if (!add_schedstat(tl_caller_schedstat.get(), &t)) {
    sched_ok = false;  // no scheduler statistics here: stay at the full width
    policy->reset();
    width.store(threads, std::memory_order_relaxed);
    return;
  }
  if (started.load(std::memory_order_acquire))
    for (int i = 1; i < threads; ++i)
      add_schedstat(workers[i].stat_fd.load(std::memory_order_acquire), &t);
  const void* caller = &tl_caller_schedstat;
  if (!have_base || caller != base_caller) {  // a different thread calls: start over
    have_base = true, base_caller = caller, base = t, base_wall = now;
    return;
  }
  const auto runnable = static_cast<double>((t.cpu - base.cpu) + (t.delay - base.delay));
  if (runnable < kMinRunnableNs) return;  // too little to judge: the window grows
  const double waited = static_cast<double>(t.delay - base.delay) / runnable;
  const double ours = runnable / static_cast<double>(std::max<int64_t>(now - base_wall, 1));
  base = t, base_wall = now;
  width.store(policy->update(now, waited, ours, cpus), std::memory_order_relaxed);
}

int WidthPolicy::update(int64_t now, double waited, double runnable, int cpus) {
  if (probing_) {
    probing_ = false;
    if (waited > kContended) {
      width_ = probe_from_;
      ++failed_probes_;
      probe_pause_ = std::min(2 * probe_pause_, kMaxProbeNs);
    } else {
      ++widened_;
      probe_pause_ = kFirstProbeNs;
    }
    next_probe_ = now + probe_pause_;
    return width_;
  }
  if (waited > kContended && width_ > 1) {
    // Programs besides ours that wanted a CPU: all runnable threads share the cores, so
    // cpus / (ours + others) = 1 - waited; the width that leaves them their cores.
    const double others = cpus / std::max(1.0 - waited, 0.01) - runnable;
    const int fit = static_cast<int>(std::floor(cpus - others + 0.5));
    width_ = std::clamp(fit, 1, width_ - 1);
    min_width_ = std::min(min_width_, width_);
    ++narrowed_;
    next_probe_ = now + probe_pause_;
    return width_;
  }
  if (waited < kFree && width_ < threads_ && now >= next_probe_) {
    probing_ = true, probe_from_ = width_;
    ++width_;
  }
  return width_;
}

ThreadPool::ThreadPool(int threads)
    : ThreadPool(threads > 0 ? threads : default_num_threads(),
                 threads <= 0 && !num_threads_fixed(), spin_waits()) {}

ThreadPool::ThreadPool(int threads, bool adaptive, bool spin)
    : threads_(std::max(threads, 1)),
      adaptive_(adaptive && threads > 1),
      spin_(spin),
      impl_(std::make_unique<Impl>()) {
  width_.store(threads_, std::memory_order_relaxed);
  impl_->threads = threads_;
  impl_->worker_spin = spin_iterations(spin ? kDedicatedSpinNs : kWorkerSpinNs);
  impl_->join_spin = spin_iterations(spin ? kDedicatedSpinNs : kJoinSpinNs);
  impl_->st.min_width = threads_;
  impl_->policy = std::make_unique<WidthPolicy>(threads_);
}

ThreadPool::~ThreadPool() {
  Impl& p = *impl_;
  if (p.started) {
    p.stop.store(true, std::memory_order_release);
    ++p.seq;
    for (int i = 1; i < threads_; ++i) {
      p.workers[i].wake.store(p.seq, std::memory_order_seq_cst);
      futex_wake(&p.workers[i].wake, 1);
    }
    for (int i = 1; i < threads_; ++i) {
      p.workers[i].thread.join();
      const int fd = p.workers[i].stat_fd.load();
      if (fd >= 0) close(fd);
    }
  }
  if (p.xnn) pthreadpool_destroy(p.xnn);
}

pthreadpool* ThreadPool::xnnpack_pool() {
  if (threads_ <= 1 || active_threads() < threads_) return nullptr;
  std::call_once(impl_->xnn_once, [&] {
    impl_->xnn = pthreadpool_create(static_cast<size_t>(threads_));
    if (!impl_->xnn) fail("cpu backend: could not create a pool of {} threads for XNNPACK", threads_);
  });
  return impl_->xnn;
}

int ThreadPool::begin_region() {
  if (adaptive_ && !tl_in_pool) {
    const int64_t now = now_ns();
    if (now >= impl_->next_eval.load(std::memory_order_relaxed))
      impl_->evaluate(now, width_, std::min(threads_, usable_cpus()));
  }
  return width_.load(std::memory_order_relaxed);
}

void ThreadPool::set_active_threads(int width) {
  width_.store(std::clamp(width, 1, threads_), std::memory_order_relaxed);
}

void ThreadPool::note_inline() { impl_->inline_regions.fetch_add(1, std::memory_order_relaxed); }

void ThreadPool::run(int width, size_t n, size_t tile, void (*fn)(void*, size_t, size_t),
                     void* ctx) {
  Impl& p = *impl_;
  std::unique_lock<std::mutex> lock(p.run_mutex, std::defer_lock);
  if (tl_in_pool || !lock.try_lock()) {
    note_inline();
    fn(ctx, 0, n);
    return;
  }
  if (!p.started.load(std::memory_order_relaxed)) p.start();
  width = std::min(width, threads_);
  const auto count = static_cast<uint32_t>((n + tile - 1) / tile);
  p.fn = fn, p.ctx = ctx, p.n = n, p.tile = tile;
  p.done.store(0, std::memory_order_relaxed);
  p.work.store(static_cast<uint64_t>(count) << 32, std::memory_order_release);
  ++p.seq;
  for (int i = 1; i < width; ++i) {
    Worker& w = p.workers[i];
    w.wake.store(p.seq, std::memory_order_seq_cst);
    if (w.sleeping.load(std::memory_order_seq_cst)) {
      futex_wake(&w.wake, 1);
      ++p.st.wakes;
    }
  }
  tl_in_pool = true;
  p.run_tiles();
  tl_in_pool = false;
  if (p.done.load(std::memory_order_acquire) != count) {
    // A straggler holds a tile: spin briefly, then sleep until its last tile wakes us, so a
    // descheduled worker gets the core back sooner.
    const int64_t t0 = now_ns();
    uint32_t d = p.done.load(std::memory_order_acquire);
    for (uint64_t k = p.join_spin; d != count && k != 0; --k) {
      relax();
      d = p.done.load(std::memory_order_acquire);
    }
    if (d != count) {
      p.caller_waiting.store(1, std::memory_order_seq_cst);
      while ((d = p.done.load(std::memory_order_seq_cst)) != count) futex_wait(&p.done, d);
      p.caller_waiting.store(0, std::memory_order_relaxed);
      ++p.st.join_sleeps;
    }
    p.join_wait_ns += now_ns() - t0;
  }
  ++p.st.regions;
  p.st.tiles += count;
  p.st.min_width = std::min(p.st.min_width, width);
}

ThreadPool::Stats ThreadPool::stats() const {
  Impl& p = *impl_;
  std::lock_guard<std::mutex> lock(p.run_mutex);
  Stats s = p.st;
  s.inline_regions = p.inline_regions.load(std::memory_order_relaxed);
  s.join_wait_ms = static_cast<double>(p.join_wait_ns) / 1e6;
  if (p.started)
    for (int i = 1; i < threads_; ++i)
      s.worker_tiles += p.workers[i].tiles.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> ctl(p.ctl_mutex);
  s.narrowed = p.policy->narrowed(), s.widened = p.policy->widened();
  s.failed_probes = p.policy->failed_probes();
  s.min_width = std::min({s.min_width, p.policy->min_width(), active_threads()});
  return s;
}

std::string ThreadPool::summary() const {
  const Stats s = stats();
  std::string mode = adaptive_ ? fmt::format("adaptive, now {}, narrowest {}; narrowed {}x, "
                                             "widened {}x, {} probes given up",
                                             active_threads(), s.min_width, s.narrowed,
                                             s.widened, s.failed_probes)
                               : std::string("fixed");
  if (spin_) mode += "; spinning waits";
  return fmt::format(
      "{} thread{} ({}): {} parallel regions ({} tiles, {} on workers), {} inline; {} worker "
      "wake-ups, {} joins slept, {:.1f} ms waiting for stragglers",
      threads_, threads_ == 1 ? "" : "s", mode, s.regions, s.tiles, s.worker_tiles,
      s.inline_regions, s.wakes, s.join_sleeps, s.join_wait_ms);
}

}  // namespace bertrt::cpu
