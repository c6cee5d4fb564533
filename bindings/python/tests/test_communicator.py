"""remat.Communicator, a transport of the caller's (docs/python.md): two ranks, sessions in two
threads joined by an in-process communicator, train as one session of the whole batch does
(within float tolerance) and hold the same bits; an exception in a callback stops the step with
CallbackError chained to it, naming the bucket, and the bucket started before is still waited
for; an exception with a status gives the library that status; a signal whose handler raises while the
step is between callbacks stops the step too, where Python would otherwise lose it; the library
refuses a missing or needless communicator."""
import signal
import threading

import numpy as np
import pytest

import remat

MLP = "mlp:layers=3,width=16,in=8,classes=4"
OPTIMIZER = "sgd:lr=0.1,momentum=0.9"
STEPS = 3


def plan_of(batch, data_parallel):
    extra = ("--data-parallel", "--bucket-size", "2048") if data_parallel else ()
    return remat.compile(MLP, batch=batch, optimizer=OPTIMIZER, extra_args=extra)


def rows(first, count):
    """Rows [first, first + count) of a fixed batch."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    y = (np.arange(16) % 4).astype(np.int32)
    return x[first:first + count], y[first:first + count]


class ThreadWorld:
    """The ranks of one process: the last rank to start a bucket sums it, in rank order, into
    every rank's arrays."""

    def __init__(self, size):
        self.size = size
        self.lock = threading.Condition()
        self.entries = {}

    def rank(self, r):
        world = self

        class Rank(remat.Communicator):
            def __init__(self):
                super().__init__(r, world.size)
                self.rounds = {}

            def allreduce_start(self, bucket, parts):
                key = (bucket, self.rounds.get(bucket, 0))
                self.rounds[bucket] = key[1] + 1
                with world.lock:
                    entry = world.entries.setdefault(key, {"parts": {}, "done": False})
                    entry["parts"][r] = parts
                    if len(entry["parts"]) == world.size:
                        for k in range(len(parts)):
                            total = entry["parts"][0][k].copy()
                            for other in range(1, world.size):
                                total += entry["parts"][other][k]
                            for other in range(world.size):
                                entry["parts"][other][k][:] = total
                        entry["done"] = True
                        world.lock.notify_all()

            def allreduce_wait(self, bucket):
                key = (bucket, self.rounds[bucket] - 1)
                with world.lock:  # a rank whose peer failed must not wait for ever
                    if not world.lock.wait_for(lambda: world.entries[key]["done"], timeout=60):
                        raise TimeoutError("bucket %d: no peer within 60 s" % bucket)

        return Rank()


def train(plan, first, batch, initial, communicator=None):
    with remat.Session(plan, threads=1, communicator=communicator) as s:
        for name, value in initial.items():
            s.write_param(name, value)
        x, y = rows(first, batch)
        for _ in range(STEPS):
            s.set_input("x", x)
            s.set_input("labels", y)
            s.step()
        return {name: s.read_param(name) for name in initial}


def test_two_ranks_train_as_one_session_of_the_whole_batch():
    whole_plan = plan_of(4, False)
    with remat.Session(whole_plan) as s:
        initial = s.state_dict()
    whole = train(whole_plan, 0, 4, initial)
    parallel = plan_of(2, True)
    world = ThreadWorld(2)
    results, errors = [None, None], []

    def rank(r):
        try:
            results[r] = train(parallel, 2 * r, 2, initial, world.rank(r))
        except Exception as e:  # reported on the test's thread
            errors.append(e)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for name, value in whole.items():
        assert np.array_equal(results[0][name], results[1][name]), name
        worst = np.abs(results[0][name] - value).max()
        assert worst <= 2e-5 * max(1.0, np.abs(value).max()), (name, worst)


class Failing(remat.Communicator):
    """One rank that raises |exception| in the start of bucket 1."""

    def __init__(self, exception):
        super().__init__(0, 1)
        self.raise_at_one = exception
        self.calls = []

    def allreduce_start(self, bucket, parts):
        self.calls.append("start %d" % bucket)
        if bucket == 1:
            raise self.raise_at_one

    def allreduce_wait(self, bucket):
        self.calls.append("wait %d" % bucket)


@pytest.mark.parametrize("exception, returned", [(KeyError("no peer"), 21),
                                                 (remat.UnavailableError("no peer", 13), 13)])
def test_a_raising_communicator_stops_the_step_chained_to_its_exception(exception, returned):
    plan = plan_of(2, True)
    failing = Failing(exception)
    with remat.Session(plan, communicator=failing) as s:
        x, y = rows(0, 2)
        s.set_input("x", x)
        s.set_input("labels", y)
        with pytest.raises(remat.CallbackError) as caught:
            s.step()
        assert "allreduce_start of bucket 1 returned %d" % returned in str(caught.value)
        assert caught.value.__cause__ is exception
        assert failing.calls == ["start 0", "start 1", "wait 0"]
        assert failing._exception is None  # reported once


def test_the_first_exception_is_the_cause_when_the_waits_after_it_raise_too():
    class AlsoTheWait(Failing):
        def allreduce_wait(self, bucket):
            super().allreduce_wait(bucket)
            raise ValueError("wait of %d" % bucket)

    first = KeyError("start of 1")
    failing = AlsoTheWait(first)
    with remat.Session(plan_of(2, True), communicator=failing) as s:
        x, y = rows(0, 2)
        s.set_input("x", x)
        s.set_input("labels", y)
        with pytest.raises(remat.CallbackError, match="allreduce_start of bucket 1") as caught:
            s.step()
        assert caught.value.__cause__ is first
        assert failing.calls == ["start 0", "start 1", "wait 0"]


def test_a_missing_or_needless_communicator_is_refused():
    with pytest.raises(remat.InvalidArgumentError, match="options.communicator is NULL"):
        remat.Session(plan_of(2, True))
    with pytest.raises(remat.InvalidArgumentError, match="has 2 ranks, but the plan is not data-parallel"):
        remat.Session(plan_of(2, False), communicator=ThreadWorld(2).rank(0))


class Interrupted(Exception):
    """What the test's signal handler raises."""


def raise_interrupted(_signum, _frame):
    raise Interrupted()


def test_a_signal_between_callbacks_stops_the_step_instead_of_being_lost():
    # Bucket 0's start sets a timer that fires 0.2 ms later, while the library computes the rest
    # of the backward pass (milliseconds here): Python runs the handler at the next callback's
    # first line, where, unheld, its exception escapes the callback and ctypes returns 0 (the
    # wait "done"): the step would go on and succeed.
    class Alarming(remat.Communicator):
        def allreduce_start(self, bucket, parts):
            if bucket == 0:
                signal.setitimer(signal.ITIMER_REAL, 0.0002)

        def allreduce_wait(self, bucket):
            pass

    plan = remat.compile("mlp:layers=4,width=384,in=384,classes=4", batch=64, optimizer=OPTIMIZER,
                         extra_args=("--data-parallel", "--bucket-size", "600000"))
    rng = np.random.default_rng(3)
    before = signal.signal(signal.SIGALRM, raise_interrupted)
    try:
        with remat.Session(plan, threads=1, communicator=Alarming(0, 1)) as s:
            s.set_input("x", rng.uniform(-1, 1, (64, 384)).astype(np.float32))
            s.set_input("labels", (np.arange(64) % 4).astype(np.int32))
            for _ in range(10):
                # (A machine slow enough to fire it after the last callback raises it after the
                # step, as Python does; lost, the step succeeds or has no cause.)
                with pytest.raises((remat.CallbackError, Interrupted)) as caught:
                    s.step()
                if isinstance(caught.value, remat.CallbackError):
                    assert isinstance(caught.value.__cause__, Interrupted), repr(caught.value)
                assert signal.getsignal(signal.SIGALRM) is raise_interrupted  # back each time
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def test_a_signal_held_outside_the_callbacks_is_handled_after_the_step():
    from remat.communicator import _HeldSignals
    before = signal.signal(signal.SIGUSR1, raise_interrupted)
    try:
        with _HeldSignals() as held:
            signal.raise_signal(signal.SIGUSR1)  # the library's time: held
            signal.raise_signal(signal.SIGUSR1)
            with pytest.raises(Interrupted):  # a callback's time: the held one first
                _HeldSignals.call(lambda: None)
        assert signal.getsignal(signal.SIGUSR1) is raise_interrupted
        with pytest.raises(Interrupted):  # the second, once the step has its status
            held.finish()
        held.finish()  # each once
    finally:
        signal.signal(signal.SIGUSR1, before)


def test_a_handler_that_raises_while_the_handlers_are_put_back_loses_nothing(monkeypatch):
    # As the step ends, a signal whose own handler is back already may raise between two
    # signal.signal calls: simulated by the first of them raising once it has put its handler
    # back. Every handler must be back all the same, the signals held handled, and the
    # exception raised by finish().
    from remat.communicator import _HeldSignals
    real = signal.signal
    originals = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGUSR2)}
    handled = []
    real(signal.SIGUSR1, lambda *_: handled.append("usr1"))
    real(signal.SIGUSR2, raise_interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            with _HeldSignals() as held:
                signal.raise_signal(signal.SIGUSR1)  # held
                calls = []

                def putting_back(signum, handler):
                    real(signum, handler)
                    calls.append(signum)
                    if len(calls) == 1:
                        raise KeyboardInterrupt()

                monkeypatch.setattr(signal, "signal", putting_back)
            monkeypatch.setattr(signal, "signal", real)
            assert handled == []
            held.finish()
        assert handled == ["usr1"]
        assert signal.getsignal(signal.SIGUSR2) is raise_interrupted
        assert signal.getsignal(signal.SIGUSR1) is not held.hold
        assert all(signal.getsignal(s) is not held.hold for s in held.originals)
    finally:
        monkeypatch.setattr(signal, "signal", real)
        for s, h in originals.items():
            real(s, h)
