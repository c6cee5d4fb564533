"""Per-convolution benchmark: ResNet-20's convolution shapes at batch 64 on the CPU, one op at a
time, remat's kernels (bench/conv_time) beside PyTorch's (conv2d, and convolution_backward for dx
and dw alone, glibc keeping freed memory as in cnn_bench.py) with the same thread count, in one
table: min and median ms of each, and remat's min over PyTorch's. It measures; it asserts
nothing.

    python3 bench/conv_bench.py [--build build] [--repeats 20] [--threads 2] [--batch 64]
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

from cnn_bench import KEEP_FREED_MEMORY

# name, in channels, image size, out channels, filter size, stride, padding: conv_time's shapes,
# in its order.
SHAPES = [
    ("stem 3->16 3x3 32x32", 3, 32, 16, 3, 1, 1),
    ("stage 1 16->16 3x3 32x32", 16, 32, 16, 3, 1, 1),
    ("stage 2 16->32 3x3 /2", 16, 32, 32, 3, 2, 1),
    ("stage 2 shortcut 16->32 1x1 /2", 16, 32, 32, 1, 2, 0),
    ("stage 2 32->32 3x3 16x16", 32, 16, 32, 3, 1, 1),
    ("stage 3 32->64 3x3 /2", 32, 16, 64, 3, 2, 1),
    ("stage 3 shortcut 32->64 1x1 /2", 32, 16, 64, 1, 2, 0),
    ("stage 3 64->64 3x3 8x8", 64, 8, 64, 3, 1, 1),
]

TORCH_TIMES = r"""
import json, statistics, sys, time
import torch, torch.nn.functional as F
torch.set_num_threads(int(sys.argv[1]))
repeats, batch, shapes = int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
def timed(f):
    ms = []
    for r in range(repeats + 1):  # the first warms up
        t0 = time.perf_counter()
        f()
        if r > 0:
            ms.append((time.perf_counter() - t0) * 1e3)
    return [min(ms), statistics.median(ms)]
def ops(c, hw, k, r, stride, pad):
    torch.manual_seed(0)
    x, w = torch.randn(batch, c, hw, hw), torch.randn(k, c, r, r)
    dy = torch.randn_like(F.conv2d(x, w, stride=stride, padding=pad))
    def backward(mask):
        return lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [stride] * 2, [pad] * 2, [1, 1], False,
                                                           [0, 0], 1, mask)
    return [lambda: F.conv2d(x, w, stride=stride, padding=pad), backward([True, False, False]),
            backward([False, True, False])]
# A pass over every shape first: a process's first large allocations and oneDNN's first
# primitives of a shape cost several times a warm call, whichever shape comes first.
for shape in shapes:
    for op in ops(*shape[1:]):
        for _ in range(3):
            op()
rows = []
for shape in shapes:
    rows.append(sum((timed(op) for op in ops(*shape[1:])), []))
print(json.dumps([torch.__version__, rows]))
"""


def remat_times(build, threads, repeats, batch):
    out = subprocess.run([os.path.join(build, "bench", "conv_time"), "--threads", str(threads), "--repeats",
                          str(repeats), "--batch", str(batch)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("conv_time failed: " + (out.stderr or out.stdout).strip())
    return [[float(v) for v in line.split("|")[1:]] for line in out.stdout.splitlines()]


def torch_times(threads, repeats, batch):
    import json
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode != 0:
        return None, "PyTorch not installed for /usr/bin/python3 (Debian: apt-get install python3-torch)"
    # PyTorch at its best: glibc keeping freed memory (cnn_bench.py says why).
    env = dict(os.environ, GLIBC_TUNABLES=KEEP_FREED_MEMORY)
    out = subprocess.run(["/usr/bin/python3", "-c", TORCH_TIMES, str(threads), str(repeats), str(batch),
                          json.dumps(SHAPES)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return None, out.stderr.strip()[-200:]
    version, rows = json.loads(out.stdout)
    return rows, "PyTorch " + version


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    print("# %s, %d cores, %s; %d threads; batch %d; min and median of %d runs of each op after 1 warm-up; %s"
          % (platform.machine(), os.cpu_count(), platform.processor() or platform.platform(), args.threads,
             args.batch, args.repeats, time.strftime("%Y-%m-%d %H:%M")))
    remat = remat_times(args.build, args.threads, args.repeats, args.batch)
    torch, what = torch_times(args.threads, args.repeats, args.batch)
    print("# remat: bench/conv_time (the CPU backend's kernels); %s: conv2d and convolution_backward (dx or dw alone), "
          "GLIBC_TUNABLES=%s" % (what, KEEP_FREED_MEMORY))
    print("| convolution | op | remat ms (min) | remat ms (median) | %s ms (min) | %s ms (median) | remat / PyTorch (min) |"
          % (what, what))
    print("|---|---|---|---|---|---|---|")
    totals = [0.0, 0.0]
    for (name, *_), mine, theirs in zip(SHAPES, remat, torch or [None] * len(SHAPES)):
        for i, op in enumerate(["forward", "dx", "dw"]):
            lo, med = mine[2 * i], mine[2 * i + 1]
            if theirs is None:
                print("| %s | %s | %.3f | %.3f | | | |" % (name, op, lo, med))
                continue
            tlo, tmed = theirs[2 * i], theirs[2 * i + 1]
            totals[0] += lo
            totals[1] += tlo
            print("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.2f |" % (name, op, lo, med, tlo, tmed, lo / tlo))
    if torch is not None:
        print("| every shape once | all | %.3f | | %.3f | | %.2f |" % (totals[0], totals[1], totals[0] / totals[1]))
    else:
        print("# %s" % what)
    return 0


if __name__ == "__main__":
    sys.exit(main())
