#!/usr/bin/env bash
# Data-parallel training on this machine (docs/data-parallel.md): samples/s of one process of
# one thread against RANKS processes of one thread each under mpirun (each with the same batch
# per rank), in one run, then how much of the communication the bucket placement hides
# (build/bench/allreduce_overlap). Run from the repository root after a build with MPI.
# BUILD (default build), RANKS (default 2), STEPS (default 100).
set -euo pipefail
build=${BUILD:-build}
remat=$build/src/cli/remat
ranks=${RANKS:-2}
steps=${STEPS:-100}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
models=("mlp:layers=8,width=512,in=512,classes=10@256"
        "transformer:layers=4,hidden=256,heads=4,ffn=1024,seq=64,vocab=1000,classes=2@16")

# samples/s of the run's summary line ("trained N steps in S s (R samples/s)").
rate() { sed -n 's/.*(\([0-9]*\) samples\/s).*/\1/p'; }

echo "# machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(mpirun --version | head -1)"
echo "# remat train MODEL --batch B --threads 1 --steps $steps, against mpirun -np $ranks ... --data-parallel (batch B per rank)"
echo "| model | batch per rank | 1 rank samples/s | $ranks ranks samples/s | speed-up |"
echo "|---|---:|---:|---:|---:|"
for spec in "${models[@]}"; do
  model=${spec%@*} batch=${spec#*@}
  one=$("$remat" train "$model" --batch "$batch" --threads 1 --steps "$steps" | rate)
  many=$(mpirun --oversubscribe -np "$ranks" "$remat" train "$model" --data-parallel \
           --batch "$batch" --threads 1 --steps "$steps" | rate)
  echo "| $model | $batch | $one | $many | $(awk -v a="$many" -v b="$one" 'BEGIN { printf "%.2fx", a / b }') |"
done
echo
"$build/bench/allreduce_overlap" "${models[@]}"
