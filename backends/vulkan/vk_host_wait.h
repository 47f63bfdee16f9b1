// The Vulkan backend's host-side wait for a submission: the CPU thread must sleep while the device
// works, so that the cores stay free for the app and the rest of the system.
//
// vkWaitForFences sleeps in Mesa's drivers (radv, anv, turnip, panvk: a kernel wait on the
// device's fence; lavapipe: a condition variable), but a driver may spin in it instead. So each
// wait that lasts a while is checked: a thread that slept made a voluntary context switch, one
// that spun (or looped on sched_yield) made none, however busy the machine. Once kSpinningWaits
// such waits in a row made none, the waiter stops calling the driver's blocking wait and polls
// the fence's status between sleeps that grow from 20 µs to 1 ms (at most that much latency added
// to a long wait; a short one costs a few µs more).
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstdint>

namespace bertrt::vk {

class HostWait {
 public:
  // Waits longer than this are checked for spinning.
  static constexpr int64_t kCheckNs = 2'000'000;
  static constexpr int kSpinningWaits = 3;

  // blocking(timeout_ns) is the driver's wait (vkWaitForFences) and status() its poll
  // (vkGetFenceStatus); both return a VkResult as an int: 0 done, `not_ready` (VK_NOT_READY) or
  // `timeout` (VK_TIMEOUT) not yet, anything else an error. Returns 0, `timeout` after
  // timeout_ns, or the error.
  template <class Blocking, class Status>
  int wait(Blocking&& blocking, Status&& status, uint64_t timeout_ns, int not_ready, int timeout) {
    ++waits_;
    if (polling_) return poll(status, timeout_ns, not_ready, timeout);
    const int64_t wall0 = clock_ns(CLOCK_MONOTONIC), slept0 = voluntary_switches();
    const int r = blocking(timeout_ns);
    if (clock_ns(CLOCK_MONOTONIC) - wall0 >= kCheckNs) {
      const int64_t slept = voluntary_switches() - slept0;
      if (slept < 0) {  // no count on this system: trust the driver
      } else if (slept == 0) {
        if (++spinning_ >= kSpinningWaits) polling_ = true;
      } else {
        spinning_ = 0;
      }
    }
    return r;
  }

  // True once the driver's wait was seen spinning (or force_polling): waits poll and sleep.
  bool polling() const { return polling_; }
  void force_polling() { polling_ = true; }
  int64_t waits() const { return waits_; }

 private:
  static int64_t clock_ns(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  // The calling thread's voluntary context switches (it blocked), or -1 where unknown.
  static int64_t voluntary_switches() {
#ifdef RUSAGE_THREAD
    rusage u{};
    if (getrusage(RUSAGE_THREAD, &u) == 0) return u.ru_nvcsw;
#endif
    return -1;
  }

  template <class Status>
  int poll(Status& status, uint64_t timeout_ns, int not_ready, int timeout) {
    const int64_t start = clock_ns(CLOCK_MONOTONIC);
    int64_t nap = 20'000;
    for (;;) {
      const int r = status();
      if (r != not_ready) return r;
      if (static_cast<uint64_t>(clock_ns(CLOCK_MONOTONIC) - start) >= timeout_ns) return timeout;
      const timespec ts{0, static_cast<long>(nap)};
      nanosleep(&ts, nullptr);
      nap = std::min<int64_t>(2 * nap, 1'000'000);
    }
  }

  bool polling_ = false;
  int spinning_ = 0;
  int64_t waits_ = 0;
};

}  // namespace bertrt::vk
