#!/usr/bin/env bash
# Compile time and peak host memory of `remat compile` as an MLP gets deeper (docs/sizing.md,
# "Compile time"). Run from the repository root after a build. OLD=path/to/another/remat adds
# its column (e.g. a build of an older commit in a git worktree); LAYERS overrides the depths.
set -euo pipefail
build=${BUILD:-build}
remat=$build/src/cli/remat
layers=${LAYERS:-"1000 10000 100000"}
old=${OLD:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Seconds and peak resident MiB of one compile, as "S MIB" ("- -" when it failed).
measure() {
  local bin=$1 model=$2
  if /usr/bin/time -f '%e %M' -o "$tmp/time" "$bin" compile "$model" --batch 4 -o "$tmp/plan.rplan" \
       > "$tmp/out" 2>&1; then
    awk '{ printf "%s %.0f", $1, $2 / 1024 }' "$tmp/time"
  else
    echo "- -"
  fi
}

echo "# machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# remat compile mlp:layers=L,width=8,in=4,classes=3 --batch 4 (strategy none, CPU target)"
if [ -n "$old" ]; then
  echo "| layers | ops | old s | old MiB | s | MiB |"
  echo "|---:|---:|---:|---:|---:|---:|"
else
  echo "| layers | ops | s | MiB |"
  echo "|---:|---:|---:|---:|"
fi
for l in $layers; do
  model=mlp:layers=$l,width=8,in=4,classes=3
  read -r s mib <<< "$(measure "$remat" "$model")"
  ops=$(awk '/^ops:/ { print $2 }' "$tmp/out")
  if [ -n "$old" ]; then
    read -r old_s old_mib <<< "$(measure "$old" "$model")"
    echo "| $l | ${ops:--} | $old_s | $old_mib | $s | $mib |"
  else
    echo "| $l | ${ops:--} | $s | $mib |"
  fi
done
