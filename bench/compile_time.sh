#!/usr/bin/env bash
# Compile time and peak host memory of `remat compile` as an MLP gets deeper, then the wall time
# of `remat size` searches that compile dozens of plans (docs/sizing.md, "Compile time"). Run from
# the repository root after a build. OLD=path/to/another/remat adds its columns (e.g. a build of
# an older commit in a git worktree), each command run by both in turn; LAYERS overrides the
# depths; SIZE=0 leaves out the `remat size` table.
set -euo pipefail
build=${BUILD:-build}
remat=$build/src/cli/remat
layers=${LAYERS:-"1000 10000 100000"}
old=${OLD:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Seconds and peak resident MiB of `BIN ARGS...`, as "S MIB" ("- -" when it failed).
timed() {
  if /usr/bin/time -f '%e %M' -o "$tmp/time" "$@" > "$tmp/out" 2>&1; then
    awk '{ printf "%s %.0f", $1, $2 / 1024 }' "$tmp/time"
  else
    echo "- -"
  fi
}

# The same for one compile of |model| at batch 4.
measure() {
  timed "$1" compile "$2" --batch 4 -o "$tmp/plan.rplan"
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

[ "${SIZE:-1}" = 0 ] && exit 0
echo
echo "# remat size: wall seconds and peak MiB (each search compiles the plans its last line counts)"
if [ -n "$old" ]; then
  echo "| command | plans | old s | old MiB | s | MiB |"
  echo "|---|---:|---:|---:|---:|---:|"
else
  echo "| command | plans | s | MiB |"
  echo "|---|---:|---:|---:|"
fi
searches=(
  "bert-large --max-batch --device-budget 32GiB --host-budget 0"
  "bert-large --max-batch --device-budget 32GiB --strategy auto --host-budget 512GiB"
  "bert-base --max-batch --device-budget 4GiB --strategy none,sqrt,selective,auto,budget --host-budget 8GiB"
)
for args in "${searches[@]}"; do
  read -ra words <<< "$args"
  if [ -n "$old" ]; then
    read -r old_s old_mib <<< "$(timed "$old" size "${words[@]}")"
  fi
  read -r s mib <<< "$(timed "$remat" size "${words[@]}")"
  plans=$(awk '/plans compiled in/ { print $1 }' "$tmp/out")
  if [ -n "$old" ]; then
    echo "| \`remat size $args\` | ${plans:--} | $old_s | $old_mib | $s | $mib |"
  else
    echo "| \`remat size $args\` | ${plans:--} | $s | $mib |"
  fi
done
