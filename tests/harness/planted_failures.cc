// A test binary whose first tests fail on purpose, each in its own way, for
// check_keeps_going.py: an exception escaping a test (the compiler's CompileError is the common
// one) must fail that test alone, with its message, and the tests after it must still run.
#include <stdexcept>

#include "compiler/compiler.h"
#include "tests/cmocka_cpp.h"

namespace {

// The compiler refusing a model: its CompileError escapes the test.
void a_compile_error_escapes(void**) {
  remat::compiler::CompileOptions o;
  o.model = "no-such-template:layers=1";
  o.batch = 1;
  remat::compiler::compile(o);
}

// Something that is not a std::exception.
void an_int_escapes(void**) { throw 42; }

// A test after the throwing ones: it must run and pass.
void runs_after_them(void**) { printf("ran after the planted failures\n"); }

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_compile_error_escapes),
      cmocka_unit_test(an_int_escapes),
      cmocka_unit_test(runs_after_them),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
