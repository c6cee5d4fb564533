// CMocka for C++ test files: Debian's cmocka 1.1.5 header has no extern "C" guard of its own,
// and a C++ exception that escapes a test would abort the whole binary (the compiler throws
// CompileError), hiding every later test. Here cmocka_unit_test wraps each test in
// remat_test::guarded: an uncaught exception fails that test with its message, and the binary
// goes on to the next. Every test file includes this header, never <cmocka.h> itself.
#ifndef REMAT_TESTS_CMOCKA_CPP_H_
#define REMAT_TESTS_CMOCKA_CPP_H_

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <exception>

extern "C" {
#include <cmocka.h>
}

namespace remat_test {

/// Runs |Test|; an exception it lets escape fails it (cmocka's fail_msg, after the handler has
/// ended, so the exception object is freed) with the exception's what(). Built without
/// exceptions (the runtime's own tests, -fno-exceptions), nothing can escape: it just runs it.
template <void (*Test)(void**)>
void guarded(void** state) {
#if defined(__cpp_exceptions)
  char message[1024];
  try {
    Test(state);
    return;
  } catch (const std::exception& e) {
    snprintf(message, sizeof(message), "uncaught exception: %s", e.what());
  } catch (...) {
    snprintf(message, sizeof(message), "uncaught exception of a type not from std::exception");
  }
  fail_msg("%s", message);
#else
  Test(state);
#endif
}

}  // namespace remat_test

#undef cmocka_unit_test
/// cmocka's test entry, the test guarded against escaping exceptions (remat_test::guarded).
#define cmocka_unit_test(f) \
  { #f, remat_test::guarded < f>, NULL, NULL, NULL }

#endif  // REMAT_TESTS_CMOCKA_CPP_H_
