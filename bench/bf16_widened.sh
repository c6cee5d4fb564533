#!/usr/bin/env bash
# A bfloat16 step on this CPU with its bfloat16 engines (AMX or AVX512-BF16, where it has them)
# and widened to float32 as on a CPU without them (REMAT_CPU_BF16=widen), against float32 and
# float16, ROUNDS times interleaved: each round runs float32, bf16 and fp16 in one step_time
# process, then bf16 widened in another, so the machine's drift falls on every column alike.
# Run from the repository root after a build. BUILD (default build), ROUNDS (default 3),
# STEPS (default 5), MODEL (default the transformer of docs/benchmarks.md at batch 32).
set -euo pipefail
build=${BUILD:-build}
rounds=${ROUNDS:-3}
steps=${STEPS:-5}
model=${MODEL:-"transformer:layers=12,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2@32"}
step_time=$build/bench/step_time

# The median ms of the row of strategy $1 in step_time's table on stdin.
median() { awk -F'|' -v s="$1" '{ gsub(/ /, "", $4) } $4 == s { gsub(/ /, "", $9); print $9 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

engine=$("$step_time" --steps 1 --warmup 0 "mlp:layers=1,width=8,in=8,classes=2@1:none" |
         sed -n 's/.*bf16 matmul: \([^;]*\);.*/\1/p')
echo "# machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); bf16 engine: $engine"
echo "# $step_time --steps $steps --warmup 1 \"$model:none,none/precision=bf16,none/precision=fp16\", then REMAT_CPU_BF16=widen for bf16 alone"
echo "| round | fp32 ms | bf16 ms | bf16 widened ms | fp16 ms | fp32 / bf16 (speed-up) | bf16 widened / fp32 (time) | fp16 / fp32 (time) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq 1 "$rounds"); do
  table=$("$step_time" --steps "$steps" --warmup 1 \
            "$model:none,none/precision=bf16,none/precision=fp16")
  widened=$(REMAT_CPU_BF16=widen "$step_time" --steps "$steps" --warmup 1 \
              "$model:none/precision=bf16")
  f32=$(median none <<<"$table")
  bf16=$(median none/precision=bf16 <<<"$table")
  fp16=$(median none/precision=fp16 <<<"$table")
  wide=$(median none/precision=bf16 <<<"$widened")
  echo "| $round | $f32 | $bf16 | $wide | $fp16 | $(ratio "$f32" "$bf16") | $(ratio "$wide" "$f32") | $(ratio "$fp16" "$f32") |"
done
