#!/usr/bin/env bash
# A bfloat16 step on this CPU with its bfloat16 engines (AMX or AVX512-BF16, where it has them)
# and widened to float32 as on a CPU without them (REMAT_CPU_BF16=widen), against float32 and
# float16. Each round runs build/bench/step_pairs twice: float32, bf16 and fp16 in one process,
# then float32 and bf16 with REMAT_CPU_BF16=widen in another (the variable is read once a
# process); step_pairs takes one step of each in turn, so every ratio is of steps taken back to
# back on the same machine, whatever its speed does between rounds. A CPU without the engines
# runs bf16 widened in both processes. Run from the repository root after a build. BUILD
# (default build), ROUNDS (default 3), STEPS (default 5: step_pairs' rounds), MODEL (default the
# transformer of docs/benchmarks.md at batch 32).
set -euo pipefail
build=${BUILD:-build}
rounds=${ROUNDS:-3}
steps=${STEPS:-5}
model=${MODEL:-"transformer:layers=12,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2@32"}
step_pairs=$build/bench/step_pairs

# Column $2 (median ms, or the median ratio to float32's without its "x") of strategy $1's row
# in step_pairs' table on stdin.
column() {
  awk -F'|' -v s="$1" -v c="$2" '{ gsub(/ /, "", $4) } $4 == s { v = $c; gsub(/[ x]/, "", v); print v }'
}
speedup() { awk -v r="$1" 'BEGIN { printf "%.2fx", 1 / r }'; }

engine=$("$step_pairs" --steps 1 --warmup 0 "mlp:layers=1,width=8,in=8,classes=2@1:none" |
         sed -n 's/.*bf16 matmul: \([^;]*\);.*/\1/p')
echo "# machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); bf16 engine: $engine"
echo "# $step_pairs --steps $steps --warmup 1 \"$model:none,none/precision=bf16,none/precision=fp16\", then REMAT_CPU_BF16=widen with \"$model:none,none/precision=bf16\"; times are medians, ratios the median over step_pairs' rounds of a step's time over the float32 step's beside it"
echo "| round | fp32 ms | bf16 ms | fp16 ms | fp32 / bf16 (speed-up) | fp16 / fp32 (time) | widened: fp32 ms | bf16 ms | bf16 / fp32 (time) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq 1 "$rounds"); do
  table=$("$step_pairs" --steps "$steps" --warmup 1 \
            "$model:none,none/precision=bf16,none/precision=fp16")
  widened=$(REMAT_CPU_BF16=widen "$step_pairs" --steps "$steps" --warmup 1 \
              "$model:none,none/precision=bf16")
  echo "| $round | $(column none 6 <<<"$table") | $(column none/precision=bf16 6 <<<"$table") |" \
       "$(column none/precision=fp16 6 <<<"$table") |" \
       "$(speedup "$(column none/precision=bf16 8 <<<"$table")") |" \
       "$(column none/precision=fp16 8 <<<"$table")x |" \
       "$(column none 6 <<<"$widened") | $(column none/precision=bf16 6 <<<"$widened") |" \
       "$(column none/precision=bf16 8 <<<"$widened")x |"
done
