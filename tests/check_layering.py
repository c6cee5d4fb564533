#!/usr/bin/env python3
"""Checks the include rules of docs/architecture.md.

1. Layers: the runtime side (src/plan, src/runtime, backends, ports) includes nothing of the
   compiler, the io library or the CLI; the compiler nothing of the runtime, io or the CLI; io
   nothing of the runtime or the CLI; the CLI nothing of the runtime, the backends or the ports
   (it reaches the runtime through include/remat/remat.h; it may read the plan contract,
   src/plan, and the backends' device profiles).
2. No two implementations need each other: no A.cc includes B.h while B.cc includes A.h (a
   private header such as onnx/importer.h, which only its implementation includes, is fine).
Prints every offence and exits 1 if there is one."""
import pathlib
import re
import sys

# Folder -> include prefixes files there must not use.
RULES = {
    'src/plan': ('compiler/', 'cli/', 'io/', 'runtime/', 'backends/'),
    'src/runtime': ('compiler/', 'cli/', 'io/'),
    'backends': ('compiler/', 'cli/', 'io/'),
    'ports': ('compiler/', 'cli/', 'io/'),
    'src/compiler': ('runtime/', 'cli/', 'io/'),
    'src/io': ('runtime/', 'cli/', 'backends/', 'ports/'),
    'src/cli': ('runtime/', 'backends/', 'ports/'),
}
# Plain data every host program may read: the backends' device profiles (alignment, copy
# bandwidth), as the compiler does.
ALLOWED = ('backends/device_profiles.h', 'backends/device_profile.h')
SOURCES = ('.h', '.cc', '.cu', '.cuh', '.c', '.in')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Include paths are written from these roots (meson's include_directories).
ROOTS = ('src', '.')


def includes(path):
    for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
        match = INCLUDE.match(line)
        if match:
            yield number, match.group(1)


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    bad = 0
    checked = 0
    for folder, banned in RULES.items():
        for path in sorted((root / folder).rglob('*')):
            if path.suffix not in SOURCES:
                continue
            checked += 1
            for number, name in includes(path):
                if name.startswith(banned) and name not in ALLOWED:
                    print(f'{path.relative_to(root)}:{number}: includes "{name}"'
                          f' ({folder} must not include {", ".join(banned)})')
                    bad += 1

    # Implementation graph over the whole tree: X.cc -> the headers it includes, by concept.
    edges = {}
    for top in ('src', 'backends', 'ports', 'include', 'tests', 'bench', 'examples'):
        for path in sorted((root / top).rglob('*')):
            if path.suffix not in ('.cc', '.cu', '.c'):
                continue
            concept = path.relative_to(root).with_suffix('').as_posix()
            for _, name in includes(path):
                for base in ROOTS:
                    target = root / base / name
                    if target.is_file():
                        other = target.relative_to(root).with_suffix('').as_posix()
                        if other != concept:
                            edges.setdefault(concept, set()).add(other)
                        break
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if a < b and a in edges.get(b, set()):
                print(f'{a} and {b} include each other\'s headers: move what both need into a third file')
                bad += 1
    print(f'{checked} files checked, {len(edges)} implementations, {bad} offences')
    return 1 if bad or checked == 0 else 0


if __name__ == '__main__':
    sys.exit(main())
