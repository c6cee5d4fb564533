"""remat.Communicator: a data-parallel session's own transport (remat_communicator in remat.h,
docs/data-parallel.md), for a caller who sums gradients with something other than remat.mpi
(torch.distributed, mpi4py, threads of one process):

    class MyWorld(remat.Communicator):
        def allreduce_start(self, bucket, parts):   # float32 numpy arrays, summed in place
            ...                                      # may return before the sums are done
        def allreduce_wait(self, bucket):
            ...                                      # returns once bucket's sums are in place

    with remat.Session(plan, communicator=MyWorld(rank, size)) as s: ...

The session calls allreduce_start on each bucket of gradients as the backward pass finishes it
and allreduce_wait before the optimizer reads it, then divides the sums by |size|; every rank
makes the same calls in the same order, on the thread that called step(). |parts| view host
memory (the session's arena on the CPU backend, a host copy on the GPU backends) that stays
valid until the bucket's allreduce_wait returns: keep them only that long. An exception in a
callback stops the step: step() raises remat.CallbackError (the library's message names the
bucket) chained to the first exception (`raise ... from`); an exception with a |status| attribute
(a remat.Error) gives the library that status instead of REMAT_ERROR_CALLBACK.

Signals (Ctrl-C) during such a step, on the main thread: Python runs a signal's handler at the
next line of Python, and while the step is in the library that line is the start of the next
callback, before any code of it could catch what the handler raises; ctypes would print that
exception and return a made-up status (0: "done") for a wait whose sums are not. So for the length of the step the
Python handlers run only inside the callbacks' own code (the exception a handler raises there stops
the step as any other does), and a signal that arrives elsewhere is held and handled at the next
callback's start, or once step() has its status.
"""
import ctypes
import signal
import threading
import traceback
import weakref

import numpy as np

from . import _capi

CALLBACK_STATUS = 21  # REMAT_ERROR_CALLBACK


class Communicator:
    """Communicator(rank, size): subclass it with allreduce_start(bucket, parts) and
    allreduce_wait(bucket); give an instance to Session(plan, communicator=...)."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size
        self._exception = None  # the first exception a callback raised, until step() reports it
        self._sessions = weakref.WeakSet()
        # The C struct and its two callbacks live as long as this object (sessions keep it).
        self._callbacks = (_capi.ALLREDUCE_START_FN(self._start), _capi.ALLREDUCE_WAIT_FN(self._wait))
        self._struct = _capi.Communicator(ctypes.sizeof(_capi.Communicator), rank, size, None,
                                          *self._callbacks)

    @property
    def communicator(self):
        """The address of its remat_communicator, for remat_session_options.communicator."""
        return ctypes.addressof(self._struct)

    def allreduce_start(self, bucket, parts):
        """Starts summing each array of |parts| over the ranks, in place; may return before the
        sums are done. Buckets are numbered from 0 in the order a step starts them."""
        raise NotImplementedError("a remat.Communicator defines allreduce_start")

    def allreduce_wait(self, bucket):
        """Returns once bucket |bucket|'s sums are in its arrays."""
        raise NotImplementedError("a remat.Communicator defines allreduce_wait")

    def _failed(self, exception):
        """The status for |exception|, kept as the step's cause unless an earlier one is (the
        waits a failed step still makes may fail too)."""
        try:
            if self._exception is None:
                # Its frames hold the parts' views of session memory: drop their locals.
                traceback.clear_frames(exception.__traceback__)
                self._exception = exception
            status = getattr(exception, "status", None)
            return status if type(status) is int and 0 < status < 256 else CALLBACK_STATUS
        except BaseException:  # noqa: B902 (a status property that raises)
            return CALLBACK_STATUS

    # The callbacks the library calls: nothing may propagate into C (ctypes would print the
    # exception and return 0, success).
    def _start(self, _user, bucket, parts, count):
        try:
            arrays = [np.ctypeslib.as_array(parts[i].data, shape=(parts[i].count,)) for i in range(count)]
            _HeldSignals.call(self.allreduce_start, bucket, arrays)
            return 0
        except BaseException as e:  # noqa: B902 (any failure stops the step)
            return self._failed(e)

    def _wait(self, _user, bucket):
        try:
            _HeldSignals.call(self.allreduce_wait, bucket)
            return 0
        except BaseException as e:  # noqa: B902
            return self._failed(e)


class _HeldSignals:
    """with _HeldSignals() as held: a step whose callbacks are a remat.Communicator's. On the main
    thread (the only one that runs Python's signal handlers) every signal with a Python handler
    gets one that holds it while the step is outside call(), and runs the original inside; on
    leaving, the originals are back; then held.finish() handles the signals held, in order."""

    _current = None  # the innermost step's, on the main thread

    def __init__(self):
        self.originals = {}
        self.held = []
        self.raised = None  # what an original handler raised while __exit__ put them back
        self.open = False  # inside call(): handlers run as they would
        self.active = False  # until __exit__ is done: hold() holds, outside call()
        self.outer = None

    @classmethod
    def call(cls, function, *args):
        """function(*args) with the step's signals handled: those held first, then as they come."""
        current = cls._current
        if current is None or threading.current_thread() is not threading.main_thread():
            return function(*args)
        current.handle_held()
        current.open = True
        try:
            return function(*args)
        finally:
            current.open = False

    def hold(self, signum, frame):
        if self.open or not self.active:
            return self.originals[signum](signum, frame)
        self.held.append(signum)
        return None

    def handle_held(self):
        """Runs the original handler of each signal held, in order, until one raises."""
        while self.held:
            signum = self.held.pop(0)
            self.originals[signum](signum, None)

    def finish(self):
        """After __exit__: runs the original handler of each signal still held, in order, then
        raises the first exception one of them, or one while __exit__ ran, raised."""
        first, self.raised = self.raised, None
        while self.held:
            signum = self.held.pop(0)
            try:
                self.originals[signum](signum, None)
            except BaseException as e:  # noqa: B902 (every held signal is handled; the first wins)
                first = e if first is None else first
        if first is not None:
            raise first

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        self.outer, _HeldSignals._current = _HeldSignals._current, self
        self.active = True
        try:
            for signum in signal.valid_signals():
                handler = signal.getsignal(signum)
                if callable(handler):
                    self.originals[signum] = handler
                    signal.signal(signum, self.hold)
        except BaseException as e:  # noqa: B902 (an original handler raised: undo, then propagate)
            self.__exit__()
            self.raised = e  # the first interruption (another while undoing is dropped)
            self.finish()
        return self

    def __exit__(self, *exc):
        if not self.active:
            return False
        _HeldSignals._current = self.outer
        back = list(self.originals.items())
        while back:
            # hold() still holds what comes to a handler not yet put back; an original one already
            # back may raise here: kept for finish(), and the rest are put back all the same.
            try:
                while back:
                    signal.signal(*back[0])
                    back.pop(0)
            except BaseException as e:  # noqa: B902
                self.raised = self.raised or e
        self.active = False
        return False
