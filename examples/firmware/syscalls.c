/* The operating-system calls newlib's C library names. remat's runtime calls vsnprintf (error
 * messages into its own buffers) and the math functions only, but newlib's stdio brings these
 * names along; none gives the program a heap or a file:
 * - _sbrk always fails, so any malloc would return NULL: the firmware has no heap.
 * - files and processes do not exist: every call fails with ENOSYS (abort ends the run). */
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#include "semihosting.h"

#undef errno
extern int errno;

void* _sbrk(ptrdiff_t increment) {
  (void)increment;
  errno = ENOMEM;
  return (void*)-1;
}

void _exit(int status) { semihosting_exit(status); }

int _kill(int pid, int signal) {
  (void)pid;
  (void)signal;
  errno = ENOSYS;
  return -1;
}

int _getpid(void) { return 1; }

int _write(int file, const char* data, int length) {
  (void)file;
  (void)data;
  (void)length;
  errno = ENOSYS;
  return -1;
}

int _read(int file, char* data, int length) {
  (void)file;
  (void)data;
  (void)length;
  errno = ENOSYS;
  return -1;
}

int _lseek(int file, int offset, int whence) {
  (void)file;
  (void)offset;
  (void)whence;
  errno = ENOSYS;
  return -1;
}

int _close(int file) {
  (void)file;
  errno = ENOSYS;
  return -1;
}

int _fstat(int file, struct stat* info) {
  (void)file;
  (void)info;
  errno = ENOSYS;
  return -1;
}

int _isatty(int file) {
  (void)file;
  return 0;
}
