"""test_doc_blocks.py's figure markers fail where they should: a figure a command does not print,
a table or plain block without a marker, a `measured by` naming no program of the tree, and a
`--given` output that differs; and pass where the figures hold. A run block that needs what the
build left out is skipped only when the build says it left that out.

    test_doc_checker.py SOURCE_ROOT BUILD_DIR
"""
import os
import subprocess
import sys
import tempfile

CASES = (
    # (markdown, failures expected)
    ("<!-- doc-test: figures from echo arena 32687870144 bytes, share 0.186 -->\n"
     "| arena | recomputed |\n|---|---|\n| 30.44 GiB, 32,687,870,144 B | 18.6% |\n", 0),
    ("<!-- doc-test: figures from echo arena 32687870144 bytes -->\n"
     "| arena |\n|---|\n| 30.45 GiB |\n", 1),
    ("<!-- doc-test: figures from echo took 1.50 s; decimals within 2x -->\n"
     "It took 2.9 s.\n", 0),
    ("<!-- doc-test: figures from echo took 1.50 s; decimals within 2x -->\n"
     "It took 3.1 s.\n", 1),
    ("| arena |\n|---|\n| 30.44 GiB |\n", 1),
    ("```\nstep 1 loss 0.701\n```\n", 1),
    ("<!-- doc-test: measured by `build/bench/no_such_bench` on a machine of ours -->\n"
     "| ms |\n|---|\n| 12.5 |\n", 1),
    ("<!-- doc-test: measured by `bash bench/run.sh` on a machine of ours, 2026-11-27 -->\n"
     "| ms |\n|---|\n| 12.5 |\n", 0),
    ("<!-- doc-test: no figures: exit codes the command defines -->\n| code |\n|---|\n| 130 |\n", 0),
    ("<!-- doc-test: output of echo step 1 loss 0.701 -->\n```\nstep 1 loss 0.702\n```\n", 1),
    ("<!-- doc-test: output of bash examples/firmware/run.sh; checked by .ci/run -->\n"
     "```\nruntime text+data: 1 bytes\n```\n", 0),
)


def failures(root, build, text, *given, built_without=""):
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as doc:
        doc.write(text)
    try:
        done = subprocess.run([sys.executable, os.path.join(root, "tests", "docs",
                                                            "test_doc_blocks.py"), root, build]
                              + list(given) + [doc.name], text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              env=dict(os.environ, REMAT_TEST_BUILT_WITHOUT=built_without))
    finally:
        os.unlink(doc.name)
    return done.stdout.count("\nFAIL ") + done.stdout.startswith("FAIL "), done.stdout


def main(argv):
    root, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    wrong = 0
    for text, expected in CASES:
        got, out = failures(root, build, text)
        if got != expected:
            wrong += 1
            print("FAIL: %d failures, expected %d, for:\n%s\n%s" % (got, expected, text, out))
    # A given output: the firmware block above checked against a file, right and wrong.
    with tempfile.NamedTemporaryFile("w", delete=False) as out:
        out.write("runtime text+data: 1 bytes\n")
    for printed, expected in (("runtime text+data: 1 bytes\n", 0), ("runtime text+data: 2 bytes\n", 1)):
        open(out.name, "w").write(printed)
        got, text = failures(root, build, CASES[-1][0], "--given", "bash examples/firmware/run.sh",
                             out.name)
        if got != expected:
            wrong += 1
            print("FAIL: --given with %r: %d failures, expected %d\n%s" % (printed, got, expected, text))
    os.unlink(out.name)
    # A run block that needs what the build left out: skipped when the build says it left it
    # out and remat says so, failed otherwise.
    block = ("<!-- doc-test: run -->\n```sh\n"
             "echo 'remat train: this remat was built without MPI: install it'; exit 1\n```\n")
    for built_without, expected in (("mpi", 0), ("onnx", 1), ("", 1)):
        got, text = failures(root, build, block, built_without=built_without)
        if got != expected or (expected == 0 and "skip " not in text):
            wrong += 1
            print("FAIL: built without %r: %d failures, expected %d\n%s" %
                  (built_without, got, expected, text))
    print("test_doc_checker: %d cases, %d wrong" % (len(CASES) + 5, wrong))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
