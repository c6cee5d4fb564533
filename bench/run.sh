#!/usr/bin/env bash
# The foundation benchmark: remat CPU step time and arena, then PyTorch CPU with the same thread
# count when /usr/bin/python3 has torch. Run from the repository root after a build.
# Recomputation and spilling: bench/recompute_bench.py. OpenCL against CPU: bench/opencl_bench.sh.
set -euo pipefail
build=${BUILD:-build}
threads=${THREADS:-$(nproc)}
steps=${STEPS:-5}
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
mlp=mlp:layers=32,width=1024,in=1024,classes=10
bert12=transformer:layers=12,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2
echo "# machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$build/bench/step_time" --steps "$steps" "$mlp@256:none" "$bert12@32:none"
# The machine's SGEMM rate in the same run, for the step tables' GFLOP/s column.
"$build/bench/sgemm_rate" --threads "$threads" | grep -E '^(#|\| (product|square))'

if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  /usr/bin/python3 bench/torch_step.py --threads "$threads" --steps "$steps" "$mlp@256" "$bert12@32"
else
  echo "# PyTorch is not installed for /usr/bin/python3: no baseline in this run"
fi
