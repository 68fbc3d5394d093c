"""The base of what keeps time averages (every stage and pool).

A module of its own, importing nothing of the simulator, so that the stages
(stages.py), the pools (pools.py) and the settle that records them
(timeavg.py, settle.py, fold.py) can all name it without an import circle.
"""
from ..floatvec import vec


class Recorded(object):
    """What keeps time averages: every stage and pool.  Typed as this base,
    the settle's and the catch-up's loops call ``record`` and ``catch_up``
    through the compiled core's method table, not by name."""

    #: its place among the stages or among the pools (set by each)
    index: int
    #: the index in ``sim.ticks`` up to which its pieces are added
    synced = -1

    def record(self, now: float) -> None:
        """A piece of each time average at the event ending at ``now``
        (or left for later, while its values are unchanged)."""
        raise NotImplementedError

    def catch_up(self, ticks: vec[float], end: int) -> None:
        """The pieces left for later, through ``ticks[end - 1]``."""
        raise NotImplementedError
