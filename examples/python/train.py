"""Train a remat plan from Python through the C ABI (ctypes only, no other package).

    build/src/cli/remat compile mlp:layers=4,width=64,in=32,classes=4 --batch 16 -o mlp.rplan
    REMAT_LIB=build/src/runtime/libremat.so python3 examples/python/train.py mlp.rplan 100

The batch is synthetic, as in examples/c/train.c: x uniform in [-1, 1), label 1 when the row's
sum is positive, else 0.
"""
import ctypes
import os
import random
import sys

REMAT_OK = 0
MAX_RANK = 6
BINDING_INPUT, BINDING_LABEL = 0, 1
DTYPE_F32, DTYPE_I32 = 0, 3


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_uint32),
                ("dims", ctypes.c_int64 * MAX_RANK), ("bytes", ctypes.c_uint64)]


class SessionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("backend", ctypes.c_char_p),
                ("arena", ctypes.c_void_p), ("arena_size", ctypes.c_size_t),
                ("persistent", ctypes.c_void_p), ("persistent_size", ctypes.c_size_t),
                ("host", ctypes.c_void_p), ("host_size", ctypes.c_size_t), ("init_params", ctypes.c_int)]


def load(path):
    lib = ctypes.CDLL(path)
    lib.remat_status_string.restype = ctypes.c_char_p
    lib.remat_session_last_error.restype = ctypes.c_char_p
    lib.remat_session_last_error.argtypes = [ctypes.c_void_p]
    lib.remat_plan_open.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.c_char_p, ctypes.c_size_t]
    lib.remat_plan_binding.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(TensorInfo)]
    lib.remat_session_options_init.argtypes = [ctypes.POINTER(SessionOptions)]
    lib.remat_session_create.argtypes = [ctypes.c_void_p, ctypes.POINTER(SessionOptions),
                                         ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
    lib.remat_session_set_input.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.remat_session_step.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float)]
    lib.remat_session_destroy.argtypes = [ctypes.c_void_p]
    lib.remat_plan_close.argtypes = [ctypes.c_void_p]
    return lib


def main():
    if len(sys.argv) < 2:
        print(f"usage: {sys.argv[0]} FILE.rplan [STEPS]", file=sys.stderr)
        return 2
    lib = load(os.environ.get("REMAT_LIB", "build/src/runtime/libremat.so"))
    data = open(sys.argv[1], "rb").read()
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    # A ctypes array of doubles is 8-byte aligned, as remat_plan_open needs; it must outlive the plan.
    plan_bytes = (ctypes.c_double * ((len(data) + 7) // 8))()
    ctypes.memmove(plan_bytes, data, len(data))
    message = ctypes.create_string_buffer(512)
    plan = ctypes.c_void_p()
    status = lib.remat_plan_open(plan_bytes, len(data), ctypes.byref(plan), message, len(message))
    if status != REMAT_OK:
        print(f"opening the plan: {lib.remat_status_string(status).decode()}: {message.value.decode()}", file=sys.stderr)
        return 1
    x, labels = TensorInfo(), TensorInfo()
    lib.remat_plan_binding(plan, BINDING_INPUT, 0, ctypes.byref(x))
    lib.remat_plan_binding(plan, BINDING_LABEL, 0, ctypes.byref(labels))
    if x.dtype != DTYPE_F32 or x.rank != 2 or labels.dtype != DTYPE_I32:
        print("this example needs one f32 [batch, features] input and one i32 label", file=sys.stderr)
        return 1
    options = SessionOptions()
    lib.remat_session_options_init(ctypes.byref(options))  # CPU, session-allocated memory
    session = ctypes.c_void_p()
    status = lib.remat_session_create(plan, ctypes.byref(options), ctypes.byref(session), message, len(message))
    if status != REMAT_OK:
        print(f"creating the session: {message.value.decode()}", file=sys.stderr)
        return 1
    rows, cols = x.dims[0], x.dims[1]
    xs = (ctypes.c_float * (rows * cols))()
    ys = (ctypes.c_int32 * rows)()
    rng = random.Random(12345)
    loss = ctypes.c_float()
    for step in range(steps):
        for r in range(rows):
            row = [rng.uniform(-1.0, 1.0) for _ in range(cols)]
            xs[r * cols:(r + 1) * cols] = row
            ys[r] = 1 if sum(row) > 0 else 0
        for name, buffer, size in ((x.name, xs, x.bytes), (labels.name, ys, labels.bytes)):
            if lib.remat_session_set_input(session, name, buffer, size) != REMAT_OK:
                print(lib.remat_session_last_error(session).decode(), file=sys.stderr)
                return 1
        if lib.remat_session_step(session, ctypes.byref(loss)) != REMAT_OK:
            print(f"step {step + 1}: {lib.remat_session_last_error(session).decode()}", file=sys.stderr)
            return 1
        if step % 10 == 0 or step + 1 == steps:
            print(f"step {step + 1} loss {loss.value:.6f}")
    lib.remat_session_destroy(session)
    lib.remat_plan_close(plan)
    return 0


if __name__ == "__main__":
    sys.exit(main())
