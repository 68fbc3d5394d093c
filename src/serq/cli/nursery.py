"""On PyPy, the command line runs with a larger young generation.

PyPy allocates young objects in a nursery sized from the processor's cache
(1 MB here) and copies the survivors out whenever it fills.  A run's live
sessions, jobs and pending events survive many of those collections: at
the default size a `pd_split` run of ten times its horizon made 10 695
minor collections and spent 1.5 s of 8.5-10 s in the collector; with
32 MB, 0.2 s of 5.6-6.8 s (bench/RESULTS.md, sixteenth session).  The
price is memory: that run peaked at 215 MB against 96 MB, the programs of
bench/programs at their own horizons at 121-134 MB against 84 MB.  PyPy
reads the size only from ``PYPY_GC_NURSERY`` at start-up, so ``serq``
started under PyPy without it executes itself once more with it set
(about 0.03 s); a value the user set is kept.  The Python API cannot do
this: set ``PYPY_GC_NURSERY=32MB`` before starting PyPy.
"""
import os
import sys
from typing import List, Optional

#: The nursery the command line asks PyPy for.
NURSERY = "32MB"


def command(argv: List[str], main_spec: Optional[str]) -> Optional[List[str]]:
    """The command line that runs the same ``serq`` command again: with
    ``-m serq`` where ``main_spec`` (the name of ``__main__``'s spec) says
    it was run so, else the script ``argv[0]``; None where neither is
    known (``-c``, an embedded interpreter)."""
    if main_spec == "serq.__main__":
        return [sys.executable, "-m", "serq"] + argv[1:]
    if argv and argv[0] not in ("", "-c") and os.path.isfile(argv[0]):
        return [sys.executable, argv[0]] + argv[1:]
    return None


def reexec_with_nursery() -> None:
    """On PyPy (POSIX) with no ``PYPY_GC_NURSERY`` set: replace the process
    by the same command with it set to ``NURSERY``.  Elsewhere nothing."""
    if sys.implementation.name != "pypy" or os.name != "posix":
        return
    if "PYPY_GC_NURSERY" in os.environ or not sys.executable:
        return
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    cmd = command(sys.argv, getattr(spec, "name", None))
    if cmd is None:
        return
    env = dict(os.environ)
    env["PYPY_GC_NURSERY"] = NURSERY
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(cmd[0], cmd, env)
    except OSError:
        return  # (run as it is: only slower)
