"""Writes a safetensors file from numpy arrays, with numpy alone (where the `safetensors` package
is not installed): an 8-byte little-endian header length, a JSON header naming each tensor's
dtype, shape and byte range, then the bytes. `remat train --data` reads what it writes.

    import sys; sys.path.insert(0, "examples/data")
    from numpy_safetensors import save
    save("batches.safetensors", x=x, labels=labels)   # float32, int32, int64 or bool arrays
"""
import json
import struct

import numpy as np

DTYPES = {"float32": "F32", "float16": "F16", "int32": "I32", "int64": "I64", "bool": "BOOL",
          "uint8": "U8"}


def save(path, **arrays):
    """Writes |arrays| (name=array, in order) to |path| as safetensors."""
    header, blobs, at = {}, [], 0
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        if a.dtype.name not in DTYPES:
            raise ValueError("%s: dtype %s (safetensors here: %s)" % (name, a.dtype, ", ".join(DTYPES)))
        header[name] = {"dtype": DTYPES[a.dtype.name], "shape": list(a.shape),
                        "data_offsets": [at, at + a.nbytes]}
        blobs.append(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
        at += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
