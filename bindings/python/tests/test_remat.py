"""The Python package against the built library (REMAT_LIB) and command (REMAT_CLI): plans,
sessions, parameters, states, eval, every failure path raising its Error subclass with the
library's message, handles freed once."""
import ctypes
import gc
import os

import numpy as np
import pytest

import remat

MLP = "mlp:layers=2,width=16,in=8,classes=3"


@pytest.fixture(scope="module")
def plan():
    p = remat.compile(MLP, batch=4, strategy="sqrt", optimizer="adam:lr=0.01")
    yield p


def batch(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    return x, (x.sum(axis=1) > 0).astype(np.int32)


def test_import_checked_the_library_version():
    assert remat.API_VERSION == 1 and remat.version_info.api_version == 1
    assert os.path.exists(remat.library_path) or remat.library_path == "libremat.so.1"


def test_a_plan_reports_memory_and_bindings(plan):
    m = plan.memory
    assert m.arena_bytes > 0 and m.persistent_bytes > 0 and m.host_bytes == 0 and m.alignment == 64
    assert [(b.name, b.dtype, b.shape) for b in plan.inputs] == [("x", "float32", (4, 8))]
    assert [(b.name, b.dtype, b.shape) for b in plan.labels] == [("labels", "int32", (4,))]
    assert [b.name for b in plan.params] == ["fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias", "fc2.weight",
                                             "fc2.bias"]
    assert plan.params[0].shape == (16, 8) and plan.params[0].bytes == 16 * 8 * 4


def test_a_plan_opens_from_a_file_and_from_bytes(plan, tmp_path):
    path = tmp_path / "p.rplan"
    assert os.system("%s compile %s --batch 4 -o %s > /dev/null" % (os.environ["REMAT_CLI"], MLP, path)) == 0
    from_file = remat.Plan.open(str(path))
    from_bytes = remat.Plan.open(path.read_bytes())
    assert from_file.memory == from_bytes.memory
    from_file.close()
    from_file.close()  # a second close does nothing


def test_training_lowers_the_loss_and_is_deterministic(plan):
    losses = []
    for _ in range(2):
        with remat.Session(plan, threads=1) as s:
            x, y = batch()
            s.set_input("x", x)
            s.set_input("labels", y)
            losses.append([s.step() for _ in range(20)])
            assert s.step_count == 20
    assert losses[0] == losses[1]
    assert losses[0][-1] < losses[0][0]


def test_parameters_read_write_and_state_dict_round_trip(plan):
    with remat.Session(plan) as s:
        w = s.read_param("fc0.weight")
        assert w.shape == (16, 8) and w.dtype == np.float32
        s.write_param("fc0.weight", np.full((16, 8), 0.5, np.float32))
        assert (s.read_param("fc0.weight") == 0.5).all()
        state = s.state_dict()
        assert set(state) == {b.name for b in plan.params}
        with remat.Session(plan) as t:
            t.load_state_dict(state)
            for name, value in state.items():
                np.testing.assert_array_equal(t.read_param(name), value)


def test_saved_state_resumes_to_the_same_parameters(plan):
    x, y = batch(1)
    with remat.Session(plan) as a:
        a.set_input("x", x)
        a.set_input("labels", y)
        for _ in range(3):
            a.step()
        saved = a.save_state()
        for _ in range(3):
            a.step()
        want = a.state_dict()
    with remat.Session(plan) as b:
        b.load_state(saved)
        assert b.step_count == 3
        b.set_input("x", x)
        b.set_input("labels", y)
        for _ in range(3):
            b.step()
        for name, value in b.state_dict().items():
            assert value.tobytes() == want[name].tobytes()


def test_eval_and_outputs(plan):
    with remat.Session(plan) as s:
        x, y = batch(2)
        s.set_input("x", x)
        s.set_input("labels", y)
        loss = s.eval()
        logits = s.read_output(plan.outputs[0].name)
        assert logits.shape == (4, 3) and logits.dtype == np.float32
        assert loss == pytest.approx(s.step(), rel=1e-6)  # eval is the step's forward, no update
        with pytest.raises(remat.FailedPreconditionError, match="no eval has run"):
            s.read_output(plan.outputs[0].name)


def test_learning_rate_is_read_and_set(plan):
    with remat.Session(plan) as s:
        assert s.learning_rate == pytest.approx(0.01)
        s.learning_rate = 0.5
        assert s.learning_rate == 0.5
        with pytest.raises(remat.InvalidArgumentError, match="not a finite rate"):
            s.learning_rate = float("nan")


def test_loss_scale_is_read_where_the_plan_scales_its_loss(plan):
    fp16 = remat.compile(MLP, batch=4, optimizer="sgd:lr=0.01", extra_args=("--precision", "fp16"))
    with remat.Session(fp16) as s:
        assert s.loss_scale == 65536.0  # --loss-scale dynamic's default for fp16
    with remat.Session(plan) as s:
        with pytest.raises(remat.NotFoundError, match="loss scaling"):
            s.loss_scale


def test_a_caller_arena_is_used_and_a_small_one_refused(plan):
    arena = np.zeros(plan.memory.arena_bytes + 64, np.uint8)
    offset = (-arena.ctypes.data) % 64
    with remat.Session(plan, arena=arena[offset:offset + plan.memory.arena_bytes]) as s:
        x, y = batch()
        s.set_input("x", x)
        s.set_input("labels", y)
        s.step()
    with pytest.raises(remat.ArenaTooSmallError, match="arena"):
        remat.Session(plan, arena=arena[offset:offset + 64])
    with pytest.raises(remat.MisalignedError, match="not aligned to 64"):
        remat.Session(plan, arena=arena[offset + 4:offset + 4 + plan.memory.arena_bytes])


def test_inputs_of_the_wrong_dtype_shape_or_name_are_refused(plan):
    with remat.Session(plan) as s:
        x, y = batch()
        with pytest.raises(remat.InvalidArgumentError, match="'x' is float32"):
            s.set_input("x", x.astype(np.float64))
        with pytest.raises(remat.InvalidArgumentError, match=r"'x' has shape \[4, 8\], got \[4, 7\]"):
            s.set_input("x", x[:, :7])
        with pytest.raises(remat.NotFoundError, match="no binding 'y'"):
            s.set_input("y", x)
        with pytest.raises(remat.FailedPreconditionError):
            s.step()  # no input set yet
        s.set_input("x", x)
        s.set_input("labels", np.full(4, 7, np.int32))  # classes are 0..2
        with pytest.raises(remat.OutOfRangeError, match="label 7"):
            s.step()


def test_bad_plans_states_and_backends_raise_their_errors(plan):
    with pytest.raises(remat.PlanCorruptError):
        remat.Plan.open(b"not a plan at all, just some bytes")
    with remat.Session(plan) as s:
        saved = bytearray(s.save_state())
    saved[60] ^= 0xFF
    with remat.Session(plan) as s:
        with pytest.raises(remat.DataLossError, match="checksum"):
            s.load_state(bytes(saved))
        with pytest.raises(remat.DataLossError, match="is 100 bytes"):
            s.load_state(bytes(saved[:100]))
    with pytest.raises(remat.UnavailableError):
        remat.Session(plan, backend="nosuchbackend")
    with pytest.raises(remat.CompileError, match="missing in=N"):
        remat.compile("mlp:layers=2,width=16", batch=4)


def test_an_exception_in_a_state_callback_stops_the_call_and_is_its_cause(plan, monkeypatch):
    with remat.Session(plan) as s:
        saved = s.save_state()
        before = s.read_param(plan.params[0].name)
        with monkeypatch.context() as m:
            m.setattr(ctypes, "string_at", lambda *a: (_ for _ in ()).throw(MemoryError("no room")))
            with pytest.raises(remat.CallbackError) as raised:
                s.save_state()
        assert isinstance(raised.value.__cause__, MemoryError), repr(raised.value.__cause__)
        # A callback that returned 0 without its bytes (as ctypes does when a signal's exception
        # is raised before the callback's own code): the short state is refused.
        with monkeypatch.context() as m:
            m.setattr(ctypes, "string_at", lambda *a: b"")
            with pytest.raises(remat.CallbackError, match="interrupted"):
                s.save_state()
        with monkeypatch.context() as m:
            m.setattr(ctypes, "memmove", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
            with pytest.raises(remat.CallbackError) as raised:
                s.load_state(saved)
        assert isinstance(raised.value.__cause__, KeyboardInterrupt), repr(raised.value.__cause__)
        s.load_state(saved)  # a failed load leaves the session loadable, and this one loads
        assert np.array_equal(s.read_param(plan.params[0].name), before)


def test_handles_are_freed_once_and_closed_objects_refuse(plan):
    p = remat.compile(MLP, batch=2)
    s = remat.Session(p)
    with pytest.raises(remat.FailedPreconditionError, match="open sessions"):
        p.close()
    s.close()
    s.close()
    with pytest.raises(remat.FailedPreconditionError, match="closed"):
        s.step()
    p.close()
    with pytest.raises(remat.FailedPreconditionError, match="closed"):
        p.memory
    # Objects that are never closed are freed by their finalizers when collected.
    q = remat.compile(MLP, batch=2)
    remat.Session(q)
    del q
    gc.collect()


def test_compile_budgets_reach_the_command():
    small = remat.compile(MLP, batch=4, strategy="budget", arena_budget="64KiB")
    assert small.memory.arena_bytes <= 64 * 1024
    with pytest.raises(remat.CompileError, match="arena budget 12 bytes"):
        remat.compile(MLP, batch=4, strategy="budget", arena_budget="12")
    with pytest.raises(remat.CompileError, match="device budget of 100 bytes"):
        remat.compile(MLP, batch=4, device_budget="100", host_budget="1MiB")


def test_compile_budget_is_a_deprecated_name_of_arena_budget():
    with pytest.warns(DeprecationWarning, match="arena_budget"):
        old = remat.compile(MLP, batch=4, strategy="budget", budget="64KiB")
    new = remat.compile(MLP, batch=4, strategy="budget", arena_budget="64KiB")
    assert old.memory == new.memory
    with pytest.raises(TypeError, match="not both"):
        remat.compile(MLP, batch=4, budget="64KiB", arena_budget="64KiB")
