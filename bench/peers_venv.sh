#!/usr/bin/env bash
# Creates (or reuses) the virtual environment of the JAX and PaddlePaddle peers of the CPU
# benchmarks (bench/jax_step.py, bench/paddle_step.py) and prints its python on the last line.
#
#     bash bench/peers_venv.sh            # venv at ${PEERS_VENV:-$HOME/.cache/remat-bench-peers}
#     PY=$(bash bench/peers_venv.sh | tail -1) && "$PY" bench/jax_step.py --check
#
# Each peer is installed on its own, so that one that cannot be installed (no wheel for this
# Python or CPU, no network) leaves the other usable; versions are not pinned, the scripts print
# the ones they ran.
set -u
venv=${PEERS_VENV:-$HOME/.cache/remat-bench-peers}
if [ ! -x "$venv/bin/python" ]; then
    /usr/bin/python3 -m venv "$venv" || { echo "# could not create the venv at $venv" >&2; exit 1; }
fi
py=$venv/bin/python
"$py" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
for peer in 'jax[cpu]' paddlepaddle; do
    if ! log=$("$py" -m pip install --quiet "$peer" 2>&1); then
        reason=$(printf '%s\n' "$log" | grep -E '^ERROR' | head -1)
        echo "# $peer could not be installed: ${reason:-$(printf '%s\n' "$log" | tail -1)}"
    fi
done
"$py" - <<'EOF'
import importlib.metadata as md
for dist in ("jax", "jaxlib", "paddlepaddle", "numpy"):
    try:
        print(f"# {dist} {md.version(dist)}")
    except md.PackageNotFoundError:
        print(f"# {dist} not installed")
EOF
echo "$py"
