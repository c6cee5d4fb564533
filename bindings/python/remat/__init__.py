"""remat from Python: open compiled plans, train them in sessions, through the C library.

    import numpy as np, remat
    plan = remat.compile("mlp:layers=4,width=64,in=32,classes=4", batch=16, strategy="sqrt")
    with remat.Session(plan) as s:
        s.set_input("x", np.zeros((16, 32), np.float32))
        s.set_input("labels", np.zeros(16, np.int32))
        loss = s.step()

Importing checks that the C library (REMAT_LIB, else libremat.so.1) has the API version this
package was written for.
"""
from ._capi import API_VERSION, library_path, version_info
from .compiler import compile
from .errors import *  # noqa: F401,F403 (the Error classes)
from .errors import Error
from .plan import Binding, Memory, Plan
from .session import Session
from .communicator import Communicator
from . import mpi  # noqa: E402 (remat.mpi: data-parallel training; loads libremat_mpi on first use)

__version__ = "%d.%d.%d" % (version_info.major, version_info.minor, version_info.patch)
