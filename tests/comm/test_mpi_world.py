"""MPI's communicator (src/comm, docs/data-parallel.md) under `mpirun` on this machine:

- the buckets' sums and the agreements between steps give the right values on 2 and 3 ranks;
- a rank that never joins an agreement, or never starts its part of a sum, makes the waiting
  rank end the job after the timeout with a message naming what it waited for (every wait for
  another rank has the timeout, not only the buckets': cli_data_parallel once hung on an
  agreement between steps, where a stopped rank had left the other).

    test_mpi_world.py PROBE

PROBE is build/tests/comm/mpi_world_probe. Exits 77 (skipped) when mpirun is missing or the
build has no MPI (no PROBE); CI has both and counts a skip as a failure (.ci/summary).
"""
import os
import shutil
import subprocess
import sys
import time


def mpirun(ranks):
    """As tests/cli/test_data_parallel.py runs mpirun: root allowed, no standard input."""
    return ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks)]


def env():
    """Open MPI's plugins' leaks are not remat's (see test_data_parallel.py's env())."""
    asan = os.environ.get("ASAN_OPTIONS", "")
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                ASAN_OPTIONS=(asan + ":" if asan else "") + "detect_leaks=0")


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def the_calls_agree(probe):
    for ranks in (2, 3):
        done = subprocess.run(mpirun(ranks) + [probe, "agree", "60"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env(), timeout=120)
        lines = sorted(l for l in done.stdout.splitlines() if l.startswith("rank "))
        want = ["rank %d of %d: sums right, constant same, ranks differ, highest rank %d" %
                (r, ranks, ranks - 1) for r in range(ranks)]
        check(done.returncode == 0 and lines == want,
              "%d ranks: exit %d\n%s" % (ranks, done.returncode, done.stdout[-2000:]))
        print("ok  %d ranks: two buckets summed twice, same_everywhere and highest_everywhere" %
              ranks)


def a_missing_rank_ends_the_job(probe):
    for scenario, waited in (("late-agreement", "no agreement on the probe within 1 s"),
                             ("late-sum", "no sum of bucket 3 within 1 s")):
        started = time.time()
        try:
            done = subprocess.run(mpirun(2) + [probe, scenario, "1"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env=env(), timeout=45)
        except subprocess.TimeoutExpired:
            subprocess.run(["pkill", "-9", "-f", "^" + probe])
            raise AssertionError("%s: the job still runs after 45 s" % scenario)
        took = time.time() - started
        check(done.returncode != 0 and "returned without rank 1" not in done.stdout,
              "%s: exit %d\n%s" % (scenario, done.returncode, done.stdout[-2000:]))
        check("remat: rank 0 of 2: " + waited + " (--rank-timeout)" in done.stdout,
              "%s: the message says what rank 0 waited for:\n%s" % (scenario, done.stdout[-2000:]))
        print("ok  %s: rank 0 ends the job (exit %d, %.1f s with mpirun's start)" %
              (scenario, done.returncode, took))


def main(argv):
    probe = os.path.abspath(argv[1])
    if shutil.which("mpirun") is None or not os.path.exists(probe):
        print("mpirun or %s missing (a build without MPI): skipped" % probe)
        return 77
    the_calls_agree(probe)
    a_missing_rank_ends_the_job(probe)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
