#!/usr/bin/env python3
"""Checks that every commit subject since the rule began is at most 72 characters.

    check_commit_subjects.py SOURCE_ROOT

`git log --oneline` stays readable when the subject says what changed and the body says the
rest. Commits before FIRST (the rule's first commit) and merge commits (whose subject git
writes) are exempt. Exits 77 (skipped) outside a git checkout or in a clone too shallow to
hold FIRST.
"""
import subprocess
import sys

FIRST = '026e91b2766538cfb1fd6334df7adc4479a82cfa'  # "Lay the tree out by concept: ..." (issue 35)
LIMIT = 72


def main() -> int:
    root = sys.argv[1]
    known = subprocess.run(['git', '-C', root, 'cat-file', '-e', FIRST + '^{commit}'], capture_output=True)
    if known.returncode != 0:
        print(f'no commit {FIRST} here (not a checkout, or a shallow clone): nothing to check')
        return 77
    log = subprocess.run(['git', '-C', root, 'log', '--no-merges', '--format=%h %s', f'{FIRST}^..HEAD'],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    bad = [line for line in log if len(line.split(' ', 1)[1]) > LIMIT]
    for line in bad:
        commit, subject = line.split(' ', 1)
        print(f'{commit}: subject of {len(subject)} characters (at most {LIMIT}): {subject}')
    print(f'{len(log)} commits checked, {len(bad)} subjects too long')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
