"""The cycle collector's pace while a program is simulated and reported.

A run allocates and frees objects at a steady rate and few of them in
cycles (a session and its job), so CPython's collector, which sweeps its
youngest generation every 700 net allocations, would walk the same live
sessions over and over: their number grows with the replicas.  While
``relaxed()`` holds, the youngest generation is swept every
``RELAXED_THRESHOLD`` allocations instead; the thresholds are restored
after.  Building the report is inside too: the objects a run leaves young
would otherwise all be walked by the first sweep after it (12 ms of a
0.27 s run at 256 replicas), although the simulator is freed, mostly by
reference counts, once its report is built.  (Writing the report's JSON
allocates strings, which the collector does not track: not relaxed.)

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
