"""Run by test_mpi.py: remat.mpi as a Python program under mpirun uses it.

    python mpi_worker.py failures
        (one process) join's refusals, and MPI's one start per process.
    python mpi_worker.py nccl GPU
        (one process) join(nccl_device=...)'s refusals, then its join on the local rank's
        device: with GPU 1 it must succeed (world.backend "cuda:0"), with GPU 0 fail naming NCCL.
    mpirun -np N python mpi_worker.py train DP_PLAN FULL_PLAN STEPS OUT_DIR
        each rank trains DP_PLAN on its rows of each step's batch with remat.mpi's communicator
        and saves its parameters to OUT_DIR/rankR.npz; rank 0 then trains FULL_PLAN (batch N x B,
        no communicator) on the whole batches and saves OUT_DIR/full.npz.
"""
import os
import sys

import numpy as np

import remat


def failures():
    for bad in (0, -1, float("nan"), 86401):
        try:
            remat.mpi.join(timeout=bad)
            raise AssertionError("join(timeout=%r) was taken" % bad)
        except remat.InvalidArgumentError as e:
            assert "timeout_seconds is" in str(e), str(e)
    world = remat.mpi.join(timeout=30)
    assert (world.rank, world.size) == (0, 1), (world.rank, world.size)
    plan = remat.compile("mlp:layers=2,width=8,in=4,classes=2", batch=2)
    session = remat.Session(plan, communicator=world)  # a size-1 world with any plan
    try:
        remat.mpi.join(timeout=30)
        raise AssertionError("a second join was taken")
    except remat.FailedPreconditionError as e:
        assert "initialised already" in str(e), str(e)
    world.leave()
    try:
        session.step()
        raise AssertionError("a session of a world that was left still steps")
    except remat.FailedPreconditionError as e:
        assert "closed" in str(e), str(e)
    world.leave()  # again: nothing
    try:
        remat.Session(plan, communicator=world)
        raise AssertionError("a world that was left still gives sessions")
    except remat.FailedPreconditionError as e:
        assert "left" in str(e), str(e)
    try:
        remat.mpi.join(timeout=30)
        raise AssertionError("a join after leaving was taken")
    except remat.FailedPreconditionError as e:
        assert "finalised already" in str(e), str(e)
    print("ok  remat.mpi failure paths")


def nccl(gpu):
    for bad in (-2, 1024):
        try:
            remat.mpi.join(timeout=30, nccl_device=bad)
            raise AssertionError("join(nccl_device=%r) was taken" % bad)
        except remat.InvalidArgumentError as e:
            assert "cuda_device is" in str(e), str(e)
    if gpu:
        try:
            world = remat.mpi.join(timeout=30, nccl_device=-1)
        except remat.UnavailableError as e:
            # NCCL: a dependency the machine, or the build, may lack.
            if "cannot load NCCL" not in str(e) and "built without NCCL" not in str(e):
                raise
            print("ok  remat.mpi.join(nccl_device=...) refusals; NCCL not installed: %s" % e)
            return
        with world:
            assert (world.rank, world.size, world.backend) == (0, 1, "cuda:0"), world.backend
        print("ok  remat.mpi.join(nccl_device=-1) on a GPU")
        return
    try:
        remat.mpi.join(timeout=30, nccl_device=-1)
        raise AssertionError("NCCL was joined without a GPU")
    except remat.UnavailableError as e:
        assert "NCCL on CUDA device 0" in str(e), str(e)
    print("ok  remat.mpi.join(nccl_device=...) refusals; without a GPU it fails naming NCCL")


def rows(first, count, step, cols, classes):
    r = np.arange(first, first + count, dtype=np.float64)[:, None]
    x = np.sin(0.37 * r + 1.3 * step + 0.71 * np.arange(cols)[None, :]).astype(np.float32)
    labels = ((np.arange(first, first + count) * 7 + step * 3) % classes).astype(np.int32)
    return x, labels


def train(path, world, first_row, steps, out):
    with remat.Plan.open(path) as plan, remat.Session(plan, threads=1, communicator=world) as s:
        x, y = plan.inputs[0], plan.labels[0]
        for step in range(steps):
            xs, ys = rows(first_row, x.shape[0], step, x.shape[1], 3)
            s.set_input(x.name, xs)
            s.set_input(y.name, ys)
            s.step()
        np.savez(out, **s.state_dict())


def main(argv):
    if argv[1:] == ["failures"]:
        failures()
        return 0
    if argv[1] == "nccl":
        nccl(argv[2] == "1")
        return 0
    dp, full, steps, out = argv[2], argv[3], int(argv[4]), argv[5]
    with remat.mpi.join(timeout=60) as world:  # left (MPI finalised) at the end of the block
        with remat.Plan.open(dp) as plan:
            batch = plan.inputs[0].shape[0]
        train(dp, world, world.rank * batch, steps, os.path.join(out, "rank%d.npz" % world.rank))
        if world.rank == 0:
            train(full, None, 0, steps, os.path.join(out, "full.npz"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
