"""One table of CPU training steps: remat (none, sqrt, selective, and budget and auto at a fifth
of none's arena, or at sqrt's arena where that is more; auto with spilling at a fifth of none's
arena, or the least fourth or third that it fits) against PyTorch (eager, torch.utils.checkpoint
in Chen's sqrt segments), JAX/XLA (none, jax.checkpoint in the same segments, lax.scan with and
without a checkpoint per block) and PaddlePaddle (eager, fleet recompute in the same segments),
on the same models (the deep mlp, bert-mini, ResNet-20), batch, Adam and thread count, each
configuration in its own process, with the run's SGEMM rate.

PyTorch runs twice: as it comes, and with glibc keeping the memory it frees (GLIBC_TUNABLES, the
row "eager, freed memory kept"): PyTorch allocates its tensors per op, and glibc otherwise
hands large freed blocks back to the kernel, so each step faults their pages in again (on this
project's VMs 8-19% of a ResNet-20 step; docs/benchmarks.md). remat allocates nothing
in a step, so the setting does not concern it; that row is PyTorch at its best.

The spilling row's device budget is the persistent bytes plus that share of none's arena, its
host budget unlimited: checkpoints are copied out of the arena to host memory after the forward
pass and back before the backward pass reads them. On a CPU the host region is the same DRAM,
so the row shows the arena a device with that much memory would need, not a smaller process.

Columns: median and min step ms; time over the framework's own none/eager; memory: remat's arena
(activations and gradients; parameters and Adam moments apart) and XLA's temporary buffer
(the same part of its plan), blank where a framework plans nothing ahead; GFLOP/s: the model's
step FLOPs without recomputation (the compiler's estimate, the same for every framework) over
the median step, and that over the SGEMM rate of OpenBLAS on a square 1024 product measured in
the same run (bench/sgemm_rate, before and after the steps; the higher of the two). The table is
printed at the end.

PyTorch comes from /usr/bin/python3 (Debian's python3-torch); JAX and PaddlePaddle from PyPI into
the venv of bench/peers_venv.sh, which this script runs first (--peers-python PY skips it). A
framework that is not there gets a line saying so.

    python3 bench/cpu_compare.py [--build build] [--steps 5] [--warmup 2] [--threads N]
                                 [--models mlp,bert] [--peers-python PY]
"""
import argparse
import os
import platform
import re
import subprocess
import sys

from recompute_bench import arena_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {
    "mlp": ("mlp:layers=32,width=1024,in=1024,classes=10", 256),
    "bert": ("transformer:layers=12,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2", 32),
    "resnet": ("resnet:depth=20,width=16,in=3x32x32,classes=10", 64),
}
# glibc's malloc keeps what it frees (bench/cnn_bench.py's setting).
KEEP_FREED_MEMORY = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return out.stdout, out.stderr, out.returncode


def sgemm_rate(build, threads):
    out, err, _ = run([os.path.join(build, "bench", "sgemm_rate"), "--threads", str(threads)])
    for line in out.splitlines():
        c = cells(line)
        if c and c[0] == "square":
            return float(c[4])
    sys.exit("sgemm_rate printed no square row: " + (err or out)[-300:])


def remat_row(build, threads, steps, warmup, model, batch, strategy):
    """step_time's row of |strategy|: median, min, arena MiB and the step's FLOPs."""
    out, err, _ = run([os.path.join(build, "bench", "step_time"), "--threads", str(threads), "--steps", str(steps),
                       "--warmup", str(warmup), f"{model}@{batch}:{strategy}"])
    for line in out.splitlines():
        c = cells(line)
        if len(c) >= 4 and c[2] == strategy:
            if c[3].startswith("error"):
                return {"error": c[3]}
            median, low, rate = float(c[7]), float(c[8]), float(c[11])
            return {"median": median, "min": low, "memory": float(c[3]), "host": float(c[5]),
                    "flops": rate * low * 1e6}
    return {"error": (err or out).strip()[-200:]}


def peer_rows(cmd, model, batch, env=None):
    """The rows a peer script printed for |model|: mode -> median, min, memory (or None)."""
    out, err, code = run(cmd, env)
    rows = {}
    header = None
    for line in out.splitlines():
        c = cells(line)
        if c and c[0] == "model":
            header = c
            continue
        if header and len(c) == len(header) and c[0] == model and c[1] == str(batch):
            row = dict(zip(header, c))
            memory = row.get("temp MiB", "")
            rows[row["mode"]] = {"median": float(row["median ms"]), "min": float(row["min ms"]),
                                 "memory": float(memory) if memory else None}
    versions = [line for line in out.splitlines() if line.startswith("# ")]
    if not rows:
        return {}, f"failed ({code}): {(err or out).strip()[-200:]}"
    return rows, versions[0][2:] if versions else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--models", default="mlp,bert,resnet", help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--peers-python", default="", help="python of a venv with jax and paddlepaddle "
                    "(default: the one bench/peers_venv.sh creates or reuses)")
    args = ap.parse_args()
    threads, steps, warmup = args.threads, args.steps, args.warmup
    notes = []
    peers_py = args.peers_python
    if not peers_py:
        out, err, code = run(["bash", os.path.join(HERE, "peers_venv.sh")])
        lines = out.strip().splitlines()
        notes += [line for line in lines if line.startswith("#")]
        peers_py = lines[-1] if code == 0 and lines and not lines[-1].startswith("#") else ""
        if not peers_py:
            notes.append(f"# the peers' venv could not be made: {(err or out).strip()[-200:]}")
    has_torch = run(["/usr/bin/python3", "-c", "import torch"])[2] == 0
    if not has_torch:
        notes.append("# PyTorch is not installed for /usr/bin/python3 (Debian: python3-torch): no PyTorch rows")

    rate_start = sgemm_rate(args.build, threads)
    cpu = ""
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
        cpu = m.group(1) if m else platform.processor()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, {cpu}; {threads} threads everywhere; float32, Adam "
          f"lr 1e-4; median and min of {steps} steps after {warmup} warm-up, each configuration in its own process")
    for note in notes:
        print(note)
    versions, model_flops = {}, {}
    rows_out = []
    print_row = rows_out.append
    print_row("| model | batch | framework | strategy | median ms | min ms | time / none | memory MiB | GFLOP/s | of SGEMM |")
    print_row("|---|---|---|---|---|---|---|---|---|---|")
    for key in args.models.split(","):
        model, batch = MODELS[key]
        base = remat_row(args.build, threads, steps, warmup, model, batch, "none")
        if "error" in base:
            print_row(f"| {model} | {batch} | remat | none | error: {base['error']} |")
            continue
        flops = base["flops"]
        # A fifth of none's arena, or sqrt's arena where recomputation cannot go that low (the
        # mlp: its arena is mostly the widest layer's products, which every schedule holds).
        none_arena, persistent = arena_bytes(args.build, model, batch, "none")
        sqrt_arena = arena_bytes(args.build, model, batch, "sqrt")[0]
        budget, budget_name = (none_arena // 5, "none/5") if sqrt_arena <= none_arena // 5 else (sqrt_arena, "sqrt's")

        def emit(framework, strategy, r, none_ms):
            if "error" in r:
                print_row(f"| {model} | {batch} | {framework} | {strategy} | {r['error']} | | | | | |")
                return
            memory = f"{r['memory']:.1f}" if r.get("memory") is not None else ""
            print_row((model, batch, framework, strategy, r, none_ms, memory))

        emit("remat", "none", base, base["median"])
        for strategy in ("sqrt", "selective", f"budget/arena={budget}", f"auto/arena={budget}"):
            emit("remat", strategy.replace(f"={budget}", f"={budget_name}"),
                 remat_row(args.build, threads, steps, warmup, model, batch, strategy), base["median"])
        for share in (5, 4, 3):
            r = remat_row(args.build, threads, steps, warmup, model, batch,
                          f"auto/device={persistent + none_arena // share}")
            if "no schedule fits" not in r.get("error", ""):
                break
        host = f", host {r['host']:.0f} MiB" if "host" in r else ""
        emit("remat", f"auto + spill/device=persistent+none/{share}{host}", r, base["median"])
        common = ["--threads", str(threads), "--steps", str(steps), "--warmup", str(warmup), f"{model}@{batch}"]
        # (framework, command, its none mode, environment, suffix of its modes' names).
        peers = []
        torch_step = ["/usr/bin/python3", os.path.join(HERE, "torch_step.py")]
        if has_torch:
            peers.append(("PyTorch", torch_step + ["--checkpoint"] + common, "eager", None, ""))
            peers.append(("PyTorch", torch_step + common, "eager", dict(os.environ, GLIBC_TUNABLES=KEEP_FREED_MEMORY),
                          ", freed memory kept"))
        if peers_py:
            peers.append(("JAX/XLA", [peers_py, os.path.join(HERE, "jax_step.py")] + common, "none", None, ""))
            peers.append(("PaddlePaddle", [peers_py, os.path.join(HERE, "paddle_step.py")] + common, "eager", None, ""))
        none_of = {}
        for framework, cmd, none_mode, env, suffix in peers:
            rows, version = peer_rows(cmd, model, batch, env)
            if not rows:
                print_row(f"| {model} | {batch} | {framework} | {version} | | | | | | |")
                continue
            # Every row of a framework is timed against its own none as it comes.
            if not suffix and none_mode in rows:
                none_of[framework] = rows[none_mode]["median"]
            for mode, r in rows.items():
                emit(framework, mode + suffix, r, none_of.get(framework, r["median"]))
            versions[framework] = version
        model_flops[model] = flops
    # The SGEMM rate is measured again at the end: on a shared host the machine's speed can drift
    # within a run, and the share is taken of the higher of the two.
    rate_end = sgemm_rate(args.build, threads)
    rate = max(rate_start, rate_end)
    print(f"# SGEMM rate of this run (OpenBLAS, square 1024 product, {threads} threads): {rate_start:.1f} GFLOP/s "
          f"before, {rate_end:.1f} after; shares are of {rate:.1f}")
    for row in rows_out:
        if isinstance(row, str):
            print(row)
            continue
        model, batch, framework, strategy, r, none_ms, memory = row
        gflops = model_flops[model] / (r["median"] * 1e6)
        print(f"| {model} | {batch} | {framework} | {strategy} | {r['median']:.1f} | {r['min']:.1f} | "
              f"{r['median'] / none_ms:.2f} | {memory} | {gflops:.1f} | {100 * gflops / rate:.0f}% |")
    for framework, version in versions.items():
        print(f"# {framework}: {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
