// Atomic file replacement: temporary file beside the target, fsync, rename, directory fsync.
#include "io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/errors.h"

namespace remat {
namespace io {
namespace {

// Writes smaller than this are gathered; larger ones go straight to the file.
constexpr size_t kBufferBytes = 256 * 1024;
// Room left under NAME_MAX (255) for ".", ".tmp.", the pid and the random suffix.
constexpr size_t kMaxStemInTempName = 200;

// The directory part of |path| ("." for a bare name, "/" for a file in the root).
std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string errno_text(int errno_value) { return std::strerror(errno_value); }

// A name that another writer (this process or another) is unlikely to pick; O_EXCL settles
// the rare collision, and the caller tries again.
std::string random_suffix() {
  static std::atomic<uint64_t> counter{0};
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t x =
      static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
  x ^= (counter.fetch_add(1) + 1) * 0x9e3779b97f4a7c15ull;
  x ^= reinterpret_cast<uintptr_t>(&now);
  // splitmix64's finaliser: nearby inputs give unrelated outputs.
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(x));
  return text;
}

// The temporary files of the writers open now, for remove_open_temporaries(), which a signal
// handler may run at any moment on any thread: a slot is free (0), being filled (1) or holds a
// path (2), and only lock-free atomics and unlink() are used there.
constexpr int kTrackedTemporaries = 8;
struct TrackedTemporary {
  std::atomic<int> state{0};
  char path[PATH_MAX];
};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler reads the slots");
TrackedTemporary tracked_temporaries[kTrackedTemporaries];

// Records |path| for remove_open_temporaries(); returns its slot, or -1 when every slot is taken
// (or the path is too long), and then it is not removed on a signal.
int track_temporary(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kTrackedTemporaries; ++i) {
    int expected = 0;
    if (!tracked_temporaries[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(tracked_temporaries[i].path, path.c_str(), path.size() + 1);
    tracked_temporaries[i].state.store(2);
    return i;
  }
  return -1;
}

void untrack_temporary(int* slot) {
  if (*slot >= 0) tracked_temporaries[*slot].state.store(0);
  *slot = -1;
}

// The process id in |rest| when it reads "PID.RANDOM" as AtomicFileWriter::open() names its
// temporary files (RANDOM: 16 lowercase hex digits), 0 otherwise.
pid_t writer_pid(const std::string& rest) {
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string::npos || dot > 9 || rest.size() != dot + 17) return 0;
  long pid = 0;
  for (size_t i = 0; i < dot; ++i) {
    if (rest[i] < '0' || rest[i] > '9') return 0;
    pid = pid * 10 + (rest[i] - '0');
  }
  for (size_t i = dot + 1; i < rest.size(); ++i) {
    const char c = rest[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 0;
  }
  return static_cast<pid_t>(pid);
}

}  // namespace

void remove_open_temporaries() {
  for (TrackedTemporary& t : tracked_temporaries) {
    if (t.state.load() == 2) unlink(t.path);
  }
}

std::vector<std::string> remove_stale_temporaries(const std::string& path, time_t older_than) {
  std::vector<std::string> removed;
  const std::string dir = directory_of(path);
  const std::string prefix = "." + base_of(path).substr(0, kMaxStemInTempName) + ".tmp.";
  const std::string dir_prefix = path.substr(0, path.find_last_of('/') + 1);
  DIR* listing = opendir(dir.c_str());
  if (listing == nullptr) return removed;
  while (const dirent* entry = readdir(listing)) {
    const std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const pid_t pid = writer_pid(name.substr(prefix.size()));
    // EPERM: a process of another user has that id, and may still be writing.
    if (pid <= 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string stale = dir_prefix + name;
    struct stat st {};
    if (lstat(stale.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_mtime >= older_than)
      continue;
    if (unlink(stale.c_str()) == 0) removed.push_back(stale);
  }
  closedir(listing);
  return removed;
}

bool check_writable(const std::string& path, std::string* error) {
  const std::string base = base_of(path);
  if (path.empty() || base.empty() || base == "." || base == "..") {
    *error = "'" + path + "': not a file name";
    return false;
  }
  const std::string dir = directory_of(path);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    *error = path + ": cannot write in directory '" + dir + "': " + errno_text(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = path + ": '" + dir + "' is not a directory";
    return false;
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    *error = path + ": cannot write in directory '" + dir + "': " + errno_text(errno);
    return false;
  }
  // stat follows a symbolic link: a link to a directory is refused like the directory, a
  // dangling one is replaced like an absent file.
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    *error = path + ": " + errno_text(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    *error = path + ": is a directory";
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": exists and is not a regular file";
    return false;
  }
  // rename() could replace a read-only file, but a user who made it read-only meant to keep it.
  if (access(path.c_str(), W_OK) != 0) {
    *error = path + ": cannot replace: " + errno_text(errno);
    return false;
  }
  return true;
}

AtomicFileWriter::~AtomicFileWriter() { abandon(); }

bool AtomicFileWriter::set_failure(const std::string& what, int errno_value) {
  if (error_.empty()) {
    error_ = path_ + ": " + what + (errno_value != 0 ? ": " + errno_text(errno_value) : "");
  }
  abandon();
  return false;
}

void AtomicFileWriter::abandon() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) {
    unlink(temp_path_.c_str());
    temp_path_.clear();
  }
  untrack_temporary(&tracked_slot_);  // after the unlink: a signal in between finds it gone
  buffer_.clear();
  buffer_.shrink_to_fit();
}

bool AtomicFileWriter::open(const std::string& path) {
  if (!path_.empty()) {
    // Left as it is: the file this writer already streams is not this call's to abandon.
    if (error_.empty()) error_ = path + ": this writer was already used for " + path_;
    return false;
  }
  path_ = path;
  std::string message;
  if (!check_writable(path, &message)) {
    error_ = message;
    return false;
  }
  const std::string dir = directory_of(path);
  const std::string prefix = path.substr(0, path.find_last_of('/') + 1) + "." +
                             base_of(path).substr(0, kMaxStemInTempName) + ".tmp." +
                             std::to_string(getpid()) + ".";
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string candidate = prefix + random_suffix();
    // Tracked before it exists, so that no signal finds the file created and not yet tracked.
    tracked_slot_ = track_temporary(candidate);
    fd_ = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ >= 0) {
      temp_path_ = candidate;
      buffer_.reserve(kBufferBytes);
      return true;
    }
    const int open_errno = errno;
    untrack_temporary(&tracked_slot_);
    errno = open_errno;
    if (errno != EEXIST) {
      return set_failure("cannot create a temporary file in '" + dir + "'", errno);
    }
  }
  return set_failure("cannot create a temporary file in '" + dir + "': 100 names taken", 0);
}

bool AtomicFileWriter::write_all(const uint8_t* data, size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, data, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return set_failure("write failed", n < 0 ? errno : EIO);
    data += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool AtomicFileWriter::flush_buffer() {
  if (buffer_.empty()) return true;
  const bool ok = write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
  return ok;
}

bool AtomicFileWriter::write(const void* data, size_t bytes) {
  if (fd_ < 0) {
    return error_.empty() ? set_failure(committed_ ? "write after commit" : "write before open", 0)
                          : false;
  }
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (buffer_.size() + bytes > kBufferBytes && !flush_buffer()) return false;
  if (bytes >= kBufferBytes) return write_all(p, bytes);
  buffer_.insert(buffer_.end(), p, p + bytes);
  return true;
}

bool AtomicFileWriter::commit() {
  if (fd_ < 0) {
    return error_.empty() ? set_failure(committed_ ? "committed twice" : "commit before open", 0)
                          : false;
  }
  if (!flush_buffer()) return false;
  if (fsync(fd_) != 0) return set_failure("fsync failed", errno);
  const int fd = fd_;
  fd_ = -1;
  // close() reports some delayed write errors (NFS); a failure here is a failed write.
  if (close(fd) != 0) return set_failure("write failed on close", errno);
  if (rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return set_failure("cannot rename '" + temp_path_ + "' over it", errno);
  }
  temp_path_.clear();
  untrack_temporary(&tracked_slot_);
  committed_ = true;
  buffer_.clear();
  buffer_.shrink_to_fit();
  // Without this the rename itself may be lost in a crash, leaving the old file in place.
  const std::string dir = directory_of(path_);
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0)
    return set_failure("written, but cannot open directory '" + dir + "' to sync it", errno);
  const bool synced = fsync(dir_fd) == 0 || errno == EINVAL;  // EINVAL: no directory fsync here.
  const int sync_errno = errno;
  close(dir_fd);
  if (!synced)
    return set_failure("written, but syncing directory '" + dir + "' failed", sync_errno);
  return true;
}

bool write_file_atomically(const std::string& path, const void* data, size_t bytes,
                           std::string* error) {
  AtomicFileWriter writer;
  if (writer.open(path) && writer.write(data, bytes) && writer.commit()) return true;
  *error = writer.error();
  return false;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::string error;
  if (!write_file_atomically(path, bytes.data(), bytes.size(), &error)) throw Failure(error);
}

void require_writable(const std::string& path) {
  std::string error;
  if (!check_writable(path, &error)) throw Failure(error);
}

}  // namespace io
}  // namespace remat
