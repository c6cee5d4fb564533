"""Writes tests/data/fixture.safetensors, the file test_safetensors reads as "written by Python".

The bytes are assembled by hand with json + struct (no safetensors package), the way the format
is specified: u64 little-endian header length, JSON header padded with spaces to a multiple of
8, then the data buffer. The header lists the tensors in a different order from the data, and
json.dumps escapes the non-ASCII name as \\u00e9, so the reader's handling of both is exercised.

Run: python3 tests/data/make_safetensors_fixture.py   (any Python 3; no third-party modules)
"""
import json
import os
import struct

# (name, dtype, shape, struct format of the values, values), in data-buffer order.
TENSORS = [
    ("scalar", "F64", [], "<d", [3.25]),
    ("weight", "F32", [2, 3], "<6f", [0.5, -1.0, 1.5, -2.0, 2.5, -3.0]),
    ("ids", "I32", [4], "<4i", [1, -2, 3, 2147483647]),
    ("half", "F16", [2], "<2e", [1.0, -2.0]),
    ("caf\u00e9", "U8", [3], "<3B", [1, 2, 255]),
    ("empty", "F32", [0, 3], "<0f", []),
]
METADATA = {"format": "pt", "source": "make_safetensors_fixture.py"}
# Header order: not the data order and not sorted; __metadata__ last.
HEADER_ORDER = ["weight", "empty", "caf\u00e9", "ids", "scalar", "half"]


def build():
    data = b""
    info = {}
    for name, dtype, shape, fmt, values in TENSORS:
        blob = struct.pack(fmt, *values)
        info[name] = {"dtype": dtype, "shape": shape,
                      "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    header = {name: info[name] for name in HEADER_ORDER}
    header["__metadata__"] = METADATA
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture.safetensors")
    with open(path, "wb") as f:
        f.write(build())
    print("wrote", path)


if __name__ == "__main__":
    main()
