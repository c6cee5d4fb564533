// `--attention fused|unfused` as a user runs it: compile, inspect, size and train on the CPU.
#include "tests/cmocka_cpp.h"

#include <stdlib.h>

#include <string>

#include "tests/cli/cli_runner.h"

using remat_test::expect;
using remat_test::file_bytes;
using remat_test::Result;
using remat_test::run_remat;
using remat_test::tmp;

namespace {

const char* const kTransformer =
    "transformer:layers=2,hidden=16,heads=2,ffn=32,seq=6,vocab=20,classes=3 --batch 4";

// The number after |label| on its line of |out| (a compile report's "arena:        N bytes").
long long figure(const std::string& out, const std::string& label) {
  const size_t at = out.find(label);
  if (at == std::string::npos) fail_msg("no '%s' in:\n%s", label.c_str(), out.c_str());
  return atoll(out.c_str() + at + label.size());
}

}  // namespace

static void a_bad_value_is_a_usage_error_naming_the_flag_and_value(void**) {
  expect(run_remat(std::string("compile ") + kTransformer + " --attention flash -o " +
                   tmp("bad.rplan")),
         2, "--attention 'flash': expected fused or unfused");
  expect(run_remat(std::string("train ") + kTransformer + " --attention Fused --steps 1"), 2,
         "--attention 'Fused'");
  expect(run_remat(std::string("size ") + kTransformer + " --attention none"), 2,
         "--attention 'none'");
  // A compiled plan carries its ops: the flag applies to compiling a MODEL only.
  const std::string plan = tmp("attention_flag.rplan");
  expect(run_remat(std::string("compile ") + kTransformer + " -o " + plan), 0, "wrote");
  expect(run_remat("train " + plan + " --attention unfused --steps 1"), 2,
         "--attention applies when compiling a MODEL");
}

static void fused_is_the_default_and_stores_no_probabilities(void**) {
  const std::string fused = tmp("fused.rplan"), unfused = tmp("unfused.rplan");
  const Result f = run_remat(std::string("compile ") + kTransformer + " -o " + fused);
  expect(f, 0, "attention:    2 fused ops");
  const Result u =
      run_remat(std::string("compile ") + kTransformer + " --attention unfused -o " + unfused);
  expect(u, 0, "attention:    0 fused ops");
  expect(run_remat("inspect --ops " + fused), 0, "attention_grad");
  const Result fused_tensors = run_remat("inspect --tensors " + fused);
  if (fused_tensors.out.find(".probs") != std::string::npos)
    fail_msg("a fused plan holds attention probabilities:\n%s", fused_tensors.out.c_str());
  expect(run_remat("inspect --tensors " + unfused), 0, "attention.self.probs");
  // Without the [B, heads, S, S] probabilities, the arena of `none` is smaller.
  const long long fused_arena = figure(f.out, "arena:"), unfused_arena = figure(u.out, "arena:");
  if (fused_arena >= unfused_arena)
    fail_msg("fused arena %lld, unfused %lld", fused_arena, unfused_arena);
  expect(run_remat(std::string("size ") + kTransformer + " --attention unfused"), 0, "none");
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_bad_value_is_a_usage_error_naming_the_flag_and_value),
      cmocka_unit_test(fused_is_the_default_and_stores_no_probabilities),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
