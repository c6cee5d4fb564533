#!/usr/bin/env python3
"""Checks that every C, C++ and CUDA source git tracks is formatted as .clang-format says.

    check_format.py CLANG_FORMAT SOURCE_ROOT

Prints each file clang-format would change (with its first differing lines) and exits 1 if
there is one. Exits 77 (skipped) outside a git checkout, where the tracked files are unknown,
and where CLANG_FORMAT is missing or not version 14 (Debian 12's, which .clang-format is written
for: other versions format some constructs differently).
To fix: `git ls-files '*.cc' '*.h' '*.cu' '*.cuh' '*.c' | xargs clang-format -i`.
"""
import subprocess
import sys

PATTERNS = ['*.cc', '*.h', '*.cu', '*.cuh', '*.c']


def main() -> int:
    clang_format, root = sys.argv[1], sys.argv[2]
    try:
        version = subprocess.run([clang_format, '--version'], capture_output=True, text=True).stdout
    except OSError:
        version = ''
    if ' version 14.' not in version:
        print(f'{clang_format}: not clang-format 14 ({version.strip() or "not found"}): not checked')
        return 77
    listed = subprocess.run(['git', '-C', root, 'ls-files', '--'] + PATTERNS, capture_output=True, text=True)
    if listed.returncode != 0:
        print('not a git checkout: nothing to check')
        return 77
    files = listed.stdout.split()
    bad = 0
    for name in files:
        with open(f'{root}/{name}', encoding='utf-8') as f:
            original = f.read()
        formatted = subprocess.run([clang_format, f'--style=file:{root}/.clang-format',
                                    f'--assume-filename={name}'], input=original,
                                   capture_output=True, text=True, check=True).stdout
        if formatted != original:
            bad += 1
            ours, theirs = original.splitlines(), formatted.splitlines()
            line = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            print(f'{name}:{line + 1}: not formatted; clang-format gives:')
            print('\n'.join('    ' + text for text in theirs[line:line + 3]))
    print(f'{len(files)} files checked, {bad} not formatted')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
