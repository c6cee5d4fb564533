// SIGINT and SIGTERM in the commands: by default they end remat at once, after removing the
// temporary files of the writes in progress; a loop with boundaries of its own (train's steps)
// defers them, and stops at its next boundary.
#ifndef REMAT_CLI_INTERRUPTS_H_
#define REMAT_CLI_INTERRUPTS_H_

#include <string>

namespace remat {
namespace cli {

/// Installs handlers for SIGINT and SIGTERM (sigaction with SA_RESTART, so that no system call
/// of the runtime's libraries fails with EINTR) that remove the temporary files of the atomic
/// writers open then (io::remove_open_temporaries()), print "remat |command|: interrupted by
/// SIGINT" (or SIGTERM) on stderr and end the process with exit code 130 (143). Until
/// defer_interrupts() is called.
void install_interrupt_handlers(const std::string& command);

/// From now on, a SIGINT or SIGTERM only records itself for pending_interrupt(); the process
/// goes on, and ending it is the caller's business (a write in progress is finished).
void defer_interrupts();

/// The signal (SIGINT or SIGTERM) received since defer_interrupts(), the latest of several; 0
/// while none.
int pending_interrupt();

/// "SIGINT" for SIGINT, "SIGTERM" for |signal_number| SIGTERM (the only other one recorded).
const char* signal_name(int signal_number);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_INTERRUPTS_H_
