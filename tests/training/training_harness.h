// Shared helpers for training tests: compile a template, open a session, feed a batch.
#ifndef REMAT_TESTS_TRAINING_HARNESS_H_
#define REMAT_TESTS_TRAINING_HARNESS_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "remat/remat.h"

/// A compiled plan with an open session over session-allocated memory.
struct TrainingRun {
  std::vector<uint8_t> bytes;
  remat_plan* plan = nullptr;
  remat_session* session = nullptr;

  /// Compiles |model| at |batch| with |optimizer| and |seed| and opens a CPU session of
  /// |threads| threads (0: the machine's); fails the test on any error.
  TrainingRun(const std::string& model, int64_t batch, const std::string& optimizer,
              uint64_t seed = 0, const std::string& strategy = "none", uint64_t budget = 0,
              uint64_t device_budget = 0, size_t threads = 0);
  /// Compiles |options| and opens a CPU session of |threads| threads; fails the test on any error.
  explicit TrainingRun(const remat::compiler::CompileOptions& options, size_t threads = 0);
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  /// Sets binding |name| from |bytes|; fails the test on error.
  void set(const std::string& name, const void* data, size_t size);
  /// Runs one step; fails the test on error; returns the loss.
  float step();
  /// All parameters, then all buffers (batch norms' running statistics), concatenated in plan
  /// order, as raw bytes.
  std::vector<uint8_t> params() const;
  /// Parameter |name| as floats.
  std::vector<float> param(const std::string& name) const;
};

#endif  // REMAT_TESTS_TRAINING_HARNESS_H_
