// Command-line values: sizes with units, learning-rate schedules.
#include "tests/cmocka_cpp.h"

#include <string>

#include <cmath>

#include "cli/cli_args.h"
#include "cli/json_text.h"
#include "cli/lr_schedule.h"

namespace {

using remat::io::parse_size;
using remat::io::UsageError;

// The UsageError message for |text|, or "" when it parses.
std::string size_error(const std::string& text) {
  try {
    parse_size(text, "--arena-budget");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string schedule_error(const std::string& text) {
  try {
    remat::cli::parse_lr_schedule(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Worked out by hand from torch's LinearLR and CosineAnnealingLR (closed forms in
// lr_schedule.h) for base 0.1, 2 warmup steps, 6 steps: warmup 0.05, 0.1; then t = 0..3 of 4.
static void schedules_give_torchs_rates(void**) {
  struct Row {
    const char* spec;
    double want[6];
  };
  const Row rows[] = {
      {"cosine,warmup=2", {0.05, 0.1, 0.1, 0.0853553390593, 0.05, 0.0146446609407}},
      {"linear,warmup=2", {0.05, 0.1, 0.1, 0.075, 0.05, 0.025}},
      {"constant,warmup=2", {0.05, 0.1, 0.1, 0.1, 0.1, 0.1}},
      {"cosine,warmup=2,min=0.01", {0.05, 0.1, 0.1, 0.0868198051534, 0.055, 0.0231801948466}},
      {"linear", {0.1, 0.0833333333333, 0.0666666666667, 0.05, 0.0333333333333, 0.0166666666667}},
  };
  for (const Row& row : rows) {
    const remat::cli::LrSchedule s = remat::cli::parse_lr_schedule(row.spec);
    for (int step = 0; step < 6; ++step) {
      const double got = s.at(0.1, step, 6);
      if (!(std::fabs(got - row.want[step]) <= 1e-7 * row.want[step])) {
        fail_msg("%s step %d: %.12g, want %.12g", row.spec, step, got, row.want[step]);
      }
    }
    // Past the end (a resumed run given fewer --steps) the rate stays at the schedule's end.
    assert_true(s.at(0.1, 9, 6) == s.at(0.1, 6, 6));
  }
}

static void bad_schedules_are_usage_errors_naming_the_part(void**) {
  assert_string_equal(schedule_error("cos").c_str(),
                      "--lr-schedule 'cos': unknown schedule 'cos' (constant, cosine, linear)");
  assert_string_equal(schedule_error("cosine,warmup=-1").c_str(),
                      "--lr-schedule 'cosine,warmup=-1': warmup=-1 is not a step count");
  assert_string_equal(schedule_error("linear,min=x").c_str(),
                      "--lr-schedule 'linear,min=x': min=x is not a rate >= 0");
  assert_string_equal(schedule_error("linear,min=nan").c_str(),
                      "--lr-schedule 'linear,min=nan': min=nan is not a rate >= 0");
  assert_string_equal(schedule_error("linear,gamma=2").c_str(),
                      "--lr-schedule 'linear,gamma=2': unknown key 'gamma' (warmup, min)");
  assert_string_equal(schedule_error("cosine,").c_str(),
                      "--lr-schedule 'cosine,': unknown key '' (warmup, min)");
  assert_string_equal(schedule_error("cosine,warmup=3,min=0.5").c_str(), "");
}

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
    if (message.find("--arena-budget '" + std::string(bad) + "'") == std::string::npos ||
        message.find("TiB") == std::string::npos) {
      fail_msg("'%s' gave \"%s\"", bad, message.c_str());
    }
  }
}

// inspect --json and size --json print names from plans, which a hand-made plan may fill with
// any bytes: well-formed UTF-8 passes, every other byte becomes \ufffd, so the text is JSON.
static void json_strings_are_valid_json_whatever_the_bytes(void**) {
  using remat::cli::json_string;
  assert_string_equal(json_string("fc0.weight").c_str(), "\"fc0.weight\"");
  assert_string_equal(json_string("a\"b\\c\n").c_str(), "\"a\\\"b\\\\c\\u000a\"");
  // Two, three and four bytes: é, €, the G clef.
  const std::string utf8 = "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e";
  assert_string_equal(json_string(utf8).c_str(), ("\"" + utf8 + "\"").c_str());
  const struct {
    const char* bytes;
    const char* json;
  } bad[] = {
      {"\xff", "\"\\ufffd\""},                                   // never in UTF-8
      {"x\xc0\xafy", "\"x\\ufffd\\ufffdy\""},                    // an overlong '/'
      {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},             // a surrogate
      {"\xe2\x82", "\"\\ufffd\\ufffd\""},                        // cut short
      {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},  // past U+10FFFF
  };
  for (const auto& b : bad) assert_string_equal(json_string(b.bytes).c_str(), b.json);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sizes_accept_binary_and_decimal_units_up_to_tera),
      cmocka_unit_test(a_size_remat_prints_parses_back),
      cmocka_unit_test(bad_sizes_are_usage_errors_naming_the_flag_and_the_text),
      cmocka_unit_test(schedules_give_torchs_rates),
      cmocka_unit_test(bad_schedules_are_usage_errors_naming_the_part),
      cmocka_unit_test(json_strings_are_valid_json_whatever_the_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
