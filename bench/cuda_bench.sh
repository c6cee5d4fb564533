#!/usr/bin/env bash
# remat on CUDA against PyTorch on CUDA (eager, and torch.utils.checkpoint over Chen's sqrt
# segments: ~sqrt(L) segments of ~sqrt(L) blocks, every segment checkpointed, the counterpart of
# remat's `sqrt`), everything docs/benchmarks.md's CUDA section holds, in one run: step time at
# fixed batches in float32, in TF32 and in bf16, session creation, the large model's op
# profile, the largest power-of-two batch within a device memory budget, and how much of the
# spill copy time the copy stream hides (bench/spill_time). One command on a GPU machine, from the repository
# root after a build with the CUDA backend:
#   bench/cuda_bench.sh                      (BUILD=build BUDGET_GIB=4 STEPS=20 PYTHON=python3)
set -euo pipefail
build=${BUILD:-build}
steps=${STEPS:-20}
budget_gib=${BUDGET_GIB:-4}
python=${PYTHON:-python3}
# The models of docs/benchmarks.md's CUDA section: a 32-layer MLP, the 24-layer BERT-mini
# shape and a 24-layer BERT-large shape (hidden 1024, 16 heads, ffn 4096, sequence 512).
mlp=mlp:layers=32,width=1024,in=1024,classes=10
bert12=transformer:layers=12,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2
bert24=transformer:layers=24,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2
large=transformer:layers=24,hidden=1024,heads=16,ffn=4096,seq=512,vocab=30522,classes=2
if ! command -v nvidia-smi >/dev/null; then echo "# no nvidia-smi: not a CUDA machine" >&2; exit 1; fi
echo "# $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1); $(date -u +%F)"

echo "## Step time, float32 matmuls (TF32 off on both sides)"
# remat's "create ms" column is session creation (device buffers, initial values, cuBLAS);
# "FLOP bound ms" is what sqrt would take if its recomputed FLOPs cost what none's do.
"$build/bench/step_time" --backend cuda --steps "$steps" \
  "$mlp@256:none,sqrt,selective" "$bert12@32:none" "$bert24@32:none,sqrt,selective" "$large@8:none,sqrt"
"$python" bench/torch_step.py --device cuda --steps "$steps" --checkpoint "$mlp@256" "$bert12@32" "$bert24@32" "$large@8"

echo "## Step time, TF32 matmuls (remat --matmul-precision tf32, PyTorch allow_tf32)"
"$build/bench/step_time" --backend cuda --steps "$steps" \
  "$bert24@32:none/matmul=tf32,sqrt/matmul=tf32" "$large@8:none/matmul=tf32,sqrt/matmul=tf32"
"$python" bench/torch_step.py --device cuda --steps "$steps" --tf32 --checkpoint "$bert24@32" "$large@8"

echo "## Step time, bf16 (remat --precision bf16, PyTorch bf16 autocast with fused attention)"
"$build/bench/step_time" --backend cuda --steps "$steps" \
  "$bert24@32:none/precision=bf16,sqrt/precision=bf16" "$large@8:none/precision=bf16,sqrt/precision=bf16"
"$python" bench/torch_step.py --device cuda --steps "$steps" --bf16 --sdpa --checkpoint "$bert24@32" "$large@8"
"$build/bench/op_profile" --backend cuda --steps 3 "$large@8:none/precision=bf16"

echo "## Where the large model's step goes (bench/op_profile, each op timed alone)"
# Its attention and attention_grad rows (24 calls a step) against PyTorch's fused attention at
# the same shape: B 8, 16 heads, S 512, D 64.
"$build/bench/op_profile" --backend cuda --steps 3 "$large@8:none"
"$python" bench/torch_attention.py --device cuda --steps "$steps" 8,16,512,64

echo "## Largest power-of-two batch within ${budget_gib} GiB of device memory"
# remat: the plan fits when arena + persistent <= the budget (spilling checkpoints to host if
# needed: the device=SIZE option); one timed step proves it runs.
echo "| model | strategy | max batch |"
echo "|---|---|---|"
for model in "$mlp" "$bert24"; do
  for strategy in none sqrt "sqrt/device=${budget_gib}GiB"; do
    best=0
    for batch in 1 2 4 8 16 32 64 128 256 512 1024 2048 4096 8192 16384 32768 65536; do
      out=$("$build/bench/step_time" --backend cuda --steps 1 --warmup 1 "$model@$batch:$strategy" 2>&1 || true)
      arena_ok=$(echo "$out" | awk -F'|' -v cap=$((budget_gib * 1024)) \
        '/^\| / && $5 ~ /[0-9]/ { if ($5 + $6 <= cap) print "yes" }')
      if [[ "$out" == *error* || -z "$arena_ok" ]]; then break; fi
      best=$batch
    done
    echo "| ${model%%:*} | $strategy | $best |"
  done
done
"$python" bench/torch_step.py --device cuda --budget "$budget_gib" --checkpoint "$mlp@1" "$bert24@1"

echo "## Spilling: copy time hidden behind compute (24-layer transformer, batch 32)"
# First at the 480 MiB device budget of issue 36's measurement, then at half of sqrt's arena.
"$build/bench/spill_time" --backend cuda --steps "$steps" "$bert24@32" splits 480MiB
# Device budget: half of sqrt's arena plus the persistent bytes (Adam, as step_time runs it);
# sqrt's own segments need more than that even with every checkpoint on host, splits' fit.
# remat writes plans atomically (renamed over the target), so to a temporary file, not /dev/null.
plan_tmp=$(mktemp --suffix=.rplan)
figure() { "$build/src/cli/remat" compile "$bert24" --batch 32 --strategy sqrt --optimizer adam:lr=0.0001 \
  -o "$plan_tmp" | awk -v k="$1:" '$1 == k { print $2 }'; }
half=$(( $(figure persistent) + $(figure arena) / 2 ))
rm -f "$plan_tmp"
"$build/bench/spill_time" --backend cuda --steps "$steps" "$bert24@32" splits "$half"
