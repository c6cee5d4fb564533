"""remat.mpi (libremat_mpi through ctypes) from Python programs, as mpi_worker.py runs them: the
failure paths in one process, and N ranks under mpirun training a data-parallel plan to the same
parameters on every rank, equal to one process of the whole batch within float tolerance.
Skipped where REMAT_MPI_LIB is unset; .ci/python_check sets it in a build with MPI."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_worker.py")
MODEL = "mlp:layers=3,width=24,in=12,classes=3"

# Where REMAT_MPI_LIB is set (a build with MPI), mpirun must be there too: no quiet skip.
pytestmark = pytest.mark.skipif(not os.environ.get("REMAT_MPI_LIB"),
                                reason="no libremat_mpi (REMAT_MPI_LIB): a build without MPI")


def test_mpirun_is_there():
    assert shutil.which("mpirun"), "REMAT_MPI_LIB is set but there is no mpirun (openmpi-bin)"


def env():
    return dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def test_failure_paths():
    done = subprocess.run([sys.executable, WORKER, "failures"], env=env(), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]


def test_nccl_join():
    cli = os.environ.get("REMAT_CLI") or shutil.which("remat")
    devices = subprocess.run([cli, "devices"], stdout=subprocess.PIPE, text=True, timeout=120).stdout
    gpu = any(line.startswith("cuda:") for line in devices.splitlines())
    done = subprocess.run([sys.executable, WORKER, "nccl", "1" if gpu else "0"], env=env(),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]


@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_train_as_one_process(ranks, tmp_path):
    dp, full = tmp_path / "dp.rplan", tmp_path / "full.rplan"
    cli = os.environ.get("REMAT_CLI") or shutil.which("remat")
    for path, batch, extra in ((dp, 4, ["--data-parallel"]), (full, 4 * ranks, [])):
        subprocess.run([cli, "compile", MODEL, "--batch", str(batch), "--optimizer",
                        "sgd:lr=0.1,momentum=0.9", "-o", str(path)] + extra, check=True,
                       stdout=subprocess.DEVNULL)
    done = subprocess.run(["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks),
                           sys.executable, WORKER, "train", str(dp), str(full), "6", str(tmp_path)],
                          env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:]
    first = np.load(tmp_path / "rank0.npz")
    for r in range(1, ranks):
        other = np.load(tmp_path / ("rank%d.npz" % r))
        assert all(np.array_equal(first[k], other[k]) for k in first.files), "rank %d differs" % r
    whole = np.load(tmp_path / "full.npz")
    assert sorted(first.files) == sorted(whole.files)
    for k in first.files:
        largest = max(float(np.abs(whole[k]).max()), 1.0)
        assert np.abs(first[k] - whole[k]).max() <= 2e-5 * largest, k
