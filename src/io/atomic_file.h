// Writes files so that a crash, a kill or a full disk never leaves a target half-written.
//
// The bytes go to a temporary file in the target's directory (".NAME.tmp.PID.RANDOM", created
// with O_CREAT|O_EXCL, mode 0644 minus the umask); commit() flushes and fsyncs it, renames it
// over the target and fsyncs the directory. Until the rename the target keeps its old
// contents (or stays absent); after it, the target holds every new byte. A writer that fails
// or is destroyed before commit() removes its temporary file. A process killed outright
// (SIGKILL, power loss) may leave the temporary file behind, never a damaged target; a
// signal handler can remove the temporary files of the writers still open with
// remove_open_temporaries(), and a later writer's program those of dead writers with
// remove_stale_temporaries().
//
// Errors are returned, not thrown, so that code outside the commands (the safetensors writer)
// can use it; each message names the path and the errno text. write_file() and
// require_writable() are the commands' throwing forms.
#ifndef REMAT_IO_ATOMIC_FILE_H_
#define REMAT_IO_ATOMIC_FILE_H_

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace remat {
namespace io {

/// Streams one file to a target path and replaces the target at commit(). Not copyable; one
/// writer writes one file. Use: open(), any number of write(), then commit(); the first
/// failure is kept, later calls fail without doing anything, and commit() returns it.
class AtomicFileWriter {
 public:
  AtomicFileWriter() = default;
  /// Abandons the file when commit() has not succeeded: the temporary file is removed and
  /// the target is left as it was.
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  /// Checks |path| as check_writable() does and creates the temporary file beside it. Returns
  /// false (error() says why) when it cannot; nothing is created then.
  bool open(const std::string& path);
  /// Appends the |bytes| bytes at |data|; the caller keeps |data|. Returns false once any
  /// call has failed. Small writes are buffered; nothing reaches the target before commit().
  bool write(const void* data, size_t bytes);
  /// Flushes, fsyncs, renames the temporary file over the target and fsyncs the directory.
  /// Returns false (error() says why) when any step, or an earlier write(), failed; the
  /// temporary file is removed then and the target keeps its old contents.
  bool commit();
  /// Removes the temporary file without touching the target; a no-op after commit().
  void abandon();

  /// The first failure's message ("PATH: what: errno text"), empty while none.
  const std::string& error() const { return error_; }
  /// The temporary file's path while one is open (empty otherwise).
  const std::string& temp_path() const { return temp_path_; }

 private:
  bool set_failure(const std::string& what, int errno_value);
  bool flush_buffer();
  bool write_all(const uint8_t* data, size_t bytes);

  std::string path_;
  std::string temp_path_;
  std::string error_;
  std::vector<uint8_t> buffer_;
  int fd_ = -1;
  int tracked_slot_ = -1;  // where remove_open_temporaries() finds temp_path_, -1 if nowhere
  bool committed_ = false;
};

/// Checks, before long work, that a file could be written at |path|: its directory exists,
/// is a directory and is writable, and |path|, if it exists, is a writable regular file or a
/// symbolic link to one (the commit replaces the link itself; a dangling link counts as
/// absent). Returns false and sets |error| to a message naming |path| otherwise. Creates
/// nothing.
bool check_writable(const std::string& path, std::string* error);

/// Writes the |bytes| bytes at |data| to |path| atomically (one open, write, commit). Returns
/// false and sets |error| as AtomicFileWriter does.
bool write_file_atomically(const std::string& path, const void* data, size_t bytes,
                           std::string* error);

/// Removes the temporary file of every AtomicFileWriter open now (at most 8 at once are
/// tracked; the rest are not removed), leaving the writers' targets as they were. Only
/// async-signal-safe calls (unlink): for a signal handler that ends the process next.
void remove_open_temporaries();

/// Removes the temporary files of |path|'s target that writers no longer running left behind:
/// names ".NAME.tmp.PID.RANDOM" beside |path| whose PID is no process here (kill(PID, 0)
/// fails with ESRCH) and whose last change is older than |older_than|. Those of live processes,
/// newer ones and other names are left alone. Returns the paths removed; a directory that
/// cannot be read gives none.
std::vector<std::string> remove_stale_temporaries(const std::string& path, time_t older_than);

// For the commands, which report failures by exception (io/errors.h): exit code 1.

/// Writes |bytes| to |path| with write_file_atomically(); throws Failure naming |path| when
/// it cannot.
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

/// Throws Failure naming |path| unless check_writable() accepts it: for commands to call
/// before long work whose result goes to |path|.
void require_writable(const std::string& path);

}  // namespace io
}  // namespace remat

#endif  // REMAT_IO_ATOMIC_FILE_H_
