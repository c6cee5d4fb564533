"""The ctypes declarations of remat._capi against remat.h, as a C compiler sees it: every struct's
size and every field's offset and size, the field names in order, and every constant the package
copies (API version, rank limit, dtypes, binding kinds, statuses). The header is REMAT_HEADER,
else the repository's include/remat/remat.h; the C compiler is CC, else cc."""
import ctypes
import os
import re
import shutil
import subprocess

import pytest

from remat import _capi, errors

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.environ.get("REMAT_HEADER") or os.path.join(HERE, "..", "..", "..", "include", "remat", "remat.h")

# ctypes class -> the C struct it mirrors.
STRUCTS = {
    _capi.VersionInfo: "remat_version_info",
    _capi.TensorInfo: "remat_tensor_info",
    _capi.MemoryInfo: "remat_plan_memory_info",
    _capi.SessionOptions: "remat_session_options",
    _capi.Buffer: "remat_buffer",
    _capi.Communicator: "remat_communicator",
}


def header_text():
    with open(HEADER) as f:
        return f.read()


def c_fields(struct):
    """The field names of |struct| in declaration order, read from the header's typedef."""
    body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (struct, struct), header_text(), re.S)
    assert body, "remat.h has no typedef struct %s" % struct
    text = re.sub(r"/\*.*?\*/", "", body.group(1), flags=re.S)
    # A function pointer's name is inside "(*name)(...)"; any other field's ends its declaration.
    return [(re.search(r"\(\*(\w+)\)", decl) or re.search(r"(\w+)\s*(\[[^\]]*\])?$", decl.strip())).group(1)
            for decl in text.split(";") if decl.strip()]


def header_constants():
    return sorted(set(re.findall(r"\b(REMAT_[A-Z0-9_]+) = \d+", header_text())) |
                  set(re.findall(r"^#define (REMAT_[A-Z0-9_]+) \d+\s*$", header_text(), re.M)))


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory):
    """What the C compiler says: 'sizeof S N', 'offsetof S F OFFSET SIZE', 'value NAME N'."""
    compiler = os.environ.get("CC") or "cc"
    if shutil.which(compiler) is None:
        pytest.skip("no C compiler (%s) to read remat.h's layout with" % compiler)
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "%s"' % os.path.abspath(HEADER),
             "int main(void) {"]
    for struct in STRUCTS.values():
        lines.append('  printf("sizeof %s %%zu\\n", sizeof(%s));' % (struct, struct))
        for field in c_fields(struct):
            lines.append('  printf("offsetof %s %s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s*)0)->%s));'
                         % (struct, field, struct, field, struct, field))
    for name in header_constants():
        lines.append('  printf("value %s %%lld\\n", (long long)%s);' % (name, name))
    lines += ["  return 0;", "}"]
    folder = tmp_path_factory.mktemp("layout")
    source, program = folder / "layout.c", folder / "layout"
    source.write_text("\n".join(lines) + "\n")
    subprocess.run([compiler, "-std=c99", "-o", str(program), str(source)], check=True)
    out = subprocess.run([str(program)], check=True, capture_output=True, text=True).stdout
    sizes, offsets, values = {}, {}, {}
    for line in out.splitlines():
        kind, *rest = line.split()
        if kind == "sizeof":
            sizes[rest[0]] = int(rest[1])
        elif kind == "offsetof":
            offsets[(rest[0], rest[1])] = (int(rest[2]), int(rest[3]))
        else:
            values[rest[0]] = int(rest[1])
    return sizes, offsets, values


@pytest.mark.parametrize("cls", list(STRUCTS), ids=lambda c: STRUCTS[c])
def test_struct_matches_the_header(cls, c_layout):
    sizes, offsets, _ = c_layout
    struct = STRUCTS[cls]
    assert [name for name, _ in cls._fields_] == c_fields(struct)
    assert ctypes.sizeof(cls) == sizes[struct]
    for name, _ in cls._fields_:
        field = getattr(cls, name)
        assert (field.offset, field.size) == offsets[(struct, name)], "%s.%s" % (struct, name)


def test_constants_match_the_header(c_layout):
    values = c_layout[2]
    assert _capi.API_VERSION == values["REMAT_API_VERSION"]
    assert _capi.MAX_RANK == values["REMAT_MAX_RANK"]
    dtypes = {v: k[len("REMAT_DTYPE_"):] for k, v in values.items() if k.startswith("REMAT_DTYPE_")}
    assert sorted(_capi.DTYPES) == sorted(dtypes)
    spelled = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "I32": "int32", "I64": "int64"}
    assert {v: spelled[n] for v, n in dtypes.items()} == _capi.DTYPES
    kinds = {k[len("REMAT_"):]: v for k, v in values.items() if k.startswith("REMAT_BINDING_")}
    assert kinds == {name: getattr(_capi, name, None) for name in kinds}
    assert sorted(kinds) == sorted(name for name in vars(_capi) if name.startswith("BINDING_"))


def test_every_status_has_its_error_class(c_layout):
    statuses = {v for k, v in c_layout[2].items() if re.match(r"REMAT_(OK|ERROR_\w+)$", k)}
    classes = {cls.status for cls in vars(errors).values()
               if isinstance(cls, type) and issubclass(cls, errors.Error) and cls.status is not None}
    assert statuses - {0} == classes
