#!/usr/bin/env bash
# The foundation and recompute benchmarks side by side: remat CPU, then PyTorch CPU with the
# same thread count when /usr/bin/python3 has torch. Run from the repository root after a build.
set -euo pipefail
build=${BUILD:-build}
threads=${THREADS:-$(nproc)}
steps=${STEPS:-5}
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
mlp=mlp:layers=32,width=1024,in=1024,classes=10
bert12=transformer:layers=12,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2
bert24=transformer:layers=24,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2
echo "# machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$build/bench/step_time" --steps "$steps" "$mlp@256:none,sqrt,selective" "$bert12@32:none" "$bert24@32:none,sqrt,selective"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  /usr/bin/python3 bench/torch_step.py --threads "$threads" --steps "$steps" --checkpoint "$mlp@256" "$bert12@32" "$bert24@32"
else
  echo "# PyTorch is not installed for /usr/bin/python3: no baseline in this run"
fi
