"""remat.Plan: a compiled plan opened from a file or bytes (remat_plan_open)."""
import ctypes
import weakref
from collections import namedtuple

import numpy as np

from . import _capi
from ._capi import lib
from .errors import FailedPreconditionError, InvalidArgumentError, NotFoundError, raise_for

Binding = namedtuple("Binding", "name dtype shape bytes")
Binding.__doc__ = "A named tensor of a plan: numpy dtype name, shape (a tuple) and size in bytes."

Memory = namedtuple("Memory", "arena_bytes persistent_bytes host_bytes alignment")
Memory.__doc__ = "The bytes of each region a session of the plan needs, and their base alignment."


class Plan:
    """A plan (`remat compile ... -o FILE.rplan`), opened and verified by the library.

    Plan.open(path_or_bytes). Its figures (memory) and bindings (inputs, labels, params,
    buffers, outputs) are read from the library. close() frees it (also done when it is
    collected); a plan with live sessions cannot be closed.
    """

    def __init__(self, data):
        raw = bytes(data)
        # remat_plan_open reads the bytes in place, 8-byte aligned: a uint64 array holds them.
        self._storage = (ctypes.c_uint64 * ((len(raw) + 7) // 8))()
        ctypes.memmove(self._storage, raw, len(raw))
        handle = ctypes.c_void_p()
        message = ctypes.create_string_buffer(512)
        status = lib.remat_plan_open(self._storage, len(raw), ctypes.byref(handle), message, len(message))
        raise_for(status, message.value.decode(errors="replace"))
        self._handle = handle
        self._bindings = {}  # kind -> its bindings: a plan never changes, so read once
        self._sessions = weakref.WeakSet()
        self._finalizer = weakref.finalize(self, lib.remat_plan_close, handle)

    @classmethod
    def open(cls, source):
        """A plan from a path (str or os.PathLike) or from its bytes (bytes, bytearray, memoryview)."""
        if isinstance(source, (bytes, bytearray, memoryview)):
            return cls(source)
        with open(source, "rb") as f:
            return cls(f.read())

    @property
    def handle(self):
        if not self._finalizer.alive:
            raise FailedPreconditionError("the plan is closed", 15)
        return self._handle

    def close(self):
        """Frees the plan; calling it again does nothing. Refused while a session uses it."""
        if any(True for _ in self._sessions):
            raise FailedPreconditionError("the plan has open sessions: close them first", 15)
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def memory(self):
        """Memory(arena_bytes, persistent_bytes, host_bytes, alignment)."""
        info = _capi.MemoryInfo()
        raise_for(lib.remat_plan_memory(self.handle, ctypes.byref(info)), "remat_plan_memory failed")
        return Memory(info.arena_bytes, info.persistent_bytes, info.host_bytes, info.alignment)

    def bindings(self, kind):
        """The plan's bindings of |kind| (remat._capi.BINDING_*), in plan order."""
        if kind not in self._bindings:
            self._bindings[kind] = self._read_bindings(kind)
        return list(self._bindings[kind])

    def _read_bindings(self, kind):
        count = ctypes.c_uint32()
        raise_for(lib.remat_plan_binding_count(self.handle, kind, ctypes.byref(count)), "binding count failed")
        out = []
        for i in range(count.value):
            info = _capi.TensorInfo()
            raise_for(lib.remat_plan_binding(self.handle, kind, i, ctypes.byref(info)), "binding %d failed" % i)
            out.append(Binding(info.name.decode(), _capi.DTYPES.get(info.dtype, "unknown"),
                               tuple(info.dims[k] for k in range(info.rank)), info.bytes))
        return out

    @property
    def inputs(self):
        return self.bindings(_capi.BINDING_INPUT)

    @property
    def labels(self):
        return self.bindings(_capi.BINDING_LABEL)

    @property
    def params(self):
        return self.bindings(_capi.BINDING_PARAM)

    @property
    def buffers(self):
        return self.bindings(_capi.BINDING_BUFFER)

    @property
    def outputs(self):
        return self.bindings(_capi.BINDING_OUTPUT)

    def binding(self, name, kinds):
        """The binding called |name| among |kinds|; NotFoundError naming the ones there are."""
        found = []
        for kind in kinds:
            for b in self.bindings(kind):
                if b.name == name:
                    return b
                found.append(b.name)
        raise NotFoundError("no binding %r here; the plan has %s" % (name, ", ".join(found) or "none"), 11)


def as_array(value, binding):
    """|value| as a C-contiguous numpy array of |binding|'s dtype and shape; InvalidArgumentError
    (a ValueError) naming the binding when the dtype or the shape differ."""
    array = np.asarray(value)
    if array.dtype != np.dtype(binding.dtype):
        raise InvalidArgumentError("%r is %s %s, got %s" % (binding.name, binding.dtype, list(binding.shape), array.dtype), 1)
    if tuple(array.shape) != binding.shape:
        raise InvalidArgumentError("%r has shape %s, got %s" % (binding.name, list(binding.shape), list(array.shape)), 1)
    return np.ascontiguousarray(array)
