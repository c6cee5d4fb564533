#!/usr/bin/env python3
"""Digests of trained parameters over every template x strategy x optimizer x backend.

A refactoring that must not change what a plan computes is checked by running this on the
commit before and the commit after and comparing the two outputs byte for byte (`diff`):

    python3 tests/params_digest.py OLD/build/src/cli/remat > before.txt
    python3 tests/params_digest.py NEW/build/src/cli/remat > after.txt
    diff before.txt after.txt

Each line is `backend template strategy optimizer sha256-of-the-saved-parameters`, or the exit
status of the command that failed (its message goes to stderr). Every combination trains on
this tree; the script exits 1 when one fails or a backend is missing, so that a diff of two
outputs that failed alike is never taken for a match. A closing count goes to stderr.

`budget` is given the `sqrt` plan's arena; `auto+spill` the smallest device budget of the
persistent bytes plus 0.6, 0.75, 0.9 or 1.0 of that arena that compiles (most of them spill).
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

TEMPLATES = {
    "mlp": "mlp:layers=6,width=48,in=20,classes=5,dropout=0.1",
    "resmlp": "resmlp:layers=4,width=32,in=16,classes=4",
    "transformer": "transformer:layers=3,hidden=32,heads=4,ffn=64,seq=8,vocab=50,classes=3,dropout=0.1",
    "cnn": "cnn:channels=4x8,in=3x8x8,classes=3",
    "resnet": "resnet:depth=8,width=4,in=3x8x8,classes=3",
    "dscnn": "dscnn:blocks=2,width=8,in=1x10x6,classes=4",
}
STRATEGIES = ["none", "sqrt", "splits", "selective", "budget", "auto+spill"]
OPTIMIZERS = ["sgd:lr=0.05", "sgd:lr=0.05,momentum=0.9,weight_decay=0.01", "adam:lr=1e-3",
              "adamw:lr=1e-3,weight_decay=0.05"]
BACKENDS = ["cpu", "opencl"]
BATCH = "4"
STEPS = "3"


def run(args):
    return subprocess.run(args, capture_output=True, text=True)


def arena_budget_flag(remat):
    """--arena-budget; a remat from before it (docs/sizing.md, "Budgets") calls it --budget."""
    return "--arena-budget" if "--arena-budget" in run([remat, "--help"]).stdout else "--budget"


def compile_plan(remat, model, backend, optimizer, strategy, out, tmp):
    base = [remat, "compile", model, "--batch", BATCH, "--optimizer", optimizer, "--seed", "7",
            "--backend", backend, "-o", out]
    if strategy in ("budget", "auto+spill"):
        sqrt_plan = os.path.join(tmp, "sqrt.rplan")
        done = run(base[:-1] + [sqrt_plan, "--strategy", "sqrt"])
        if done.returncode != 0:
            return done
        info = json.loads(run([remat, "inspect", sqrt_plan, "--json"]).stdout)
        if strategy == "budget":
            return run(base + ["--strategy", "budget", arena_budget_flag(remat), str(info["arena_bytes"])])
        for fraction in (0.6, 0.75, 0.9, 1.0):
            device = info["persistent_bytes"] + int(info["arena_bytes"] * fraction)
            done = run(base + ["--strategy", "auto", "--device-budget", str(device)])
            if done.returncode == 0:
                break
        return done
    return run(base + ["--strategy", strategy])


def main():
    remat = os.path.abspath(sys.argv[1])
    trained = failed = skipped = 0
    for backend in BACKENDS:
        probe = run([remat, "devices"])
        if backend != "cpu" and backend not in probe.stdout:
            print(f"{backend}: skipped (not in 'remat devices')")
            skipped += 1
            continue
        for name, model in TEMPLATES.items():
            for strategy in STRATEGIES:
                for optimizer in OPTIMIZERS:
                    with tempfile.TemporaryDirectory() as tmp:
                        plan = os.path.join(tmp, "p.rplan")
                        params = os.path.join(tmp, "p.safetensors")
                        done = compile_plan(remat, model, backend, optimizer, strategy, plan, tmp)
                        if done.returncode == 0:
                            done = run([remat, "train", plan, "--backend", backend, "--steps",
                                        STEPS, "--save-params", params])
                        if done.returncode != 0:
                            result = f"exit {done.returncode}"
                            failed += 1
                            print(f"{backend} {name} {strategy} {optimizer}: {done.stderr.strip()}",
                                  file=sys.stderr)
                        else:
                            trained += 1
                            with open(params, "rb") as f:
                                result = hashlib.sha256(f.read()).hexdigest()
                    print(backend, name, strategy, optimizer, result, flush=True)
    print(f"{trained} trained, {failed} failed, {skipped} backends skipped", file=sys.stderr)
    return 1 if failed or skipped else 0


if __name__ == "__main__":
    sys.exit(main())
