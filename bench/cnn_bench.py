"""Convolutional benchmark: ResNet-20 on 32x32 images, batch 64, on the CPU. Every remat strategy
(bench/step_time, one process each) and PyTorch eager on the same model (the ResNet of
tests/data/make_golden.py, written from docs/templates.md) with the same thread count and
optimizer (Adam), as it comes and with glibc keeping freed memory (KEEP_FREED_MEMORY), in one
table: step ms (median and min), time over remat `none`, remat's
arena, and the SGEMM rate of the run (bench/sgemm_rate). It measures; it asserts nothing.

    python3 bench/cnn_bench.py [--build build] [--steps 5] [--threads 2]
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "resnet:depth=20,width=16,in=3x32x32,classes=10"
BATCH = 64
STRATEGIES = ["none", "sqrt", "selective", "splits"]

TORCH_STEP = r"""
import statistics, sys, time
import torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
from make_golden import ResNet
torch.manual_seed(0)
torch.set_num_threads(int(sys.argv[2]))
steps, batch = int(sys.argv[3]), int(sys.argv[4])
model = ResNet(depth=20, width=16, channels=3, classes=10)
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
x, y = torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))
times = []
for s in range(steps + 1):  # the first step warms up
    t0 = time.perf_counter()
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    if s > 0:
        times.append((time.perf_counter() - t0) * 1e3)
print("%.3f %.3f %s" % (statistics.median(times), min(times), torch.__version__))
"""


def remat_rows(build, steps, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([os.path.join(build, "bench", "step_time"), "--threads", str(threads), "--steps", str(steps), "--warmup", "1",
                          "%s@%d:%s" % (MODEL, BATCH, ",".join(STRATEGIES))], capture_output=True, text=True, env=env)
    rows = {}
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 9 and cells[2] in STRATEGIES and not cells[3].startswith("error"):
            rows[cells[2]] = {"arena": float(cells[3]), "recomputed": cells[6], "median": float(cells[7]),
                              "min": float(cells[8])}
        elif len(cells) >= 4 and cells[2] in STRATEGIES:
            rows[cells[2]] = {"error": cells[3]}
    if not rows:
        rows["none"] = {"error": (out.stderr or out.stdout).strip()[-200:]}
    return rows


def sgemm_rates(build, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([os.path.join(build, "bench", "sgemm_rate"), "--threads", str(threads)], capture_output=True,
                         text=True, env=env)
    rates = []
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 7 and cells[4].replace(".", "").isdigit():
            rates.append("%s: matmul (OpenBLAS) %s, packed on %d threads %s GFLOP/s" % (cells[0], cells[4], threads, cells[6]))
    return "; ".join(rates) or out.stderr.strip()


# glibc's malloc returns large freed blocks to the kernel, so PyTorch's per-op tensors fault
# their pages in again on every step; on a VM that reclaims free memory (this one) that costs it
# up to a third of a step. These settings keep freed memory in the heap: PyTorch at its best.
KEEP_FREED_MEMORY = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"


def torch_row(steps, threads, keep_freed_memory=False):
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode != 0:
        return None, "PyTorch not installed for /usr/bin/python3 (Debian: apt-get install python3-torch)"
    env = dict(os.environ)
    if keep_freed_memory:
        env["GLIBC_TUNABLES"] = KEEP_FREED_MEMORY
    out = subprocess.run(["/usr/bin/python3", "-c", TORCH_STEP, os.path.join(HERE, "..", "tests", "data"), str(threads),
                          str(steps), str(BATCH)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return None, out.stderr.strip()[-200:]
    median, best, version = out.stdout.split()
    return (float(median), float(best)), "PyTorch " + version


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M")
    print("# %s, %d cores, %s; %d threads (OpenBLAS and PyTorch); median and min of %d steps after 1 warm-up, "
          "Adam; %s" % (platform.machine(), os.cpu_count(), platform.processor() or platform.platform(), args.threads,
                        args.steps, started))
    print("# SGEMM of this run (bench/sgemm_rate): %s" % sgemm_rates(args.build, args.threads))
    print("| framework | configuration | step ms (median) | step ms (min) | time / remat none | arena MiB "
          "| arena / none | recomputed FLOPs |")
    print("|---|---|---|---|---|---|---|---|")
    rows = remat_rows(args.build, args.steps, args.threads)
    base = rows.get("none", {})
    for strategy in STRATEGIES:
        r = rows.get(strategy, {"error": "not measured"})
        if "error" in r:
            print("| remat | %s | error: %s | | | | | |" % (strategy, r["error"]))
            continue
        ratio = r["median"] / base["median"] if "median" in base else float("nan")
        arena_ratio = r["arena"] / base["arena"] if "arena" in base else float("nan")
        print("| remat | %s | %.1f | %.1f | %.2f | %.1f | %.3f | %s |" % (strategy, r["median"], r["min"], ratio, r["arena"],
                                                                    arena_ratio, r["recomputed"]))
    for keep, configuration in [(False, "eager"), (True, "eager, freed memory kept (GLIBC_TUNABLES)")]:
        times, what = torch_row(args.steps, args.threads, keep)
        if times is None:
            print("| PyTorch | %s | %s | | | | | |" % (configuration, what))
            continue
        ratio = times[0] / base["median"] if "median" in base else float("nan")
        print("| %s | %s | %.1f | %.1f | %.2f | | | |" % (what, configuration, times[0], times[1], ratio))
    return 0


if __name__ == "__main__":
    sys.exit(main())
