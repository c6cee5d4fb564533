#!/usr/bin/env python3
"""Two builds' CPU products side by side: runs BEFORE/bench/sgemm_rate and AFTER/bench/sgemm_rate
one after the other, --rounds times (before first in odd rounds, after first in even ones), and
prints for every product and engine the median rate of each build and the median over the rounds
of the after/before ratio of one round. A round runs both builds within seconds, so a VM whose
speed drifts over minutes (ours: up to 2x) slows both sides of a round alike. Both builds must
have an sgemm_rate that prints the same columns (this one's). It measures; it asserts nothing.

    python3 bench/sgemm_pairs.py [--rounds N] [--repeats N] [--threads N] BEFORE_BUILD AFTER_BUILD
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def run(build, repeats, threads):
    """sgemm_rate's header line, its column names and {product: [rate or None per engine]}."""
    program = os.path.join(build, "bench", "sgemm_rate")
    if not os.access(program, os.X_OK):
        sys.exit("sgemm_pairs: %s is not an executable (build it: ninja -C %s bench/sgemm_rate)" % (program, build))
    out = subprocess.run([program, "--repeats", str(repeats), "--threads", str(threads)], capture_output=True,
                         text=True)
    if out.returncode != 0:
        sys.exit("%s failed (exit %d): %s" % (program, out.returncode, out.stderr.strip()[-300:]))
    header, names, rates = "", [], {}
    for line in out.stdout.splitlines():
        if line.startswith("#"):
            header = line
        elif line.startswith("| product"):
            names = [n.replace(" GFLOP/s", "") for n in cells(line)[4:]]
        elif line.startswith("|") and not line.startswith("|---"):
            c = cells(line)
            rates[c[0]] = [float(v) if v.replace(".", "", 1).isdigit() else None for v in c[4:]]
    if not rates:
        sys.exit("%s printed no rates:\n%s" % (program, out.stdout[-300:]))
    return header, names, rates


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args()
    if args.rounds < 1 or args.repeats < 1 or args.threads < 1:
        sys.exit("sgemm_pairs: --rounds, --repeats and --threads take a positive count")
    pairs = {}  # (product, engine) -> [(before, after)]
    headers = set()
    for round_ in range(args.rounds):
        if round_ % 2 == 0:
            before_header, before_names, before = run(args.before, args.repeats, args.threads)
            after_header, names, after = run(args.after, args.repeats, args.threads)
        else:
            after_header, names, after = run(args.after, args.repeats, args.threads)
            before_header, before_names, before = run(args.before, args.repeats, args.threads)
        if names != before_names:
            sys.exit("sgemm_pairs: the builds' sgemm_rate print different columns: %s / %s" % (before_names, names))
        headers.update([before_header.lstrip("# "), after_header.lstrip("# ")])
        for product, rates in after.items():
            for engine, (b, a) in enumerate(zip(before.get(product, []), rates)):
                if a is not None and b is not None and a > 0 and b > 0:
                    pairs.setdefault((product, names[engine]), []).append((b, a))
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), cpu)
    except OSError:
        pass
    print("# machine: %s, %d cores, %s" % (platform.machine(), os.cpu_count() or 0, cpu))
    print("# before: %s; after: %s; %d rounds, each sgemm_rate --repeats %d --threads %d of both" %
          (args.before, args.after, args.rounds, args.repeats, args.threads))
    for header in sorted(headers):
        print("# sgemm_rate: %s" % header)
    print("| product | engine | before GFLOP/s (median) | after GFLOP/s (median) | after / before (median of rounds) "
          "| lowest, highest round |")
    print("|---|---|---:|---:|---:|---|")
    for (product, engine), values in pairs.items():
        ratios = [a / b for b, a in values]
        print("| %s | %s | %.1f | %.1f | %.2fx | %.2fx, %.2fx |" %
              (product, engine, statistics.median(b for b, _ in values), statistics.median(a for _, a in values),
               statistics.median(ratios), min(ratios), max(ratios)))


if __name__ == "__main__":
    main()
