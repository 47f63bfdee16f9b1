#include "interrupt.h"

#include <csignal>
#include <cstring>

namespace bertrt::cli {

namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void record_signal(int sig) { g_signal = sig; }

}  // namespace

void catch_stop_signals() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = record_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: reads and writes in flight resume instead of failing with EINTR. SA_RESETHAND:
  // the second signal takes the default action.
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_signal; }

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
  }
  return "signal";
}

}  // namespace bertrt::cli
