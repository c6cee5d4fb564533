"""remat.compile: a model compiled to a Plan by the `remat` command (REMAT_CLI, else `remat` on
PATH)."""
import os
import shutil
import subprocess
import tempfile

from .errors import CompileError
from .plan import Plan


def compile(model, batch, strategy=None, optimizer=None, loss=None, budget=None, device_budget=None,
            extra_args=()):
    """Compiles |model| (a template spec or a path to an .onnx file) at |batch| and returns the
    Plan. Options are the command's (`remat compile --help`); CompileError carries its message."""
    cli = os.environ.get("REMAT_CLI") or shutil.which("remat")
    if not cli:
        raise CompileError("remat.compile: no `remat` command: set REMAT_CLI or put it on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "plan.rplan")
        args = [cli, "compile", str(model), "--batch", str(batch), "-o", out]
        for flag, value in (("--strategy", strategy), ("--optimizer", optimizer), ("--loss", loss),
                            ("--budget", budget), ("--device-budget", device_budget)):
            if value is not None:
                args += [flag, str(value)]
        args += list(extra_args)
        done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise CompileError((done.stderr or done.stdout).strip())
        return Plan.open(out)
