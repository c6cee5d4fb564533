// `remat compile --emit-c NAME.h` (and `-o NAME.h`): the plan as a C array for firmware, with
// the sizes it declares its buffers with: the regions as the compile report gives them, and
// each binding's name and bytes (docs/firmware.md).
#include "tests/cmocka_cpp.h"

#include <cctype>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

using remat_test::expect;
using remat_test::file_bytes;
using remat_test::read_after;
using remat_test::Result;
using remat_test::run_remat;
using remat_test::tmp;

namespace {

const char* const kMlp = "mlp:layers=2,width=16,in=8,classes=3";

void a_c_header_states_the_plan_regions_and_bindings(void**) {
  const std::string header = tmp("firmware_plan.h"), plan = tmp("firmware_plan.rplan");
  const std::string model = std::string("compile ") + kMlp + " --batch 4 --strategy sqrt -o ";
  const Result compiled = run_remat(model + plan);
  expect(compiled, 0, "wrote");
  const Result as_header =
      run_remat(model + tmp("firmware_plan_too.rplan") + " --emit-c " + header);
  expect(as_header, 0, "firmware_plan_too.rplan");
  expect(as_header, 0, "a plan of");
  unsigned long long plan_size = 0, arena = 0, persistent = 0;
  read_after(as_header.out, "a plan of ", "%llu", &plan_size);
  read_after(compiled.out, "arena:", "%llu", &arena);
  read_after(compiled.out, "persistent:", "%llu", &persistent);
  const std::vector<uint8_t> bytes = file_bytes(header);
  const std::string text(bytes.begin(), bytes.end());
  // Names come from the file's: tmp() makes it cli-PID-firmware_plan.h.
  std::string stem = header.substr(header.find_last_of('/') + 1);
  stem = stem.substr(0, stem.size() - 2);
  for (char& c : stem) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  std::string macro = stem;
  for (char& c : macro) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const std::string& want :
       {"static const size_t " + stem + "_size = " + std::to_string(plan_size) + ";",
        "#define " + macro + "_ARENA_BYTES " + std::to_string(arena) + "u",
        "#define " + macro + "_PERSISTENT_BYTES " + std::to_string(persistent) + "u",
        "#define " + macro + "_HOST_BYTES 0u", "#define " + macro + "_ALIGNMENT 64u",
        // x f32 [4, 8] and labels i32 [4].
        "#define " + macro + "_INPUT0_NAME \"x\"", "#define " + macro + "_INPUT0_BYTES 128u",
        "#define " + macro + "_LABEL0_NAME \"labels\"", "#define " + macro + "_LABEL0_BYTES 16u"}) {
    if (text.find(want) == std::string::npos) fail_msg("the header lacks '%s'", want.c_str());
  }
}

// The header says whether the plan has 16-bit float tensors: a firmware build of a plan
// without them leaves the CPU backend's widening out (plan/op_subset.h).
void a_c_header_says_whether_the_plan_has_16_bit_floats(void**) {
  for (const char* precision : {"fp32", "bf16", "fp16"}) {
    const std::string header = tmp(std::string("half_") + precision + ".h");
    expect(run_remat(std::string("compile ") + kMlp + " --batch 4 --precision " + precision +
                     " --emit-c " + header),
           0, "a plan of");
    const std::vector<uint8_t> bytes = file_bytes(header);
    const std::string text(bytes.begin(), bytes.end());
    const std::string want =
        std::string("_HALF_FLOATS ") + (std::string(precision) == "fp32" ? "0" : "1") + "\n";
    if (text.find(want) == std::string::npos)
      fail_msg("%s: the header lacks '%s'", precision, want.c_str());
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_c_header_states_the_plan_regions_and_bindings),
      cmocka_unit_test(a_c_header_says_whether_the_plan_has_16_bit_floats),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
