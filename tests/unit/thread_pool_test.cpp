// The cpu backend's thread pool (backends/cpu/thread_pool.h): every index of a region runs exactly
// once whatever the width; tiles go to whichever thread is free, so a thread stuck in one tile
// holds up nothing else; waits sleep (a caller waiting for a straggler, workers between regions)
// unless spinning was asked for; the adaptive width's rule; and the width narrowing while other
// threads keep every core busy. Results of the backend's ops across widths: cpu_threads_test.cpp.
#include <gtest/gtest.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/thread_pool.h"

namespace bertrt::cpu {
namespace {

using Clock = std::chrono::steady_clock;

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void nap_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Waits (sleeping) until pred() or `seconds` pass; returns pred().
template <class P>
bool eventually(P pred, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (!pred() && Clock::now() < end) nap_ms(1);
  return pred();
}

TEST(ThreadPool, EveryIndexOnceForAnyWidthSizeAndGrain) {
  for (int threads : {1, 2, 3, 5}) {
    for (bool spin : {false, true}) {
      ThreadPool pool(threads, false, spin);
      for (size_t n : {size_t{1}, size_t{2}, size_t{7}, size_t{64}, size_t{1000}, size_t{100003}}) {
        for (size_t grain : {size_t{1}, size_t{3}, size_t{256}}) {
          std::vector<std::atomic<int>> hits(n);
          pool.parallel_for(n, grain, [&](size_t b, size_t e) {
            ASSERT_LT(b, e);
            for (size_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
          });
          for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(hits[i].load(), 1) << threads << " threads, n " << n << ", grain " << grain
                                         << ": index " << i;
        }
      }
    }
  }
}

// A region started from inside a tile (or from a second thread while one runs) runs inline on
// its caller instead of waiting for the pool.
TEST(ThreadPool, NestedAndConcurrentRegionsRunInline) {
  ThreadPool pool(2, false, false);
  std::vector<std::atomic<int>> hits(64 * 64);
  pool.parallel_for(64, 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i)
      pool.parallel_for(64, 1, [&](size_t c, size_t d) {
        for (size_t j = c; j < d; ++j) hits[i * 64 + j].fetch_add(1);
      });
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int r = 0; r < 200; ++r)
        pool.parallel_for(1000, 1, [&](size_t b, size_t e) { total += static_cast<int>(e - b); });
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), 4 * 200 * 1000);
}

// Tiles are claimed, not assigned: while one thread is stuck in a tile (as a thread the OS has
// descheduled is), the others run every other tile. The stuck tile waits for all the others to
// finish, which a fixed share per thread would never let happen (the timeout ends that case).
TEST(ThreadPool, AFreeThreadTakesTheTilesOfAStuckOne) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads, false, false);
    constexpr size_t kTiles = 32;  // grain 1, n ≤ 4 per thread: one index a tile
    const size_t n = std::min<size_t>(kTiles, 4 * threads);
    std::atomic<size_t> finished{0};
    std::atomic<bool> stuck_first{true}, timed_out{false};
    pool.parallel_for(n, 1, [&](size_t b, size_t e) {
      if (stuck_first.exchange(false)) {  // the first tile claimed
        if (!eventually([&] { return finished.load() == n - 1; }, 20.0)) timed_out = true;
      } else {
        ++finished;
      }
      (void)b, (void)e;
    });
    EXPECT_FALSE(timed_out) << threads << " threads: the other tiles waited for the stuck one";
    EXPECT_EQ(finished.load(), n - 1);
  }
}

// The caller, out of tiles while a worker still runs one, sleeps instead of spinning: it used
// little CPU time over a region that lasted 100 ms.
TEST(ThreadPool, ACallerWaitingForAStragglerSleeps) {
  ThreadPool pool(2, false, false);
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> worker_started{false};
  const double cpu0 = thread_cpu_ms();
  const auto t0 = Clock::now();
  pool.parallel_for(2, 1, [&](size_t, size_t) {
    if (std::this_thread::get_id() == caller) {
      eventually([&] { return worker_started.load(); }, 20.0);  // let the worker take a tile
    } else {
      worker_started = true;
      nap_ms(100);
    }
  });
  const double wall = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const double cpu = thread_cpu_ms() - cpu0;
  ASSERT_TRUE(worker_started.load());
  EXPECT_GE(wall, 100.0);
  EXPECT_LT(cpu, 30.0) << "the caller spun while it waited " << wall << " ms";
  EXPECT_EQ(pool.stats().join_sleeps, 1u);
}

// The CPU clocks of the pool's threads, from a region whose tiles wait until each thread holds
// one (so each runs exactly one).
std::vector<clockid_t> thread_clocks(ThreadPool& pool) {
  const int n = pool.threads();
  std::vector<clockid_t> clocks(static_cast<size_t>(n));
  std::atomic<int> entered{0};
  pool.parallel_for(static_cast<size_t>(n), 1, [&](size_t b, size_t) {
    pthread_getcpuclockid(pthread_self(), &clocks[b]);
    ++entered;
    eventually([&] { return entered.load() == n; }, 20.0);
  });
  return clocks;
}

double clocks_ms(const std::vector<clockid_t>& clocks) {
  double ms = 0;
  for (clockid_t c : clocks) {
    timespec ts{};
    clock_gettime(c, &ts);
    ms += ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  }
  return ms;
}

// Between regions the workers sleep after a short spin (50 µs): over 300 ms without work they
// use next to no CPU time. (With spin they spin for 5 ms first.)
TEST(ThreadPool, IdleWorkersSleep) {
  ThreadPool pool(3, false, false);
  const std::vector<clockid_t> clocks = thread_clocks(pool);
  const double cpu0 = clocks_ms(clocks);
  nap_ms(300);
  EXPECT_LT(clocks_ms(clocks) - cpu0, 5.0) << "the idle threads spun";
  ThreadPool spinning(2, false, true);
  EXPECT_TRUE(spinning.spin());
  std::atomic<int> sum{0};
  spinning.parallel_for(100, 1, [&](size_t b, size_t e) { sum += static_cast<int>(e - b); });
  EXPECT_EQ(sum.load(), 100);
}

// The rule, fed numbers: 2 threads on 2 cores.
TEST(WidthPolicy, NarrowsUnderContentionAndProbesBackWithGrowingPauses) {
  WidthPolicy p(2);
  int64_t now = 0;
  const auto ms = [](int64_t v) { return v * 1'000'000; };
  // Idle: stays at 2.
  EXPECT_EQ(p.update(now += ms(20), 0.02, 1.9, 2), 2);
  // Two busy programs beside 2 runnable threads: each of 4 gets half a core, half the time
  // waiting; 2 others leave no core, so 1 thread.
  EXPECT_EQ(p.update(now += ms(20), 0.5, 2.0, 2), 1);
  EXPECT_EQ(p.narrowed(), 1u);
  EXPECT_EQ(p.min_width(), 1);
  // Still contended at 1 (a third of its time waiting): no probe.
  EXPECT_EQ(p.update(now += ms(200), 0.33, 1.0, 2), 1);
  // The cores look free: probe 2 once the first pause (100 ms from narrowing) has passed.
  EXPECT_EQ(p.update(now += ms(20), 0.0, 1.0, 2), 2);
  // The probe finds them busy: back to 1, and the next probe waits twice as long.
  EXPECT_EQ(p.update(now += ms(20), 0.4, 2.0, 2), 1);
  EXPECT_EQ(p.failed_probes(), 1u);
  EXPECT_EQ(p.update(now += ms(150), 0.0, 1.0, 2), 1);  // 150 < 200 ms: no probe yet
  EXPECT_EQ(p.update(now += ms(60), 0.0, 1.0, 2), 2);   // 210 ms: probe
  EXPECT_EQ(p.update(now += ms(20), 0.01, 2.0, 2), 2);  // free: the width stays
  EXPECT_EQ(p.widened(), 1u);
  // In between (5 % to 15 % waiting) nothing changes.
  EXPECT_EQ(p.update(now += ms(20), 0.1, 2.0, 2), 2);
}

TEST(WidthPolicy, NarrowsByTheCoresOthersTake) {
  WidthPolicy p(8);
  // 8 threads on 8 cores beside 2 busy programs: 10 share 8 cores, a fifth of the time waiting;
  // 6 threads leave the others their 2 cores.
  EXPECT_EQ(p.update(20'000'000, 0.2, 8.0, 8), 6);
  // The pauses between probes stop growing at kMaxProbeNs.
  WidthPolicy q(2);
  int64_t now = 0;
  q.update(now += 1, 0.5, 2.0, 2);
  for (int i = 0; i < 12; ++i) {
    now += WidthPolicy::kMaxProbeNs;
    ASSERT_EQ(q.update(now, 0.0, 1.0, 2), 2);  // probe
    ASSERT_EQ(q.update(now += 1, 0.5, 2.0, 2), 1);
  }
  EXPECT_EQ(q.failed_probes(), 12u);
}

// The measured rule: as many busy threads as cores beside an adaptive pool make it narrow. (Its
// return to the full width needs cores that stay free, which a shared test machine does not
// promise: the rule's test above covers it.)
TEST(ThreadPool, AdaptiveWidthNarrowsWhileOtherThreadsKeepTheCoresBusy) {
  const int cpus = usable_cpus();
  if (cpus < 2) GTEST_SKIP() << "one usable CPU: the pool has one thread";
  ThreadPool pool(cpus, true, false);
  ASSERT_TRUE(pool.adaptive());
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (int i = 0; i < cpus; ++i)
    hogs.emplace_back([&] {
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  std::vector<float> data(1 << 16, 1.0f);
  const auto end = Clock::now() + std::chrono::seconds(20);
  while (pool.active_threads() == cpus && Clock::now() < end)
    pool.parallel_for(data.size(), 1024, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) data[i] = data[i] * 1.0001f + 0.5f;
    });
  stop = true;
  for (auto& h : hogs) h.join();
  EXPECT_LT(pool.active_threads(), cpus) << pool.summary();
  EXPECT_GE(pool.stats().narrowed, 1u);
}

TEST(ThreadPool, FixedCountsNeverAdapt) {
  ThreadPool fixed(2, false, false);
  EXPECT_FALSE(fixed.adaptive());
  EXPECT_EQ(fixed.active_threads(), 2);
  ThreadPool one(1, true, false);  // nothing to adapt with one thread
  EXPECT_FALSE(one.adaptive());
}

// Sets an environment variable for a scope, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// The knobs: BERTRT_NUM_THREADS (or --threads, through set_thread_overrides) fixes the count and
// turns the adaptive width off; unset, a pool of several threads adapts. BERTRT_SPIN (or --spin)
// makes the waits spin; a value that is not a switch is an error naming the variable.
TEST(ThreadPool, KnobsFixTheCountAndChooseSpinning) {
  ScopedEnv threads_env("BERTRT_NUM_THREADS", nullptr), spin_env("BERTRT_SPIN", nullptr);
  set_thread_overrides(0, false);
  EXPECT_FALSE(num_threads_fixed());
  EXPECT_FALSE(spin_waits());
  if (usable_cpus() > 1) {
    ThreadPool def;
    EXPECT_TRUE(def.adaptive());
    EXPECT_EQ(def.threads(), usable_cpus());
  }
  {
    ScopedEnv t("BERTRT_NUM_THREADS", "1");
    EXPECT_TRUE(num_threads_fixed());
    ThreadPool p;
    EXPECT_FALSE(p.adaptive());
    EXPECT_EQ(p.threads(), 1);
  }
  for (const char* on : {"1", "true", "yes", "on"}) {
    ScopedEnv s("BERTRT_SPIN", on);
    EXPECT_TRUE(spin_waits()) << on;
    EXPECT_TRUE(ThreadPool(2, false, spin_waits()).spin());
  }
  for (const char* off : {"0", "false", "no", "off", ""}) {
    ScopedEnv s("BERTRT_SPIN", off);
    EXPECT_FALSE(spin_waits()) << off;
  }
  {
    ScopedEnv s("BERTRT_SPIN", "maybe");
    try {
      spin_waits();
      ADD_FAILURE() << "BERTRT_SPIN=maybe was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("BERTRT_SPIN: 'maybe' is not a switch"),
                std::string::npos)
          << e.what();
    }
  }
  // The CLI's flags win over the environment.
  {
    ScopedEnv t("BERTRT_NUM_THREADS", "2"), s("BERTRT_SPIN", "0");
    set_thread_overrides(1, true);
    EXPECT_TRUE(num_threads_fixed());
    EXPECT_EQ(default_num_threads(), 1);
    EXPECT_TRUE(spin_waits());
    ThreadPool p;
    EXPECT_EQ(p.threads(), 1);
    EXPECT_TRUE(p.spin());
    set_thread_overrides(0, false);
    EXPECT_EQ(default_num_threads(), std::min(2, usable_cpus()));
    EXPECT_FALSE(spin_waits());
  }
}

}  // namespace
}  // namespace bertrt::cpu
