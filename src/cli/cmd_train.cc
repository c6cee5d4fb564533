// `remat train`: compile (or load) a plan, bind a session, feed batches, report progress.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>

#include "io/atomic_file.h"
#include "cli/batches.h"
#include "cli/command_flags.h"
#include "cli/commands.h"
#include "cli/evaluation.h"
#include "cli/interrupts.h"
#include "cli/lr_schedule.h"
#include "cli/params_file.h"
#include "cli/path_collisions.h"
#include "cli/rank_communicator.h"
#include "io/safetensors.h"
#include "cli/session_calls.h"
#include "comm/mpi_communicator.h"
#include "compiler/templates/aliases.h"
#include "plan/ops.h"
#include "plan/plan_generated.h"
#include "remat/remat.h"

namespace remat {
namespace cli {
namespace {

struct PlanCloser {
  void operator()(remat_plan* p) const { remat_plan_close(p); }
};
struct SessionDestroyer {
  void operator()(remat_session* s) const { remat_session_destroy(s); }
};
struct ArenaFree {
  void operator()(void* p) const { free(p); }
};

// Seconds a rank of data-parallel training waits for a bucket's sum before it gives up (a rank
// that failed or was killed never sends its part): --rank-timeout's default.
constexpr double kDefaultRankTimeout = 300.0;

// FNV-1a's starting value.
constexpr uint64_t kFnvOffsetBasis = 1469598103934665603ull;

// FNV-1a of |bytes| continued from |h|: data-parallel ranks compare such hashes of their plans
// and parameters.
uint64_t fnv1a(const std::vector<uint8_t>& bytes, uint64_t h = kFnvOffsetBasis) {
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

// FNV-1a of every parameter and buffer of |session|: data-parallel ranks check that they start
// from the same values.
uint64_t parameters_hash(remat_session* session, const remat_plan* plan) {
  uint64_t h = kFnvOffsetBasis;
  for (remat_binding_kind kind : {REMAT_BINDING_PARAM, REMAT_BINDING_BUFFER}) {
    uint32_t count = 0;
    remat_plan_binding_count(plan, kind, &count);
    for (uint32_t i = 0; i < count; ++i) {
      remat_tensor_info t;
      remat_plan_binding(plan, kind, i, &t);
      std::vector<uint8_t> bytes(t.bytes);
      check(session, remat_session_read_param(session, t.name, bytes.data(), bytes.size()),
            std::string("reading ") + t.name);
      h = fnv1a(bytes, h);
    }
  }
  return h;
}

// Whether the (verified) plan |bytes| is data-parallel: it sums gradients over ranks.
bool plan_is_data_parallel(const std::vector<uint8_t>& bytes) {
  const auto* ops = fb::GetPlan(bytes.data())->ops();
  for (uint32_t i = 0; ops != nullptr && i < ops->size(); ++i) {
    if (ops->Get(i)->code() == static_cast<uint16_t>(OpCode::kAllreduceStart)) return true;
  }
  return false;
}

// |bytes| (at least 1) of host memory aligned to |alignment| for a caller-sized arena, or nullptr.
void* allocate_arena(size_t bytes, size_t alignment) {
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* pointer = nullptr;
  if (posix_memalign(&pointer, alignment, bytes == 0 ? 1 : bytes) != 0) return nullptr;
  return pointer;
}

// Monotonic time in nanoseconds, for the rates the progress lines print.
uint64_t now_ns() {
  const auto since = std::chrono::steady_clock::now().time_since_epoch();
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(since).count());
}

// The training state at |path| through the C API's callbacks: written to a temporary file that
// replaces |path| only when complete (io/atomic_file.h), read with pread.
int write_state_chunk(void* context, const void* data, size_t bytes) {
  return static_cast<io::AtomicFileWriter*>(context)->write(data, bytes) ? 0 : 1;
}

int read_state_chunk(void* context, uint64_t offset, void* data, size_t bytes) {
  const int fd = *static_cast<const int*>(context);
  uint8_t* at = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = pread(fd, at, bytes, static_cast<off_t>(offset));
    if (n <= 0) return 1;
    at += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return 0;
}

// Saves |session|'s state to |path| atomically; an empty |path| (no --state, or a rank of
// data-parallel training other than 0, which writes nothing) saves nothing.
void save_state(remat_session* session, const std::string& path) {
  if (path.empty()) return;
  io::AtomicFileWriter writer;
  if (!writer.open(path)) throw Failure(writer.error());
  const remat_status saved = remat_session_save_state(session, write_state_chunk, &writer);
  // A write that failed (a full disk) says why in the writer's message, which the runtime's
  // "the writer failed" does not carry.
  if (saved == REMAT_ERROR_CALLBACK && !writer.error().empty())
    throw Failure("saving the state: " + writer.error());
  check(session, saved, "saving the state to " + path);
  if (!writer.commit()) throw Failure(writer.error());
}

// Loads the state at |path| into |session|; returns false when there is no file there yet.
bool load_state(remat_session* session, const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return false;
  if (fd < 0) throw Failure(path + ": cannot open the state: " + std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    throw Failure(path + ": not a regular file");
  }
  const remat_status status =
      remat_session_load_state(session, read_state_chunk, &fd, static_cast<uint64_t>(info.st_size));
  close(fd);
  check(session, status, "loading the state " + path);
  return true;
}

// Fails now, before any step, when |flag|'s file could not be written at the end.
void check_output(const Args& args, const std::string& flag) {
  if (!args.has(flag)) return;
  std::string error;
  if (!io::check_writable(args.text(flag, ""), &error)) throw Failure(flag + ": " + error);
}

// Refuses, before any work, two file arguments of |args| that name one file while one of them is
// written: the state or the parameters would replace the other, or an input.
void refuse_colliding_files(const Args& args, const std::string& source) {
  std::vector<FileArgument> files;
  for (const char* flag : {"--state", "--save-params"})
    if (args.has(flag)) files.push_back({flag, args.text(flag, ""), true});
  for (const char* flag : {"--data", "--eval-data", "--load-params"})
    if (args.has(flag)) files.push_back({flag, args.text(flag, ""), false});
  add_model_file(source, &files);
  cli::refuse_colliding_files(files);
}

// Removes the temporary files that writers no longer running left beside |flag|'s file, saying
// so on stderr.
void remove_stale_temporaries(const Args& args, const std::string& flag, time_t started) {
  if (!args.has(flag)) return;
  for (const std::string& removed : io::remove_stale_temporaries(args.text(flag, ""), started)) {
    std::fprintf(stderr, "remat train: removed %s, left by a writer no longer running\n",
                 removed.c_str());
  }
}

// The share of a run's time --state's periodic saves may take when --save-every is not given.
constexpr double kAutoSaveShare = 0.01;

// Steps between saves so that a save of |save_ns| costs at most kAutoSaveShare of the steps'
// time (|step_ns| each): at least 1, at most INT32_MAX.
int64_t auto_save_interval(double save_ns, double step_ns) {
  const double steps = std::ceil(save_ns / (kAutoSaveShare * (step_ns > 1.0 ? step_ns : 1.0)));
  return steps < 1.0 ? 1 : steps > INT32_MAX ? INT32_MAX : static_cast<int64_t>(steps);
}

// Ends a run that |signal_number| interrupted, at a step boundary: saves the state to
// |state_path| when given and the file does not hold this step already (|saved_at|: the step
// count it holds, -1 if unknown), says so on stderr, and returns the exit code, 128 +
// |signal_number|.
// |nothing_saved|: why no state is saved when |state_path| is empty.
int stop_interrupted(remat_session* session, int signal_number, const std::string& state_path,
                     int64_t saved_at, const char* nothing_saved) {
  const int64_t step = static_cast<int64_t>(remat_session_step_count(session));
  if (!state_path.empty() && saved_at != step) save_state(session, state_path);
  std::fflush(stdout);
  std::fprintf(stderr, "remat train: interrupted by %s at step %lld; %s\n",
               signal_name(signal_number), static_cast<long long>(step),
               state_path.empty() ? nothing_saved : ("state saved to " + state_path).c_str());
  return 128 + signal_number;
}

// Evaluates |count| batches of |batch| samples from |batches| and prints the figures, after
// |step| steps.
void print_eval(remat_session* session, const remat_plan* plan, const Batches& batches,
                int64_t count, int64_t batch, int64_t step) {
  const EvalResult r = evaluate(session, plan, batches, count, batch);
  if (r.has_accuracy) {
    std::printf("eval at step %lld: loss %.6f, accuracy %.2f%% (%lld of %lld samples)\n",
                static_cast<long long>(step), r.loss,
                100.0 * static_cast<double>(r.correct) / static_cast<double>(r.samples),
                static_cast<long long>(r.correct), static_cast<long long>(r.samples));
  } else {
    std::printf("eval at step %lld: loss %.6f (%lld samples)\n", static_cast<long long>(step),
                r.loss, static_cast<long long>(r.samples));
  }
  std::fflush(stdout);
}

}  // namespace

int run_train(const std::vector<std::string>& argv) {
  const Args args = parse_args("train", argv);
  if (args.positional().size() != 1)
    throw UsageError("train takes exactly one MODEL or FILE.rplan");
  const std::string source = args.positional()[0];
  const bool is_plan_file =
      source.size() > 6 && source.compare(source.size() - 6, 6, ".rplan") == 0;
  const time_t started = time(nullptr);

  check_output(args, "--save-params");
  check_output(args, "--state");
  refuse_colliding_files(args, source);
  remove_stale_temporaries(args, "--save-params", started);
  remove_stale_temporaries(args, "--state", started);
  if (args.has("--save-every") && !args.has("--state"))
    throw UsageError("--save-every needs --state FILE");
  // Without --save-every, --state saves after the first step and then every N steps, N chosen
  // from that save's time so that saving costs at most kAutoSaveShare of the run (below).
  int64_t save_every = args.integer("--save-every", 1, INT32_MAX, 0);
  const bool auto_save = args.has("--state") && !args.has("--save-every");
  const std::string on_nonfinite = args.text("--on-nonfinite", "stop");
  if (on_nonfinite != "stop" && on_nonfinite != "skip") {
    throw UsageError("--on-nonfinite '" + on_nonfinite + "': expected stop or skip");
  }
  const int64_t eval_every = args.integer("--eval-every", 1, INT32_MAX, 0);
  const bool evaluating = eval_every > 0 || args.has("--eval-data");
  if (args.has("--eval-batches") && !evaluating)
    throw UsageError("--eval-batches needs --eval-every or --eval-data");
  if (evaluating && args.has("--data") && !args.has("--eval-data")) {
    throw UsageError("--eval-every with --data needs --eval-data FILE (held-out batches)");
  }
  const bool scheduled = args.has("--lr-schedule");
  const LrSchedule schedule =
      scheduled ? parse_lr_schedule(args.text("--lr-schedule", "")) : LrSchedule();

  std::vector<uint8_t> bytes;
  if (is_plan_file) {
    for (const std::string& f : kCompileFlags) {
      if (args.has(f))
        throw UsageError(f + " applies when compiling a MODEL, not to a compiled plan");
    }
    bytes = read_plan_file(source);
  } else {
    compiler::CompileResult compiled = compiler::compile(compile_options(args, source));
    for (const std::string& w : compiled.report.warnings)
      std::fprintf(stderr, "remat: warning: %s\n", w.c_str());
    bytes = std::move(compiled.plan);
  }
  char message[512];
  remat_plan* raw_plan = nullptr;
  const remat_status opened =
      remat_plan_open(bytes.data(), bytes.size(), &raw_plan, message, sizeof(message));
  if (opened != REMAT_OK)
    throw Failure(source + ": " + remat_status_string(opened) + ": " + message);
  std::unique_ptr<remat_plan, PlanCloser> plan(raw_plan);
  // A data-parallel plan trains as one rank of mpirun's (docs/data-parallel.md): every rank
  // compiles or reads the same plan, takes its share of each batch and sums gradients with the
  // others; rank 0 alone prints and writes files.
  std::unique_ptr<comm::MpiWorld> world;
  std::string backend = args.text("--backend", "cpu");
  if (plan_is_data_parallel(bytes)) {
    const double timeout = args.real("--rank-timeout", kDefaultRankTimeout);
    if (!(timeout > 0 && timeout <= 1e6))
      throw UsageError("--rank-timeout " + args.text("--rank-timeout", "") +
                       ": expected seconds in (0, 1e6]");
    const RankCommunicator ranks = rank_communicator(backend, args.text("--communicator", ""));
    try {
      world = comm::MpiWorld::join(timeout, ranks.nccl_device);
    } catch (const comm::NcclUnavailable& e) {
      if (!ranks.nccl_by_default) throw;
      throw std::runtime_error(std::string(e.what()) +
                               " (--communicator mpi sums host copies through MPI, without NCCL)");
    }
    if (world->rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) {
      std::fprintf(stderr, "remat: rank %d: cannot silence its output\n", world->rank());
      comm::MpiWorld::abort_all(1);
    }
    // NCCL on "cuda": each rank runs on the device its NCCL communicator opened.
    if (ranks.device_per_rank) backend = "cuda:" + std::to_string(world->communicator()->device);
  } else {
    for (const char* flag : {"--rank-timeout", "--communicator"}) {
      if (args.has(flag))
        throw UsageError(std::string(flag) + " applies to a data-parallel plan (--data-parallel)");
    }
  }
  const int rank = world ? world->rank() : 0, ranks = world ? world->size() : 1;
  if (world && !world->same_everywhere(fnv1a(bytes), "the plan")) {
    std::fprintf(stderr,
                 "remat: rank %d of %d: the ranks' plans differ (each rank must compile "
                 "the same MODEL with the same flags, or read the same plan)\n",
                 rank, ranks);
    comm::MpiWorld::abort_all(1);
  }
  // Where the state is saved: rank 0 alone writes it (save_state of an empty path saves nothing).
  const std::string state_path = args.text("--state", "");
  const std::string state_out = rank == 0 ? state_path : std::string();
  const char* not_saved =
      state_path.empty() ? "nothing saved (no --state)" : "rank 0 saves the state";
  // The signal a run was asked to stop by (SIGINT, SIGTERM), or 0. The ranks of data-parallel
  // training agree on it between steps (the highest any of them got), so that all stop after
  // the same step, rank 0 saves, and none is left inside a step waiting for the others' sums.
  auto interrupted = [&]() -> int {
    const int signal_number = pending_interrupt();
    return world ? static_cast<int>(world->highest_everywhere(static_cast<uint64_t>(signal_number),
                                                              "a stop signal"))
                 : signal_number;
  };
  auto train = [&]() -> int {
    // What the plan carries: the non-finite guard (`--finite-checks off` omits it), an eval
    // program.
    int has_finite_checks = 0, has_eval_program = 0;
    remat_plan_has_finite_checks(plan.get(), &has_finite_checks);
    remat_plan_has_eval_program(plan.get(), &has_eval_program);
    const bool guarded = has_finite_checks != 0;
    if (on_nonfinite == "skip" && !guarded) {
      throw UsageError("--on-nonfinite skip needs a plan with finite checks; " + source +
                       " was compiled with --finite-checks off");
    }

    if (evaluating && has_eval_program == 0) {
      uint32_t format_version = 0;
      remat_plan_format_version(plan.get(), &format_version);
      throw UsageError("evaluation needs a plan with an eval program; " + source +
                       " was compiled with --eval-program off" +
                       (format_version < 2 ? " (or by a remat older than format version 2)" : ""));
    }
    remat_plan_memory_info memory;
    remat_plan_memory(plan.get(), &memory);

    remat_session_options options;
    remat_session_options_init(&options);
    options.backend = backend.c_str();
    // CPU threads: 0 (the default) is one per hardware thread.
    options.threads = static_cast<size_t>(args.integer("--threads", 1, 1024, 0));
    options.communicator = world ? world->communicator() : nullptr;
    std::unique_ptr<void, ArenaFree> arena;
    if (args.has("--arena")) {
      options.arena_size = args.size("--arena", 0);
      arena.reset(allocate_arena(options.arena_size, memory.alignment));
      if (arena == nullptr)
        throw Failure("cannot allocate an arena of " + format_bytes(options.arena_size));
      options.arena = arena.get();
    }
    remat_session* raw_session = nullptr;
    const remat_status created =
        remat_session_create(plan.get(), &options, &raw_session, message, sizeof(message));
    if (created != REMAT_OK)
      throw Failure(std::string("creating the session: ") + remat_status_string(created) + ": " +
                    message);
    std::unique_ptr<remat_session, SessionDestroyer> session(raw_session);

    if (args.has("--load-params"))
      load_params(session.get(), plan.get(), args.text("--load-params", ""));
    const bool resumed = !state_path.empty() && load_state(session.get(), state_path);
    if (world &&
        !world->same_everywhere(remat_session_step_count(session.get()), "the first step")) {
      throw Failure("the ranks start at different steps: each must read the same --state file " +
                    state_path + " (a folder every rank sees)");
    }
    if (world &&
        !world->same_everywhere(parameters_hash(session.get(), plan.get()), "the parameters")) {
      throw Failure(
          "the ranks start from different parameters: each must read the same --load-params and "
          "--state files");
    }

    // What the plan records of how it was compiled: NULL model or strategy when it names none.
    const char* model = nullptr;
    const char* strategy = nullptr;
    uint32_t plan_batch = 0;
    uint64_t seed = 0;
    remat_plan_model(plan.get(), &model);
    remat_plan_strategy(plan.get(), &strategy);
    const bool has_provenance = remat_plan_batch(plan.get(), &plan_batch) == REMAT_OK;
    remat_plan_seed(plan.get(), &seed);
    auto synthetic = [&](uint64_t first, const char* flag) {
      if (model == nullptr) throw Failure(source + ": the plan names no model: give " + flag);
      // bert-base and bert-large are transformer templates by another name: the same task.
      return Batches::synthetic(compiler::expand_model_alias(model), plan_batch, seed, first, rank,
                                ranks);
    };
    const Batches data = args.has("--data")
                             ? Batches::from_file(args.text("--data", ""), plan.get(), rank, ranks)
                             : synthetic(0, "--data");
    std::unique_ptr<Batches> eval_data;
    if (args.has("--eval-data")) {
      eval_data.reset(
          new Batches(Batches::from_file(args.text("--eval-data", ""), plan.get(), rank, ranks)));
    } else if (evaluating) {
      eval_data.reset(new Batches(synthetic(Batches::kHeldOut, "--eval-data")));
    }
    const int64_t eval_limit = eval_data && eval_data->count() > 0 ? eval_data->count() : INT32_MAX;
    const int64_t eval_batches =
        args.integer("--eval-batches", 1, eval_limit,
                     eval_data && eval_data->count() > 0 ? eval_data->count() : 8);
    const int64_t steps =
        args.integer("--steps", 0, INT32_MAX, data.count() > 0 ? data.count() : 100);
    // Samples a step trains: every rank's (the rates printed are the whole job's).
    const int64_t batch = (has_provenance ? plan_batch : 1) * ranks;
    // Under mpirun a rank's output is a pseudo-terminal whatever mpirun's is: step lines there.
    const bool tty = !world && isatty(fileno(stdout)) != 0;

    std::printf("plan: %s, batch %lld, strategy %s; arena %s, persistent %s\n",
                model ? model : source.c_str(), static_cast<long long>(batch),
                strategy ? strategy : "?", format_bytes(memory.arena_bytes).c_str(),
                format_bytes(memory.persistent_bytes).c_str());
    if (world) {
      std::printf("data-parallel: %d ranks of batch %lld; the losses are their mean; sums: %s\n",
                  ranks, static_cast<long long>(batch / ranks),
                  sums_description(*world->communicator(), backend, bytes).c_str());
    }
    // A tf32 plan on a backend whose profile lacks TF32 products runs as float32: say so.
    remat_matmul_precision precision = REMAT_MATMUL_PRECISION_FP32;
    remat_plan_matmul_precision(plan.get(), &precision);
    if (precision == REMAT_MATMUL_PRECISION_TF32) {
      const DeviceProfile* profile = nullptr;
      try {
        profile = &compiler::target_profile(backend);
      } catch (const compiler::CompileError&) {}
      if (profile != nullptr && !profile->tf32_matmuls) {
        std::printf("matmul precision tf32: the %s backend computes float32 products (ignored)\n",
                    profile->name);
      }
    }
    const int64_t done = static_cast<int64_t>(remat_session_step_count(session.get()));
    float base_lr = 0.0f;
    if (scheduled)
      check(session.get(), remat_session_learning_rate(session.get(), &base_lr), "--lr-schedule");
    if (resumed) {
      std::printf("resumed from %s at step %lld of %lld\n", state_path.c_str(),
                  static_cast<long long>(done), static_cast<long long>(steps));
    }
    std::fflush(stdout);

    // From here a SIGINT or SIGTERM stops the run at the next step boundary (after the write in
    // progress), where the state is consistent; before, it ends remat at once, having written
    // nothing.
    defer_interrupts();
    int64_t saved_at = resumed ? done : -1;  // the step count the state file holds, if known

    // --steps is the step count to reach: a run restarted from its state finishes the same job.
    const uint64_t start = now_ns();
    uint64_t last_print = 0, eval_ns = 0;
    bool line_open = false;  // a progress line without its newline is on the terminal
    float first_loss = NAN, loss = NAN, last_loss = NAN;
    int64_t skipped = 0, overflowed = 0, last_eval = -1;
    uint64_t step_started = start;
    for (int64_t step = done; step < steps && interrupted() == 0; ++step) {
      // Steps are named as the progress lines count them, from 1 (as the runtime's messages do).
      const std::string named = "step " + std::to_string(step + 1);
      data.set(session.get(), data.batch(step), named);
      if (scheduled) {
        check(session.get(),
              remat_session_set_learning_rate(session.get(), schedule.at(base_lr, step, steps)),
              named + ": --lr-schedule");
      }
      float scale_before = 0.0f, scale_after = 0.0f;
      const bool scaled = remat_session_loss_scale(session.get(), &scale_before) == REMAT_OK;
      const remat_status stepped = remat_session_step(session.get(), &loss);
      if (scaled) remat_session_loss_scale(session.get(), &scale_after);
      if (stepped == REMAT_ERROR_NONFINITE && scaled && scale_after < scale_before) {
        // Dynamic loss scaling: the scaled gradients overflowed, the runtime halved the scale and
        // skipped the updates after the failed check (all of them with atomic checks). Expected
        // now and then, whatever --on-nonfinite says.
        std::fprintf(stderr, "remat: loss scale: %s\n", remat_session_last_error(session.get()));
        ++overflowed;
      } else if (stepped == REMAT_ERROR_NONFINITE && on_nonfinite == "skip") {
        std::fprintf(stderr, "remat: skipped: %s\n", remat_session_last_error(session.get()));
        ++skipped;
      } else if (stepped == REMAT_ERROR_NONFINITE) {
        throw Failure(std::string("stopped: ") + remat_session_last_error(session.get()) +
                      " (--on-nonfinite skip would go on to the next batch)");
      } else {
        check(session.get(), stepped, named);
        if (!guarded && !std::isfinite(loss)) {
          throw Failure(
              named + ": the loss is " + std::to_string(loss) +
              "; the plan has no finite checks (--finite-checks off), so its update was applied");
        }
        if (std::isnan(first_loss)) first_loss = loss;
        last_loss = loss;
      }
      if (auto_save && step == done && step + 1 < steps) {
        // The first step of this run: save, and time the save against the step.
        const uint64_t saving = now_ns();
        save_state(session.get(), state_out);
        saved_at = step + 1;
        const double step_ns = static_cast<double>(saving - step_started);
        const double save_ns = static_cast<double>(now_ns() - saving);
        save_every = auto_save_interval(save_ns, step_ns);
        std::printf(
            "state: saved at step %lld; a save takes %.3g ms, a step %.3g ms, so --state "
            "saves every %lld steps (at most %g%% of the time; --save-every N sets it)\n",
            static_cast<long long>(step + 1), save_ns * 1e-6, step_ns * 1e-6,
            static_cast<long long>(save_every), kAutoSaveShare * 100);
        std::fflush(stdout);
      } else if (save_every > 0 && (step + 1) % save_every == 0 && step + 1 < steps) {
        save_state(session.get(), state_out);
        saved_at = step + 1;
      }
      const uint64_t now = now_ns();
      step_started = now;
      const double seconds = static_cast<double>(now - start - eval_ns) * 1e-9;
      const double rate =
          seconds > 0 ? static_cast<double>((step + 1 - done) * batch) / seconds : 0.0;
      if (tty) {
        if (now - last_print > 100000000ull || step + 1 == steps) {
          std::printf("\rstep %lld/%lld  loss %.6f  %.0f samples/s   ",
                      static_cast<long long>(step + 1), static_cast<long long>(steps), loss, rate);
          std::fflush(stdout);
          last_print = now;
          line_open = true;
        }
      } else {
        // Written as the step ends, whole: a run killed later keeps every line it printed.
        std::printf("step %lld loss %.6f\n", static_cast<long long>(step + 1), loss);
        std::fflush(stdout);
      }
      if (eval_every > 0 && (step + 1) % eval_every == 0) {
        if (line_open) std::printf("\n");
        line_open = false;
        const uint64_t eval_start = now_ns();
        print_eval(session.get(), plan.get(), *eval_data, eval_batches, batch / ranks, step + 1);
        eval_ns += now_ns() - eval_start;  // the rates are training's
        last_eval = step + 1;
      }
    }
    if (line_open) std::printf("\n");
    if (const int signal_number = interrupted())
      return stop_interrupted(session.get(), signal_number, state_out, saved_at, not_saved);
    const double seconds = static_cast<double>(now_ns() - start - eval_ns) * 1e-9;
    const int64_t ran = steps > done ? steps - done : 0;
    if (ran > 0) {
      std::printf("trained %lld steps in %.2f s (%.0f samples/s); loss %.6f -> %.6f\n",
                  static_cast<long long>(ran), seconds,
                  seconds > 0 ? static_cast<double>(ran * batch) / seconds : 0.0, first_loss,
                  last_loss);
    }
    const int64_t at = static_cast<int64_t>(remat_session_step_count(session.get()));
    if (eval_data && last_eval != at)
      print_eval(session.get(), plan.get(), *eval_data, eval_batches, batch / ranks, at);
    if (skipped > 0) {
      std::printf("skipped the update of %lld of those steps: a loss or gradient was not finite\n",
                  static_cast<long long>(skipped));
    }
    float final_scale = 0.0f;
    if (remat_session_loss_scale(session.get(), &final_scale) == REMAT_OK) {
      std::printf("loss scale %g; %lld of those steps overflowed and were skipped\n",
                  static_cast<double>(final_scale), static_cast<long long>(overflowed));
    }
    if (const int signal_number = interrupted())
      return stop_interrupted(session.get(), signal_number, state_out, saved_at, not_saved);
    if (!state_path.empty() && (ran > 0 || !resumed)) {
      save_state(session.get(), state_out);
      saved_at = at;
      std::printf("saved the state at step %lld to %s\n", static_cast<long long>(at),
                  state_path.c_str());
    }
    // Parameters are the finished job's: an interrupted run writes none.
    if (const int signal_number = interrupted())
      return stop_interrupted(session.get(), signal_number, state_out, saved_at, not_saved);
    if (args.has("--save-params") && rank == 0) {
      save_params(session.get(), plan.get(), args.text("--save-params", ""));
      std::printf("saved parameters to %s\n", args.text("--save-params", "").c_str());
    }
    // A signal during that last write: it was finished, and the job is done, but remat says it
    // was asked to stop.
    if (const int signal_number = interrupted())
      return stop_interrupted(session.get(), signal_number, state_out, saved_at, not_saved);
    return 0;
  };
  if (ranks == 1) return train();
  try {
    return train();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "remat: rank %d of %d: %s\n", rank, ranks, e.what());
    comm::MpiWorld::abort_all(2);
  } catch (const std::exception& e) {
    // The other ranks would wait for this one's sums until their timeout: end them all now.
    std::fprintf(stderr, "remat: rank %d of %d: %s\n", rank, ranks, e.what());
    std::fflush(stderr);
    comm::MpiWorld::abort_all(1);
  }
}

}  // namespace cli
}  // namespace remat
