// REMAT_SANITIZED is 1 in a build under AddressSanitizer (gcc or clang), which owns the
// allocator: tests that replace malloc or posix_memalign leave them alone then.
#ifndef REMAT_TESTS_SANITIZED_H_
#define REMAT_TESTS_SANITIZED_H_

#if defined(__SANITIZE_ADDRESS__)
#define REMAT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REMAT_SANITIZED 1
#endif
#endif

#endif  // REMAT_TESTS_SANITIZED_H_
