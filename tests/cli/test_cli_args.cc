// Command-line values: sizes with units.
#include "tests/cmocka_cpp.h"

#include <string>

#include "cli/cli_args.h"

namespace {

using remat::cli::parse_size;
using remat::cli::UsageError;

// The UsageError message for |text|, or "" when it parses.
std::string size_error(const std::string& text) {
  try {
    parse_size(text, "--budget");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

static void sizes_accept_binary_and_decimal_units_up_to_tera(void**) {
  assert_true(parse_size("4096", "x") == 4096);
  assert_true(parse_size("12B", "x") == 12);
  assert_true(parse_size("64KiB", "x") == 64ull << 10);
  assert_true(parse_size("1.5MiB", "x") == 3ull << 19);
  assert_true(parse_size("2GiB", "x") == 2ull << 30);
  assert_true(parse_size("1TiB", "x") == 1ull << 40);
  assert_true(parse_size("1.5TiB", "x") == 3ull << 39);
  assert_true(parse_size("2KB", "x") == 2000);
  assert_true(parse_size("3MB", "x") == 3000000);
  assert_true(parse_size("4GB", "x") == 4000000000ull);
  assert_true(parse_size("2TB", "x") == 2000000000000ull);
}

static void a_size_remat_prints_parses_back(void**) {
  // format_bytes reaches TiB, so what remat prints (less the space) is accepted.
  const uint64_t bytes = 5ull << 40;
  std::string printed = remat::cli::format_bytes(bytes);
  printed.erase(printed.find(' '), 1);
  assert_string_equal(printed.c_str(), "5.00TiB");
  assert_true(parse_size(printed, "x") == bytes);
}

static void bad_sizes_are_usage_errors_naming_the_flag_and_the_text(void**) {
  for (const char* bad : {"", "TiB", "1 TiB", "1tib", "1PiB", "1TiBs", "-1TiB", "1e30TiB", "x"}) {
    const std::string message = size_error(bad);
    if (message.find("--budget '" + std::string(bad) + "'") == std::string::npos ||
        message.find("TiB") == std::string::npos) {
      fail_msg("'%s' gave \"%s\"", bad, message.c_str());
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sizes_accept_binary_and_decimal_units_up_to_tera),
      cmocka_unit_test(a_size_remat_prints_parses_back),
      cmocka_unit_test(bad_sizes_are_usage_errors_naming_the_flag_and_the_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
