"""safetensors files without the safetensors package: a little-endian u64 header size, a JSON
header (name -> dtype, shape, data offsets), then the tensors' bytes. What remat reads and writes
(`--data`, `--load-params`, `--save-params`: F32, I32, I64, BF16, F16)."""
import json
import struct

import torch

_DTYPES = {torch.float32: "F32", torch.int32: "I32", torch.int64: "I64"}
_TORCH = {name: dtype for dtype, name in _DTYPES.items()}


def write(path, tensors):
    """|tensors|: name -> a float32, int32 or int64 torch tensor."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        blob = t.numpy().tobytes()
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read(path):
    """name -> torch tensor, for the dtypes above."""
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    data = blob[8 + size:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=_TORCH[info["dtype"]])
        out[name] = t.reshape(info["shape"])
    return out
