#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan), makes their seed corpora and
# runs each for a bounded time: tests/fuzz/run.sh [SECONDS_PER_TARGET] (default 60).
#
# Seeds are made here, never committed: plans compiled by the fuzz build's own `remat` (several
# templates, strategies and optimizers, one spilling at a device budget), training states of
# fuzz_state's plan saved by `remat train --state`, parameters saved by `remat train
# --save-params` and tests/data/*.safetensors. Each target keeps its corpus between runs in
# BUILD/fuzz/corpus/TARGET.
#
# Prints, per target, its executions, executions per second and libFuzzer's last coverage
# figures (cov: edges reached, ft: features, corp: corpus units/bytes), then one line
# "fuzz: N passed, M failed". Exits non-zero when a target crashes, leaks, trips UBSan, runs
# out of memory or times out on one input; the input that did it stays in
# BUILD/fuzz/artifacts/TARGET/ and the log in BUILD/fuzz/TARGET.log.
#
# Environment: FUZZ_BUILD (build folder, default build-fuzz), FUZZ_JOBS (ninja -j, default
# ninja's own), FUZZ_TARGETS (default: fuzz_plan fuzz_safetensors fuzz_state fuzz_onnx; fuzz_onnx
# needs libonnx-dev and libprotobuf-dev), FUZZ_ARGS (more
# libFuzzer flags, e.g. "-jobs=1 -workers=1" or "-runs=N"). docs/fuzzing.md says more.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
build="${FUZZ_BUILD:-build-fuzz}"
read -r -a targets <<<"${FUZZ_TARGETS:-fuzz_plan fuzz_safetensors fuzz_state fuzz_onnx}"
read -r -a extra <<<"${FUZZ_ARGS:-}"
jobs=()
if [ -n "${FUZZ_JOBS:-}" ]; then jobs=(-j "$FUZZ_JOBS"); fi

# --- build ----------------------------------------------------------------------------------
# The portable kernels rather than OpenBLAS, so that the fuzzer sees (and the sanitizers check)
# the project's own code; no OpenCL or CUDA (the targets run on the CPU backend).
options=(-Dfuzz=true -Dtests=false -Dopencl=disabled -Dcuda=disabled -Dblas=disabled
  -Db_sanitize=address,undefined -Db_lundef=false
  -Dcpp_args=-fno-sanitize-recover=all -Dc_args=-fno-sanitize-recover=all)
# Quiet when it works; the output when it does not.
quietly() {
  local out
  if ! out=$("$@" 2>&1); then
    printf '%s\n' "$out" | tail -40
    echo "fuzz: failed: $*" >&2
    exit 1
  fi
}
if [ -f "$build/build.ninja" ]; then
  quietly meson setup "$build" "${options[@]}" --reconfigure
else
  quietly env CC=clang CXX=clang++ meson setup "$build" "${options[@]}"
fi
quietly ninja -C "$build" "${jobs[@]}" src/cli/remat "${targets[@]/#/tests/fuzz/}"

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1
remat="$build/src/cli/remat"
work="$build/fuzz"
seeds="$work/seeds"
rm -rf "$seeds"
mkdir -p "$seeds/fuzz_plan" "$seeds/fuzz_safetensors" "$seeds/fuzz_state" "$seeds/fuzz_onnx"

# --- seeds: plans ---------------------------------------------------------------------------
compile() {  # NAME MODEL FLAGS...
  local name="$1"
  shift
  "$remat" compile "$@" -o "$seeds/fuzz_plan/$name.rplan" >"$work/compile.out"
}
compile mlp_none mlp:layers=2,width=8,in=4,classes=3 --batch 2
compile mlp_sqrt_adam mlp:layers=4,width=8,in=4,classes=3,dropout=0.1 --batch 2 --strategy sqrt \
  --optimizer adam:lr=0.01
compile resmlp_selective resmlp:layers=3,width=8,in=4,classes=3 --batch 2 --strategy selective \
  --optimizer sgd:lr=0.1,momentum=0.9
compile transformer_adamw transformer:layers=1,hidden=8,heads=2,ffn=16,seq=4,vocab=8,classes=3 --batch 2 \
  --optimizer adamw:lr=0.01,weight_decay=0.01
# A spilling plan: the smallest of a few device budgets below what the plan needs unspilled
# (persistent plus 60, 80, 90% of the arena, then one byte less than all) at which the compiler
# spills (as tests/cli does).
spill_model=(transformer:layers=1,hidden=8,heads=2,ffn=16,seq=4,vocab=8,classes=3 --batch 2 --strategy splits)
compile spill_plain "${spill_model[@]}"
arena=$(sed -n 's/^ *arena: *\([0-9]*\) bytes.*/\1/p' "$work/compile.out" | head -1)
persistent=$(sed -n 's/^ *persistent: *\([0-9]*\) bytes.*/\1/p' "$work/compile.out" | head -1)
spilled=0
for tenths in 6 8 9 10; do
  budget=$((persistent + arena * tenths / 10 - tenths / 10))
  if compile transformer_spilling "${spill_model[@]}" --device-budget "$budget" 2>/dev/null &&
    grep -qE '^host spill: +[1-9]' "$work/compile.out"; then
    spilled=1
    break
  fi
done
if [ "$spilled" = 0 ]; then
  echo "fuzz: no device budget made ${spill_model[0]} spill (arena '$arena', persistent '$persistent')" >&2
  exit 1
fi

# --- seeds: states of fuzz_state's plan, behind its control byte ------------------------------
REMAT_FUZZ_WRITE_PLAN="$work/state.rplan" "$build/tests/fuzz/fuzz_state" -runs=0 >/dev/null 2>&1
for steps in 1 4; do
  rm -f "$work/state.$steps"
  "$remat" train "$work/state.rplan" --steps "$steps" --state "$work/state.$steps" >/dev/null
  for control in 00 03 14 28; do
    { printf "\\x$control"; cat "$work/state.$steps"; } >"$seeds/fuzz_state/state_${steps}_$control"
  done
done
# A state of another plan: STATE_MISMATCH, and bytes for the fingerprint bit to repair.
rm -f "$work/other.state"
"$remat" train "$seeds/fuzz_plan/mlp_none.rplan" --steps 1 --state "$work/other.state" >/dev/null
{ printf '\x01'; cat "$work/other.state"; } >"$seeds/fuzz_state/other_plan_01"

# --- seeds: safetensors ---------------------------------------------------------------------
cp tests/data/*.safetensors "$seeds/fuzz_safetensors/"
"$remat" train "$seeds/fuzz_plan/mlp_none.rplan" --steps 1 \
  --save-params "$seeds/fuzz_safetensors/mlp_params.safetensors" >/dev/null
"$remat" train "$seeds/fuzz_plan/transformer_adamw.rplan" --steps 1 \
  --save-params "$seeds/fuzz_safetensors/transformer_params.safetensors" >/dev/null

# --- seeds: ONNX models, behind the control byte (0x00 cross-entropy, 0x01 MSE) ----------------
for model in tests/data/onnx/*.onnx; do
  name=$(basename "$model" .onnx)
  for control in 00 01; do
    { printf "\\x$control"; cat "$model"; } >"$seeds/fuzz_onnx/${name}_$control"
  done
done

# --- run ------------------------------------------------------------------------------------
passed=0
failed=0
for target in "${targets[@]}"; do
  corpus="$work/corpus/$target"
  artifacts="$work/artifacts/$target"
  log="$work/$target.log"
  mkdir -p "$corpus" "$artifacts"
  rc=0
  "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${extra[@]}" "$corpus" "$seeds/$target" \
    >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  coverage=$(grep -E '^#[0-9]+' "$log" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' | tail -1 || true)
  if [ "$rc" = 0 ]; then
    echo "$target: ${runs:-?} executions (${rate:-?}/s); ${coverage:-no coverage line}"
    passed=$((passed + 1))
  else
    echo "$target: FAILED (exit $rc) after ${coverage:-no coverage line}; log $log, input in $artifacts/"
    grep -E 'ERROR|SUMMARY|runtime error|fuzz_(plan|state|safetensors|onnx):|^ *#[0-9]+ 0x' "$log" | head -30 || true
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]
