// The `remat` subcommands; each returns the process exit code (0 ok, 1 failure, 2 usage).
#ifndef REMAT_CLI_COMMANDS_H_
#define REMAT_CLI_COMMANDS_H_

#include <string>
#include <vector>

#include "cli/cli_args.h"
#include "compiler/compiler.h"

namespace remat {
namespace cli {

/// `remat compile MODEL --batch N [--optimizer S] [--seed N] [--strategy S] -o FILE.rplan`
int run_compile(const std::vector<std::string>& argv);
/// `remat train MODEL|FILE.rplan [--batch N] [--steps N] [--data F] [--load-params F]
/// [--save-params F] ...`
int run_train(const std::vector<std::string>& argv);
/// `remat devices`: backends and devices available here.
int run_devices(const std::vector<std::string>& argv);
/// `remat inspect FILE.rplan [--ops|--tensors|--params] [--json]`
int run_inspect(const std::vector<std::string>& argv);
/// `remat size MODEL --batch N|A..B [--strategy LIST] [--device-budget BYTES] [--max-batch]
/// [--timeline F] [--json] ...`
int run_size(const std::vector<std::string>& argv);

/// Flags that choose how a model is compiled, shared by compile and train (--batch and the
/// compile options of cli/command_flags.cc).
extern const std::vector<std::string> kCompileFlags;

/// --finite-checks on|atomic|off (default on): the non-finite guard plans carry. Throws
/// UsageError naming the flag on any other value.
compiler::FiniteChecks finite_checks_option(const Args& args);

/// --eval-program on|off (default on): whether plans carry an eval program. Throws UsageError
/// naming the flag on any other value.
bool eval_program_option(const Args& args);

/// --matmul-precision fp32|tf32 (default fp32): the precision plans ask of matrix products.
/// Throws UsageError naming the flag on any other value.
compiler::MatmulPrecision matmul_precision_option(const Args& args);
/// --precision fp32|bf16|fp16 (default fp32): how a plan stores its activations.
compiler::Precision precision_option(const Args& args);

/// --loss-scale off|dynamic[:init=S][,interval=N] (default: dynamic for fp16 plans), checked;
/// "" when not given.
std::string loss_scale_option(const Args& args, compiler::Precision precision);

/// --attention fused|unfused (default fused): a template's attention ops.
compiler::AttentionKernel attention_option(const Args& args);

/// --data-parallel [--bucket-size SIZE] (default 25 MiB): a plan that averages its gradients
/// over ranks (compiler/data_parallel.h); a bucket size without --data-parallel, or of 0 bytes,
/// is a usage error.
compiler::DataParallel data_parallel_option(const Args& args);

/// The --optimizer value of |args| (|fallback| when absent), parsed now: a bad one throws
/// UsageError naming --optimizer, the key and the value.
std::string optimizer_option(const Args& args, const std::string& fallback);

/// Compile options from |args| for |model|; a bad --optimizer or size is a UsageError.
compiler::CompileOptions compile_options(const Args& args, const std::string& model);

/// Prints the figures of a compiled plan for |backend| (its profile's name) as "key: value"
/// lines.
void print_report(const compiler::CompileReport& report, const char* backend);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_COMMANDS_H_
