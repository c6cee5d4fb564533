#!/usr/bin/env bash
# A GPU backend's convolutions as GEMMs over column matrices (backends/gpu/ops/conv.cc) against
# its direct kernels (REMAT_GPU_CONV=direct), ROUNDS times interleaved: each round profiles the
# same steps of MODEL both ways (bench/op_profile, each op synchronised) and prints the three
# convolution ops' time per step and the step's. Run from the repository root after a build.
# BUILD (default build), BACKEND (default opencl), ROUNDS (default 3), STEPS (default 2), MODEL
# (default ResNet-20, width 16, 3x32x32, at batch 64).
set -euo pipefail
build=${BUILD:-build}
backend=${BACKEND:-opencl}
rounds=${ROUNDS:-3}
steps=${STEPS:-2}
model=${MODEL:-"resnet:depth=20,width=16,in=3x32x32,classes=10@64:none"}
profile=$build/bench/op_profile

# The ms per step of op $1 (phase $2) in op_profile's table on stdin.
op_ms() { awk -F'|' -v op="$1" -v phase="$2" '{ gsub(/ /, "", $2); gsub(/ /, "", $3) }
          $2 == phase && $3 == op { gsub(/ /, "", $5); print $5 }'; }
# The step's mean ms in op_profile's first line.
step_ms() { sed -n 's/.* steps of \([0-9.]*\) ms.*/\1/p' | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

device=$("$build/src/cli/remat" devices 2>/dev/null | grep -m1 "^$backend" | cut -d" " -f3- || echo "$backend")
echo "# machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); device: $device"
echo "# $profile --backend $backend --steps $steps \"$model\", with and without REMAT_GPU_CONV=direct"
echo "| round | kernels | conv ms | conv_grad_input ms | conv_grad_weight ms | step ms | step, direct / GEMM |"
echo "|---:|---|---:|---:|---:|---:|---:|"
for round in $(seq 1 "$rounds"); do
  direct=$(REMAT_GPU_CONV=direct "$profile" --backend "$backend" --steps "$steps" "$model")
  gemm=$("$profile" --backend "$backend" --steps "$steps" "$model")
  for kind in direct gemm; do
    table=${!kind}
    echo "| $round | $kind | $(op_ms conv forward <<<"$table") | $(op_ms conv_grad_input backward <<<"$table") | $(op_ms conv_grad_weight backward <<<"$table") | $(step_ms <<<"$table") | $([ "$kind" = gemm ] && ratio "$(step_ms <<<"$direct")" "$(step_ms <<<"$table")" || echo) |"
  done
done
