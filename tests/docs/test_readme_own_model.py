"""The README's "Train your own model" block, run as it is written: the lines between the
`<!-- doc-test: run-by readme_own_model -->` marker and the end of its code block, in a fresh temporary directory
holding only links to the tree's `examples/` and the build under test (as `build/`), so the
README's paths resolve as they do after `bash .ci/demo`. Every command must succeed and the
last one must report an accuracy of at least 0.9 (a model that learned; chance is 0.5).

Needs Debian's python3-torch (the block runs /usr/bin/python3) and a build with ONNX import;
skipped without either (exit 77).

    test_readme_own_model.py SOURCE_ROOT BUILD_DIR
"""
import os
import re
import subprocess
import sys
import tempfile


def readme_block(root):
    with open(os.path.join(root, "README.md")) as f:
        text = f.read()
    marker = text.find("<!-- doc-test: run-by readme_own_model -->")
    if marker < 0:
        raise SystemExit("README.md has no own-model block")
    start = text.index("```sh\n", marker) + len("```sh\n")
    return text[start:text.index("```", start)]


def main(argv):
    root, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    if "onnx" in os.environ.get("REMAT_TEST_BUILT_WITHOUT", "").split():
        print("test_readme_own_model: skipped: this build has no ONNX import (meson -Donnx)")
        return 77
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode:
        print("test_readme_own_model: skipped: /usr/bin/python3 has no torch (python3-torch)")
        return 77
    block = readme_block(root)
    with tempfile.TemporaryDirectory(prefix="remat_readme_") as work:
        os.symlink(os.path.join(root, "examples"), os.path.join(work, "examples"))
        os.symlink(build, os.path.join(work, "build"))
        # No __pycache__ written into the source tree's examples/.
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, text=True,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    print(done.stdout[-2000:])
    if done.returncode != 0:
        print("test_readme_own_model: the README's block failed (exit %d)" % done.returncode)
        return 1
    accuracy = re.search(r"accuracy ([0-9.]+)", done.stdout)
    if accuracy is None or float(accuracy.group(1)) < 0.9:
        print("test_readme_own_model: no accuracy of at least 0.9 reported")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
