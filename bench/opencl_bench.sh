#!/usr/bin/env bash
# OpenCL (PoCL) against the CPU backend on the foundation's two bench models, in one run: step
# time, then start-up with a cold PoCL cache (a fresh, empty POCL_CACHE_DIR) and a warm one (the
# same folder again). Session creation includes building remat's OpenCL program; the first step
# includes CLBlast's GEMM build and each kernel's first launch. PoCL caches both program binaries
# on disk, which is what the warm columns show. From the repository root after a build with
# -Dopencl=enabled:
#   bench/opencl_bench.sh [MODEL@BATCH ...]   (BUILD=build STEPS=3 WARMUP=1 OPENCL=opencl)
# Without arguments: mlp 32x1024 at batch 256 and the 12-layer transformer at batch 32. The
# start-up table adds a tiny transformer, whose session creation is almost only the program
# build (a big model's creation also initialises and uploads its parameters and moments).
# It measures and prints; it asserts nothing. PoCL is slow on these models: a few minutes in all.
set -euo pipefail
build=${BUILD:-build}
steps=${STEPS:-3}
warmup=${WARMUP:-1}
opencl=${OPENCL:-opencl}
step_time="$build/bench/step_time"
models=("mlp:layers=32,width=1024,in=1024,classes=10@256"
        "transformer:layers=12,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2@32")
if (($# > 0)); then models=("$@"); fi
tiny="transformer:layers=1,hidden=64,heads=4,ffn=128,seq=16,vocab=100,classes=2@4"

# The OpenCL platform's own version string (PoCL puts its version there), via the ICD loader.
platform_version=$(python3 - <<'EOF' 2>/dev/null || echo "unknown (no OpenCL platform)"
import ctypes
cl = ctypes.CDLL("libOpenCL.so.1")
ids, n = (ctypes.c_void_p * 8)(), ctypes.c_uint(0)
if cl.clGetPlatformIDs(8, ids, ctypes.byref(n)) != 0 or n.value == 0:
    raise SystemExit(1)
text = ctypes.create_string_buffer(256)
versions = []
for i in range(n.value):
    cl.clGetPlatformInfo(ctypes.c_void_p(ids[i]), 0x0901, 255, text, None)  # CL_PLATFORM_VERSION
    versions.append(text.value.decode().split(",")[0].strip())
print("; ".join(versions))
EOF
)

# One step_time row for MODEL@BATCH on BACKEND (STEPS, WARMUP), or "error: ..." with the reason.
row() {
  local backend=$1 spec=$2 out line
  if out=$("$step_time" --backend "$backend" --steps "$3" --warmup "$4" "$spec" 2>&1) &&
     line=$(echo "$out" | grep -E '^\| ' | tail -n 1) && [[ $line != *"| error:"* ]]; then
    echo "$line"
  else
    echo "error: $(echo "$out" | tail -n 1 | sed 's/.*| error: //; s/ |$//')"
  fi
}
# Field N (1-based, as in "| a | b |": model=1, batch=2, median ms=8, create ms=10, first step=11).
field() { echo "$1" | awk -F'|' -v n="$2" '{ gsub(/^ +| +$/, "", $(n + 1)); print $(n + 1) }'; }

cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "# machine: $(uname -m), $cpu_model, $(nproc) cores; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}," \
     "OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-(unset)}; OpenCL platform: $platform_version;" \
     "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# remat $opencl vs cpu; median of $steps steps after $warmup warm-up, one process per row;" \
     "cold = fresh empty POCL_CACHE_DIR, warm = the same folder again"

declare -A cpu_rows cold_rows warm_rows
for spec in "${models[@]}" "$tiny"; do
  cpu_rows[$spec]=$(row cpu "$spec" "$steps" "$warmup")
  cache=$(mktemp -d "${TMPDIR:-/tmp}/remat-pocl-cold.XXXXXX")
  # Cold: creation and one step are all it needs to show; warm: the timed steps.
  cold_rows[$spec]=$(POCL_CACHE_DIR=$cache row "$opencl" "$spec" 1 0)
  warm_rows[$spec]=$(POCL_CACHE_DIR=$cache row "$opencl" "$spec" "$steps" "$warmup")
  rm -rf "$cache"
done

echo
echo "## Step time"
echo "| model | batch | cpu ms/step | $opencl ms/step | $opencl / cpu |"
echo "|---|---|---|---|---|"
for spec in "${models[@]}"; do
  model=${spec%@*} batch=${spec##*@}
  c=${cpu_rows[$spec]} o=${warm_rows[$spec]}
  if [[ $c == error* || $o == error* ]]; then
    echo "| ${model%%,*} | $batch | ${c#error: } | ${o#error: } | |"
    continue
  fi
  cm=$(field "$c" 8) om=$(field "$o" 8)
  echo "| ${model%%,*} | $batch | $cm | $om | $(awk -v a="$om" -v b="$cm" 'BEGIN { if (b > 0) printf "%.1fx", a / b }') |"
done

echo
echo "## Start-up on $opencl: session creation (program build, buffers, parameter init) and first step" \
     "(CLBlast build, first launches)"
echo "| model | batch | create ms cold | create ms warm | first step ms cold | first step ms warm | cpu create ms |"
echo "|---|---|---|---|---|---|---|"
for spec in "${models[@]}" "$tiny"; do
  model=${spec%@*} batch=${spec##*@}
  c=${cpu_rows[$spec]} k=${cold_rows[$spec]} w=${warm_rows[$spec]}
  if [[ $c == error* || $k == error* || $w == error* ]]; then
    echo "| ${model%%,*} | $batch | ${k#error: } | ${w#error: } | | | ${c#error: } |"
    continue
  fi
  echo "| ${model%%,*} | $batch | $(field "$k" 10) | $(field "$w" 10) | $(field "$k" 11) | $(field "$w" 11) |" \
       "$(field "$c" 10) |"
done
