#!/usr/bin/env python3
"""Checks the include rules of docs/architecture.md.

    check_layering.py SOURCE_ROOT      the tree
    check_layering.py --self-test      the checker against small trees with known offences

1. Layers: the runtime side (src/plan, src/runtime, backends, ports) includes nothing of the
   compiler, the io library or the CLI; the compiler nothing of the runtime, the ports, io or
   the CLI; io nothing of the runtime, the backends, the ports or the CLI; the CLI nothing of
   the runtime, the backends or the ports (it reaches the runtime through
   include/remat/remat.h). Host programs may read the backends' device profiles
   (backends/device_profile*.h, backends/NAME/NAME_profile.h: plain data) and src/plan.
2. No include path climbs out of its root ("../").
3. No two files need each other: neither two headers that include each other, nor two
   implementations A.cc and B.cc where each includes the other's header (a private header
   such as onnx/importer.h, which only its implementation includes, is fine).
Prints every offence and exits 1 if there is one."""
import pathlib
import re
import sys
import tempfile

# Folder -> include prefixes files there must not use.
RULES = {
    'src/plan': ('compiler/', 'cli/', 'io/', 'runtime/', 'backends/'),
    'src/runtime': ('compiler/', 'cli/', 'io/'),
    'backends': ('compiler/', 'cli/', 'io/'),
    'ports': ('compiler/', 'cli/', 'io/'),
    'src/compiler': ('runtime/', 'ports/', 'cli/', 'io/', 'backends/'),
    'src/io': ('runtime/', 'cli/', 'backends/', 'ports/'),
    'src/cli': ('runtime/', 'backends/', 'ports/'),
    'src/comm': ('compiler/', 'cli/', 'io/', 'runtime/', 'backends/', 'ports/'),
}
# Plain data every host program may read: the backends' device profiles (alignment, copy
# bandwidth, compute rate), as the compiler's cost model does.
ALLOWED = re.compile(r'^backends/(device_profiles?\.h|(\w+)/\2_profile\.h)$')
SOURCES = ('.h', '.cc', '.cu', '.cuh', '.c', '.in')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Include paths are written from these roots (meson's include_directories), or from the
# including file's own folder.
ROOTS = ('src', '.', 'include')
TOPS = ('src', 'backends', 'ports', 'include', 'tests', 'bench', 'examples')


def includes(path):
    for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
        match = INCLUDE.match(line)
        if match:
            yield number, match.group(1)


def sources(root):
    for top in TOPS:
        for path in sorted((root / top).rglob('*')):
            if path.suffix in SOURCES and path.is_file():
                yield path


def resolve(root, path, name):
    """The tracked file |name| (as #included by |path|) names, relative to |root|, or None."""
    for base in [path.parent] + [root / r for r in ROOTS]:
        target = base / name
        if target.is_file():
            return target.resolve().relative_to(root.resolve()).as_posix()
    return None


def check(root):
    """Every offence in the tree at |root|, as lines to print, and how many files were checked."""
    offences = []
    checked = 0
    for folder, banned in RULES.items():
        for path in sorted((root / folder).rglob('*')):
            if path.suffix not in SOURCES:
                continue
            checked += 1
            for number, name in includes(path):
                if name.startswith(banned) and not ALLOWED.match(name):
                    offences.append(f'{path.relative_to(root)}:{number}: includes "{name}"'
                                    f' ({folder} must not include {", ".join(banned)})')

    headers = {}  # header -> headers it includes
    implementations = {}  # concept of X.cc -> concepts whose headers it includes
    for path in sources(root):
        rel = path.relative_to(root).as_posix()
        for number, name in includes(path):
            if name.startswith('../') or '/../' in name:
                offences.append(f'{rel}:{number}: includes "{name}" (write the path from its root)')
                continue
            target = resolve(root, path, name)
            if target is None or not target.endswith(('.h', '.cuh')):
                continue
            if path.suffix in ('.h', '.cuh'):
                headers.setdefault(rel, set()).add(target)
            else:
                concept = rel.rsplit('.', 1)[0]
                other = target.rsplit('.', 1)[0]
                if other != concept:
                    implementations.setdefault(concept, set()).add(other)
    for graph, what in ((headers, 'include each other'),
                        (implementations, "include each other's headers")):
        for a in sorted(graph):
            for b in sorted(graph[a]):
                if a < b and a in graph.get(b, set()):
                    offences.append(f'{a} and {b} {what}: move what both need into a third file')
    return offences, checked


def self_test():
    """The checker finds each kind of offence in a small tree, and none in a clean one."""
    cases = {
        'clean': ({'src/compiler/a.cc': '#include "compiler/a.h"\n#include "backends/cpu/cpu_profile.h"\n',
                   'src/compiler/a.h': '', 'backends/cpu/cpu_profile.h': ''}, 0),
        'a layer': ({'src/runtime/s.cc': '#include "compiler/graph.h"\n'}, 1),
        'the CLI below remat.h': ({'src/cli/t.cc': '#include "runtime/port.h"\n'}, 1),
        'a climbing path': ({'src/io/x.cc': '#include "../runtime/x.h"\n', 'src/runtime/x.h': ''}, 1),
        'two headers': ({'src/plan/a.h': '#include "b.h"\n', 'src/plan/b.h': '#include "plan/a.h"\n'}, 1),
        'two implementations': ({'src/plan/a.cc': '#include "plan/b.h"\n', 'src/plan/a.h': '',
                                 'src/plan/b.cc': '#include "plan/a.h"\n', 'src/plan/b.h': ''}, 1),
    }
    failures = 0
    for name, (files, expected) in cases.items():
        with tempfile.TemporaryDirectory() as folder:
            root = pathlib.Path(folder)
            for rel, text in files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            found, _ = check(root)
        if len(found) != expected:
            failures += 1
            print(f'self-test {name}: {len(found)} offences found, {expected} expected: {found}')
    print(f'{len(cases)} self-tests, {failures} failed')
    return 1 if failures else 0


def main() -> int:
    if sys.argv[1] == '--self-test':
        return self_test()
    offences, checked = check(pathlib.Path(sys.argv[1]))
    for line in offences:
        print(line)
    print(f'{checked} files checked, {len(offences)} offences')
    return 1 if offences or checked == 0 else 0


if __name__ == '__main__':
    sys.exit(main())
