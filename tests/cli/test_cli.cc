// The `remat` command as a user runs it: exit codes, messages, files it writes and reads.
#include "tests/cmocka_cpp.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "remat/remat.h"
#include "tests/cli/cli_runner.h"

using remat_test::expect;
using remat_test::file_bytes;
using remat_test::Result;
using remat_test::run_remat;
using remat_test::tmp;
using remat_test::train_and_save;

namespace {

const char* const kMlp = "mlp:layers=2,width=16,in=8,classes=3";

// Whether a temporary file of |path| (".NAME.tmp.*", io/atomic_file.h) is left in its folder.
bool temporary_left_beside(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string prefix = "." + path.substr(slash + 1) + ".tmp.";
  DIR* d = opendir(path.substr(0, slash).c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (const dirent* e = readdir(d))
    found = found || std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
  closedir(d);
  return found;
}

}  // namespace

static void no_arguments_or_an_unknown_command_is_a_usage_error(void**) {
  expect(run_remat(""), 2, "usage: remat");
  expect(run_remat("frobnicate"), 2, "unknown command 'frobnicate'");
  expect(run_remat("--help"), 0, "usage: remat");
}

// The release is meson's project version and the API the header's, both given by the build.
static void version_prints_the_release_and_the_api(void**) {
  const std::string want = std::string("remat ") + REMAT_PROJECT_VERSION + " (C API " +
                           std::to_string(REMAT_API_VERSION) + ", plan formats ";
  expect(run_remat("--version"), 0, want.c_str());
}

static void bad_options_are_usage_errors_naming_the_option(void**) {
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4"), 2,
         "-o FILE.rplan (or --emit-c FILE.h)");
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 --emit-c"), 2, "--emit-c");
  expect(run_remat(std::string("compile ") + kMlp + " --batch four -o x.rplan"), 2, "--batch four");
  expect(run_remat(std::string("compile ") + kMlp + " --bogus 1 -o x.rplan"), 2,
         "unknown option '--bogus'");
  expect(run_remat(std::string("train ") + kMlp + " --arena 12 parsecs"), 2, "");
  expect(run_remat(std::string("train ") + kMlp + " --arena 12XB"), 2, "--arena '12XB'");
  expect(run_remat(std::string("train ") + kMlp + " --steps -1"), 2, "--steps -1");
  expect(run_remat(std::string("train ") + kMlp + " --steps 1 --lr-schedule cos"), 2,
         "--lr-schedule 'cos': unknown schedule");
  expect(run_remat(std::string("train ") + kMlp + " --steps 3 --lr-schedule cosine,warmup=1"), 0,
         "trained 3 steps");
}

static void a_bad_model_fails_with_a_message_naming_the_key(void**) {
  expect(run_remat("compile mlp:layers=2,width=16 --batch 4 -o " + tmp("x.rplan")), 1,
         "missing in=N");
  expect(
      run_remat(
          "train transformer:layers=1,hidden=10,heads=3,ffn=8,seq=4,vocab=5,classes=2 --steps 1"),
      1, "hidden=10 is not a multiple of heads=3");
  expect(run_remat(std::string("train ") + kMlp + " --strategy manual:nothing --steps 1"), 1,
         "manual checkpoint 'nothing'");
}

static void a_bad_optimizer_is_a_usage_error_naming_the_optimizer(void**) {
  const std::string model = "mlp:layers=2,width=8,in=4,classes=3 --batch 4";
  for (const char* command : {"compile", "size"}) {
    const std::string out =
        std::string(command) == "compile" ? " -o " + tmp("optimizer.rplan") : "";
    Result r = run_remat(std::string(command) + " " + model + " --optimizer sgd:lr=abc" + out);
    expect(r, 2, "--optimizer 'sgd:lr=abc': lr=abc is not a number");
    if (r.out.find("model") != std::string::npos)
      fail_msg("the message calls the optimizer a model:\n%s", r.out.c_str());
    expect(run_remat(std::string(command) + " " + model + " --optimizer nesterov:lr=1" + out), 2,
           "--optimizer 'nesterov:lr=1': unknown kind 'nesterov'");
    expect(run_remat(std::string(command) + " " + model + " --optimizer adam:beta1=2" + out), 2,
           "--optimizer 'adam:beta1=2'");
  }
  expect(run_remat("train " + model + " --optimizer sgd:lr=abc --steps 1"), 2,
         "--optimizer 'sgd:lr=abc'");
}

// A diverging run (the example was SGD with lr=100; with the template's initial weights
// since Linear's bias joined its matmul, lr=300 reaches NaN at the 17th step) under each
// --on-nonfinite and --finite-checks setting.
static void a_diverging_run_stops_or_skips_and_never_saves_nan(void**) {
  const std::string train =
      "train mlp:layers=2,width=8,in=4,classes=3 --batch 4 --optimizer sgd:lr=300 --steps 20";
  const std::string params = tmp("diverged.safetensors");
  Result r = run_remat(train + " --save-params " + params);
  expect(r, 1, "remat train: stopped: step 17: tensor 'loss' is not finite: element 0 is");
  expect(r, 1, "no parameter was updated (--on-nonfinite skip would go on to the next batch)");
  if (access(params.c_str(), F_OK) == 0) fail_msg("a stopped run wrote %s", params.c_str());
  r = run_remat(train + " --on-nonfinite skip --save-params " + params);
  expect(r, 0, "remat: skipped: step 17: tensor 'loss' is not finite");
  expect(r, 0, "of those steps: a loss or gradient was not finite");
  // What was saved is the last finite parameters: every value finite.
  remat::SafeTensorsFile saved;
  std::string error;
  if (!remat::read_safetensors(params, &saved, &error)) fail_msg("%s", error.c_str());
  for (const remat::SafeTensor& t : saved.tensors) {
    for (size_t i = 0; i + 4 <= t.data.size(); i += 4) {
      float v;
      memcpy(&v, t.data.data() + i, 4);
      if (!std::isfinite(v))
        fail_msg("%s[%zu] is %g", t.name.c_str(), i / 4, static_cast<double>(v));
    }
  }
  expect(run_remat(train + " --finite-checks off"), 1,
         "step 17: the loss is -nan; the plan has no finite checks (--finite-checks off), so its "
         "update was applied");
  expect(run_remat(train + " --finite-checks atomic"), 1, "stopped: step 17: tensor 'loss'");
  expect(run_remat(train + " --finite-checks off --on-nonfinite skip"), 2,
         "--on-nonfinite skip needs a plan with finite checks");
  expect(run_remat(train + " --on-nonfinite ignore"), 2,
         "--on-nonfinite 'ignore': expected stop or skip");
  expect(run_remat(train + " --finite-checks maybe"), 2,
         "--finite-checks 'maybe': expected on, atomic or off");
  expect(run_remat(std::string("size ") + kMlp + " --batch 4 --finite-checks no"), 2,
         "--finite-checks 'no'");
}

// bert-base and bert-large are transformer templates by another name: remat train gives them
// the transformer's synthetic task (it refused them, asking for --data).
static void bert_aliases_train_on_the_synthetic_task(void**) {
  const Result r =
      run_remat("train bert-base:seq=4 --batch 2 --steps 2 --optimizer adam:lr=1e-4 --threads 2");
  expect(r, 0, "trained 2 steps");
}

static void sizes_in_tib_and_tb_are_accepted(void**) {
  const std::string plan = tmp("tib.rplan");
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 --device-budget 1TiB -o " + plan),
         0, "of the 1099511627776-byte device budget");
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 --device-budget 2TB -o " + plan), 0,
         "of the 2000000000000-byte device budget");
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 --device-budget 1PiB -o " + plan),
         2, "--device-budget '1PiB'");
}

static void compile_into_an_unwritable_place_fails_naming_it_and_keeps_the_old_file(void**) {
  const std::string compile = std::string("compile ") + kMlp + " --batch 4 -o ";
  // A missing folder and a folder as the target are refused before compiling.
  const std::string in_missing = tmp("no-such-dir") + "/x.rplan";
  expect(run_remat(compile + in_missing), 1, (in_missing + ": cannot write in directory").c_str());
  const std::string dir = tmp("a-dir.rplan");
  assert_int_equal(mkdir(dir.c_str(), 0755), 0);
  expect(run_remat(compile + dir), 1, (dir + ": is a directory").c_str());

  // A write that fails part-way (a file-size limit of 1 KiB or less; the header is ~28 KB)
  // leaves the previous file as it was and no temporary file.
  for (const char* name : {"kept.h", "kept.rplan"}) {
    const std::string kept = tmp(name);
    FILE* f = std::fopen(kept.c_str(), "wb");
    assert_non_null(f);
    std::fputs("the previous good file", f);
    std::fclose(f);
    expect(run_remat(compile + kept, "ulimit -f 1;"), 1,
           (kept + ": write failed: " + std::strerror(EFBIG)).c_str());
    const std::vector<uint8_t> bytes = file_bytes(kept);
    assert_string_equal(std::string(bytes.begin(), bytes.end()).c_str(), "the previous good file");
    assert_false(temporary_left_beside(kept));
    // And with room, the same command replaces it.
    expect(run_remat(compile + kept), 0, "wrote");
    assert_true(file_bytes(kept).size() > 1024);
    assert_false(temporary_left_beside(kept));
  }
}

static void size_refuses_an_unwritable_timeline_before_sizing(void**) {
  const std::string svg = tmp("no-such-dir") + "/t.svg";
  expect(run_remat(std::string("size ") + kMlp + " --batch 4 --timeline " + svg), 1,
         (svg + ": cannot write in directory").c_str());
}

static void compile_then_inspect_reports_the_plan(void**) {
  const std::string plan = tmp("mlp.rplan");
  // Four layers: on kMlp's two, sqrt's smallest arena is none's, so it recomputes nothing.
  expect(run_remat("compile mlp:layers=4,width=16,in=8,classes=3 --batch 4 --strategy sqrt -o " +
                   plan),
         0, "arena:");
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
  expect(run_remat("train " + tmp("mlp.rplan") + " --batch 8"), 2,
         "--batch applies when compiling a MODEL");
  const std::string empty = tmp("empty.rplan");
  std::fclose(std::fopen(empty.c_str(), "wb"));
  expect(run_remat("inspect " + empty), 1, "is empty (0 bytes): not a remat plan");
  expect(run_remat("train " + empty + " --steps 1"), 1, "is empty (0 bytes): not a remat plan");
  // The backend a plan is compiled for must be one the cost model knows.
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 --backend tpu -o " + plan), 1,
         "no device profile for backend 'tpu'");
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 --backend cuda:0 -o " + plan), 0,
         "wrote");
  expect(run_remat("inspect " + plan), 0,
         "cost model:   copies 4.8e+10 bytes/s, compute 2e+13 FLOP/s");
}

static void train_prints_one_line_per_step_and_a_summary_when_piped(void**) {
  const Result r = run_remat(std::string("train ") + kMlp + " --batch 4 --steps 3");
  expect(r, 0, "step 1 loss ");
  expect(r, 0, "step 3 loss ");
  expect(r, 0, "trained 3 steps in");
}

static void an_arena_smaller_than_the_plan_is_refused_with_both_sizes(void**) {
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 1 --arena 1KiB"), 1,
         "arena region is 1024 bytes; the plan needs");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 1 --arena 1MiB"), 0,
         "trained 1 steps");
}

static void saved_parameters_load_back_unchanged(void**) {
  const std::string first = tmp("p1.safetensors"), second = tmp("p2.safetensors");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 5 --save-params " + first), 0,
         "saved parameters");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 0 --load-params " + first +
                   " --save-params " + second),
         0, "saved parameters");
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
  expect(
      run_remat(std::string("train mlp:layers=2,width=16,in=9,classes=3 --steps 0 --load-params ") +
                first),
      1, "'fc0.weight' is F32 [16, 8], the plan needs F32 (or BF16, F16) [16, 9]");
}

// --state makes a run resumable: a run stopped at step 3 and started again with the same
// command reaches --steps with the parameters of an uninterrupted run (sgd with momentum,
// dropout, sqrt); at --steps it has nothing left to do; a state of another plan is refused.
static void a_run_with_a_state_resumes_to_the_parameters_of_an_uninterrupted_run(void**) {
  const std::string base =
      std::string("mlp:layers=3,width=16,in=8,classes=3,dropout=0.2") +
      " --batch 4 --seed 2 --strategy sqrt --optimizer sgd:lr=0.1,momentum=0.9";
  const std::vector<uint8_t> straight = train_and_save(base + " --steps 7");
  const std::string state = tmp("run.state");
  std::remove(state.c_str());
  expect(run_remat("train " + base + " --steps 3 --state " + state + " --save-every 2"), 0,
         "saved the state at step 3");
  const Result resumed = run_remat("train " + base + " --steps 7 --state " + state +
                                   " --save-params " + tmp("resumed.safetensors"));
  expect(resumed, 0, "resumed from");
  expect(resumed, 0, "at step 3 of 7");
  expect(resumed, 0, "trained 4 steps");
  if (file_bytes(tmp("resumed.safetensors")) != straight)
    fail_msg("3 + 4 resumed steps differ from 7 straight");
  const Result done = run_remat("train " + base + " --steps 7 --state " + state);
  expect(done, 0, "at step 7 of 7");
  if (done.out.find("trained") != std::string::npos)
    fail_msg("a finished job trained again:\n%s", done.out.c_str());
  const std::string other =
      std::string("mlp:layers=3,width=16,in=8,classes=3,dropout=0.2") +
      " --batch 4 --seed 3 --strategy sqrt --optimizer sgd:lr=0.1,momentum=0.9";
  expect(run_remat("train " + other + " --steps 9 --state " + state), 1, "another plan");
  std::FILE* f = std::fopen(state.c_str(), "r+b");
  assert_non_null(f);
  std::fseek(f, 100, SEEK_SET);
  std::fputc(0x5A, f);
  std::fclose(f);
  expect(run_remat("train " + base + " --steps 9 --state " + state), 1, "state corrupt");
}

static void state_options_are_checked_before_the_first_step(void**) {
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --save-every 2"), 2,
         "--save-every needs --state");
  const Result r =
      run_remat(std::string("train ") + kMlp + " --batch 4 --steps 3 --state /nonexistent/dir/s");
  expect(r, 1, "/nonexistent/dir");
  if (r.out.find("step 1") != std::string::npos)
    fail_msg("a step ran before the check:\n%s", r.out.c_str());
  const Result p = run_remat(std::string("train ") + kMlp +
                             " --batch 4 --steps 3 --save-params /nonexistent/x.st");
  expect(p, 1, "/nonexistent");
  if (p.out.find("step 1") != std::string::npos)
    fail_msg("a step ran before the check:\n%s", p.out.c_str());
}

static void steps_zero_saves_the_initial_parameters(void**) {
  const std::string a = tmp("init-a.safetensors"), b = tmp("init-b.safetensors");
  expect(
      run_remat(std::string("train ") + kMlp + " --batch 4 --steps 0 --seed 7 --save-params " + a),
      0, "saved");
  expect(
      run_remat(std::string("train ") + kMlp + " --batch 4 --steps 0 --seed 7 --save-params " + b),
      0, "saved");
  remat::SafeTensorsFile x, y;
  std::string error;
  assert_true(remat::read_safetensors(a, &x, &error) && remat::read_safetensors(b, &y, &error));
  for (size_t i = 0; i < x.tensors.size(); ++i) assert_true(x.tensors[i].data == y.tensors[i].data);
}

// An exported model through every command that takes a MODEL, as a user runs them
// (docs/onnx.md); one the importer cannot take is exit code 1 and writes nothing.
static void onnx_models_compile_train_and_size(void**) {
#if REMAT_TEST_HAVE_ONNX
  const std::string mlp =
      std::string(REMAT_TEST_DATA_DIR) + "/onnx/mlp.onnx";  // x [B, 8], 4 classes
  const std::string plan = tmp("mlp-onnx.rplan");
  expect(run_remat("compile " + mlp + " --batch 4 --loss cross_entropy --strategy sqrt -o " + plan),
         0, "wrote");
  remat::SafeTensorsFile data;
  std::vector<float> x(3 * 4 * 8, 0.5f);
  std::vector<int32_t> labels(3 * 4, 2);
  auto bytes = [](const void* p, size_t n) {
    return std::vector<uint8_t>(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  data.tensors.push_back({"x", "F32", {3, 4, 8}, bytes(x.data(), x.size() * 4)});
  data.tensors.push_back({"labels", "I32", {3, 4}, bytes(labels.data(), labels.size() * 4)});
  std::string error;
  assert_true(remat::write_safetensors(tmp("onnx-data.safetensors"), data, &error));
  expect(run_remat("train " + plan + " --steps 3 --data " + tmp("onnx-data.safetensors")), 0,
         "trained 3 steps");
  expect(run_remat("train " + mlp + " --loss cross_entropy --batch 4 --steps 3 --data " +
                   tmp("onnx-data.safetensors")),
         0, "trained 3 steps");
  expect(run_remat("train " + mlp + " --loss cross_entropy --batch 4 --steps 3"), 1, "give --data");
  // Token ids as PyTorch writes them (I64) for the i32 binding of an int64 graph input.
  const std::string bert =
      std::string(REMAT_TEST_DATA_DIR) + "/onnx/bert.onnx";  // tokens [B, 6], vocab 20
  std::vector<int64_t> tokens(2 * 4 * 6, 7);
  std::vector<int32_t> classes(2 * 4, 1);
  remat::SafeTensorsFile ids;
  ids.tensors.push_back({"tokens", "I64", {2, 4, 6}, bytes(tokens.data(), tokens.size() * 8)});
  ids.tensors.push_back({"labels", "I32", {2, 4}, bytes(classes.data(), classes.size() * 4)});
  assert_true(remat::write_safetensors(tmp("onnx-ids.safetensors"), ids, &error));
  expect(run_remat("train " + bert + " --loss cross_entropy --batch 4 --steps 2 --data " +
                   tmp("onnx-ids.safetensors")),
         0, "trained 2 steps");
  tokens[5] = int64_t{1} << 40;
  ids.tensors[0].data = bytes(tokens.data(), tokens.size() * 8);
  assert_true(remat::write_safetensors(tmp("onnx-ids.safetensors"), ids, &error));
  expect(run_remat("train " + bert + " --loss cross_entropy --batch 4 --steps 2 --data " +
                   tmp("onnx-ids.safetensors")),
         1, "'tokens' element 5 is 1099511627776");
  // A BOOL tensor (as numpy writes a padding mask) widens to an i32 binding's 0s and 1s.
  std::vector<uint8_t> flags(2 * 4 * 6, 1);
  ids.tensors[0] = {"tokens", "BOOL", {2, 4, 6}, flags};
  assert_true(remat::write_safetensors(tmp("onnx-ids.safetensors"), ids, &error));
  expect(run_remat("train " + bert + " --loss cross_entropy --batch 4 --steps 2 --data " +
                   tmp("onnx-ids.safetensors")),
         0, "trained 2 steps");
  ids.tensors[0].data[3] = 2;
  assert_true(remat::write_safetensors(tmp("onnx-ids.safetensors"), ids, &error));
  expect(run_remat("train " + bert + " --loss cross_entropy --batch 4 --steps 2 --data " +
                   tmp("onnx-ids.safetensors")),
         1, "'tokens' element 3 is 2, not a BOOL (0 or 1)");
  expect(run_remat("size " + mlp + " --loss cross_entropy --batch 4"), 0, "sqrt");
  expect(run_remat("compile " + mlp + " --batch 4 -o " + plan), 1, "--loss cross_entropy");
  const std::string unsupported = tmp("unsupported.rplan");
  std::remove(unsupported.c_str());
  expect(run_remat("compile " + std::string(REMAT_TEST_DATA_DIR) +
                   "/onnx/unsupported.onnx --batch 4 --loss mse -o " + unsupported),
         1, "(TopK, opset 17)");
  assert_int_equal(access(unsupported.c_str(), F_OK), -1);
#else
  skip();
#endif
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
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --data " + tmp("data.safetensors")),
         0, "trained 2 steps");
  labels[3] = 3;  // classes=3: out of range
  data.tensors[1].data = bytes(labels.data(), labels.size() * 4);
  assert_true(remat::write_safetensors(tmp("bad-labels.safetensors"), data, &error));
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --data " +
                   tmp("bad-labels.safetensors")),
         1, "value out of range");
  data.tensors.pop_back();
  assert_true(remat::write_safetensors(tmp("no-labels.safetensors"), data, &error));
  expect(
      run_remat(std::string("train ") + kMlp + " --batch 4 --data " + tmp("no-labels.safetensors")),
      1, "no tensor 'labels'");
  expect(run_remat(std::string("train ") + kMlp + " --batch 5 --data " + tmp("data.safetensors")),
         1, "expected F32 [STEPS, 5, 8]");
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
    const bool listed =
        r.out.find(device) != std::string::npos || r.out.find(unavailable) != std::string::npos;
    if (b.built != listed || b.built == (r.out.find(absent) != std::string::npos)) {
      fail_msg("%s is %sin this build, but `remat devices` printed:\n%s", b.name,
               b.built ? "" : "not ", r.out.c_str());
    }
  }
  if (REMAT_TEST_HAVE_CUDA && r.out.find("\ncuda:0") == std::string::npos) {
    expect(r, 0, "(cuda: unavailable: cudaGetDeviceCount failed: cuda");  // names the CUDA error
  }
}

// Listing CUDA devices asks cudart only: the command never maps cuBLAS (~0.3 s to load).
static void devices_does_not_load_cublas(void**) {
  const Result r = run_remat("devices", "LD_DEBUG=files");
  assert_int_equal(r.code, 0);
  if (REMAT_TEST_HAVE_CUDA && r.out.find("libcudart") == std::string::npos) {
    fail_msg("LD_DEBUG=files shows no libcudart: the check cannot see loads here:\n%.2000s",
             r.out.c_str());
  }
  if (r.out.find("libcublas") != std::string::npos) fail_msg("`remat devices` loaded cuBLAS");
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(no_arguments_or_an_unknown_command_is_a_usage_error),
      cmocka_unit_test(version_prints_the_release_and_the_api),
      cmocka_unit_test(bad_options_are_usage_errors_naming_the_option),
      cmocka_unit_test(a_bad_model_fails_with_a_message_naming_the_key),
      cmocka_unit_test(a_bad_optimizer_is_a_usage_error_naming_the_optimizer),
      cmocka_unit_test(a_diverging_run_stops_or_skips_and_never_saves_nan),
      cmocka_unit_test(sizes_in_tib_and_tb_are_accepted),
      cmocka_unit_test(compile_into_an_unwritable_place_fails_naming_it_and_keeps_the_old_file),
      cmocka_unit_test(size_refuses_an_unwritable_timeline_before_sizing),
      cmocka_unit_test(compile_then_inspect_reports_the_plan),
      cmocka_unit_test(a_corrupted_or_missing_plan_is_a_clear_failure),
      cmocka_unit_test(train_prints_one_line_per_step_and_a_summary_when_piped),
      cmocka_unit_test(an_arena_smaller_than_the_plan_is_refused_with_both_sizes),
      cmocka_unit_test(saved_parameters_load_back_unchanged),
      cmocka_unit_test(steps_zero_saves_the_initial_parameters),
      cmocka_unit_test(a_run_with_a_state_resumes_to_the_parameters_of_an_uninterrupted_run),
      cmocka_unit_test(state_options_are_checked_before_the_first_step),
      cmocka_unit_test(data_files_feed_the_steps_and_wrong_ones_are_named),
      cmocka_unit_test(onnx_models_compile_train_and_size),
      cmocka_unit_test(bert_aliases_train_on_the_synthetic_task),
      cmocka_unit_test(devices_names_every_backend_and_says_why_one_is_unavailable),
      cmocka_unit_test(devices_does_not_load_cublas),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
