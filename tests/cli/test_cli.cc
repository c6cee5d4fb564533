// The `remat` command as a user runs it: exit codes, messages, files it writes and reads.
#include "tests/cmocka_cpp.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/safetensors.h"

namespace {

struct Result {
  int code;         // exit code; 128 + signal if it died of one
  std::string out;  // stdout and stderr together
};

// Runs `remat ARGS` through the shell with stdout and stderr captured.
Result run_remat(const std::string& args) {
  const std::string command = std::string(REMAT_CLI) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) fail_msg("cannot run %s", command.c_str());
  Result r{0, ""};
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

void expect(const Result& r, int code, const char* needle) {
  if (r.code != code || r.out.find(needle) == std::string::npos) {
    fail_msg("expected exit %d and '%s', got exit %d:\n%s", code, needle, r.code, r.out.c_str());
  }
}

std::string tmp(const std::string& name) { return std::string(REMAT_TEST_TMP) + "/" + name; }

const char* const kMlp = "mlp:layers=2,width=16,in=8,classes=3";

}  // namespace

static void no_arguments_or_an_unknown_command_is_a_usage_error(void**) {
  expect(run_remat(""), 2, "usage: remat");
  expect(run_remat("frobnicate"), 2, "unknown command 'frobnicate'");
  expect(run_remat("--help"), 0, "usage: remat");
}

static void bad_options_are_usage_errors_naming_the_option(void**) {
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4"), 2, "-o FILE.rplan");
  expect(run_remat(std::string("compile ") + kMlp + " --batch four -o x.rplan"), 2, "--batch four");
  expect(run_remat(std::string("compile ") + kMlp + " --bogus 1 -o x.rplan"), 2, "unknown option '--bogus'");
  expect(run_remat(std::string("train ") + kMlp + " --arena 12 parsecs"), 2, "");
  expect(run_remat(std::string("train ") + kMlp + " --arena 12XB"), 2, "--arena '12XB'");
  expect(run_remat(std::string("train ") + kMlp + " --steps -1"), 2, "--steps -1");
}

static void a_bad_model_fails_with_a_message_naming_the_key(void**) {
  expect(run_remat("compile mlp:layers=2,width=16 --batch 4 -o " + tmp("x.rplan")), 1, "missing in=N");
  expect(run_remat("train transformer:layers=1,hidden=10,heads=3,ffn=8,seq=4,vocab=5,classes=2 --steps 1"), 1,
         "hidden=10 is not a multiple of heads=3");
  expect(run_remat(std::string("train ") + kMlp + " --strategy manual:nothing --steps 1"), 1, "manual checkpoint 'nothing'");
}

static void compile_then_inspect_reports_the_plan(void**) {
  const std::string plan = tmp("mlp.rplan");
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 --strategy sqrt -o " + plan), 0, "arena:");
  expect(run_remat("inspect " + plan), 0, "strategy:     sqrt");
  expect(run_remat("inspect " + plan + " --json"), 0, "\"arena_bytes\":");
  expect(run_remat("inspect " + plan + " --ops"), 0, "recompute");
  expect(run_remat("inspect " + plan + " --params"), 0, "fc0.weight");
  expect(run_remat("inspect " + plan + " --tensors --json"), 0, "\"role\": \"param\"");
}

static void a_corrupted_or_missing_plan_is_a_clear_failure(void**) {
  const std::string plan = tmp("corrupt.rplan");
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 -o " + plan), 0, "wrote");
  FILE* f = std::fopen(plan.c_str(), "r+b");
  assert_non_null(f);
  std::fseek(f, 4, SEEK_SET);
  std::fputc('X', f);  // the file identifier
  std::fclose(f);
  expect(run_remat("inspect " + plan), 1, "plan corrupt");
  expect(run_remat("train " + plan + " --steps 1"), 1, "plan corrupt");
  expect(run_remat("inspect " + tmp("does-not-exist.rplan")), 1, "cannot open");
  expect(run_remat("train " + tmp("mlp.rplan") + " --batch 8"), 2, "--batch applies when compiling a MODEL");
}

static void train_prints_one_line_per_step_and_a_summary_when_piped(void**) {
  const Result r = run_remat(std::string("train ") + kMlp + " --batch 4 --steps 3");
  expect(r, 0, "step 1 loss ");
  expect(r, 0, "step 3 loss ");
  expect(r, 0, "trained 3 steps in");
}

static void an_arena_smaller_than_the_plan_is_refused_with_both_sizes(void**) {
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 1 --arena 1KiB"), 1, "arena region is 1024 bytes; the plan needs");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 1 --arena 1MiB"), 0, "trained 1 steps");
}

static void saved_parameters_load_back_unchanged(void**) {
  const std::string first = tmp("p1.safetensors"), second = tmp("p2.safetensors");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 5 --save-params " + first), 0, "saved parameters");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 0 --load-params " + first + " --save-params " + second), 0,
         "saved parameters");
  remat::SafeTensorsFile a, b;
  std::string error;
  assert_true(remat::read_safetensors(first, &a, &error));
  assert_true(remat::read_safetensors(second, &b, &error));
  assert_int_equal(a.tensors.size(), 6);
  assert_int_equal(b.tensors.size(), 6);
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    assert_string_equal(a.tensors[i].name.c_str(), b.tensors[i].name.c_str());
    assert_true(a.tensors[i].data == b.tensors[i].data);
  }
  expect(run_remat(std::string("train mlp:layers=2,width=16,in=9,classes=3 --steps 0 --load-params ") + first), 1,
         "'fc0.weight' is F32 [16, 8], the plan needs F32 [16, 9]");
}

static void steps_zero_saves_the_initial_parameters(void**) {
  const std::string a = tmp("init-a.safetensors"), b = tmp("init-b.safetensors");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 0 --seed 7 --save-params " + a), 0, "saved");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 0 --seed 7 --save-params " + b), 0, "saved");
  remat::SafeTensorsFile x, y;
  std::string error;
  assert_true(remat::read_safetensors(a, &x, &error) && remat::read_safetensors(b, &y, &error));
  for (size_t i = 0; i < x.tensors.size(); ++i) assert_true(x.tensors[i].data == y.tensors[i].data);
}

static void data_files_feed_the_steps_and_wrong_ones_are_named(void**) {
  remat::SafeTensorsFile data;
  std::vector<float> x(2 * 4 * 8, 0.25f);
  std::vector<int32_t> labels(2 * 4, 1);
  auto bytes = [](const void* p, size_t n) {
    return std::vector<uint8_t>(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  data.tensors.push_back({"x", "F32", {2, 4, 8}, bytes(x.data(), x.size() * 4)});
  data.tensors.push_back({"labels", "I32", {2, 4}, bytes(labels.data(), labels.size() * 4)});
  std::string error;
  assert_true(remat::write_safetensors(tmp("data.safetensors"), data, &error));
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --data " + tmp("data.safetensors")), 0, "trained 2 steps");
  labels[3] = 3;  // classes=3: out of range
  data.tensors[1].data = bytes(labels.data(), labels.size() * 4);
  assert_true(remat::write_safetensors(tmp("bad-labels.safetensors"), data, &error));
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --data " + tmp("bad-labels.safetensors")), 1, "value out of range");
  data.tensors.pop_back();
  assert_true(remat::write_safetensors(tmp("no-labels.safetensors"), data, &error));
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --data " + tmp("no-labels.safetensors")), 1,
         "no tensor 'labels'");
  expect(run_remat(std::string("train ") + kMlp + " --batch 5 --data " + tmp("data.safetensors")), 1,
         "expected F32 [STEPS, 5, 8]");
}

// Every backend remat has appears: as device lines or an "unavailable" line when the build has
// it (a machine without a GPU says why), else as "not in this build".
static void devices_names_every_backend_and_says_why_one_is_unavailable(void**) {
  const Result r = run_remat("devices");
  expect(r, 0, "cpu:0  host CPU");
  const struct {
    const char* name;
    bool built;
  } backends[] = {{"opencl", REMAT_TEST_HAVE_OPENCL != 0}, {"cuda", REMAT_TEST_HAVE_CUDA != 0}};
  for (const auto& b : backends) {
    const std::string device = "\n" + std::string(b.name) + ":0";
    const std::string unavailable = "(" + std::string(b.name) + ": unavailable: ";
    const std::string absent = "(" + std::string(b.name) + ": not in this build)";
    const bool listed = r.out.find(device) != std::string::npos || r.out.find(unavailable) != std::string::npos;
    if (b.built != listed || b.built == (r.out.find(absent) != std::string::npos)) {
      fail_msg("%s is %sin this build, but `remat devices` printed:\n%s", b.name, b.built ? "" : "not ",
               r.out.c_str());
    }
  }
  if (REMAT_TEST_HAVE_CUDA && r.out.find("\ncuda:0") == std::string::npos) {
    expect(r, 0, "(cuda: unavailable: cudaGetDeviceCount failed: cuda");  // names the CUDA error
  }
}

// Listing CUDA devices asks cudart only: the command never maps cuBLAS (~0.3 s to load).
static void devices_does_not_load_cublas(void**) {
  setenv("LD_DEBUG", "files", 1);
  const Result r = run_remat("devices");
  unsetenv("LD_DEBUG");
  assert_int_equal(r.code, 0);
  if (REMAT_TEST_HAVE_CUDA && r.out.find("libcudart") == std::string::npos) {
    fail_msg("LD_DEBUG=files shows no libcudart: the check cannot see loads here:\n%.2000s", r.out.c_str());
  }
  if (r.out.find("libcublas") != std::string::npos) fail_msg("`remat devices` loaded cuBLAS");
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(no_arguments_or_an_unknown_command_is_a_usage_error),
      cmocka_unit_test(bad_options_are_usage_errors_naming_the_option),
      cmocka_unit_test(a_bad_model_fails_with_a_message_naming_the_key),
      cmocka_unit_test(compile_then_inspect_reports_the_plan),
      cmocka_unit_test(a_corrupted_or_missing_plan_is_a_clear_failure),
      cmocka_unit_test(train_prints_one_line_per_step_and_a_summary_when_piped),
      cmocka_unit_test(an_arena_smaller_than_the_plan_is_refused_with_both_sizes),
      cmocka_unit_test(saved_parameters_load_back_unchanged),
      cmocka_unit_test(steps_zero_saves_the_initial_parameters),
      cmocka_unit_test(data_files_feed_the_steps_and_wrong_ones_are_named),
      cmocka_unit_test(devices_names_every_backend_and_says_why_one_is_unavailable),
      cmocka_unit_test(devices_does_not_load_cublas),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
