// SIGINT / SIGTERM during a training run: the handler only records the signal; the training loop
// checks it between optimizer steps, writes a resumable checkpoint and throws Interrupted, which
// main() turns into the exit status shells expect (128 + signal: 130 for SIGINT, 143 for SIGTERM).
#pragma once

#include <stdexcept>
#include <string>

namespace bertrt::cli {

// Thrown once the checkpoint is safely written; what() is the message for the user.
struct Interrupted : std::runtime_error {
  Interrupted(int signal, const std::string& message)
      : std::runtime_error(message), signal(signal) {}
  int signal;
  int exit_code() const { return 128 + signal; }
};

// Installs the handlers for SIGINT and SIGTERM (SA_RESETHAND: a second signal takes the default
// action, so a run stuck in a long step can still be stopped).
void catch_stop_signals();
// The signal received since catch_stop_signals(), or 0.
int stop_signal();
// "SIGINT", "SIGTERM", ...
const char* signal_name(int signal);

}  // namespace bertrt::cli
