"""One run of a capacity search: the program at a probe's value, at one
seed, reduced to the value of each SLO statistic (spec.py).

:func:`measure_task` is the task function the sweep's backends run
(sweep/backends.py), in this process, in a worker process or on a Ray
node: a module-level function, so that it pickles by name.
"""
import copy
from typing import Callable, Optional


def measure_task(task, on_start: Optional[Callable] = None):
    """``(probe, seed, (program, specs))`` -> ``(probe, seed, values)``:
    one value (or None) per spec; None for a run stopped by a signal; the
    error's text for a run that failed."""
    from ..collector import relaxed
    with relaxed():  # (until the run's simulator is dropped: collector.py)
        return _measure_task(task, on_start)


def _measure_task(task, on_start: Optional[Callable]):
    from ..errors import SerqError
    from ..runner import simulate
    i, seed, (prog, specs) = task
    prog = copy.copy(prog)
    prog.seed = seed
    try:
        sim = simulate(prog, on_start=on_start,
                       track_requests=any(s.kind == "goodput" for s in specs))
        if sim.partial is not None:
            return i, seed, None
        return i, seed, [s.value(sim) for s in specs]
    except SerqError as e:
        return i, seed, e.render()
