"""remat.compile: a model compiled to a Plan by the `remat` command (REMAT_CLI, else `remat` on
PATH)."""
import os
import shutil
import subprocess
import tempfile
import warnings

from .errors import CompileError
from .plan import Plan


def compile(model, batch, strategy=None, optimizer=None, loss=None, arena_budget=None, device_budget=None,
            extra_args=(), host_budget=None, budget=None):
    """Compiles |model| (a template spec or a path to an .onnx file) at |batch| and returns the
    Plan. Options are the command's (`remat compile --help`); the budgets are those of
    docs/sizing.md, "Budgets". |budget| is the deprecated name of |arena_budget|. CompileError
    carries the command's message."""
    if budget is not None:
        if arena_budget is not None:
            raise TypeError("remat.compile: give arena_budget or its deprecated name budget, not both")
        warnings.warn("remat.compile: budget= is deprecated; use arena_budget= (the same meaning)",
                      DeprecationWarning, stacklevel=2)
        arena_budget = budget
    cli = os.environ.get("REMAT_CLI") or shutil.which("remat")
    if not cli:
        raise CompileError("remat.compile: no `remat` command: set REMAT_CLI or put it on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "plan.rplan")
        args = [cli, "compile", str(model), "--batch", str(batch), "-o", out]
        for flag, value in (("--strategy", strategy), ("--optimizer", optimizer), ("--loss", loss),
                            ("--arena-budget", arena_budget), ("--device-budget", device_budget),
                            ("--host-budget", host_budget)):
            if value is not None:
                args += [flag, str(value)]
        args += list(extra_args)
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise CompileError((done.stderr or done.stdout).strip())
        return Plan.open(out)
