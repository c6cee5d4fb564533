"""The C API of remat.h (REMAT_API_VERSION 1) through ctypes: the library, its structs and
function signatures, and the check that the loaded library has this API version."""
import ctypes
import os

API_VERSION = 1
MAX_RANK = 6

# remat_dtype values and their numpy names.
DTYPES = {0: "float32", 1: "float16", 2: "bfloat16", 3: "int32", 4: "int64"}

# remat_binding_kind values.
BINDING_INPUT, BINDING_LABEL, BINDING_PARAM, BINDING_OUTPUT, BINDING_BUFFER = range(5)


class VersionInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("patch", ctypes.c_uint32), ("api_version", ctypes.c_uint32),
                ("plan_format_min", ctypes.c_uint32), ("plan_format_max", ctypes.c_uint32)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_uint32),
                ("dims", ctypes.c_int64 * MAX_RANK), ("bytes", ctypes.c_uint64)]


class MemoryInfo(ctypes.Structure):
    _fields_ = [("arena_bytes", ctypes.c_uint64), ("persistent_bytes", ctypes.c_uint64),
                ("host_bytes", ctypes.c_uint64), ("alignment", ctypes.c_uint32)]


class SessionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("backend", ctypes.c_char_p),
                ("arena", ctypes.c_void_p), ("arena_size", ctypes.c_size_t),
                ("persistent", ctypes.c_void_p), ("persistent_size", ctypes.c_size_t),
                ("host", ctypes.c_void_p), ("host_size", ctypes.c_size_t), ("init_params", ctypes.c_int),
                ("threads", ctypes.c_size_t),
                # const remat_communicator* (data-parallel training, docs/data-parallel.md):
                # a remat.mpi.World's or a remat.Communicator's, or NULL.
                ("communicator", ctypes.c_void_p)]


class Buffer(ctypes.Structure):
    """remat_buffer: a float32 array in host memory that a communicator sums in place."""
    _fields_ = [("data", ctypes.POINTER(ctypes.c_float)), ("count", ctypes.c_uint64)]


ALLREDUCE_START_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(Buffer),
                                      ctypes.c_uint32)
ALLREDUCE_WAIT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32)


class Communicator(ctypes.Structure):
    """remat_communicator: how a data-parallel session sums gradients with the other ranks."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("rank", ctypes.c_int32), ("size", ctypes.c_int32),
                ("user", ctypes.c_void_p), ("allreduce_start", ALLREDUCE_START_FN),
                ("allreduce_wait", ALLREDUCE_WAIT_FN), ("memory", ctypes.c_int32), ("device", ctypes.c_int32)]


WRITE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
READ_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)

_P = ctypes.c_void_p
_STATUS = ctypes.c_int

# name: (restype, argtypes)
_SIGNATURES = {
    "remat_status_string": (ctypes.c_char_p, [_STATUS]),
    "remat_version": (_STATUS, [ctypes.POINTER(VersionInfo)]),
    "remat_backend_count": (ctypes.c_uint32, []),
    "remat_backend_name": (_STATUS, [ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)]),
    "remat_plan_open": (_STATUS, [_P, ctypes.c_size_t, ctypes.POINTER(_P), ctypes.c_char_p, ctypes.c_size_t]),
    "remat_plan_close": (None, [_P]),
    "remat_plan_memory": (_STATUS, [_P, ctypes.POINTER(MemoryInfo)]),
    "remat_plan_binding_count": (_STATUS, [_P, ctypes.c_int, ctypes.POINTER(ctypes.c_uint32)]),
    "remat_plan_binding": (_STATUS, [_P, ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(TensorInfo)]),
    "remat_session_options_init_sized": (_STATUS, [ctypes.POINTER(SessionOptions), ctypes.c_size_t]),
    "remat_session_create": (_STATUS, [_P, ctypes.POINTER(SessionOptions), ctypes.POINTER(_P), ctypes.c_char_p,
                                       ctypes.c_size_t]),
    "remat_session_destroy": (None, [_P]),
    "remat_session_set_input": (_STATUS, [_P, ctypes.c_char_p, _P, ctypes.c_size_t]),
    "remat_session_step": (_STATUS, [_P, ctypes.POINTER(ctypes.c_float)]),
    "remat_session_write_param": (_STATUS, [_P, ctypes.c_char_p, _P, ctypes.c_size_t]),
    "remat_session_read_param": (_STATUS, [_P, ctypes.c_char_p, _P, ctypes.c_size_t]),
    "remat_session_eval": (_STATUS, [_P, ctypes.POINTER(ctypes.c_float)]),
    "remat_session_read_output": (_STATUS, [_P, ctypes.c_char_p, _P, ctypes.c_size_t]),
    "remat_session_set_learning_rate": (_STATUS, [_P, ctypes.c_float]),
    "remat_session_learning_rate": (_STATUS, [_P, ctypes.POINTER(ctypes.c_float)]),
    "remat_session_loss_scale": (_STATUS, [_P, ctypes.POINTER(ctypes.c_float)]),
    "remat_session_step_count": (ctypes.c_uint64, [_P]),
    "remat_session_last_error": (ctypes.c_char_p, [_P]),
    "remat_session_state_size": (_STATUS, [_P, ctypes.POINTER(ctypes.c_uint64)]),
    "remat_session_save_state": (_STATUS, [_P, WRITE_FN, _P]),
    "remat_session_load_state": (_STATUS, [_P, READ_FN, _P, ctypes.c_uint64]),
}


def _load():
    """The library REMAT_LIB names, else libremat.so.1 as the system's loader finds it."""
    path = os.environ.get("REMAT_LIB") or "libremat.so.1"
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError("remat: cannot load the C library %r (%s); set REMAT_LIB to the path of "
                          "libremat.so.1, or install remat (meson install) where the loader finds it" % (path, e))
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    info = VersionInfo()
    info.struct_size = ctypes.sizeof(VersionInfo)
    if lib.remat_version(ctypes.byref(info)) != 0 or info.api_version != API_VERSION:
        raise ImportError("remat: %s has C API version %d; this package was written for version %d"
                          % (path, info.api_version, API_VERSION))
    return lib, info, path


lib, version_info, library_path = _load()
