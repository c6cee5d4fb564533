// Runs the `remat` command as a user does, for the CLI tests: exit code and output, and
// scratch files of this process.
#ifndef REMAT_TESTS_CLI_CLI_RUNNER_H_
#define REMAT_TESTS_CLI_CLI_RUNNER_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/cmocka_cpp.h"

namespace remat_test {

/// What a run of remat gave.
struct Result {
  int code;         // exit code; 128 + signal if it died of one
  std::string out;  // stdout and stderr together
};

// Runs `ENV remat ARGS` through the shell with stdout and stderr captured; |env| is a list of
// VAR=value words set for remat only (not for the shell).
inline Result run_remat(const std::string& args, const std::string& env = "") {
  const std::string command =
      env + (env.empty() ? "" : " ") + std::string(REMAT_CLI) + " " + args + " 2>&1";
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

/// Fails the test unless |r| exited with |code| and printed |needle|.
inline void expect(const Result& r, int code, const char* needle) {
  if (r.code != code || r.out.find(needle) == std::string::npos) {
    fail_msg("expected exit %d and '%s', got exit %d:\n%s", code, needle, r.code, r.out.c_str());
  }
}

// Scratch files of this process (two runs of the suite at once must not share files), removed
// when it exits.
inline std::vector<std::string>& scratch_files() {
  static std::vector<std::string> files;
  return files;
}
/// A scratch file path of this process called |name|, removed when the process exits.
inline std::string tmp(const std::string& name) {
  if (scratch_files().empty()) {
    atexit([] {
      for (const std::string& f : scratch_files()) remove(f.c_str());
    });
  }
  const std::string path =
      std::string(REMAT_TEST_TMP) + "/cli-" + std::to_string(getpid()) + "-" + name;
  scratch_files().push_back(path);
  return path;
}

// The number after |label| in |text| (scanned with |format|); fails the test when it is missing.
template <typename T>
void read_after(const std::string& text, const char* label, const char* format, T* out) {
  const size_t at = text.find(label);
  if (at == std::string::npos ||
      std::sscanf(text.c_str() + at + std::strlen(label), format, out) != 1) {
    fail_msg("no '%s' figure in:\n%s", label, text.c_str());
  }
}

// The whole file at |path|; fails the test when it cannot be read.
inline std::vector<uint8_t> file_bytes(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail_msg("cannot open %s", path.c_str());
  std::vector<uint8_t> out;
  uint8_t buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
    out.insert(out.end(), buffer, buffer + n);
  std::fclose(f);
  return out;
}

// Runs `remat train MODEL FLAGS --save-params FILE` and returns the bytes of the file it saved
// (removed first, so a run that saves nothing cannot pass on an old file).
inline std::vector<uint8_t> train_and_save(const std::string& model_and_flags) {
  const std::string path = tmp("identity.safetensors");
  std::remove(path.c_str());
  expect(run_remat("train " + model_and_flags + " --save-params " + path), 0, "saved parameters");
  return file_bytes(path);
}

}  // namespace remat_test

#endif  // REMAT_TESTS_CLI_CLI_RUNNER_H_
