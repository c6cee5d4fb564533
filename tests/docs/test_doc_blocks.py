"""Docs that are executed: every shell block (```sh) of README.md and docs/*.md says, on the line
before it, how a test keeps it true, and this test holds it to that:

  <!-- doc-test: run -->                 run as written (bash -euo pipefail) in a fresh temporary
                                        directory holding links to the tree's top-level entries
                                        (examples/, tests/, bindings/, ...) and to the build under
                                        test as build/, with build/src/cli, then /usr/bin on PATH
                                        (so `remat` is the command under test and `python3`
                                        Debian's); it must exit 0. The lines that begin with "# "
                                        at the block's end, after its last command, are what the
                                        commands print: each must match a printed line (see
                                        "numbers" below)
  <!-- doc-test: run-by TEST -->         a test of the suite runs it (TEST: the meson test's name,
                                        which must exist)
  <!-- doc-test: in FILE -->             FILE (a script the CI runs) holds the block's first
                                        command word for word
  <!-- doc-test: synopsis remat CMD -->  the block lists exactly the flags `remat --help` gives CMD
  <!-- doc-test: not run: REASON -->     not runnable here, for REASON (a GPU, hours, root)

A plain block (```) after the line <!-- doc-test: output of COMMAND[; decimals within F x] -->
is COMMAND's output (COMMAND run as a `run` block is): each of its lines must match a printed
line. A line matches when its words are the printed line's and its numbers are equal: integers
exactly, numbers with a decimal point exactly or within a factor F where the marker gives one
(timings); a documented line that ends in "..." matches a printed line that begins as it does.

    test_doc_blocks.py SOURCE_ROOT BUILD_DIR [FILE.md...]
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

MARKER = re.compile(r"<!-- doc-test: (.*?) -->")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
TIMEOUT_S = 600


class Block:
    def __init__(self, path, line, lang, body, marker):
        self.path, self.line, self.lang, self.body, self.marker = path, line, lang, body, marker

    def where(self):
        return "%s:%d" % (self.path, self.line)


def blocks(path):
    """The fenced blocks of |path| with the doc-test marker on the line before each (or None)."""
    lines = open(path).read().split("\n")
    out, k = [], 0
    while k < len(lines):
        if lines[k].startswith("```"):
            end = k + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            found = MARKER.search(lines[k - 1]) if k > 0 else None
            out.append(Block(path, k + 1, lines[k][3:].strip(), lines[k + 1:end],
                             found.group(1) if found else None))
            k = end + 1
        else:
            k += 1
    return out


def workdir(root, build):
    """A fresh directory with links to the tree's top-level entries and the build as build/."""
    work = tempfile.mkdtemp(prefix="remat_doc_")
    for name in os.listdir(root):
        if name in ("build", ".git") or name.startswith("build"):
            continue
        os.symlink(os.path.join(root, name), os.path.join(work, name))
    os.symlink(build, os.path.join(work, "build"))
    return work


def run(root, build, script):
    """|script| under bash in a fresh work directory; (exit code, output)."""
    work = workdir(root, build)
    path = os.pathsep.join([os.path.join(build, "src", "cli"), "/usr/bin", os.environ["PATH"]])
    env = dict(os.environ, PATH=path, PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env,
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=TIMEOUT_S)
        return done.returncode, done.stdout
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or "") + "\n(timed out after %d s)" % TIMEOUT_S
    finally:
        subprocess.run(["rm", "-rf", work])


def same_line(want, got, factor):
    """Whether printed line |got| says what documented line |want| says: the same words, the same
    numbers (those with a decimal point within |factor| where it is given); a |want| ending in
    "..." says how |got| begins."""
    if want.endswith("..."):
        head = " ".join(want[:-3].rstrip(", ").split())
        return " ".join(got.split()).startswith(head)
    if NUMBER.sub("#", want).split() != NUMBER.sub("#", got).split():
        return False
    for a, b in zip(NUMBER.findall(want), NUMBER.findall(got)):
        if a == b:
            continue
        if factor is None or "." not in a:
            return False
        x, y = float(a), float(b)
        if x <= 0 or y <= 0 or max(x / y, y / x) > factor:
            return False
    return True


def missing_lines(expected, printed, factor):
    """The lines of |expected| that no line of |printed| matches."""
    got = [l.strip() for l in printed.split("\n")]
    return [w for w in expected if w.strip() and not any(same_line(w.strip(), g, factor)
                                                          for g in got)]


def meson_tests(build):
    done = subprocess.run(["meson", "test", "-C", build, "--list"], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return {l.split(" / ")[-1].strip() for l in done.stdout.split("\n") if l.strip()}


def help_flags(build, command):
    """The flags `remat --help` lists in |command|'s synopsis."""
    text = subprocess.run([os.path.join(build, "src", "cli", "remat"), "--help"], text=True,
                          stdout=subprocess.PIPE).stdout
    section, inside = [], False
    for line in text.split("\n"):
        if re.match(r"  \w", line):
            inside = line.split()[0] == command
        elif not line.startswith("   "):
            inside = False
        if inside:
            section.append(line)
    return set(re.findall(r"--[a-z][a-z-]*", "\n".join(section)))


def check(root, build, block, tests):
    """None when |block| holds to its marker, else what is wrong."""
    marker = block.marker
    if marker is None:
        return "a shell block with no <!-- doc-test: ... --> marker on the line before it"
    text = "\n".join(block.body)
    if marker == "run":
        body = list(block.body)
        expected = []
        while body and body[-1].startswith("# "):
            expected.insert(0, body.pop()[2:])
        code, out = run(root, build, "\n".join(body))
        if code != 0:
            return "exit %d:\n%s" % (code, out[-3000:])
        missing = missing_lines(expected, out, None)
        return "prints no line like: %s\n%s" % (missing, out[-3000:]) if missing else None
    if marker.startswith("run-by "):
        name = marker[len("run-by "):].strip()
        return None if name in tests else "no test '%s' in the suite" % name
    if marker.startswith("in "):
        name = marker[len("in "):].strip()
        first = next((l.split("  #")[0].strip() for l in block.body if l.strip()), "")
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            return "no file %s" % name
        return None if first in open(path).read() else "%s does not run '%s'" % (name, first)
    if marker.startswith("synopsis remat "):
        command = marker[len("synopsis remat "):].strip()
        want, have = help_flags(build, command), set(re.findall(r"--[a-z][a-z-]*", text))
        if not want:
            return "remat --help has no command '%s'" % command
        if want != have:
            return "flags differ from remat --help: missing %s, not in --help %s" % (
                sorted(want - have), sorted(have - want))
        return None
    if marker.startswith("not run: ") and len(marker) > len("not run: ") + 10:
        return None
    return "unknown marker '%s' (or a reason under 10 characters)" % marker


def check_output(root, build, block, marker):
    found = re.match(r"output of (.*?)(?:; decimals within ([0-9.]+) ?x)?$", marker)
    if not found:
        return "unknown output marker '%s'" % marker
    command, factor = found.group(1).strip("` "), found.group(2)
    code, out = run(root, build, command)
    if code != 0:
        return "'%s' exit %d:\n%s" % (command, code, out[-3000:])
    missing = missing_lines(block.body, out, float(factor) if factor else None)
    return "'%s' prints no line like: %s\n%s" % (command, missing, out[-3000:]) if missing else None


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    root, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    files = argv[3:] or [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "*.md")))
    tests = meson_tests(build)
    failures, counts = 0, {}
    for path in files:
        found = blocks(path)
        for block in found:
            block.path = os.path.relpath(block.path, root)
            if block.lang == "sh":
                problem = check(root, build, block, tests)
                kind = re.match(r"(not run|[a-z-]+)", block.marker or "unmarked").group(1)
            elif block.marker and block.marker.startswith("output of"):
                problem = check_output(root, build, block, block.marker)
                kind = "output"
            else:
                continue
            counts[kind] = counts.get(kind, 0) + 1
            if problem:
                failures += 1
                print("FAIL %s (%s): %s" % (block.where(), block.marker, problem), flush=True)
            else:
                print("ok   %s (%s)" % (block.where(), block.marker), flush=True)
    print("test_doc_blocks: %s; %d failed" % (
        ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
