"""Train a remat plan from Python through the C ABI (ctypes only, no other package).

    build/src/cli/remat compile mlp:layers=4,width=64,in=32,classes=4 --batch 16 -o mlp.rplan
    REMAT_LIB=build/src/runtime/libremat.so python3 examples/python/train.py mlp.rplan 100 [BACKEND]

BACKEND is a backend name or "NAME:DEVICE" as `remat devices` lists them (default "cpu"). The
batch is synthetic, as in examples/c/train.c: x uniform in [-1, 1), label 1 when the row's sum
is positive, else 0.

Constants (statuses, dtypes, binding kinds, REMAT_API_VERSION) are read from remat.h
(REMAT_HEADER, default include/remat/remat.h beside this repository's examples), and the loaded
library is asked its version before anything else: the struct layouts below are those of
REMAT_API_VERSION, so a library of another API version is refused.
"""
import ctypes
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def read_header(path):
    """Every `REMAT_NAME = N` enum value and `#define REMAT_NAME N` of remat.h, by name."""
    text = open(path).read()
    values = {name: int(value) for name, value in re.findall(r"\b(REMAT_\w+) = (\d+)", text)}
    values.update({name: int(value) for name, value in re.findall(r"^#define (REMAT_\w+) (\d+)$", text, re.M)})
    return values


C = read_header(os.environ.get("REMAT_HEADER", os.path.join(HERE, "..", "..", "include", "remat", "remat.h")))


class VersionInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("patch", ctypes.c_uint32), ("api_version", ctypes.c_uint32),
                ("plan_format_min", ctypes.c_uint32), ("plan_format_max", ctypes.c_uint32)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_uint32),
                ("dims", ctypes.c_int64 * C["REMAT_MAX_RANK"]), ("bytes", ctypes.c_uint64)]


class SessionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("backend", ctypes.c_char_p),
                ("arena", ctypes.c_void_p), ("arena_size", ctypes.c_size_t),
                ("persistent", ctypes.c_void_p), ("persistent_size", ctypes.c_size_t),
                ("host", ctypes.c_void_p), ("host_size", ctypes.c_size_t), ("init_params", ctypes.c_int)]


def load(path):
    lib = ctypes.CDLL(path)
    lib.remat_version.argtypes = [ctypes.POINTER(VersionInfo)]
    lib.remat_status_string.restype = ctypes.c_char_p
    lib.remat_backend_count.restype = ctypes.c_uint32
    lib.remat_backend_name.argtypes = [ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)]
    lib.remat_backend_devices.argtypes = [ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32), ctypes.c_char_p,
                                          ctypes.c_size_t]
    lib.remat_session_last_error.restype = ctypes.c_char_p
    lib.remat_session_last_error.argtypes = [ctypes.c_void_p]
    lib.remat_plan_open.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.c_char_p, ctypes.c_size_t]
    lib.remat_plan_binding.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(TensorInfo)]
    lib.remat_session_options_init_sized.argtypes = [ctypes.POINTER(SessionOptions), ctypes.c_size_t]
    lib.remat_session_create.argtypes = [ctypes.c_void_p, ctypes.POINTER(SessionOptions),
                                         ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
    lib.remat_session_set_input.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
    lib.remat_session_step.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float)]
    lib.remat_session_destroy.argtypes = [ctypes.c_void_p]
    lib.remat_plan_close.argtypes = [ctypes.c_void_p]
    return lib


def check_version(lib):
    """The library's version, or None (with a message) when its API is not the one used here."""
    info = VersionInfo(struct_size=ctypes.sizeof(VersionInfo))
    status = lib.remat_version(ctypes.byref(info))
    if status != C["REMAT_OK"]:
        print(f"remat_version: {lib.remat_status_string(status).decode()}", file=sys.stderr)
        return None
    if info.api_version != C["REMAT_API_VERSION"]:
        print(f"the library has API version {info.api_version}; this example is written for "
              f"{C['REMAT_API_VERSION']}", file=sys.stderr)
        return None
    return info


def backend_names(lib):
    names = []
    for index in range(lib.remat_backend_count()):
        name = ctypes.c_char_p()
        if lib.remat_backend_name(index, ctypes.byref(name)) == C["REMAT_OK"]:
            names.append(name.value.decode())
    return names


def main():
    if len(sys.argv) < 2:
        print(f"usage: {sys.argv[0]} FILE.rplan [STEPS] [BACKEND]", file=sys.stderr)
        return 2
    lib = load(os.environ.get("REMAT_LIB", "build/src/runtime/libremat.so"))
    version = check_version(lib)
    if version is None:
        return 1
    backends = backend_names(lib)
    print(f"libremat {version.major}.{version.minor}.{version.patch} (API {version.api_version}, plan format "
          f"{version.plan_format_min}..{version.plan_format_max}), backends: {', '.join(backends)}")
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    backend = sys.argv[3] if len(sys.argv) > 3 else "cpu"
    if backend.split(":")[0] not in backends:
        print(f"backend '{backend}' is not in this library (it has: {', '.join(backends)})", file=sys.stderr)
        return 1
    if backend != "cpu":
        devices, text = ctypes.c_uint32(), ctypes.create_string_buffer(4096)
        lib.remat_backend_devices(backends.index(backend.split(":")[0]), ctypes.byref(devices), text, len(text))
        print(text.value.decode(), end="")
    data = open(sys.argv[1], "rb").read()
    # A ctypes array of doubles is 8-byte aligned, as remat_plan_open needs; it must outlive the plan.
    plan_bytes = (ctypes.c_double * ((len(data) + 7) // 8))()
    ctypes.memmove(plan_bytes, data, len(data))
    message = ctypes.create_string_buffer(512)
    plan = ctypes.c_void_p()
    status = lib.remat_plan_open(plan_bytes, len(data), ctypes.byref(plan), message, len(message))
    if status != C["REMAT_OK"]:
        print(f"opening the plan: {lib.remat_status_string(status).decode()}: {message.value.decode()}", file=sys.stderr)
        return 1
    x, labels = TensorInfo(), TensorInfo()
    lib.remat_plan_binding(plan, C["REMAT_BINDING_INPUT"], 0, ctypes.byref(x))
    lib.remat_plan_binding(plan, C["REMAT_BINDING_LABEL"], 0, ctypes.byref(labels))
    if x.dtype != C["REMAT_DTYPE_F32"] or x.rank != 2 or labels.dtype != C["REMAT_DTYPE_I32"]:
        print("this example needs one f32 [batch, features] input and one i32 label", file=sys.stderr)
        return 1
    options = SessionOptions()
    # Defaults for a struct of our layout's size (session-allocated memory).
    status = lib.remat_session_options_init_sized(ctypes.byref(options), ctypes.sizeof(options))
    if status != C["REMAT_OK"]:
        print(f"session options: {lib.remat_status_string(status).decode()}", file=sys.stderr)
        return 1
    options.backend = backend.encode()
    session = ctypes.c_void_p()
    status = lib.remat_session_create(plan, ctypes.byref(options), ctypes.byref(session), message, len(message))
    if status != C["REMAT_OK"]:
        print(f"creating the session: {lib.remat_status_string(status).decode()}: {message.value.decode()}",
              file=sys.stderr)
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
            if lib.remat_session_set_input(session, name, buffer, size) != C["REMAT_OK"]:
                print(lib.remat_session_last_error(session).decode(), file=sys.stderr)
                return 1
        if lib.remat_session_step(session, ctypes.byref(loss)) != C["REMAT_OK"]:
            print(f"step {step + 1}: {lib.remat_session_last_error(session).decode()}", file=sys.stderr)
            return 1
        if step % 10 == 0 or step + 1 == steps:
            print(f"step {step + 1} loss {loss.value:.6f}")
    lib.remat_session_destroy(session)
    lib.remat_plan_close(plan)
    return 0


if __name__ == "__main__":
    sys.exit(main())
