"""libremat_mpi's C API (include/remat/remat_mpi.h) from C (mpi_api_probe.c):

- every failure path of remat_mpi_join (a NULL out, timeouts out of range, a second join, a
  join after leaving), remat_mpi_communicator(NULL) and remat_mpi_leave(NULL);
- remat_mpi_join_nccl's refusals, and its join: on a machine with a CUDA device (`remat
  devices` lists one) one rank trains a data-parallel plan through NCCL's communicator on the
  cuda backend and ends with the bits of the same plan without data-parallel training (NCCL's
  sum of one rank and the division by 1 change nothing); elsewhere the join fails naming what
  is missing;
- under `mpirun -np N` (N = 2, 3) each rank trains a data-parallel plan through the C API with
  remat_mpi's communicator: every rank ends with the same parameters, bit for bit, and they equal
  one process of N times the batch within float tolerance (the sums' order differs).

    test_mpi_api.py REMAT PROBE WORK_DIR

Exits 77 (skipped) when mpirun is missing or the build has no MPI (no PROBE); CI has both and
counts a skip as a failure (.ci/summary).
"""
import array
import os
import shutil
import subprocess
import sys

from test_mpi_world import check, env, mpirun

MODEL = "mlp:layers=3,width=24,in=12,classes=3"
BATCH, STEPS = 4, 6


def floats(path):
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    return values


def failure_paths(probe):
    done = subprocess.run([probe, "failures"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env(), timeout=120)
    check(done.returncode == 0, "failures: exit %d\n%s" % (done.returncode, done.stdout[-3000:]))
    print(done.stdout.strip().splitlines()[-1])


def nccl(remat, probe, work):
    devices = subprocess.run([remat, "devices"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env=env(), timeout=120).stdout
    gpu = any(line.startswith("cuda:") for line in devices.splitlines())
    out = os.path.join(work, "nccl")
    os.makedirs(out, exist_ok=True)
    dp, plain = os.path.join(out, "dp.rplan"), os.path.join(out, "plain.rplan")
    for plan, extra in ((dp, ["--data-parallel"]), (plain, [])):
        subprocess.run([remat, "compile", MODEL, "--batch", str(BATCH), "--backend", "cuda",
                        "--optimizer", "sgd:lr=0.1,momentum=0.9", "-o", plan] + extra,
                       check=True, stdout=subprocess.DEVNULL)
    done = subprocess.run([probe, "nccl", "1" if gpu else "0", dp, plain, str(STEPS), "3", out],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env(), timeout=300)
    check(done.returncode == 0, "nccl: exit %d\n%s" % (done.returncode, done.stdout[-3000:]))
    last = done.stdout.strip().splitlines()[-1]
    print(last)
    if gpu and "NCCL not installed" not in last:
        through_nccl = open(os.path.join(out, "nccl.bin"), "rb").read()
        check(len(through_nccl) > 0 and
              through_nccl == open(os.path.join(out, "plain.bin"), "rb").read(),
              "one rank through NCCL differs from the plan without data-parallel training")
        print("ok  one rank through NCCL: the bits of the plan without data-parallel training")


def ranks_train_as_one_process(remat, probe, work):
    for ranks in (2, 3):
        out = os.path.join(work, "ranks%d" % ranks)
        os.makedirs(out, exist_ok=True)
        dp, full = os.path.join(out, "dp.rplan"), os.path.join(out, "full.rplan")
        for plan, batch, extra in ((dp, BATCH, ["--data-parallel"]), (full, ranks * BATCH, [])):
            subprocess.run([remat, "compile", MODEL, "--batch", str(batch), "--optimizer",
                            "sgd:lr=0.1,momentum=0.9", "-o", plan] + extra, check=True,
                           stdout=subprocess.DEVNULL)
        done = subprocess.run(mpirun(ranks) + [probe, "train", dp, full, str(STEPS), "3", out],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env(), timeout=120)
        check(done.returncode == 0, "%d ranks: exit %d\n%s" %
              (ranks, done.returncode, done.stdout[-3000:]))
        first = open(os.path.join(out, "rank0.bin"), "rb").read()
        for r in range(1, ranks):
            check(open(os.path.join(out, "rank%d.bin" % r), "rb").read() == first,
                  "%d ranks: rank %d's parameters are not rank 0's" % (ranks, r))
        mine, whole = floats(os.path.join(out, "rank0.bin")), floats(os.path.join(out, "full.bin"))
        check(len(mine) == len(whole) and len(mine) > 0, "%d ranks: parameter counts differ" % ranks)
        worst = max(abs(a - b) for a, b in zip(mine, whole))
        largest = max(abs(b) for b in whole)
        check(worst <= 2e-5 * max(largest, 1.0), "%d ranks: parameters differ from one process "
              "of batch %d by %g" % (ranks, ranks * BATCH, worst))
        print("ok  %d ranks through remat_mpi: the same parameters on every rank, one process of "
              "batch %d within %.1e (largest difference %.2e)" %
              (ranks, ranks * BATCH, 2e-5, worst))


def main(argv):
    remat, probe, work = (os.path.abspath(a) for a in argv[1:4])
    if "mpi" in os.environ.get("REMAT_TEST_BUILT_WITHOUT", "").split():
        print("this build has no MPI (meson -Dmpi; libopenmpi-dev): skipped")
        return 77
    if shutil.which("mpirun") is None or not os.path.exists(probe):
        print("mpirun or %s missing (a build without MPI): skipped" % probe)
        return 77
    os.makedirs(work, exist_ok=True)
    failure_paths(probe)
    nccl(remat, probe, work)
    ranks_train_as_one_process(remat, probe, work)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
