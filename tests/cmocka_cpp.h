// CMocka for C++ test files: Debian's cmocka 1.1.5 header has no extern "C" guard of its own.
#ifndef REMAT_TESTS_CMOCKA_CPP_H_
#define REMAT_TESTS_CMOCKA_CPP_H_

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

#endif  // REMAT_TESTS_CMOCKA_CPP_H_
