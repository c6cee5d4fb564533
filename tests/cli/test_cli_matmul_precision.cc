// `--matmul-precision fp32|tf32` as a user runs it: compile, inspect and train on the CPU.
#include "tests/cmocka_cpp.h"

#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

using remat_test::expect;
using remat_test::file_bytes;
using remat_test::Result;
using remat_test::run_remat;
using remat_test::tmp;

namespace {

const char* const kMlp = "mlp:layers=2,width=8,in=4,classes=3 --batch 4";

void expect_absent(const Result& r, const char* needle) {
  if (r.out.find(needle) != std::string::npos)
    fail_msg("'%s' in the output:\n%s", needle, r.out.c_str());
}

}  // namespace

static void a_bad_value_is_a_usage_error_naming_the_flag_and_value(void**) {
  expect(
      run_remat(std::string("compile ") + kMlp + " --matmul-precision fp16 -o " + tmp("bad.rplan")),
      2, "--matmul-precision 'fp16': expected fp32 or tf32");
  expect(run_remat(std::string("train ") + kMlp + " --matmul-precision TF32 --steps 1"), 2,
         "--matmul-precision 'TF32'");
  // A compiled plan carries its precision: the flag applies to compiling a MODEL only.
  const std::string plan = tmp("fp32_flag.rplan");
  expect(run_remat(std::string("compile ") + kMlp + " -o " + plan), 0, "wrote");
  expect(run_remat("train " + plan + " --matmul-precision tf32 --steps 1"), 2,
         "--matmul-precision applies when compiling a MODEL");
}

static void compile_and_inspect_show_the_precision_and_fp32_is_the_default(void**) {
  const std::string fp32 = tmp("default.rplan"), explicit_fp32 = tmp("fp32.rplan"),
                    tf32 = tmp("tf32.rplan");
  expect(run_remat(std::string("compile ") + kMlp + " -o " + fp32), 0, "matmuls:      fp32");
  expect(run_remat(std::string("compile ") + kMlp + " --matmul-precision fp32 -o " + explicit_fp32),
         0, "matmuls:      fp32");
  expect(run_remat(std::string("compile ") + kMlp + " --matmul-precision tf32 -o " + tf32), 0,
         "matmuls:      tf32");
  // fp32 is the schema's default, which FlatBuffers leaves out: the same bytes either way.
  assert_true(file_bytes(fp32) == file_bytes(explicit_fp32));
  assert_true(file_bytes(fp32) != file_bytes(tf32));
  expect(run_remat("inspect " + fp32), 0, "matmuls:      fp32");
  expect(run_remat("inspect " + tf32), 0, "matmuls:      tf32");
  expect(run_remat("inspect --json " + fp32), 0, "\"matmul_precision\": \"fp32\"");
  expect(run_remat("inspect --json " + tf32), 0, "\"matmul_precision\": \"tf32\"");
}

static void cpu_training_ignores_tf32_says_so_and_saves_the_fp32_bytes(void**) {
  const std::string train = std::string("train ") + kMlp + " --steps 5 --threads 2";
  const std::string fp32 = tmp("fp32.safetensors"), tf32 = tmp("tf32.safetensors");
  const Result plain = run_remat(train + " --save-params " + fp32);
  expect(plain, 0, "saved parameters");
  expect_absent(plain, "matmul precision");
  const Result asked = run_remat(train + " --matmul-precision tf32 --save-params " + tf32);
  expect(asked, 0, "matmul precision tf32: the cpu backend computes float32 products (ignored)");
  assert_true(file_bytes(fp32) == file_bytes(tf32));
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_bad_value_is_a_usage_error_naming_the_flag_and_value),
      cmocka_unit_test(compile_and_inspect_show_the_precision_and_fp32_is_the_default),
      cmocka_unit_test(cpu_training_ignores_tf32_says_so_and_saves_the_fp32_bytes),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
