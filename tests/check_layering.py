#!/usr/bin/env python3
"""Checks the include rules of docs/architecture.md: the runtime side (src/plan, src/runtime,
backends, ports) includes nothing of the compiler or the CLI, and the compiler includes nothing
of the runtime. Prints every offending include and exits 1 if there is one."""
import pathlib
import re
import sys

# Folder -> include prefixes files there must not use.
RULES = {
    'src/plan': ('compiler/', 'cli/', 'runtime/', 'backends/'),
    'src/runtime': ('compiler/', 'cli/'),
    'backends': ('compiler/', 'cli/'),
    'ports': ('compiler/', 'cli/'),
    'src/compiler': ('runtime/', 'cli/'),
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    bad = 0
    checked = 0
    for folder, banned in RULES.items():
        for path in sorted((root / folder).rglob('*')):
            if path.suffix not in ('.h', '.cc', '.cu', '.cuh', '.c', '.in'):
                continue
            checked += 1
            for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
                match = INCLUDE.match(line)
                if match and match.group(1).startswith(banned):
                    print(f'{path.relative_to(root)}:{number}: includes "{match.group(1)}"'
                          f' ({folder} must not include {", ".join(banned)})')
                    bad += 1
    print(f'{checked} files checked, {bad} forbidden includes')
    return 1 if bad or checked == 0 else 0


if __name__ == '__main__':
    sys.exit(main())
