// A build for a microcontroller's flash, as a firmware build is compiled (docs/firmware.md):
// REMAT_MESSAGES 0 (meson -Dmessages=disabled, the default of firmware builds), REMAT_SMALL_FLASH,
// and the op subset of tests/plan/op_subset_fixture.h, whose plan has no 16-bit float tensors.
// Checks what those builds change: numeric messages, an op table without names, the CRC without its
// table, and the CPU backend's profile without 16-bit floats.
#include <stdint.h>
#include <string.h>

#include "backends/cpu/cpu_profile.h"
#include "op_check_cases.h"
#include "plan/crc32c.h"
#include "plan/numeric_message.h"
#include "plan/op_subset.h"
#include "runtime/backend.h"
#include "tests/cmocka_cpp.h"

static_assert(REMAT_MESSAGES == 0, "this test is compiled as a build without messages");

namespace {

using remat::OpCode;

// CRC32C's check values from RFC 3720, B.4, and the catalogue of parametrised CRCs.
void the_crc_without_its_table_gives_crc32c(void**) {
  uint8_t bytes[32];
  memset(bytes, 0, sizeof bytes);
  assert_int_equal(remat::crc32c(0, bytes, sizeof bytes), 0x8A9136AAu);
  memset(bytes, 0xff, sizeof bytes);
  assert_int_equal(remat::crc32c(0, bytes, sizeof bytes), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) bytes[i] = static_cast<uint8_t>(i);
  assert_int_equal(remat::crc32c(0, bytes, sizeof bytes), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) bytes[i] = static_cast<uint8_t>(31 - i);
  assert_int_equal(remat::crc32c(0, bytes, sizeof bytes), 0x113FDB5Cu);
  assert_int_equal(remat::crc32c(0, "123456789", 9), 0xE3069283u);
  // In pieces, as the state file's writer feeds it.
  assert_int_equal(remat::crc32c(remat::crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
}

// set_error() keeps the status, the calling line and the integer arguments, in order, the
// strings and reals left out, four at most.
void a_message_is_its_status_line_and_numbers(void**) {
  char text[96];
  remat::ErrorBuffer err{text, sizeof text};
  const int line = __LINE__ + 1;
  const remat_status s = remat::set_error(&err, REMAT_ERROR_BAD_SHAPE, "op %u (%s): %lld x %g", 12u,
                                          "matmul", -5LL, 0.5);
  assert_int_equal(s, REMAT_ERROR_BAD_SHAPE);
  char want[96];
  snprintf(want, sizeof want, "status %d at test_small_flash.cc:%d: 12 -5", REMAT_ERROR_BAD_SHAPE,
           line);
  assert_string_equal(text, want);

  const int line2 = __LINE__ + 1;
  remat::set_error(&err, REMAT_ERROR_OUT_OF_RANGE, "%d %d %d %d %d", 1, 2, 3, 4, 5);
  snprintf(want, sizeof want, "status %d at test_small_flash.cc:%d: 1 2 3 4",
           REMAT_ERROR_OUT_OF_RANGE, line2);
  assert_string_equal(text, want);

  const int line3 = __LINE__ + 1;
  remat::set_error(&err, REMAT_ERROR_INTERNAL, "no numbers: %s", "text");
  snprintf(want, sizeof want, "status %d at test_small_flash.cc:%d", REMAT_ERROR_INTERNAL, line3);
  assert_string_equal(text, want);

  // Whole 64-bit values, signed and unsigned, on every target: INT64_MIN has no positive
  // int64; sizes past 2^32 and checksums with the top bit set stay themselves.
  const int line4 = __LINE__ + 1;
  remat::set_error(&err, REMAT_ERROR_INTERNAL, "%lld %llu %u %d", static_cast<long long>(INT64_MIN),
                   static_cast<unsigned long long>(UINT64_MAX), 0xE3069283u, -1);
  snprintf(want, sizeof want, "status %d at test_small_flash.cc:%d: %lld %llu %u %d",
           REMAT_ERROR_INTERNAL, line4, static_cast<long long>(INT64_MIN),
           static_cast<unsigned long long>(UINT64_MAX), 0xE3069283u, -1);
  assert_string_equal(text, want);

  // Enums by their underlying type, bools as 0 or 1.
  enum class Small : uint8_t { kSeven = 7 };
  const int line5 = __LINE__ + 1;
  remat::set_error(&err, REMAT_ERROR_INTERNAL, "%d %d %llu", static_cast<int>(Small::kSeven), true,
                   (1ull << 32) + 16);
  snprintf(want, sizeof want, "status %d at test_small_flash.cc:%d: 7 1 4294967312",
           REMAT_ERROR_INTERNAL, line5);
  assert_string_equal(text, want);
  const int line6 = __LINE__ + 1;
  remat::write_numeric_message(text, sizeof text, REMAT_ERROR_INTERNAL, "unused", Small::kSeven);
  snprintf(want, sizeof want, "status %d at test_small_flash.cc:%d: 7", REMAT_ERROR_INTERNAL,
           line6);
  assert_string_equal(text, want);
}

// A short buffer holds the message's start, terminated; a null or empty one is left alone.
void a_short_buffer_truncates_and_terminates(void**) {
  char text[12];
  memset(text, 'x', sizeof text);
  remat::ErrorBuffer err{text, 10};
  remat::set_error(&err, REMAT_ERROR_INTERNAL, "%d", 123456);
  char want[10];
  snprintf(want, sizeof want, "status %d", REMAT_ERROR_INTERNAL);  // 9 characters
  assert_string_equal(text, want);
  assert_int_equal(text[10], 'x');
  remat::ErrorBuffer empty{text, 0};
  text[0] = 'y';
  assert_int_equal(remat::set_error(&empty, REMAT_ERROR_INTERNAL, "%d", 1), REMAT_ERROR_INTERNAL);
  assert_int_equal(text[0], 'y');
  remat::ErrorBuffer none{nullptr, 16};
  assert_int_equal(remat::set_error(&none, REMAT_ERROR_INTERNAL, "%d", 1), REMAT_ERROR_INTERNAL);
  assert_int_equal(remat::set_error(nullptr, REMAT_ERROR_INTERNAL, "%d", 1), REMAT_ERROR_INTERNAL);
}

// The op checks keep their statuses; their messages are left empty for the caller's numbers.
void the_op_checks_keep_their_statuses_without_text(void**) {
  Case ok(OpCode::kMatMul);
  build(ok);
  assert_int_equal(ok.run(), REMAT_OK);
  Case bad(OpCode::kMatMul);
  build(bad);
  bad.dims_of(false, 0)[1] += 1;  // A's K no longer B's
  assert_int_equal(bad.run(), REMAT_ERROR_BAD_SHAPE);
  assert_string_equal(bad.message, "");
  Case left_out(OpCode::kConv);
  build(left_out);
  assert_int_equal(left_out.run(), REMAT_ERROR_UNIMPLEMENTED);
  assert_string_equal(left_out.message, "");
}

// The op table keeps no names: they are for messages.
void the_op_table_keeps_no_names(void**) {
  for (OpCode op : {OpCode::kMatMul, OpCode::kRelu, OpCode::kConv}) {
    const remat::OpInfo* info = remat::op_info(static_cast<uint16_t>(op));
    assert_string_equal(info->name, "");
    assert_null(info->input_names[0]);
    assert_null(info->output_names[0]);
  }
  assert_int_equal(remat::op_info(static_cast<uint16_t>(OpCode::kMatMul))->max_inputs, 3);
}

// The fixture's plan has no 16-bit floats: the CPU backend runs none (the session refuses a
// plan with one, as on any backend whose profile says so).
void a_build_without_16_bit_floats_says_so(void**) {
  static_assert(!remat::kBuildHalfFloats, "the fixture's plan has no 16-bit floats");
  assert_false(remat::kCpuProfile.half_floats);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_crc_without_its_table_gives_crc32c),
      cmocka_unit_test(a_message_is_its_status_line_and_numbers),
      cmocka_unit_test(a_short_buffer_truncates_and_terminates),
      cmocka_unit_test(the_op_checks_keep_their_statuses_without_text),
      cmocka_unit_test(the_op_table_keeps_no_names),
      cmocka_unit_test(a_build_without_16_bit_floats_says_so),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
