// SIGINT and SIGTERM: a flag for a loop that defers them, or a clean exit.
#include "cli/interrupts.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "io/atomic_file.h"

namespace remat {
namespace cli {
namespace {

// Read and written by the handler, which may run on any thread: lock-free atomics only.
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler uses them");
std::atomic<int> deferring{0};
std::atomic<int> pending{0};

// The handler's messages, composed before it can run: it may not allocate.
char sigint_message[160];
char sigterm_message[160];

void write_message(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = write(STDERR_FILENO, text, left);
    if (n <= 0) return;  // stderr is gone or full: the exit code still says it
    text += n;
    left -= static_cast<size_t>(n);
  }
}

void on_interrupt(int signal_number) {
  if (deferring.load() != 0) {
    pending.store(signal_number);
    return;
  }
  io::remove_open_temporaries();
  write_message(signal_number == SIGINT ? sigint_message : sigterm_message);
  _exit(128 + signal_number);
}

}  // namespace

void install_interrupt_handlers(const std::string& command) {
  const std::string prefix = "remat " + command.substr(0, 100) + ": interrupted by ";
  std::snprintf(sigint_message, sizeof(sigint_message), "%sSIGINT\n", prefix.c_str());
  std::snprintf(sigterm_message, sizeof(sigterm_message), "%sSIGTERM\n", prefix.c_str());
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // Each handler blocks the other signal: one message, one exit code.
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

void defer_interrupts() { deferring.store(1); }

int pending_interrupt() { return pending.load(); }

const char* signal_name(int signal_number) {
  return signal_number == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace cli
}  // namespace remat
