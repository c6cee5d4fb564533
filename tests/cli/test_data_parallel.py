"""`mpirun -np N remat train ... --data-parallel` on this machine's loopback (docs/data-parallel.md):

- N ranks of batch b train as one process of batch N x b (2 and 4 ranks; parameters within
  float tolerance, the loss lines within it too); 2 ranks on the OpenCL backend (where the build
  has it) as 2 on the CPU;
- recomputation (sqrt) and spilling (splits under a device budget) give the bytes of `none`,
  and the same run twice gives the same bytes;
- all ranks killed (SIGKILL) after a save, or the job interrupted (SIGTERM to one rank), the
  same command resumes and ends with the bytes of an uninterrupted run;
- ranks that compile different plans, or load different parameters, are refused before any
  step;
- a killed rank, or one that stops answering (SIGSTOP, past --rank-timeout), makes the job exit
  non-zero within a bound instead of hanging;
- --rank-timeout or --communicator without a data-parallel plan, a communicator other than mpi
  or nccl, and nccl on a backend other than cuda are usage errors;
- on the cuda backend the ranks sum with NCCL by default: with a GPU, one rank's parameters are
  the bits of a run without --data-parallel; without one, the run fails naming NCCL's device.

    test_data_parallel.py REMAT WORK_DIR

Exits 77 (skipped) when mpirun is not installed; CI installs it (.ci/setup) and counts a skip
as a failure (.ci/summary).
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

MLP = "mlp:layers=3,width=32,in=16,classes=4"
TRANSFORMER = "transformer:layers=2,hidden=16,heads=2,ffn=32,seq=8,vocab=40,classes=3"
OPTIMIZER = "sgd:lr=0.1,momentum=0.9"
# Steps of about a millisecond here, for a run a signal can interrupt.
WIDE = "mlp:layers=4,width=256,in=64,classes=4"


def mpirun(ranks):
    """mpirun's command line for |ranks| processes on this machine, root allowed (CI is root).
    Every run here gives mpirun no standard input: mpirun forwards it to rank 0, and with the
    test's own (a pipe under meson) a signal to mpirun ended the job before the ranks' last
    lines reached it."""
    return ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks)]


def env():
    """The environment of mpirun's ranks. Under AddressSanitizer (the CI's second suite) their
    leak check is off: Open MPI unloads its plugins in MPI_Finalize, so what they keep cannot
    be told from remat's by library (tests/lsan.supp). remat's own data-parallel code is leak-
    checked by runtime_data_parallel, whose ranks are threads, and the runs of one process here
    keep the check."""
    asan = os.environ.get("ASAN_OPTIONS", "")
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_rmaps_base_oversubscribe="1",
                ASAN_OPTIONS=(asan + ":" if asan else "") + "detect_leaks=0")


def run(args, timeout=300):
    done = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout,
                          env=env() if args[0] == "mpirun" else None)
    return done.returncode, done.stdout


def params(path):
    """The float32 tensors of a safetensors file, as lists, by name."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        a, b = t["data_offsets"]
        raw = data[8 + n + a:8 + n + b]
        out[name] = struct.unpack("<%df" % (len(raw) // 4), raw)
    return out


def losses(output):
    return [float(line.split()[3]) for line in output.splitlines() if line.startswith("step ")]


def train(remat, work, name, model, batch, ranks, extra=(), steps=6):
    """Trains and returns (parameters file, step losses); fails on a non-zero exit."""
    out = os.path.join(work, name + ".safetensors")
    args = [remat, "train", model, "--batch", str(batch), "--optimizer", OPTIMIZER, "--steps",
            str(steps), "--threads", "1", "--save-params", out] + list(extra)
    if ranks > 0:
        args = mpirun(ranks) + args[:3] + ["--data-parallel"] + args[3:]
    code, text = run(args)
    if code != 0:
        raise AssertionError("%s: exit %d\n%s" % (" ".join(args), code, text[-3000:]))
    return out, losses(text)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def check_close(run, reference, what):
    """Two runs' (parameters file, losses): six losses each within 2e-6, every parameter within
    2e-5 of the largest of its tensor (float32 sums grouped otherwise)."""
    (path, run_losses), (reference_path, reference_losses) = run, reference
    check(len(run_losses) == len(reference_losses) == 6, "six step lines each")
    for a, b in zip(run_losses, reference_losses):
        check(abs(a - b) <= 2e-6 * (1 + abs(b)), "%s: loss %g vs %g" % (what, a, b))
    p, w = params(path), params(reference_path)
    for name in w:
        largest = max(abs(x) for x in w[name])
        worst = max(abs(x - y) for x, y in zip(p[name], w[name]))
        check(worst <= 2e-5 * max(largest, 1.0), "%s: %s differs by %g" % (what, name, worst))


def n_ranks_equal_one_process(remat, work):
    for model in (MLP, TRANSFORMER):
        for ranks in (2, 4):
            whole = train(remat, work, "whole", model, 2 * ranks, 0)
            parts = train(remat, work, "parts", model, 2, ranks)
            check_close(parts, whole, "%s, %d ranks" % (model, ranks))
            print("ok  %s: %d ranks of batch 2 train as one process of batch %d" %
                  (model, ranks, 2 * ranks))


def ranks_on_opencl_train_as_on_the_cpu(remat, work):
    """A GPU backend's ranks: each bucket goes through host memory to MPI and back
    (backends/gpu/host_staging.h)."""
    if "opencl" in os.environ.get("REMAT_TEST_BUILT_WITHOUT", "").split():
        print("--  this build has no OpenCL backend: its ranks are not run")
        return
    code, text = run([remat, "train", MLP, "--steps", "1", "--backend", "opencl"])
    if code != 0 and "unavailable" in text.lower():
        print("--  no OpenCL device here: its ranks are not run (%s)" % text.strip()[-200:])
        return
    # Rank 0 says how the sums go and what host memory their copies take, as `remat size` does.
    code, text = run(mpirun(2) + [remat, "train", MLP, "--batch", "2", "--steps", "1",
                                  "--data-parallel", "--backend", "opencl"])
    sized = run([remat, "size", MLP, "--batch", "2", "--data-parallel"])[1]
    slots = sized.split("their host copies take ")[1].split(" of host memory")[0]
    check(code == 0 and "sums: MPI, through host copies of %s\n" % slots in text,
          "exit %d\n%s\n%s" % (code, text, sized))
    code, text = run(mpirun(2) + [remat, "train", MLP, "--batch", "2", "--steps", "1",
                                  "--data-parallel"])
    check(code == 0 and "sums: MPI\n" in text, "exit %d\n%s" % (code, text))
    print("ok  rank 0 names the sums and, on OpenCL, the host memory of their copies (%s)" % slots)
    for model in (MLP, TRANSFORMER):
        cpu = train(remat, work, "cpu", model, 2, 2)
        opencl = train(remat, work, "opencl", model, 2, 2, ["--backend", "opencl"])
        check_close(opencl, cpu, "%s, 2 ranks on opencl" % model)
        print("ok  %s: 2 ranks on the OpenCL backend train as 2 on the CPU" % model)


def same_bytes_with_recomputation_spilling_and_again(remat, work):
    base, _ = train(remat, work, "none", TRANSFORMER, 4, 2)
    reference = open(base, "rb").read()
    again, _ = train(remat, work, "again", TRANSFORMER, 4, 2)
    check(open(again, "rb").read() == reference, "a second run differs")
    sqrt, _ = train(remat, work, "sqrt", TRANSFORMER, 4, 2, ["--strategy", "sqrt"])
    check(open(sqrt, "rb").read() == reference, "sqrt differs from none")
    code, text = run([remat, "compile", TRANSFORMER, "--batch", "4", "--strategy", "splits",
                      "--optimizer", OPTIMIZER, "--data-parallel", "-o",
                      os.path.join(work, "splits.rplan")])
    check(code == 0, text)
    figure = {l.split(":")[0]: int(l.split()[1]) for l in text.splitlines()
              if l.startswith(("arena:", "persistent:"))}
    budget = figure["persistent"] + figure["arena"] * 8 // 10
    code, text = run([remat, "compile", TRANSFORMER, "--batch", "4", "--strategy", "splits",
                      "--optimizer", OPTIMIZER, "--data-parallel", "--device-budget",
                      str(budget), "-o", os.path.join(work, "spilled.rplan")])
    check(code == 0 and "host spill:" in text and " 0 checkpoints spilled" not in text,
          "the budget spills: " + text)
    spilled, _ = train(remat, work, "spilled", TRANSFORMER, 4, 2,
                       ["--strategy", "splits", "--device-budget", str(budget)])
    check(open(spilled, "rb").read() == reference, "splits with spilling differs from none")
    print("ok  sqrt, splits with spilling and a second run: the bytes of none")


def rank_pids(remat, tag):
    """The ranks' processes (not mpirun's, whose command line begins otherwise)."""
    done = subprocess.run(["pgrep", "-f", "^" + remat + " train .*" + tag],
                          stdout=subprocess.PIPE, text=True)
    return [int(p) for p in done.stdout.split()]


def resume_after_killing_every_rank(remat, work):
    state = os.path.join(work, "killed.state")
    out = os.path.join(work, "resumed.safetensors")
    args = mpirun(2) + [remat, "train", MLP, "--data-parallel", "--batch", "4", "--optimizer",
                        OPTIMIZER, "--steps", "400", "--threads", "1", "--state", state,
                        "--save-every", "5", "--save-params", out]
    job = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())
    deadline = time.time() + 120
    while not os.path.exists(state) and time.time() < deadline and job.poll() is None:
        time.sleep(0.01)
    pids = rank_pids(remat, state)
    check(len(pids) == 2, "two ranks running: %s" % pids)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    code = job.wait(timeout=60)
    check(code != 0, "mpirun exit %d after its ranks were killed" % code)
    check(not os.path.exists(out), "no parameters written by a killed run")
    code, text = run(args)
    check(code == 0 and "resumed from" in text, "resume: exit %d\n%s" % (code, text[-2000:]))
    straight, _ = train(remat, work, "straight", MLP, 4, 2, steps=400)
    check(open(out, "rb").read() == open(straight, "rb").read(),
          "the resumed run differs from an uninterrupted one")
    print("ok  every rank killed after a save: the resumed run ends with the same bytes")


def a_lost_rank_ends_the_job(remat, work):
    for how, sig in (("killed", signal.SIGKILL), ("stopped", signal.SIGSTOP)):
        tag = os.path.join(work, "lost-" + how)
        args = mpirun(2) + [remat, "train", MLP, "--data-parallel", "--batch", "4", "--steps",
                            "100000000", "--threads", "1", "--rank-timeout", "5", "--state", tag]
        job = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, env=env())
        deadline = time.time() + 120
        while not os.path.exists(tag) and time.time() < deadline and job.poll() is None:
            time.sleep(0.01)
        pids = rank_pids(remat, tag)
        check(len(pids) == 2, "two ranks running: %s" % pids)
        started = time.time()
        os.kill(max(pids), sig)
        if sig == signal.SIGSTOP:
            # What remat does: the rank left waiting ends itself after --rank-timeout. How mpirun
            # then takes down a stopped process is Open MPI's (it sometimes waits for it), so
            # the stopped rank is killed here once the other is gone.
            while min(pids) in rank_pids(remat, tag) and time.time() < started + 90:
                time.sleep(0.05)
            check(min(pids) not in rank_pids(remat, tag),
                  "the waiting rank still runs 90 s after the other stopped")
            waited = time.time() - started
            for pid in rank_pids(remat, tag):
                os.kill(pid, signal.SIGKILL)
        try:
            _, errors = job.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            for pid in rank_pids(remat, tag):
                os.kill(pid, signal.SIGKILL)
            job.kill()
            raise AssertionError("a %s rank left the job running past 90 s" % how)
        check(job.returncode != 0, "mpirun exit 0 with a %s rank" % how)
        if sig == signal.SIGSTOP:
            check("within 5 s (--rank-timeout)" in errors,
                  "the waiting rank says why: %s" % errors[-2000:])
        for pid in rank_pids(remat, tag):  # a stopped rank mpirun did not take down
            os.kill(pid, signal.SIGKILL)
        if sig == signal.SIGSTOP:
            print("ok  a stopped rank: the other ends itself after %.1f s, the job exits %d" %
                  (waited, job.returncode))
        else:
            print("ok  a %s rank: the job exits %d after %.1f s" %
                  (how, job.returncode, time.time() - started))


def an_interrupted_job_ends_and_resumes(remat, work):
    """SIGTERM to one rank (as a scheduler signals a job's processes): the ranks agree to stop
    after the same step, rank 0 saves the state, each exits 143; the same command resumes.
    Not to mpirun: Open MPI's passes a SIGTERM on only after odls_base_sigkill_timeout seconds
    (1) and kills the ranks as long again later, too soon for a loaded machine
    (docs/data-parallel.md)."""
    state = os.path.join(work, "interrupted.state")
    out = os.path.join(work, "interrupted.safetensors")
    # About 2.5 s of steps here: the state is saved after the first, the signal comes 0.3 s later.
    args = mpirun(2) + [remat, "train", WIDE, "--data-parallel", "--batch", "64", "--optimizer",
                        OPTIMIZER, "--steps", "2000", "--threads", "1", "--state", state,
                        "--save-params", out]
    job = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=env())
    deadline = time.time() + 120
    while not os.path.exists(state) and time.time() < deadline and job.poll() is None:
        time.sleep(0.01)
    time.sleep(0.3)
    os.kill(max(rank_pids(remat, state)), signal.SIGTERM)
    try:
        _, errors = job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        for pid in rank_pids(remat, state):
            os.kill(pid, signal.SIGKILL)
        job.kill()
        raise AssertionError("an interrupted job still ran after 60 s")
    check(job.returncode != 0, "mpirun exit 0 after SIGTERM")
    stopped = [l.split(" at step ")[1].split(";")[0] for l in errors.splitlines()
               if "interrupted by SIGTERM at step" in l]
    check(len(stopped) == 2 and stopped[0] == stopped[1],
          "both ranks stop after the same step: %s" % errors[-2000:])
    check("state saved to" in errors and "rank 0 saves the state" in errors, errors[-2000:])
    code, text = run(args)
    check(code == 0 and "resumed from" in text, "resume: exit %d\n%s" % (code, text[-2000:]))
    straight, _ = train(remat, work, "straight2000", WIDE, 64, 2, steps=2000)
    check(open(out, "rb").read() == open(straight, "rb").read(),
          "the resumed run differs from an uninterrupted one")
    print("ok  SIGTERM to one rank: every rank stops after the same step, rank 0 saves, and the "
          "run resumes to the bytes of an uninterrupted one")


def ranks_with_other_plans_are_refused(remat, work):
    """mpirun's two programs (A : B) compiling other models: refused before any step."""
    args = (mpirun(1) + [remat, "train", MLP, "--data-parallel", "--batch", "4", "--steps", "2",
                         "--threads", "1"] + [":", "-np", "1", remat, "train",
                                             MLP.replace("width=32", "width=48"),
                                             "--data-parallel", "--batch", "4", "--steps", "2",
                                             "--threads", "1"])
    code, text = run(args, timeout=120)
    check(code != 0 and "the ranks' plans differ" in text, "exit %d\n%s" % (code, text[-2000:]))
    print("ok  ranks compiling other plans: refused, exit %d" % code)
    # The same plan from other parameters: the initial ones, and those after a step.
    files = []
    for steps in ("0", "1"):
        files.append(os.path.join(work, "start%s.safetensors" % steps))
        code, text = run([remat, "train", MLP, "--batch", "8", "--steps", steps, "--threads", "1",
                          "--save-params", files[-1]])
        check(code == 0, text)
    rank_args = [remat, "train", MLP, "--data-parallel", "--batch", "4", "--steps", "2",
                 "--threads", "1", "--load-params"]
    code, text = run(mpirun(1) + rank_args + [files[0], ":", "-np", "1"] + rank_args + [files[1]],
                     timeout=120)
    check(code != 0 and "the ranks start from different parameters" in text,
          "exit %d\n%s" % (code, text[-2000:]))
    print("ok  ranks loading other parameters: refused, exit %d" % code)


def usage(remat, work):
    code, text = run([remat, "train", MLP, "--steps", "1", "--rank-timeout", "3"])
    check(code == 2 and "--rank-timeout applies to a data-parallel plan" in text, text)
    code, text = run([remat, "compile", MLP, "--batch", "2", "--bucket-size", "1MiB", "-o",
                      os.path.join(work, "x.rplan")])
    check(code == 2 and "--bucket-size applies to --data-parallel" in text, text)
    print("ok  --rank-timeout and --bucket-size without --data-parallel: usage errors")
    for extra, needle in ((["--communicator", "mpi"], "--communicator applies to a data-parallel"),
                          (["--data-parallel", "--communicator", "tcp"],
                           "--communicator tcp: expected mpi or nccl"),
                          (["--data-parallel", "--communicator", "nccl"],
                           "--communicator nccl sums in CUDA device memory: it needs --backend "
                           "cuda or cuda:N, not cpu"),
                          (["--data-parallel", "--backend", "cuda:x"],
                           "--backend cuda:x: expected cuda or cuda:N")):
        code, text = run([remat, "train", MLP, "--batch", "2", "--steps", "1"] + extra)
        check(code == 2 and needle in text, "%s: exit %d\n%s" % (extra, code, text))
    print("ok  --communicator without --data-parallel, unknown, or nccl off cuda: usage errors")


def nccl_on_the_cuda_backend(remat, work):
    devices = run([remat, "devices"])[1]
    if not any(line.startswith("cuda:") for line in devices.splitlines()):
        # Under mpirun: its environment keeps AddressSanitizer from counting MPI's own leaks.
        code, text = run(mpirun(1) + [remat, "train", MLP, "--batch", "2", "--steps", "1",
                                      "--data-parallel", "--backend", "cuda", "--communicator",
                                      "nccl"])
        check(code != 0 and "rank 0: NCCL on CUDA device 0: " in text,
              "exit %d\n%s" % (code, text))
        print("ok  no CUDA device: --communicator nccl --backend cuda fails naming NCCL's device")
        return
    alone = train(remat, work, "cuda_alone", MLP, 4, 0, ["--backend", "cuda"])
    try:
        nccl = train(remat, work, "cuda_nccl", MLP, 4, 1, ["--backend", "cuda", "--communicator",
                                                            "nccl"])
    except AssertionError as e:
        # NCCL: a dependency the machine, or the build, may lack.
        if "cannot load NCCL" not in str(e) and "built without NCCL" not in str(e):
            raise
        print("ok  a GPU without NCCL: the run fails naming NCCL")
        return
    check(open(nccl[0], "rb").read() == open(alone[0], "rb").read(),
          "one rank through NCCL differs from a run without --data-parallel")
    print("ok  one rank through NCCL on cuda: the bits of a run without --data-parallel")


def main(argv):
    if "mpi" in os.environ.get("REMAT_TEST_BUILT_WITHOUT", "").split():
        print("this build has no MPI (meson -Dmpi; libopenmpi-dev): skipped")
        return 77
    if shutil.which("mpirun") is None:
        print("mpirun not found (apt-get install openmpi-bin libopenmpi-dev): skipped")
        return 77
    remat, work = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    usage(remat, work)
    nccl_on_the_cuda_backend(remat, work)
    n_ranks_equal_one_process(remat, work)
    ranks_on_opencl_train_as_on_the_cpu(remat, work)
    same_bytes_with_recomputation_spilling_and_again(remat, work)
    resume_after_killing_every_rank(remat, work)
    an_interrupted_job_ends_and_resumes(remat, work)
    ranks_with_other_plans_are_refused(remat, work)
    a_lost_rank_ends_the_job(remat, work)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
