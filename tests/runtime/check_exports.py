"""A library of remat's (libremat.so, libremat_mpi.so) exports its C API and nothing else, under
the SONAME REMAT_API_VERSION names.

    check_exports.py NM READELF LIBRARY HEADER

Fails when `nm -D --defined-only` lists a symbol not named remat_*, when a function HEADER
declares REMAT_API is not exported (or one exported is not declared), when the SONAME is not
libNAME.so.REMAT_API_VERSION (NAME from LIBRARY's file name; the version from remat.h, beside
HEADER), or when the unversioned libNAME.so beside the library (the name `-lNAME` links against)
is missing or is another file.
"""
import os
import re
import subprocess
import sys


def main():
    nm, readelf, library, header = sys.argv[1:5]
    failures = []
    text = open(header).read()
    declared = set(re.findall(r"^REMAT_API\s[^;(]*?\b(remat_\w+)\s*\(", text, re.M))
    remat_h = open(os.path.join(os.path.dirname(header), "remat.h")).read()
    api_version = re.search(r"^#define REMAT_API_VERSION (\d+)", remat_h, re.M).group(1)
    base = re.match(r"(lib\w+)\.so", os.path.basename(library)).group(1)
    header_name = os.path.basename(header)

    listing = subprocess.run([nm, "-D", "--defined-only", library], check=True, capture_output=True,
                             text=True).stdout
    exported = set()
    for line in listing.splitlines():
        fields = line.split()
        if not fields:
            continue
        name = fields[-1].split("@")[0]  # a versioned symbol reads NAME@@VERSION
        if not name.startswith("remat_"):
            failures.append(f"exported but not C API: {line.strip()}")
        else:
            exported.add(name)
    for name in sorted(declared - exported):
        failures.append(f"declared REMAT_API in {header_name} but not exported: {name}")
    for name in sorted(exported - declared):
        failures.append(f"exported but not declared REMAT_API in {header_name}: {name}")

    dynamic = subprocess.run([readelf, "-d", library], check=True, capture_output=True, text=True).stdout
    soname = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dynamic)
    want = f"{base}.so.{api_version}"
    if soname is None or soname.group(1) != want:
        failures.append(f"SONAME is {soname.group(1) if soname else 'missing'}, expected {want}")

    folder = os.path.dirname(library)
    for link in (f"{base}.so", want):
        path = os.path.join(folder, link)
        if not os.path.exists(path) or not os.path.samefile(path, library):
            failures.append(f"{path} is missing or is not {library}")

    print(f"{len(exported)} symbols exported, {len(declared)} declared REMAT_API")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
