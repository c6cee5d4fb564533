// The plan checksum (plan/checksum.h): every single-byte change of a plan, bytes appended or cut
// off are refused at remat_plan_open; plans of format versions before 4, which have no checksum,
// still open.
#include "tests/cmocka_cpp.h"

#include <string.h>

#include <string>
#include <vector>

#include "plan/checksum.h"
#include "plan/plan_generated.h"
#include "tests/runtime/plan_edits.h"

using namespace remat_test;  // the plan edits shared by the verification tests

namespace {

remat_status open_status(const std::vector<uint8_t>& bytes, std::string* message = nullptr) {
  const Opened o = open_bytes(bytes.data(), bytes.size());
  if (message != nullptr) *message = o.message;
  return o.status;
}

// Marks field |field| of the plan's root table absent, as a writer that left it out would.
void leave_out_root_field(std::vector<uint8_t>& bytes, flatbuffers::voffset_t field) {
  uint8_t* root = bytes.data() + flatbuffers::ReadScalar<flatbuffers::uoffset_t>(bytes.data());
  uint8_t* vtable = root - flatbuffers::ReadScalar<flatbuffers::soffset_t>(root);
  assert_true(field < flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable));
  flatbuffers::WriteScalar<flatbuffers::voffset_t>(vtable + field, 0);
}

void every_single_byte_change_of_a_plan_is_refused(void**) {
  const std::vector<uint8_t> plan = compile_model(kMlp).plan;
  assert_int_equal(open_status(plan), REMAT_OK);
  size_t refused = 0, by_checksum = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    for (uint8_t change : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      std::vector<uint8_t> bytes = plan;
      bytes[i] ^= change;
      std::string message;
      const remat_status status = open_status(bytes, &message);
      if (status == REMAT_OK) fail_msg("byte %zu ^ 0x%02x: the changed plan opened", i, change);
      ++refused;
      by_checksum += message.find("checksum mismatch") != std::string::npos;
    }
  }
  print_message("%zu changes of %zu bytes refused, %zu of them by the checksum\n", refused,
                plan.size(), by_checksum);
  assert_true(by_checksum > refused / 2);  // the rest fail the FlatBuffers verifier first
}

void bytes_appended_or_cut_off_are_refused_naming_both_checksums(void**) {
  const std::vector<uint8_t> plan = compile_model(kMlp).plan;
  std::vector<uint8_t> longer = plan;
  longer.insert(longer.end(), 4096, 'x');
  std::string message;
  assert_int_equal(open_status(longer, &message), REMAT_ERROR_PLAN_CORRUPT);
  if (message.find("checksum mismatch: the plan says ") == std::string::npos ||
      message.find(std::to_string(longer.size()) + " bytes give ") == std::string::npos)
    fail_msg("'%s'", message.c_str());
  // Cut at a multiple of 8 (the runtime needs 8-byte alignment, not a whole plan): refused,
  // by the FlatBuffers verifier or the checksum.
  for (size_t keep = 8; keep < plan.size(); keep += plan.size() / 7 / 8 * 8 + 8) {
    const std::vector<uint8_t> shorter(plan.begin(), plan.begin() + static_cast<long>(keep));
    if (open_status(shorter) == REMAT_OK) fail_msg("the first %zu bytes opened", keep);
  }
}

// The compiler seals what it writes: sealing again changes nothing, and the stored value is the
// CRC32C of the bytes with the field as zero.
void the_compiler_seals_its_plans(void**) {
  const std::vector<uint8_t> plan = compile_model(kTransformer).plan;
  std::vector<uint8_t> again = plan;
  remat::seal_plan(again.data(), again.size());
  assert_true(again == plan);
  size_t at = 0;
  assert_true(remat::plan_checksum_offset(plan.data(), &at));
  std::vector<uint8_t> zeroed = plan;
  memset(zeroed.data() + at, 0, 4);
  assert_int_equal(remat::fb::GetPlan(plan.data())->checksum(),
                   remat::plan_checksum(zeroed.data(), zeroed.size(), at));
}

// A version 4 plan must carry the checksum; plans of versions 1 to 3 never had one and open.
void only_plans_before_version_4_may_lack_a_checksum(void**) {
  std::vector<uint8_t> bytes = compile_model(kMlp).plan;
  leave_out_root_field(bytes, remat::fb::Plan::VT_CHECKSUM);
  std::string message;
  assert_int_equal(open_status(bytes, &message), REMAT_ERROR_PLAN_CORRUPT);
  if (message.find("plan format version 4 has no checksum") == std::string::npos)
    fail_msg("'%s'", message.c_str());
  assert_true(mutable_plan(bytes)->mutate_format_version(3));
  assert_int_equal(open_status(bytes), REMAT_OK);
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, nullptr, 0), REMAT_OK);
  assert_int_equal(run_two_steps(plan), REMAT_OK);
  remat_plan_close(plan);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_single_byte_change_of_a_plan_is_refused),
      cmocka_unit_test(bytes_appended_or_cut_off_are_refused_naming_both_checksums),
      cmocka_unit_test(the_compiler_seals_its_plans),
      cmocka_unit_test(only_plans_before_version_4_may_lack_a_checksum),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
