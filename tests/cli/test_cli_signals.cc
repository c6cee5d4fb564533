// SIGINT and SIGTERM, stale temporary files and file arguments that name one file (issue 40):
// an interrupted `remat train` leaves no temporary file and a state that resumes to the
// uninterrupted run's bytes; temporaries of dead writers go at the next start; two arguments
// naming one file, one of them written, are refused before any step.
#include "tests/cmocka_cpp.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli/interrupts.h"
#include "io/atomic_file.h"
#include "tests/cli/cli_runner.h"

using remat_test::expect;
using remat_test::file_bytes;
using remat_test::Result;
using remat_test::run_remat;
using remat_test::tmp;

namespace {

// Small enough that a step and a save of its state take about a millisecond each, so that
// random moments often fall in a save.
const char kModel[] = "mlp:layers=2,width=32,in=16,classes=4 --batch 8 --threads 1";
constexpr int kSteps = 40;
constexpr int kTrials = 100;

std::string directory_of(const std::string& path) { return path.substr(0, path.rfind('/')); }
std::string base_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The temporary files of |path| (".NAME.tmp.*" beside it) that exist now.
std::vector<std::string> temporaries_of(const std::string& path) {
  std::vector<std::string> found;
  const std::string prefix = "." + base_of(path) + ".tmp.";
  DIR* dir = opendir(directory_of(path).c_str());
  if (dir == nullptr) fail_msg("cannot list %s", directory_of(path).c_str());
  while (const dirent* e = readdir(dir)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) found.push_back(e->d_name);
  }
  closedir(dir);
  return found;
}

void expect_no_temporaries(const std::string& path, const std::string& log) {
  const std::vector<std::string> left = temporaries_of(path);
  if (!left.empty())
    fail_msg("%s left beside %s; remat said:\n%s", left[0].c_str(), path.c_str(), log.c_str());
}

std::string read_text(const std::string& path) {
  const std::vector<uint8_t> bytes = file_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(text.data(), 1, text.size(), f) != text.size())
    fail_msg("cannot write %s", path.c_str());
  std::fclose(f);
}

// Starts `remat train MODEL ARGS` (words split at spaces, no shell) with stdout and stderr to
// |log|; returns its process id.
pid_t start_train(const std::string& args, const std::string& log) {
  std::vector<std::string> words = {REMAT_CLI, "train"};
  const std::string line = std::string(kModel) + " " + args;
  for (size_t at = 0; at < line.size();) {
    const size_t space = line.find(' ', at);
    const size_t end = space == std::string::npos ? line.size() : space;
    if (end > at) words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(&w[0]);
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) fail_msg("fork: %s", std::strerror(errno));
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(125);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(126);
  }
  return pid;
}

// Waits until process |pid| catches SIGINT and SIGTERM (its handlers are installed), so that a
// signal sent then is remat's to handle; fails after 20 s.
void wait_for_handlers(pid_t pid) {
  const unsigned long long wanted = (1ull << (SIGINT - 1)) | (1ull << (SIGTERM - 1));
  const std::string status = "/proc/" + std::to_string(pid) + "/status";
  for (int i = 0; i < 200000; ++i) {
    FILE* f = std::fopen(status.c_str(), "r");
    if (f == nullptr) fail_msg("cannot read %s", status.c_str());
    char line[256];
    unsigned long long caught = 0;
    while (std::fgets(line, sizeof(line), f) != nullptr)
      if (std::sscanf(line, "SigCgt: %llx", &caught) == 1) break;
    std::fclose(f);
    if ((caught & wanted) == wanted) return;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  fail_msg("process %d never caught SIGINT and SIGTERM", static_cast<int>(pid));
}

// The exit code of process |pid|; fails when a signal ended it.
int exit_code(pid_t pid, const std::string& log) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) fail_msg("waitpid: %s", std::strerror(errno));
  if (!WIFEXITED(status))
    fail_msg("remat was killed by signal %d:\n%s", WTERMSIG(status), read_text(log).c_str());
  return WEXITSTATUS(status);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The id of a process that has exited and been reaped: no process has it now (until the
// system hands it out again, which takes a full round of process ids).
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// A file at |path| whose last change was |age| seconds ago (negative: in the future).
void make_file_aged(const std::string& path, long age) {
  write_text(path, "partial");
  const timeval now = {time(nullptr) - age, 0};
  const timeval times[2] = {now, now};
  if (utimes(path.c_str(), times) != 0) fail_msg("utimes %s", path.c_str());
  remat_test::scratch_files().push_back(path);
}

// In a child process: opens a writer on |target|, writes a byte, raises |signal_number| with
// the command's handlers installed (deferring first when |defer|); returns the child's exit
// code, with its stderr in |log|.
int raise_in_child(const std::string& target, int signal_number, bool defer,
                   const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDERR_FILENO);
    remat::cli::install_interrupt_handlers("test");
    if (defer) remat::cli::defer_interrupts();
    remat::io::AtomicFileWriter writer;
    if (!writer.open(target) || !writer.write("x", 1)) _exit(120);
    raise(signal_number);
    // Reached only when deferring: the writer finishes, and the caller sees what was recorded.
    if (!writer.commit()) _exit(121);
    _exit(remat::cli::pending_interrupt() == signal_number ? 42 : 122);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) fail_msg("the child was killed by signal %d", WTERMSIG(status));
  return WEXITSTATUS(status);
}

}  // namespace

// Outside a deferring loop (compile, size, train before its first step) a signal ends remat
// at once with 128 + its number, removing the temporary file of the write in progress.
static void a_signal_removes_the_open_temporary_and_exits_128_plus_its_number(void**) {
  const std::string target = tmp("raised.out");
  const std::string log = tmp("raised.log");
  struct Case {
    int signal_number;
    int code;
    const char* message;
  };
  for (const Case c : {Case{SIGTERM, 143, "remat test: interrupted by SIGTERM\n"},
                       Case{SIGINT, 130, "remat test: interrupted by SIGINT\n"}}) {
    std::remove(target.c_str());
    assert_int_equal(raise_in_child(target, c.signal_number, false, log), c.code);
    assert_string_equal(read_text(log).c_str(), c.message);
    expect_no_temporaries(target, "");
    assert_int_not_equal(access(target.c_str(), F_OK), 0);  // the target was never written
  }
}

// Deferred (train's steps), a signal is only recorded: the write in progress is finished.
static void a_deferred_signal_is_recorded_and_the_write_finishes(void**) {
  const std::string target = tmp("deferred.out");
  const std::string log = tmp("deferred.log");
  for (const int signal_number : {SIGINT, SIGTERM}) {
    std::remove(target.c_str());
    assert_int_equal(raise_in_child(target, signal_number, true, log), 42);
    assert_string_equal(read_text(target).c_str(), "x");
    expect_no_temporaries(target, "");
  }
}

// The target: 100 SIGTERMs and SIGINTs at random moments of a run that saves its state
// after every step. Each run exits 143 or 130 saying so, leaves no temporary file, and its
// state resumes to the uninterrupted run's parameters, byte for byte.
static void interrupted_runs_leave_no_temporary_and_resume_byte_identically(void**) {
  const std::string state = tmp("signals.state");
  const std::string params = tmp("signals.safetensors");
  const std::string reference_params = tmp("signals-reference.safetensors");
  const std::string log = tmp("signals.log");
  const std::string steps = " --steps " + std::to_string(kSteps);
  const std::string flags = "--state " + state + " --save-every 1" + steps;

  // The uninterrupted run, twice: its parameters, and how long it runs once its handlers are in
  // place (the faster run), which is when the signals below are sent: process start-up (long
  // under the sanitizers) is not part of it.
  double run_seconds = 1e9;
  for (int i = 0; i < 2; ++i) {
    std::remove(state.c_str());
    const pid_t pid = start_train(flags + " --save-params " + reference_params, log);
    wait_for_handlers(pid);
    const auto start = std::chrono::steady_clock::now();
    assert_int_equal(exit_code(pid, log), 0);
    run_seconds = std::min(run_seconds, seconds_since(start));
  }
  const std::vector<uint8_t> reference = file_bytes(reference_params);

  std::mt19937 random(40);
  std::uniform_real_distribution<double> moment(0.0, 1.1 * run_seconds);
  int finished = 0, before_first_step = 0, at_a_step = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const int signal_number = trial % 2 == 0 ? SIGTERM : SIGINT;
    const char* name = signal_number == SIGTERM ? "SIGTERM" : "SIGINT";
    std::remove(state.c_str());
    std::remove(params.c_str());
    const pid_t pid = start_train(flags + " --save-params " + params, log);
    wait_for_handlers(pid);
    std::this_thread::sleep_for(std::chrono::duration<double>(moment(random)));
    kill(pid, signal_number);
    const int code = exit_code(pid, log);
    const std::string said = read_text(log);
    expect_no_temporaries(state, said);
    expect_no_temporaries(params, said);
    long long step = -1;
    if (code == 0) {
      ++finished;  // it ended before the signal came
    } else {
      if (code != 128 + signal_number ||
          said.find(std::string("interrupted by ") + name) == std::string::npos) {
        fail_msg("trial %d: %s gave exit %d:\n%s", trial, name, code, said.c_str());
      }
      const size_t at = said.find(std::string("interrupted by ") + name + " at step ");
      if (at == std::string::npos) {
        ++before_first_step;
      } else {
        ++at_a_step;
        remat_test::read_after(said, " at step ", "%lld", &step);
        if (said.find("; state saved to " + state) == std::string::npos)
          fail_msg("trial %d: no state saved:\n%s", trial, said.c_str());
        // Only a signal during that last write lets the parameters be written (it finishes).
        if (said.find("saved parameters") != std::string::npos && step != kSteps)
          fail_msg("trial %d: an interrupted run wrote its parameters:\n%s", trial, said.c_str());
      }
    }
    const Result resumed =
        run_remat("train " + std::string(kModel) + " " + flags + " --save-params " + params);
    expect(resumed, 0, "saved parameters");
    if (step >= 0) {
      expect(resumed, 0,
             ("resumed from " + state + " at step " + std::to_string(step) + " of ").c_str());
    }
    if (file_bytes(params) != reference)
      fail_msg("trial %d: resumed parameters differ from the uninterrupted run's", trial);
  }
  print_message(
      "%d signals: %d stopped at a step boundary, %d before the first step, %d after "
      "the run ended (run %.3f s)\n",
      kTrials, at_a_step, before_first_step, finished, run_seconds);
  // Where each signal lands depends on timing; that some landed between steps does not.
  assert_true(at_a_step > 0);
}

// A temporary file of the state or the parameters whose writer is gone, and which is older
// than the run, is removed when train starts; the others stay.
static void train_removes_stale_temporaries_of_its_outputs_at_start(void**) {
  const std::string state = tmp("stale.state");
  const std::string params = tmp("stale.safetensors");
  const std::string dir = directory_of(state) + "/";
  const std::string dead = std::to_string(dead_pid());
  const std::string live = std::to_string(getpid());
  const std::string stale_state = dir + "." + base_of(state) + ".tmp." + dead + ".0123456789abcdef";
  const std::string stale_params =
      dir + "." + base_of(params) + ".tmp." + dead + ".fedcba9876543210";
  const std::vector<std::string> kept = {
      dir + "." + base_of(state) + ".tmp." + live + ".0123456789abcdef",       // a live writer's
      dir + "." + base_of(state) + ".tmp." + dead + ".00000000000000aa",       // newer than the run
      dir + "." + base_of(state) + ".tmp." + dead + ".0123",                   // not remat's name
      dir + "." + base_of(state) + ".tmp." + dead + ".0123456789ABCDEF",       // not remat's name
      dir + ".other" + base_of(state) + ".tmp." + dead + ".0123456789abcdef",  // another target's
  };
  std::remove(state.c_str());
  make_file_aged(stale_state, 3600);
  make_file_aged(stale_params, 60);
  for (size_t i = 0; i < kept.size(); ++i) make_file_aged(kept[i], i == 1 ? -3600 : 3600);

  const Result r = run_remat("train " + std::string(kModel) + " --steps 1 --state " + state +
                             " --save-params " + params);
  expect(r, 0,
         ("remat train: removed " + stale_state + ", left by a writer no longer running").c_str());
  expect(r, 0, ("remat train: removed " + stale_params).c_str());
  assert_int_not_equal(access(stale_state.c_str(), F_OK), 0);
  assert_int_not_equal(access(stale_params.c_str(), F_OK), 0);
  for (const std::string& k : kept) {
    if (access(k.c_str(), F_OK) != 0) fail_msg("%s was removed:\n%s", k.c_str(), r.out.c_str());
  }
}

// Every pair of train's file arguments with one written, the same file under one name, two
// names (./, symbolic and hard links) or a name not yet created: refused with exit code 2
// naming both, before any step, the files untouched. compile's and size's outputs likewise.
static void every_pair_of_file_arguments_naming_one_file_is_refused(void**) {
  const std::string file = tmp("collide.bin");
  const std::string plan = tmp("collide.rplan");
  const std::string onnx = tmp("collide.onnx");
  const std::string symlink_to_file = tmp("collide.link");
  const std::string hard_link = tmp("collide.hard");
  for (const std::string& f : {file, plan, onnx}) write_text(f, "keep me");
  std::remove(symlink_to_file.c_str());
  std::remove(hard_link.c_str());
  if (symlink(file.c_str(), symlink_to_file.c_str()) != 0 || link(file.c_str(), hard_link.c_str()))
    fail_msg("cannot link %s", file.c_str());

  const std::string model = std::string(kModel) + " --steps 1";
  const char* outputs[] = {"--state", "--save-params"};
  const char* inputs[] = {"--data", "--eval-data", "--load-params"};
  struct Case {
    std::string args;
    std::string first, second;  // the flags the message names
  };
  std::vector<Case> cases;
  cases.push_back(
      {model + " --state " + file + " --save-params " + file, "--state", "--save-params"});
  for (const char* out : outputs) {
    for (const char* in : inputs) {
      cases.push_back({model + " " + out + " " + file + " " + in + " " + file, out, in});
    }
    cases.push_back({plan + " --steps 1 " + out + " " + plan, out, "the plan"});
    cases.push_back({onnx + " --loss mse --steps 1 " + out + " " + onnx, out, "the model"});
  }
  // Two names of one file.
  cases.push_back({model + " --state " + file + " --data " + symlink_to_file, "--state", "--data"});
  cases.push_back({model + " --save-params " + hard_link + " --load-params " + file,
                   "--save-params", "--load-params"});
  const std::string absent = tmp("collide.absent");
  std::remove(absent.c_str());
  cases.push_back({model + " --state " + absent + " --save-params " + directory_of(absent) + "/./" +
                       base_of(absent),
                   "--state", "--save-params"});
  for (const Case& c : cases) {
    const Result r = run_remat("train " + c.args);
    expect(r, 2, (c.first + " and " + c.second + " name the same file").c_str());
    if (r.out.find("plan:") != std::string::npos) fail_msg("it began:\n%s", r.out.c_str());
  }
  assert_int_not_equal(access(absent.c_str(), F_OK), 0);
  for (const std::string& f : {file, plan, onnx})
    assert_string_equal(read_text(f).c_str(), "keep me");

  // compile and size: their outputs, and an ONNX model they read.
  const std::string header = tmp("collide.h");
  std::remove(header.c_str());
  expect(run_remat("compile mlp:layers=1,width=4,in=4,classes=2 --batch 2 -o " + header +
                   " --emit-c " + header),
         2, "-o and --emit-c name the same file");
  expect(run_remat("compile " + onnx + " --loss mse --batch 2 -o " + onnx), 2,
         "-o and the model name the same file");
  expect(run_remat("size " + onnx + " --loss mse --batch 2 --timeline " + onnx), 2,
         "--timeline and the model name the same file");
  assert_string_equal(read_text(onnx).c_str(), "keep me");
  assert_int_not_equal(access(header.c_str(), F_OK), 0);
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_signal_removes_the_open_temporary_and_exits_128_plus_its_number),
      cmocka_unit_test(a_deferred_signal_is_recorded_and_the_write_finishes),
      cmocka_unit_test(interrupted_runs_leave_no_temporary_and_resume_byte_identically),
      cmocka_unit_test(train_removes_stale_temporaries_of_its_outputs_at_start),
      cmocka_unit_test(every_pair_of_file_arguments_naming_one_file_is_refused),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
