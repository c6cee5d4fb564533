"""Runs planted_failures (tests/harness) and checks that CMocka went on after each planted
failure: both throwing tests fail with their messages (tests/cmocka_cpp.h's guard), the test
after them runs and passes, and the binary reports exactly two failures.

    python3 check_keeps_going.py BUILD/tests/harness/planted_failures
"""
import subprocess
import sys


def main():
    run = subprocess.run([sys.argv[1]], capture_output=True, text=True, timeout=120)
    out = run.stdout + run.stderr
    print(out)
    wanted = [
        "uncaught exception: ",  # the CompileError's text follows
        "no-such-template",
        "[  FAILED  ] a_compile_error_escapes",
        "uncaught exception of a type not from std::exception",
        "[  FAILED  ] an_int_escapes",
        "ran after the planted failures",
        "[       OK ] runs_after_them",
        "[  FAILED  ] 2 test(s)",
    ]
    missing = [w for w in wanted if w not in out]
    if missing or run.returncode == 0 or run.returncode < 0:
        print(f"exit status {run.returncode}; missing from the output: {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
