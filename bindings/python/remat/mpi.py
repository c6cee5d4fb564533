"""remat.mpi: data-parallel training under mpirun (docs/data-parallel.md), through libremat_mpi
(include/remat/remat_mpi.h), the communicator `remat train --data-parallel` uses.

    with remat.mpi.join(timeout=300) as world:     # initialises MPI; leave() at the end
        plan = remat.Plan.open("dp.rplan")         # remat compile --data-parallel (a rank's batch)
        with remat.Session(plan, communicator=world) as s:
            ...  # rows [world.rank * B, (world.rank + 1) * B) of each batch of world.size * B rows

On CUDA devices, remat.mpi.join(nccl_device=-1) sums with NCCL in device memory instead: each
rank's sessions then run on the backend world.backend names ("cuda:D", D the rank's local rank
with -1).

leave() closes the world's sessions, then finalises MPI; call it (or end the with block) on the
thread that joined, as MPI asks. A World collected or left open at exit is left then, after its
sessions (which keep it alive), on whatever thread collects it: a last resort. The library is
REMAT_MPI_LIB, else libremat_mpi.so.1 in the folder of the libremat REMAT_LIB names, else where
the system's loader finds it; a remat built without MPI has none (ImportError on first use).
"""
import ctypes
import os
import weakref

from ._capi import library_path
from .errors import FailedPreconditionError, raise_for


class _Communicator(ctypes.Structure):
    """remat_communicator, whose callbacks Python does not call."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("rank", ctypes.c_int32), ("size", ctypes.c_int32),
                ("user", ctypes.c_void_p), ("allreduce_start", ctypes.c_void_p),
                ("allreduce_wait", ctypes.c_void_p), ("memory", ctypes.c_int32),
                ("device", ctypes.c_int32)]


_MEMORY_CUDA = 1  # REMAT_MEMORY_CUDA


_lib = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    folder = os.path.dirname(library_path)  # "" where the loader found libremat.so.1
    beside = os.path.join(folder, "libremat_mpi.so.1") if folder else ""
    path = os.environ.get("REMAT_MPI_LIB") or (beside if beside and os.path.exists(beside)
                                               else "libremat_mpi.so.1")
    try:
        # Global: Open MPI's plugins, loaded by MPI_Init, resolve their symbols in libmpi.
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        raise ImportError("remat.mpi: cannot load %r (%s); remat builds libremat_mpi where meson finds "
                          "MPI (libopenmpi-dev); set REMAT_MPI_LIB to its path" % (path, e))
    lib.remat_mpi_join.restype = ctypes.c_int
    lib.remat_mpi_join.argtypes = [ctypes.c_double, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                   ctypes.c_size_t]
    lib.remat_mpi_join_nccl.restype = ctypes.c_int
    lib.remat_mpi_join_nccl.argtypes = [ctypes.c_double, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.c_char_p, ctypes.c_size_t]
    lib.remat_mpi_communicator.restype = ctypes.c_void_p
    lib.remat_mpi_communicator.argtypes = [ctypes.c_void_p]
    lib.remat_mpi_leave.restype = None
    lib.remat_mpi_leave.argtypes = [ctypes.c_void_p]
    _lib = lib
    return lib


class World:
    """This process's membership of MPI_COMM_WORLD (remat.mpi.join()): |rank|, |size|, the
    backend its sessions run on (|backend|: None for any, "cuda:D" for NCCL's sums on device D),
    and the communicator Session(plan, communicator=world) takes."""

    def __init__(self, handle):
        self._handle = handle
        self._sessions = weakref.WeakSet()
        head = _Communicator.from_address(_load().remat_mpi_communicator(handle))
        self.rank, self.size = head.rank, head.size
        # An older library's struct ends before |memory|: host memory.
        in_device = (head.struct_size >= ctypes.sizeof(_Communicator) and
                     head.memory == _MEMORY_CUDA)
        self.backend = "cuda:%d" % head.device if in_device else None
        # Sessions keep their World alive, so this runs after theirs (collected or at exit).
        self._finalizer = weakref.finalize(self, _load().remat_mpi_leave, handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.leave()

    @property
    def communicator(self):
        """The address of its remat_communicator, for remat_session_options.communicator."""
        if not self._finalizer.alive:
            raise FailedPreconditionError("remat.mpi: the world was left", 15)
        return _load().remat_mpi_communicator(self._handle)

    def leave(self):
        """Closes the sessions that use it, then finalises MPI; calling it again does nothing.
        MPI starts once per process: no join() after this."""
        if not self._finalizer.alive:
            return
        for session in list(self._sessions):
            session.close()
        self._finalizer()


def join(timeout=300.0, nccl_device=None):
    """Initialises MPI and returns the World; |timeout| (seconds, > 0, at most a day) is how long
    a wait for another rank's part of a sum waits before it ends the whole job (remat_mpi.h).
    With |nccl_device| (a CUDA device, or -1: the rank's local rank) the buckets are summed by
    NCCL on that device (remat_mpi_join_nccl), for sessions on world.backend.
    InvalidArgumentError for a timeout or device out of range, FailedPreconditionError when MPI
    was initialised already, UnavailableError when MPI cannot start or a rank cannot open NCCL."""
    handle = ctypes.c_void_p()
    message = ctypes.create_string_buffer(512)
    if nccl_device is None:
        status = _load().remat_mpi_join(float(timeout), ctypes.byref(handle), message, len(message))
    else:
        status = _load().remat_mpi_join_nccl(float(timeout), int(nccl_device), ctypes.byref(handle),
                                             message, len(message))
    raise_for(status, message.value.decode(errors="replace"))
    return World(handle.value)
