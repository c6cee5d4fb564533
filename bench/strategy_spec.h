// The STRATEGY part of the bench programs' MODEL@BATCH[:STRATEGY] arguments: a compiler
// strategy with /key=value options (budgets, matmul precision, attention kernels, precision).
#ifndef REMAT_BENCH_STRATEGY_SPEC_H_
#define REMAT_BENCH_STRATEGY_SPEC_H_

#include <string>

#include "compiler/compiler.h"

namespace remat_bench {

/// Sets |o|'s strategy and options from |spec|, e.g. `splits/device=200MiB` or
/// `none/precision=bf16/matmul=tf32`: /arena=SIZE (or its old name /budget=), /device=SIZE,
/// /host=SIZE, /matmul=fp32|tf32, /attention=fused|unfused, /precision=fp32|bf16|fp16.
/// Throws remat::io::UsageError naming an unknown key or a bad value.
void apply_strategy_spec(const std::string& spec, remat::compiler::CompileOptions* o);

}  // namespace remat_bench

#endif  // REMAT_BENCH_STRATEGY_SPEC_H_
