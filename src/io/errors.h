// The two errors of the io library and the command line: a wrong request, and a failed job.
#ifndef REMAT_IO_ERRORS_H_
#define REMAT_IO_ERRORS_H_

#include <stdexcept>

namespace remat {
namespace io {

/// A wrong command line or argument (a size that does not parse): the CLI prints it with the
/// usage and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A failure of the work itself (a file that cannot be read or written): the CLI prints it and
/// exits 1.
class Failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace io
}  // namespace remat

#endif  // REMAT_IO_ERRORS_H_
