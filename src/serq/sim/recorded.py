"""The base of what keeps time averages (every stage and pool), and the
collection of those an event touched.

A module of its own, importing nothing of the simulator, so that the stages
(stages.py), the pools (pools.py) and the settle that records them
(timeavg.py, settle.py, fold.py) can all name it without an import circle.
"""
from typing import TYPE_CHECKING, Any, Final, List, cast

from ..floatvec import COMPILED, vec
from ..report.replay import replay_distinct
from ..report.stats import TimeAverage

if TYPE_CHECKING:
    from .timeavg import TimeAverages  # (a type only: nothing imported at run time)


class Recorded(object):
    """What keeps time averages: every stage and pool.  Typed as this base,
    the settle's and the catch-up's loops call ``record`` and ``catch_up``
    through the compiled core's method table, not by name."""

    #: its place among the stages or among the pools (set by each)
    index: int
    #: the index in ``sim.ticks`` up to which its pieces are added
    synced = -1
    #: in this event's ``Touched`` (compiled core)
    in_touched = False
    #: the simulator whose event times (``ticks``, ``gaps_to``) the pieces
    #: left for later are, set when the run starts (``start_recording``):
    #: typed, so that a record reads them as fields, not by name
    clock: "TimeAverages"
    #: its time averages (set by each stage and pool)
    averages: List[TimeAverage]
    #: the stages and pools that change with it (a step stage, its memory
    #: and the pools admitted via it), itself among them, which catch up
    #: together (``catch_up_together``); empty where it has none
    #: (``TimeAverages.start_recording``)
    mates: List["Recorded"]
    #: every time average of ``mates``, in their order (the same list in
    #: each of them; ``TimeAverages.start_recording``)
    mates_averages: List[TimeAverage]

    def record(self, now: float) -> None:
        """A piece of each time average at the event ending at ``now``
        (or left for later, while its values are unchanged)."""
        raise NotImplementedError

    def catch_up(self, ticks: vec[float], end: int) -> None:
        """The pieces left for later, through ``ticks[end - 1]``."""
        raise NotImplementedError

    def catch_up_to(self, ticks: vec[float], end: int) -> None:
        """``catch_up``, with its mates where it has some and the stretch is
        long enough to share (``catch_up_together``)."""
        if self.mates and end - self.synced > self.clock.shared_min:
            catch_up_together(self, ticks, end)
        else:
            self.catch_up(ticks, end)


def catch_up_together(me: Recorded, ticks: vec[float], end: int) -> None:
    """``me.catch_up(ticks, end)``, and its mates' too where they share at
    least ``shared_min`` of its events (timeavg.py ``SHARED_MIN``): each
    one alone up to the latest first piece among them, then all their time
    averages in one pass (report/replay.py ``replay_distinct``; averages
    that agree, such as a pool's used and holders, once), whose additions
    are each average's own, in its own order, as in a pass of its own.  The
    sums do not wait on each other, so a processor adds them side by side."""
    group = me.mates
    lo = me.synced + 1
    every = True  # (whether each of them has pieces left before ``end``)
    r: Recorded
    for r in group:
        s = r.synced + 1
        if s >= end:
            every = False
        elif s > lo:
            lo = s
    if end - lo < me.clock.shared_min:
        me.catch_up(ticks, end)
        return
    # (where each of them takes part, the most common case, their averages
    # listed once at the start; else those of the ones that do)
    pending: List[TimeAverage] = me.mates_averages if every else []
    for r in group:
        s = r.synced + 1
        if s < end:
            if s < lo:
                r.catch_up(ticks, lo)
            if not every:
                pending.extend(r.averages)
            r.synced = end - 1
    replay_distinct(pending, ticks, me.clock.gaps_to(end), lo, end)


class Touched(object):
    """The stages and pools an event touched (``add``), each once, which
    ``record_all`` records at the event's end.  Where the core is compiled
    a list and a flag on each: iterating and clearing a set cost more than
    the records.  Interpreted, ``new_touched`` makes a set instead."""

    def __init__(self) -> None:
        # the first ``n`` are this event's; the list is kept from event to
        # event (stages and pools live as long as the run), so an event's
        # adds allocate nothing and its end frees nothing
        self.items: List[Recorded] = []
        self.n: int = 0

    def add(self, r: Recorded) -> None:
        if not r.in_touched:
            r.in_touched = True
            items = self.items
            n = self.n
            if n < len(items):
                items[n] = r
            else:
                items.append(r)
            self.n = n + 1

    def __bool__(self) -> bool:
        return self.n > 0

    def record_all(self, now: float) -> None:
        """Each one touched records at ``now`` (no record touches another),
        and none is touched any more."""
        items = self.items
        r: Recorded
        for k in range(self.n):
            r = items[k]
            r.in_touched = False
            r.record(now)
        self.n = 0


#: Whether ``sim.touched`` is a ``Touched`` (compiled core) or a set of
#: the same members (interpreted: a set's ``add`` is C code there).
TOUCHED_LIST: Final = COMPILED


def record_set(touched: Any, now: float) -> None:
    """``record_all`` of the set that is ``sim.touched`` on the interpreted
    core."""
    for r in touched:
        r.record(now)
    touched.clear()


def new_touched() -> Touched:
    """An empty ``Touched`` for the core that runs (see ``TOUCHED_LIST``)."""
    if TOUCHED_LIST:
        return Touched()
    return cast(Touched, set())
