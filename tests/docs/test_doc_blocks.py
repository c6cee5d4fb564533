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

A figure outside a shell block says where it comes from too: every plain block and every table
(rows beginning with "|") that holds a figure (three digits in a row, or a decimal) has one of
these on the line before it, and so may a paragraph (its lines up to the next blank one):

  <!-- doc-test: output of COMMAND -->   a plain block only: as above
  <!-- doc-test: figures from COMMAND[; decimals within F x] -->
                                        every number in it is one COMMAND prints, as shown (a
                                        printed 30.4412 or 32687870144 is shown as 30.44, 32.69 G,
                                        30.44 GiB or 32,687,870,144; 0.186 as 18.6%), or one of
                                        COMMAND's own words (the model's sizes)
  <!-- doc-test: measured by `COMMAND` on MACHINE -->
                                        not re-run: figures of a particular machine (a GPU,
                                        another CPU, hours); COMMAND's program must be in the tree
                                        (a bench/ program or script), MACHINE says which
  <!-- doc-test: no figures: REASON -->  its numbers are definitions (exit codes, limits, a
                                        format's constants), not results of a run

COMMAND is run as a `run` block is. A marker whose COMMAND ends in "; checked by .ci/run" names a
command the suite cannot run (the firmware under qemu): the suite checks that .ci/run gives its
output to this test, and .ci/run does, with

    test_doc_blocks.py SOURCE_ROOT BUILD_DIR --given COMMAND OUTPUT_FILE FILE.md...

which checks only the markers of COMMAND, against OUTPUT_FILE.

    test_doc_blocks.py SOURCE_ROOT BUILD_DIR [--sanitized] [FILE.md...]

--sanitized (meson passes it to the AddressSanitizer build): timings are not compared, and
commands with a max-batch search are skipped (SANITIZED_SKIP).
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

MARKER = re.compile(r"<!-- doc-test: (.*?) -->")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
# A figure as a doc shows it: 30.44, 164,480 or 1123.
FIGURE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:e[-+]?\d+)?")
HAS_FIGURE = re.compile(r"\d{3}|\d\.\d")
# The scales a printed number may be shown at: itself, k/M/G/T, KiB..TiB, a share as a percent.
SCALES = (1, 1e3, 1e6, 1e9, 1e12, 2**10, 2**20, 2**30, 2**40, 1e-2)
CI_SUFFIX = "; checked by .ci/run"
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


def passages(path):
    """The tables of |path| outside fenced blocks, and the paragraphs that follow a marker line,
    each with the marker on the line before it (or None)."""
    lines = open(path).read().split("\n")
    out, k, fenced = [], 0, False
    while k < len(lines):
        line = lines[k]
        if line.startswith("```"):
            fenced = not fenced
            k += 1
            continue
        found = MARKER.fullmatch(lines[k - 1].strip()) if k > 0 and not fenced else None
        is_table = line.startswith("|") and not fenced
        if is_table or (found and line.strip() and not MARKER.fullmatch(line.strip())):
            end = k
            while (end < len(lines) and lines[end].strip() and not lines[end].startswith("```")
                   and (not is_table or lines[end].startswith("|"))):
                end += 1
            out.append(Block(path, k + 1, "table" if is_table else "paragraph", lines[k:end],
                             found.group(1) if found else None))
            k = end
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
    # mpirun (docs/data-parallel.md) refuses root unless told: CI runs as root.
    env = dict(os.environ, PATH=path, PYTHONDONTWRITEBYTECODE="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if "mpirun" in script:
        # Under AddressSanitizer, Open MPI's plugins, unloaded in MPI_Finalize, leave what
        # LeakSanitizer cannot tell from remat's by library (tests/cli/test_data_parallel.py).
        asan = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"
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


def shown_as(value, text, factor):
    """Whether the printed number |value| is shown as |text| at one of SCALES (to |text|'s
    decimals, or within |factor| where given and |text| has a decimal point)."""
    want = float(text)
    if "e" in text:
        return abs(value - want) <= 1e-9 * abs(want)
    decimals = len(text.split(".")[1]) if "." in text else 0
    for scale in SCALES:
        if "%.*f" % (decimals, value / scale) == text:
            return True
        if factor and decimals and want > 0 and value > 0:
            if max(want * scale / value, value / (want * scale)) <= factor:
                return True
    return False


def stray_figures(lines, command, printed, factor):
    """The figures in |lines| that are neither shown as a number |printed| holds nor a number of
    |command|."""
    values = [float(n) for n in NUMBER.findall(printed.replace(",", ""))]
    own = set(re.findall(r"\d+(?:\.\d+)?", command))
    stray = []
    for line in lines:
        for shown in FIGURE.findall(line):
            text = shown.replace(",", "")
            if text in own or any(shown_as(v, text, factor) for v in values):
                continue
            stray.append(shown)
    return stray


def program_in_tree(root, build, command):
    """Whether |command|'s program (after VAR=value words and an interpreter) is a file of the
    tree or of the build."""
    words = [w for w in command.split() if not re.match(r"[A-Z_]+=", w)]
    while words and os.path.basename(words[0]) in ("bash", "sh", "python3", "env"):
        words = words[1:]
    if not words:
        return False
    path = words[0]
    if path.startswith("build/"):
        return os.path.isfile(os.path.join(build, path[len("build/"):]))
    return os.path.isfile(os.path.join(root, path))


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


# A run block that needs what the build left out (meson's REMAT_TEST_BUILT_WITHOUT) is skipped
# when remat says so, not failed; CI builds everything.
BUILT_WITHOUT = os.environ.get("REMAT_TEST_BUILT_WITHOUT", "").split()
LEFT_OUT = {"mpi": "this remat was built without MPI",
            "onnx": "this remat was built without ONNX import"}
SKIPPED = "skipped: "
# Under the sanitizers, commands with a max-batch search (tens of BERT-Large compiles each, the
# doc test's longest minutes there) are left to tests/cli, whose sizing tests run the same
# searches under them (test_size, test_cli_precision, test_cli_attention); the plain suite
# checks their figures.
SANITIZED_SKIP = ("--max-batch", "skipped: a max-batch search, run under the sanitizers by "
                  "tests/cli and checked by the plain suite")


def sanitized_skip(script):
    """The reason the sanitized suite skips running |script|, or None."""
    return SANITIZED_SKIP[1] if SANITIZED and SANITIZED_SKIP[0] in script else None


def check(root, build, block, tests):
    """None when |block| holds to its marker, else what is wrong."""
    marker = block.marker
    if marker is None:
        return "a shell block with no <!-- doc-test: ... --> marker on the line before it"
    text = "\n".join(block.body)
    if marker == "run":
        if sanitized_skip(text):
            return sanitized_skip(text)
        body = list(block.body)
        expected = []
        while body and body[-1].startswith("# "):
            expected.insert(0, body.pop()[2:])
        code, out = run(root, build, "\n".join(body))
        if code != 0:
            for feature, words in LEFT_OUT.items():
                if feature in BUILT_WITHOUT and words in out:
                    return SKIPPED + "this build has no %s" % feature
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


class Outputs:
    """What each COMMAND prints: run once per test run, or given (--given COMMAND FILE)."""

    def __init__(self, root, build, given):
        self.root, self.build, self.given, self.seen = root, build, given, {}

    def of(self, command):
        """(exit code, output) of |command|."""
        if self.given is not None:
            return 0, open(self.given[1]).read()
        if command not in self.seen:
            self.seen[command] = run(self.root, self.build, command)
        return self.seen[command]


def parse_source(marker):
    """(kind, command, factor) of an `output of` or `figures from` marker, or None."""
    found = re.match(r"(output of|figures from) (.*?)(?:; decimals within ([0-9.]+) ?x)?"
                     r"((?:%s)?)$" % re.escape(CI_SUFFIX), marker)
    if not found:
        return None
    command = found.group(2).strip("` ") + found.group(4)
    factor = float(found.group(3)) if found.group(3) else None
    if factor is not None and SANITIZED:
        factor = float("inf")
    return found.group(1), command, factor


def check_figures(root, block, outputs):
    """None when the plain block, table or paragraph |block| holds to its marker."""
    marker = block.marker
    if marker is None:
        return "a %s holding figures with no <!-- doc-test: ... --> marker on the line before it" % (
            "plain block" if block.lang == "" else block.lang)
    if marker.startswith("no figures: ") and len(marker) > len("no figures: ") + 10:
        return None
    if marker.startswith("measured by "):
        found = re.match(r"measured by `([^`]+)` on (.{10,})$", marker)
        if not found:
            return "a measured marker is 'measured by `COMMAND` on MACHINE' (10 characters or more)"
        if not program_in_tree(root, outputs.build, found.group(1)):
            return "'%s': its program is not in the tree or the build" % found.group(1)
        return None
    source = parse_source(marker)
    if source is None:
        return "unknown marker '%s'" % marker
    kind, command, factor = source
    if sanitized_skip(command):
        return sanitized_skip(command)
    if kind == "output of" and block.lang != "":
        return "'output of' marks a plain block; a %s takes 'figures from'" % block.lang
    if command.endswith(CI_SUFFIX) and outputs.given is None:
        ci = open(os.path.join(root, ".ci", "run")).read()
        plain = command[:-len(CI_SUFFIX)]
        if "test_doc_blocks.py" in ci and plain in ci:
            return None
        return ".ci/run does not give '%s' output to test_doc_blocks.py" % plain
    code, out = outputs.of(command)
    if code != 0:
        return "'%s' exit %d:\n%s" % (command, code, out[-3000:])
    if kind == "output of":
        missing = missing_lines(block.body, out, factor)
        return "'%s' prints no line like: %s\n%s" % (command, missing, out[-3000:]) if missing else None
    stray = stray_figures(block.body, command, out, factor)
    return "'%s' prints no number shown as: %s\n%s" % (command, stray, out[-3000:]) if stray else None


# --sanitized (the suite under AddressSanitizer): timings ("decimals within F x") are not
# compared, since a sanitized build runs several times slower and by an amount that depends on
# the load; every other figure is.
SANITIZED = False


def main(argv):
    global SANITIZED
    if "--sanitized" in argv:
        SANITIZED = True
        argv = [a for a in argv if a != "--sanitized"]
    given = None
    if "--given" in argv:
        at = argv.index("--given")
        given, argv = argv[at + 1:at + 3], argv[:at] + argv[at + 3:]
    if len(argv) < 3 or (given is not None and len(given) != 2):
        print(__doc__)
        return 2
    root, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    files = argv[3:] or [os.path.join(root, "README.md")] + sorted(
        glob.glob(os.path.join(root, "docs", "*.md")))
    tests = meson_tests(build) if given is None else set()
    outputs = Outputs(root, build, given)
    failures, counts = 0, {}
    for path in files:
        found = [b for b in blocks(path) if b.lang in ("sh", "")] + passages(path)
        for block in sorted(found, key=lambda b: b.line):
            block.path = os.path.relpath(block.path, root)
            if given is not None:
                source = parse_source(block.marker or "")
                if not source or source[1] != given[0] + CI_SUFFIX:
                    continue
            if block.lang == "sh":
                problem = check(root, build, block, tests)
                kind = re.match(r"(not run|[a-z-]+)", block.marker or "unmarked").group(1)
            elif block.marker or any(HAS_FIGURE.search(l) for l in block.body):
                problem = check_figures(root, block, outputs)
                kind = re.match(r"(output of|figures from|measured|no figures|\S*)",
                                block.marker or "unmarked").group(1)
            else:
                continue
            if problem and problem.startswith(SKIPPED):
                counts["skipped"] = counts.get("skipped", 0) + 1
                print("skip %s (%s): %s" % (block.where(), block.marker, problem), flush=True)
                continue
            counts[kind] = counts.get(kind, 0) + 1
            if problem:
                failures += 1
                print("FAIL %s (%s): %s" % (block.where(), block.marker, problem), flush=True)
            else:
                print("ok   %s (%s)" % (block.where(), block.marker), flush=True)
    if given is not None and not counts:
        print("FAIL: no marker in %s names '%s%s'" % (files, given[0], CI_SUFFIX))
        failures += 1
    print("test_doc_blocks: %s; %d failed" % (
        ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
