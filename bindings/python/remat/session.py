"""remat.Session: a training session of a plan on a backend (remat_session_create)."""
import ctypes
import weakref

import numpy as np

from . import _capi
from ._capi import lib
from .communicator import Communicator, _HeldSignals
from .errors import CallbackError, Error, FailedPreconditionError, InvalidArgumentError, raise_for
from .plan import as_array


class Session:
    """Session(plan, backend="cpu", arena=None, threads=0, init_params=True, communicator=None).

    |arena|: None (the library allocates it) or a caller buffer (a writable object with the
    buffer protocol, e.g. a numpy array or bytearray) of at least plan.memory.arena_bytes at the
    plan's alignment. |communicator|: a remat.mpi.World (under mpirun) or a remat.Communicator
    (a transport of the caller's), for a data-parallel plan (`remat compile --data-parallel`). A
    context manager; close() frees it (also done when it is collected).
    """

    def __init__(self, plan, backend="cpu", arena=None, threads=0, init_params=True, communicator=None):
        options = _capi.SessionOptions()
        raise_for(lib.remat_session_options_init_sized(ctypes.byref(options), ctypes.sizeof(options)),
                  "remat_session_options_init failed")
        options.backend = backend.encode()
        options.threads = threads
        options.init_params = 1 if init_params else 0
        self._arena = None
        if arena is not None:
            view = memoryview(arena)
            if view.readonly:
                raise InvalidArgumentError("the arena must be writable", 1)
            buffer = (ctypes.c_char * view.nbytes).from_buffer(view.cast("B"))
            options.arena = ctypes.addressof(buffer)
            options.arena_size = view.nbytes
            self._arena = (arena, buffer)  # kept alive as long as the session
        if communicator is not None:
            options.communicator = communicator.communicator
        handle = ctypes.c_void_p()
        message = ctypes.create_string_buffer(512)
        status = lib.remat_session_create(plan.handle, ctypes.byref(options), ctypes.byref(handle), message,
                                          len(message))
        raise_for(status, message.value.decode(errors="replace"))
        self.plan = plan
        self._handle = handle
        plan._sessions.add(self)
        self._finalizer = weakref.finalize(self, lib.remat_session_destroy, handle)
        self._communicator = communicator  # kept alive as long as the session
        if communicator is not None:
            communicator._sessions.add(self)

    @property
    def handle(self):
        if not self._finalizer.alive:
            raise FailedPreconditionError("the session is closed", 15)
        return self._handle

    def close(self):
        """Frees the session; calling it again does nothing."""
        self._finalizer()
        self.plan._sessions.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check(self, status, cause=None):
        """Raises the error of |status|, if any, with |cause| (an exception a callback of the call
        raised) or a remat.Communicator's callback's as its cause."""
        if status == 0:
            return
        message = (lib.remat_session_last_error(self.handle) or b"").decode(errors="replace")
        if cause is None:
            cause = getattr(self._communicator, "_exception", None)
            if cause is not None:
                self._communicator._exception = None
        if cause is None:
            raise_for(status, message)
        try:
            raise_for(status, message)
        except Error as e:
            raise e from cause

    def set_input(self, name, value):
        """Sets input or label |name| for the next step or eval: an array of its dtype and shape."""
        binding = self.plan.binding(name, (_capi.BINDING_INPUT, _capi.BINDING_LABEL))
        array = as_array(value, binding)
        self._check(lib.remat_session_set_input(self.handle, name.encode(), array.ctypes.data, array.nbytes))

    def step(self):
        """One training step on the inputs set; returns its loss (before the update)."""
        loss = ctypes.c_float()
        if not isinstance(self._communicator, Communicator):
            self._check(lib.remat_session_step(self.handle, ctypes.byref(loss)))
            return loss.value
        # Python callbacks: signals are handled where they can stop the step (communicator.py).
        held = _HeldSignals()
        try:
            with held:
                status = lib.remat_session_step(self.handle, ctypes.byref(loss))
            self._check(status)
        finally:
            held.finish()
        return loss.value

    def eval(self):
        """The plan's eval program on the inputs set; returns the loss (no update)."""
        loss = ctypes.c_float()
        self._check(lib.remat_session_eval(self.handle, ctypes.byref(loss)))
        return loss.value

    def read_output(self, name):
        """An output of the last eval, as a numpy array."""
        binding = self.plan.binding(name, (_capi.BINDING_OUTPUT,))
        out = np.empty(binding.shape, dtype=binding.dtype)
        self._check(lib.remat_session_read_output(self.handle, name.encode(), out.ctypes.data, out.nbytes))
        return out

    def read_param(self, name):
        """Parameter or buffer |name| as a numpy array (a copy)."""
        binding = self.plan.binding(name, (_capi.BINDING_PARAM, _capi.BINDING_BUFFER))
        out = np.empty(binding.shape, dtype=binding.dtype)
        self._check(lib.remat_session_read_param(self.handle, name.encode(), out.ctypes.data, out.nbytes))
        return out

    def write_param(self, name, value):
        """Overwrites parameter or buffer |name| with an array of its dtype and shape."""
        binding = self.plan.binding(name, (_capi.BINDING_PARAM, _capi.BINDING_BUFFER))
        array = as_array(value, binding)
        self._check(lib.remat_session_write_param(self.handle, name.encode(), array.ctypes.data, array.nbytes))

    def state_dict(self):
        """Every parameter and buffer by name, as torch's state_dict names them (numpy arrays)."""
        return {b.name: self.read_param(b.name) for b in self.plan.params + self.plan.buffers}

    def load_state_dict(self, state):
        """Writes every parameter and buffer from |state|; its keys must be exactly the plan's."""
        names = [b.name for b in self.plan.params + self.plan.buffers]
        missing = [n for n in names if n not in state]
        unexpected = [k for k in state if k not in names]
        if missing or unexpected:
            raise InvalidArgumentError("load_state_dict: missing %s, unexpected %s" % (missing, unexpected), 1)
        for name in names:
            self.write_param(name, state[name])

    def save_state(self):
        """The training state (parameters, optimizer state, step count; docs/state.md) as bytes."""
        chunks, raised = [], []

        # An exception cannot cross the C call: it stops the save (CallbackError) and is the
        # error's cause.
        def write(_context, data, size):
            try:
                chunks.append(ctypes.string_at(data, size))
                return 0
            except BaseException as e:  # noqa: B036 - carried across C, raised after it
                raised.append(e)
                return 1

        status = lib.remat_session_save_state(self.handle, _capi.WRITE_FN(write), None)
        self._check(status, raised[0] if raised else None)
        # A signal's exception raised as the callback starts, before its try, is printed by
        # ctypes and the callback returns 0: a short state is the only sign of it.
        expected = ctypes.c_uint64()
        self._check(lib.remat_session_state_size(self.handle, ctypes.byref(expected)))
        state = b"".join(chunks)
        if len(state) != expected.value:
            raise CallbackError("save_state: the copy was interrupted (%d of %d bytes)" %
                                (len(state), expected.value), 21)
        return state

    def load_state(self, state):
        """Loads a state save_state() gave (of the same plan); on error the session is as
        remat_session_load_state says: unchanged, unless the copy had begun (then partly loaded,
        refusing to step until a load succeeds)."""
        data = bytes(state)
        raised = []

        def read(_context, offset, out, size):
            if offset + size > len(data):
                return 1
            try:
                ctypes.memmove(out, data[offset:offset + size], size)
                return 0
            except BaseException as e:  # noqa: B036 - carried across C, raised after it
                raised.append(e)
                return 1

        status = lib.remat_session_load_state(self.handle, _capi.READ_FN(read), None, len(data))
        self._check(status, raised[0] if raised else None)

    @property
    def step_count(self):
        return lib.remat_session_step_count(self.handle)

    @property
    def learning_rate(self):
        lr = ctypes.c_float()
        self._check(lib.remat_session_learning_rate(self.handle, ctypes.byref(lr)))
        return lr.value

    @learning_rate.setter
    def learning_rate(self, value):
        self._check(lib.remat_session_set_learning_rate(self.handle, float(value)))

    @property
    def loss_scale(self):
        """The dynamic loss scale the next step uses (docs/precision.md); NotFoundError for a plan
        without loss scaling (fp16 plans have it by default)."""
        scale = ctypes.c_float()
        # The C call sets no message (it reads a const session): the binding words it.
        raise_for(lib.remat_session_loss_scale(self.handle, ctypes.byref(scale)),
                  "the plan has no loss scaling (compile with --precision fp16 or --loss-scale dynamic)")
        return scale.value
