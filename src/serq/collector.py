"""The cycle collector's pace while a program is simulated and reported.

A run allocates and frees objects at a steady rate and few of them in
cycles (a session and its job), so CPython's collector, which sweeps its
youngest generation every 700 net allocations, would walk the same live
sessions over and over: their number grows with the replicas.  While
``relaxed()`` holds, the youngest generation is swept every
``RELAXED_THRESHOLD`` allocations instead; the thresholds are restored
after.  Building the report is inside too, and where a run's simulator is
dropped right after its report (``run_program``, a sweep's run, a
capacity probe), it is held until then: a simulator is a web of cycles
(stages and pools and the simulator they point back to, live sessions and
their generators: about 62 000 objects at 256 replicas), which reference
counts do not free.  The first sweep after the block then finds them
garbage and frees them; a sweep while the simulator was still referenced
would find them live, move them to an older generation, and have them
walked again by its later sweeps while garbage piled up there from run
to run (238 000 objects after six runs at 256 replicas, against 18 000).
(Writing the report's JSON allocates strings, which the collector does not
track: not relaxed.)

Measured (bench/RESULTS.md, fifteenth session): 256 replicas spent 13 ms in
the collector during the run at 10 000 and none at 100 000; peak memory
was the same (router16 20 MB, mm1 at horizon 2e6 134 MB).  Reports do not
depend on it.  PyPy's collector has no thresholds: ``relaxed()`` does
nothing there.
"""
import gc
from contextlib import contextmanager
from typing import Iterator

#: The youngest generation's threshold while ``relaxed()`` holds.
RELAXED_THRESHOLD = 100000


@contextmanager
def relaxed() -> Iterator[None]:
    """The collector's first threshold at least ``RELAXED_THRESHOLD`` for
    the ``with`` block (nested blocks leave it as the outer one set it)."""
    thresholds = gc.get_threshold() if hasattr(gc, "get_threshold") else None
    if thresholds is not None and thresholds[0] < RELAXED_THRESHOLD:
        gc.set_threshold(RELAXED_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        if thresholds is not None:
            gc.set_threshold(*thresholds)
