"""Train a remat plan from Python with the `remat` package (bindings/python, over the C ABI).

    pip install ./bindings/python      # or: PYTHONPATH=bindings/python (a checkout, no install)
    build/src/cli/remat compile mlp:layers=4,width=64,in=32,classes=4 --batch 16 -o mlp.rplan
    REMAT_LIB=build/src/runtime/libremat.so.1 python3 examples/python/train.py mlp.rplan 100 [BACKEND]

BACKEND is a backend name or "NAME:DEVICE" as `remat devices` lists them (default "cpu"). The
batch is synthetic, as in examples/c/train.c: x uniform in [-1, 1), label 1 when the row's sum
is positive, else 0. Importing `remat` checks that the library has the package's C API
version; every failure is a remat.Error naming what went wrong.
"""
import sys

import numpy as np

import remat


def main():
    if len(sys.argv) < 2:
        print(f"usage: {sys.argv[0]} FILE.rplan [STEPS] [BACKEND]", file=sys.stderr)
        return 2
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    backend = sys.argv[3] if len(sys.argv) > 3 else "cpu"
    v = remat.version_info
    print(f"libremat {v.major}.{v.minor}.{v.patch} (API {v.api_version}, plan format "
          f"{v.plan_format_min}..{v.plan_format_max}) from {remat.library_path}")
    try:
        plan = remat.Plan.open(sys.argv[1])
        x, labels = plan.inputs[0], plan.labels[0]
        if x.dtype != "float32" or len(x.shape) != 2 or labels.dtype != "int32":
            print("this example needs one float32 [batch, features] input and one int32 label", file=sys.stderr)
            return 1
        rows, cols = x.shape
        rng = np.random.default_rng(12345)
        with remat.Session(plan, backend=backend) as session:
            for step in range(steps):
                xs = rng.uniform(-1.0, 1.0, (rows, cols)).astype(np.float32)
                session.set_input(x.name, xs)
                session.set_input(labels.name, (xs.sum(axis=1) > 0).astype(np.int32))
                loss = session.step()
                if step % 10 == 0 or step + 1 == steps:
                    print(f"step {step + 1} loss {loss:.6f}")
    except remat.Error as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
