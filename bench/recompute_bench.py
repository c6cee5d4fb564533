"""Recomputation and spilling benchmark: one process per configuration (bench/step_time), the
ratios of each strategy's arena and step time against `none`, and PyTorch eager and
torch.utils.checkpoint in Chen's sqrt segments ("checkpoint sqrt": ~sqrt(L) segments of ~sqrt(L)
blocks, every segment checkpointed; bench/torch_step.py) on the same model in the same table when
/usr/bin/python3 has torch.

    python3 bench/recompute_bench.py [--build build] [--steps 5] [--backend cpu]
"""
import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile

MLP = "mlp:layers=32,width=1024,in=1024,classes=10"
BERT24 = "transformer:layers=24,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2"


def remat_row(build, backend, steps, model, batch, strategy):
    out = subprocess.run([os.path.join(build, "bench", "step_time"), "--backend", backend, "--steps", str(steps),
                          "--warmup", "1", f"{model}@{batch}:{strategy}"], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 3 and cells[2] == strategy:
            if cells[3].startswith("error"):
                return {"error": cells[3]}
            return {"arena": float(cells[3]), "host": float(cells[5]), "recomputed": cells[6], "ms": float(cells[7])}
    return {"error": (out.stderr or out.stdout).strip()[-200:]}


def arena_bytes(build, model, batch, strategy):
    # The optimizer of bench/step_time (Adam: two moments per parameter in the persistent bytes).
    # remat writes plans atomically (a temporary file renamed over the target), so not to /dev/null.
    with tempfile.TemporaryDirectory() as scratch:
        out = subprocess.run([os.path.join(build, "src", "cli", "remat"), "compile", model, "--batch", str(batch),
                              "--strategy", strategy, "--optimizer", "adam:lr=0.0001", "-o",
                              os.path.join(scratch, "plan.rplan")], capture_output=True, text=True, check=True)
    fields = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(arena|persistent):\s+(\d+)", out.stdout, re.M)}
    return fields["arena"], fields["persistent"]


def torch_rows(threads, steps, model, batch):
    script = os.path.join(os.path.dirname(__file__), "torch_step.py")
    out = subprocess.run(["/usr/bin/python3", script, "--threads", str(threads), "--steps", str(steps), "--warmup", "1",
                          "--checkpoint", f"{model}@{batch}"], capture_output=True, text=True)
    rows = {}
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[2] in ("eager", "checkpoint sqrt"):
            rows[cells[2]] = float(cells[3])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    threads = os.cpu_count()
    has_torch = subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode == 0
    print(f"# {platform.machine()}, {threads} cores, backend {args.backend}; median of {args.steps} steps, "
          f"each configuration in its own process; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print("| model | batch | configuration | arena MiB | host MiB | recomputed | step ms | arena / none | time / none |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model, batch in ((MLP, 256), (BERT24, 32)):
        sqrt_arena, persistent = arena_bytes(args.build, model, batch, "sqrt")
        # Spilling at a device budget of half sqrt's arena (plus the persistent bytes): sqrt's
        # own segments need more than that even with every checkpoint on host (its row says by
        # how much), splits' smaller segments fit.
        half = persistent + sqrt_arena // 2
        configs = ["none", "sqrt", "selective", f"budget/arena={sqrt_arena}", "splits", f"sqrt/device={half}",
                   f"splits/device={half}"]
        base = None
        for config in configs:
            r = remat_row(args.build, args.backend, args.steps, model, batch, config)
            if "error" in r:
                print(f"| {model} | {batch} | remat {config} | {r['error']} |")
                continue
            base = base or r
            print(f"| {model} | {batch} | remat {config} | {r['arena']:.1f} | {r['host']:.1f} | {r['recomputed']} | "
                  f"{r['ms']:.0f} | {r['arena'] / base['arena']:.3f} | {r['ms'] / base['ms']:.2f} |", flush=True)
        if has_torch:
            rows = torch_rows(threads, args.steps, model, batch)
            for mode, ms in rows.items():
                ratio = f"{ms / rows['eager']:.2f}" if "eager" in rows else ""
                print(f"| {model} | {batch} | PyTorch {mode} | | | | {ms:.0f} | | {ratio} |", flush=True)
        else:
            print(f"| {model} | {batch} | PyTorch not installed for /usr/bin/python3 | | | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
