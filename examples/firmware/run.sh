#!/usr/bin/env bash
# Builds the firmware example for a Cortex-M4F (cross/cortex-m4f.ini) and trains on qemu's
# mps2-an386 board within 256 KB of RAM: an 8-layer MLP and a small CNN, each a model whose
# `none` plan does not fit there (the link fails, and this says by how much), trained with its
# `sqrt` plan for 300 steps.
# Prints the sqrt plan's FLOPs, the firmware's lines (step N loss X), the runtime's flash for
# each model's build (it carries that plan's ops alone), each sqrt plan's losses and
# instructions with the kernels' sums in float (-Dfloat_sums=true), the flash of each part and,
# last, the runtime's. docs/firmware.md quotes this output; .ci/run checks it against a run.
# Exits non-zero when a build fails, the run faults or times out, or the loss does not fall.
#
# Needs: gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib
# qemu-system-arm (Debian), and the host's build dependencies for the `remat` CLI that compiles
# the plan. REMAT_HOST_BUILD (default build) is the host build directory, REMAT_FIRMWARE_BUILD
# (default build-firmware) the firmware's.
set -euo pipefail
cd "$(dirname "$0")/../.."
HOST_BUILD=${REMAT_HOST_BUILD:-build}
FW_BUILD=${REMAT_FIRMWARE_BUILD:-build-firmware}

for tool in arm-none-eabi-gcc qemu-system-arm meson ninja; do
  if ! command -v "$tool" > /dev/null; then
    echo "run.sh: $tool not found; install gcc-arm-none-eabi libnewlib-arm-none-eabi" \
         "libstdc++-arm-none-eabi-newlib qemu-system-arm (Debian)" >&2
    exit 1
  fi
done

# The host CLI compiles the plans.
if [ ! -f "$HOST_BUILD/build.ninja" ]; then meson setup "$HOST_BUILD" > /dev/null; fi
ninja -C "$HOST_BUILD" src/cli/remat > /dev/null
REMAT="$HOST_BUILD/src/cli/remat"
mkdir -p "$FW_BUILD/plan"
PLAN="$(pwd)/$FW_BUILD/plan/firmware_plan.h"

# Configures the firmware build for $PLAN; FLOAT_SUMS (true or false) sets -Dfloat_sums.
FLOAT_SUMS=false
configure() {
  if [ -f "$FW_BUILD/build.ninja" ]; then
    # --reconfigure, not `meson configure`: it also knows options added since the setup.
    meson setup --reconfigure "$FW_BUILD" -Dfirmware_plan="$PLAN" -Dfloat_sums="$FLOAT_SUMS" > /dev/null
  else
    meson setup --cross-file cross/cortex-m4f.ini "$FW_BUILD" -Dfirmware_plan="$PLAN" \
      -Dfloat_sums="$FLOAT_SUMS" > /dev/null
  fi
}

# Compiles MODEL (batch BATCH, OPTIMIZER) with `none`, which keeps every activation and does not
# fit (the link fails, and the linker says by how much), then with `sqrt`, which recomputes
# between checkpoints, fits, and trains on the board.
train_on_device() {
  local model=$1 batch=$2 optimizer=$3
  echo "== $model, batch $batch, $optimizer"
  "$REMAT" compile "$model" --batch "$batch" --optimizer "$optimizer" --strategy none --emit-c "$PLAN" > /dev/null
  configure
  if ninja -C "$FW_BUILD" > "$FW_BUILD/none.log" 2>&1; then
    echo "none: $(region ARENA) arena + $(region PERSISTENT) persistent bytes: fits in 256 KB of RAM"
  else
    overflow=$(grep -o "overflowed by [0-9]* bytes" "$FW_BUILD/none.log" || true)
    if [ -z "$overflow" ]; then cat "$FW_BUILD/none.log" >&2; return 1; fi
    echo "none: $(region ARENA) arena + $(region PERSISTENT) persistent bytes: does not fit, RAM $overflow"
  fi
  "$REMAT" compile "$model" --batch "$batch" --optimizer "$optimizer" --strategy sqrt --emit-c "$PLAN" |
    sed -n 's/^step flops: */sqrt: step flops /p'
  configure
  ninja -C "$FW_BUILD" > "$FW_BUILD/sqrt.log" 2>&1 || { cat "$FW_BUILD/sqrt.log" >&2; return 1; }
  echo "sqrt: $(region ARENA) arena + $(region PERSISTENT) persistent bytes: fits; training"
  # The runtime carries this plan's ops alone (src/plan/op_subset.h): its flash, for this model.
  python3 examples/firmware/flash_usage.py "$FW_BUILD/examples/firmware/remat_firmware.map" |
    grep "^runtime text+data"
  local status=0
  timeout 900 qemu-system-arm -M mps2-an386 -nographic -icount shift=0 \
    -semihosting-config enable=on,target=native -kernel "$ELF" 2>&1 || status=$?
  if [ "$status" -eq 124 ]; then echo "run.sh: the firmware did not finish within 900 s" >&2; fi
  return "$status"
}

# NAME_<WHAT>_BYTES of the plan header.
region() { grep -o "_$1_BYTES [0-9]*" "$PLAN" | cut -d' ' -f2; }

# The same sqrt plan built with -Dfloat_sums=true (the kernels' sums in float, which the M4F's
# FPU computes, instead of double, which it does in software): its losses and instructions.
train_with_float_sums() {
  local model=$1 batch=$2 optimizer=$3
  "$REMAT" compile "$model" --batch "$batch" --optimizer "$optimizer" --strategy sqrt --emit-c "$PLAN" > /dev/null
  FLOAT_SUMS=true configure
  ninja -C "$FW_BUILD" > "$FW_BUILD/float-sums.log" 2>&1 || { cat "$FW_BUILD/float-sums.log" >&2; return 1; }
  local status=0
  timeout 900 qemu-system-arm -M mps2-an386 -nographic -icount shift=0 \
    -semihosting-config enable=on,target=native -kernel "$ELF" > "$FW_BUILD/float-sums.out" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    cat "$FW_BUILD/float-sums.out" >&2
    if [ "$status" -eq 124 ]; then echo "run.sh: the firmware did not finish within 900 s" >&2; fi
    return "$status"
  fi
  grep -E "^(mean loss|instructions per step)" "$FW_BUILD/float-sums.out" |
    sed "s/^/float sums, ${model%%:*}: /"
}

ELF="$FW_BUILD/examples/firmware/remat_firmware.elf"
train_on_device mlp:layers=8,width=24,in=16,classes=2 160 adam:lr=0.003
train_with_float_sums mlp:layers=8,width=24,in=16,classes=2 160 adam:lr=0.003
train_with_float_sums cnn:channels=4x8,in=1x12x12,classes=2 24 adam:lr=0.003
train_on_device cnn:channels=4x8,in=1x12x12,classes=2 24 adam:lr=0.003

echo "firmware image:"
arm-none-eabi-size "$ELF"
python3 examples/firmware/flash_usage.py "$FW_BUILD/examples/firmware/remat_firmware.map"
