"""The ONNX zoo (issue 39): models no one here wrote, exported by torch.onnx.export in training
mode, compile and train in remat as in PyTorch.

tests/data/make_zoo.py exports each model at opsets 13 and 17 into a temporary directory and
trains PyTorch's float64 copy for a few SGD-momentum steps on one batch. For each export this
test compiles it (timed) and sizes it, then trains it with `remat train` under `none` and `sqrt`
for the same steps on the same batch, from the exported weights (the two must give the same
bytes), and compares each parameter with PyTorch's: within 1e-2 of that parameter's own largest
update, plus 1e-3 of the model's largest update (a parameter whose true gradient is zero, such as
a convolution's bias before a batch norm, moves by rounding noise); a model with attention must
import it as the fused attention op with no permute left. After one step every model
must meet that. After all the steps too, except where PyTorch's own float32 run already strays
past it from its float64 one (from-scratch mobilenet_v2, shufflenet and mnasnet on one small
batch amplify rounding: their second step's gradient changes by ~10% with the first step's
last digits): there remat must stay within 3x as far. Prints one table row per export (the
table of docs/onnx.md) and fails at the end if any export failed.

Needs Debian's python3-torch and python3-torchvision (CI installs them: .ci/setup); without them
the test is skipped (exit 77), saying so.

  test_zoo.py REMAT [NAME...]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
SHARE, FLOOR = 1e-2, 1e-3


def read_safetensors(path):
    """name -> the values of each F32, I32 or I64 tensor, flattened."""
    import struct
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    data = blob[8 + size:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        code, size = {"F32": ("f", 4), "I32": ("i", 4), "I64": ("q", 8)}[info["dtype"]]
        count = (end - begin) // size
        out[name] = struct.unpack("<%d%s" % (count, code), data[begin:end])
    return out


def largest_difference(a, b):
    return max((abs(x - y) for x, y in zip(a, b)), default=0.0)


def run(command, what):
    started = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (what, done.returncode, done.stdout.strip()[-600:]))
    return done.stdout, seconds


def arena_mib(report):
    for line in report.splitlines():
        if line.startswith("arena:"):
            return int(line.split()[1]) / 2**20
    raise RuntimeError("no arena line in: " + report[-300:])


def check_export(remat, work, model, opset):
    name = model["name"]
    onnx = os.path.join(work, "%s_opset%d.onnx" % (name, opset))
    base = [onnx, "--batch", str(model["batch"]), "--loss", "cross_entropy", "--optimizer",
            model["optimizer"]]
    row = {"model": name, "opset": opset}
    arena = {}
    trained = {}
    for strategy in ("none", "sqrt"):
        plan = os.path.join(work, "%s_%d_%s.rplan" % (name, opset, strategy))
        report, seconds = run([remat, "compile"] + base + ["--strategy", strategy, "-o", plan],
                              "remat compile --strategy " + strategy)
        if strategy == "none":
            row["compile_s"] = seconds
            row["ops"] = int(next(l.split()[1] for l in report.splitlines() if l.startswith("ops:")))
            # Attention imports as the fused op on the [B, S, H] tensors: no permute is left.
            ops, _ = run([remat, "inspect", plan, "--ops"], "remat inspect --ops")
            kinds = [l.split()[2] for l in ops.splitlines() if len(l.split()) > 2]
            if model["attention"] and ("permute" in kinds or "attention" not in kinds):
                raise RuntimeError("attention imported with %d permutes and %d fused attention ops"
                                   % (kinds.count("permute"), kinds.count("attention")))
        arena[strategy] = arena_mib(report)
        params = os.path.join(work, "%s_%d_%s.params.safetensors" % (name, opset, strategy))
        run([remat, "train", plan, "--steps", str(model["steps"]), "--threads", "2", "--data",
             os.path.join(work, name + ".data.safetensors"), "--save-params", params],
            "remat train --strategy " + strategy)
        trained[strategy] = read_safetensors(params)
    row["arena_none"], row["arena_sqrt"] = arena["none"], arena["sqrt"]
    if trained["none"] != trained["sqrt"]:
        raise RuntimeError("sqrt's parameters differ from none's")
    # One step: every parameter within its tolerance of float64 PyTorch's.
    plan = os.path.join(work, "%s_%d_none.rplan" % (name, opset))
    after_one = os.path.join(work, "%s_%d_one.params.safetensors" % (name, opset))
    run([remat, "train", plan, "--steps", "1", "--threads", "2", "--data",
         os.path.join(work, name + ".data.safetensors"), "--save-params", after_one],
        "remat train --steps 1")
    init = read_safetensors(os.path.join(work, name + ".init.safetensors"))
    one, one_name = share_used(read_safetensors(after_one),
                               read_safetensors(os.path.join(work, name + ".torch1.safetensors")),
                               init)
    row["one"] = one
    if one > 1.0:
        raise RuntimeError("after one step, parameter '%s' differs from PyTorch's by %.3g of its "
                           "tolerance" % (one_name, one))
    # All the steps: within the tolerance, or, on a model where PyTorch's own float32 run strays
    # past it (training that amplifies rounding: a step's gradient then depends on the last
    # digits of the parameters), within 3x as far as that run.
    want = read_safetensors(os.path.join(work, name + ".torch.safetensors"))
    used, used_name = share_used(trained["none"], want, init)
    torch32, _ = share_used(read_safetensors(os.path.join(work, name + ".torch32.safetensors")),
                            want, init)
    row["used"], row["worst"], row["torch32"] = used, used_name, torch32
    if used > max(1.0, 3.0 * torch32):
        raise RuntimeError("after %d steps, parameter '%s' differs from PyTorch's by %.3g of its "
                           "tolerance (PyTorch's float32 run: %.3g)" %
                           (model["steps"], used_name, used, torch32))
    return row


def share_used(got, want, init):
    """The largest share of its tolerance a parameter of |got| uses against |want|, and its name:
    SHARE of that parameter's largest update from |init| plus FLOOR of the model's largest."""
    updates = {k: largest_difference(want[k], init[k]) for k in want}
    largest = max(updates.values())
    worst, worst_name = 0.0, ""
    for k, values in want.items():
        if k not in got:
            raise RuntimeError("remat saved no parameter '%s'" % k)
        share = largest_difference(got[k], values) / (SHARE * updates[k] + FLOOR * largest)
        if share > worst:
            worst, worst_name = share, k
    return worst, worst_name


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    remat, names = argv[1], argv[2:]
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        print("test_zoo: skipped: %s (install Debian's python3-torch and python3-torchvision)" % e)
        return 77
    failures = 0
    with tempfile.TemporaryDirectory(prefix="remat_zoo_") as work:
        made = subprocess.run([sys.executable, os.path.join(DATA, "make_zoo.py"), work] + names,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if made.returncode != 0:
            print(made.stdout[-3000:])
            print("test_zoo: make_zoo.py failed")
            return 1
        with open(os.path.join(work, "zoo.json")) as f:
            models = json.load(f)
        print("| model | opset | ops | compile s | arena none MiB | arena sqrt MiB | tolerance used, "
              "1 step | tolerance used, %d steps | PyTorch float32, %d steps | status |" %
              (models[0]["steps"], models[0]["steps"]))
        print("|---|---|---|---|---|---|---|---|---|---|")
        for model in models:
            for opset in model["opsets"]:
                try:
                    r = check_export(remat, work, model, opset)
                    print("| %s | %d | %d | %.2f | %.2f | %.2f | %.3f | %.3f (%s) | %.3f | passes |" %
                          (r["model"], opset, r["ops"], r["compile_s"], r["arena_none"],
                           r["arena_sqrt"], r["one"], r["used"], r["worst"], r["torch32"]),
                          flush=True)
                except RuntimeError as e:
                    failures += 1
                    print("| %s | %d | | | | | | | | FAILS: %s |" % (model["name"], opset, e),
                          flush=True)
    print("test_zoo: %d of %d exports failed" % (failures, sum(len(m["opsets"]) for m in models)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
