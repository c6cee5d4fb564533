"""The auto strategy against the fixed ones at shrinking arena budgets, measured in one run.

For the 24-layer transformer at batch 32 on the CPU: `none`'s arena N, then for each budget
N/2, N/4, N/8 and N/16 the measured step time of `--strategy auto --arena-budget B` and of every fixed
strategy whose arena fits B (none, selective, splits, sqrt, and `budget` at B), each in its own
process (bench/step_time), the fastest fixed one named. Targets (issue 16): auto never slower
than the best fixed strategy that fits, and at most 1.15x `none`'s time at N/4.

OpenBLAS's idle worker threads spin (sched_yield) for a while after every call and take the
cores from remat's own kernel threads in between, which made step times of one plan vary by up
to 40% between processes on 2 cores. Every configuration here runs with
OPENBLAS_THREAD_TIMEOUT=4 (spin briefly, then sleep) unless the caller set it, and the table
prints it. (remat's CPU backend now runs OpenBLAS on one thread and threads the products itself,
docs/backends.md, which removes that spread; the setting stays so that runs compare with the
table in docs/benchmarks.md.)

    python3 bench/auto_bench.py [--build build] [--steps 5] [--batch 32]
"""
import argparse
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(__file__))
from recompute_bench import BERT24, arena_bytes, remat_row  # noqa: E402

FIXED = ["none", "selective", "splits", "sqrt"]


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.machine()}, {model}, {os.cpu_count()} cores"


def main():
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    model, batch = BERT24, args.batch
    print(f"# {machine()}; {model} at batch {batch}, Adam; median of {args.steps} steps after 1 warm-up, "
          f"each configuration in its own process (bench/step_time); "
          f"OPENBLAS_THREAD_TIMEOUT={os.environ['OPENBLAS_THREAD_TIMEOUT']}")
    none_arena, _ = arena_bytes(args.build, model, batch, "none")
    fixed = {}
    for strategy in FIXED:
        r = remat_row(args.build, "cpu", args.steps, model, batch, strategy)
        if "error" in r:
            print(f"# {strategy}: {r['error']}")
            continue
        fixed[strategy] = r
    base = fixed["none"]["ms"]
    print("| budget | arena budget MiB | configuration | arena MiB | recomputed | step ms | time / none | "
          "auto / best fixed |")
    print("|---|---|---|---|---|---|---|---|")
    mib = 1 << 20
    print(f"| none's arena | {none_arena / mib:.1f} | remat none | {fixed['none']['arena']:.1f} | "
          f"{fixed['none']['recomputed']} | {base:.0f} | 1.00 | |", flush=True)
    for divisor in (2, 4, 8, 16):
        budget = none_arena // divisor
        rows = {s: r for s, r in fixed.items() if r["arena"] * mib <= budget}
        measured = remat_row(args.build, "cpu", args.steps, model, batch, f"budget/arena={budget}")
        if "error" not in measured:
            rows[f"budget/arena={budget}"] = measured
        auto = remat_row(args.build, "cpu", args.steps, model, batch, f"auto/arena={budget}")
        best_name = min(rows, key=lambda s: rows[s]["ms"]) if rows else None
        for name, r in sorted(rows.items(), key=lambda kv: kv[1]["ms"]):
            label = "budget" if name.startswith("budget/") else name
            mark = " (best fixed)" if name == best_name else ""
            print(f"| 1/{divisor} | {budget / mib:.1f} | remat {label}{mark} | {r['arena']:.1f} | {r['recomputed']} | "
                  f"{r['ms']:.0f} | {r['ms'] / base:.2f} | |", flush=True)
        if not rows:
            print(f"| 1/{divisor} | {budget / mib:.1f} | no fixed strategy fits | | | | | |")
        if "error" in auto:
            print(f"| 1/{divisor} | {budget / mib:.1f} | remat auto | {auto['error']} | | | | |", flush=True)
            continue
        versus = f"{auto['ms'] / rows[best_name]['ms']:.2f}" if best_name else "(nothing else fits)"
        print(f"| 1/{divisor} | {budget / mib:.1f} | **remat auto** | {auto['arena']:.1f} | {auto['recomputed']} | "
              f"{auto['ms']:.0f} | {auto['ms'] / base:.2f} | {versus} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
