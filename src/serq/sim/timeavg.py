"""The simulator's time averages and gauges (a base of ``Simulator``).

Every stage and pool keeps time averages of its values (report/stats.py
``TimeAverage``), as does the simulator of its live sessions.  The
reference's float bits need a new piece of each at every event; the settle
(settle.py) records the live count and the stages and pools an event
*touched*, and keeps the event times in ``ticks``: a stage or pool whose
values did not change adds its pieces later (``catch_up``, with the gaps
between ticks worked out once, ``gaps_to``), at the end of the run or when
``TICKS_KEPT`` times have piled up (``compact_ticks``).  Gauges are read
just before the clock moves to a later instant, and at the end.
"""
import sys
from typing import Any, Dict, Final, List, cast

from ..floatvec import append, vec
from ..report.stats import TimeAverage
from .clock import Clock
from .recorded import Recorded, Touched, new_touched

#: Event times kept for the time averages that add their pieces late
#: (settle); past this many, every stage and pool catches up.
TICKS_KEPT = 4096


#: PyPy: every stage and pool records at every event, as its JIT runs that
#: loop faster than it keeps the set of those an event touched
#: (vllm_single 1.28 -> 1.22 s, chat_cache 1.41 -> 1.31 s there; router16
#: the same); CPython keeps the set (router16 -30 %).
RECORD_ALL: Final = sys.implementation.name == "pypy"


class _Untracked(object):
    """``sim.touched`` under ``RECORD_ALL``: nothing to keep."""
    __slots__ = ()

    def add(self, r):
        pass

    def __bool__(self) -> bool:
        return False  # (so settle never reads it)


UNTRACKED = _Untracked()


class GaugeTrace(object):
    """A gauge's steps: ``fn(ctx)`` read at the end of every event."""
    __slots__ = ("name", "fn", "ctx", "times", "values")

    def __init__(self, name: str, fn: Any, ctx: Any = None) -> None:
        self.name = name
        self.fn = fn
        self.ctx = ctx
        self.times: List[float] = []
        self.values: List[Any] = []


#: The fewest events a catch-up shares with its mates' for them to catch
#: up with it (recorded.py ``catch_up_together``): a shorter stretch costs
#: more to gather than the one pass saves.  (Read as a run starts:
#: tests/test_sim_ticks.py sets it to 1.)
SHARED_MIN = 128

#: The most stages and pools that catch up together: past it, one that
#: changes at every event would drag many that do not along each time.
MATES_MAX: Final = 8


def mate_groups(links: List[List[Recorded]]) -> List[List[Recorded]]:
    """The groups ``links`` join (two links with a member in common are one
    group), leaving out those of one member and those of more than
    ``MATES_MAX``; then, in order, a group joins the one before it while
    the two have at most ``MATES_MAX`` members (two replicas' step stage,
    memory and slots: their passes are twice as wide, so the sums of both
    are added side by side, and each replica's catch-up drags the other's
    along, which it would take alone later)."""
    group_of: Dict[int, int] = {}  # id of a catcher -> its group's number
    groups: Dict[int, List[Recorded]] = {}
    n = 0
    for link in links:
        g: List[Recorded] = []
        for r in link:
            k = group_of.get(id(r), -1)
            if k >= 0:
                for m in groups.pop(k, []):  # (merged into the new group)
                    if m not in g:
                        g.append(m)
            elif r not in g:
                g.append(r)
        for m in g:
            group_of[id(m)] = n
        groups[n] = g
        n += 1
    out: List[List[Recorded]] = []
    joined = False  # (whether out[-1] is two groups already)
    for g in groups.values():
        if not 1 < len(g) <= MATES_MAX:
            continue
        if out and not joined and len(out[-1]) + len(g) <= MATES_MAX:
            out[-1] = out[-1] + g
            joined = True
        else:
            out.append(g)
            joined = False
    return out


class TimeAverages(Clock):

    def init_averages(self) -> None:
        self.live_avg = TimeAverage(0.0)
        # The times of the events since the last catch-up (settle), and
        # gaps[i] = ticks[i] - ticks[i - 1] as far as read (gaps_to); vectors
        # of machine doubles where the core is compiled (floatvec.py): each
        # append stores the returned vector.
        self.ticks: vec[float] = vec[float]([0.0])
        self.gaps: vec[float] = vec[float]([0.0])
        # (read here once: a typed attribute where the settle reads it;
        # tests/test_sim_ticks.py sets TICKS_KEPT lower before a run)
        self.ticks_kept: int = TICKS_KEPT
        self.shared_min: int = SHARED_MIN
        self.catchers: List[Recorded] = []
        self.recorders: List[Recorded] = []  # (those that record at every event)
        self.gauges: List[GaugeTrace] = []  # (the program's, set by the simulator)
        # The stages and pools whose values may have changed in this event
        # (each adds itself where it changes): only they record at its end.
        # (recorded.py: a list and a flag where the core is compiled, a set
        # on interpreted CPython; PyPy records every one at every event)
        self.touched: Touched = cast(Touched, UNTRACKED) if RECORD_ALL else new_touched()

    def start_recording(self, links):
        """At the start of the run: who catches up, and who records at
        every event.  Stages and pools that change together (``links``:
        a step stage, its memory, the pools admitted via it) catch up
        together (recorded.py ``catch_up_together``)."""
        self.catchers = list(self.stages) + list(self.pools)
        r: Recorded
        for r in self.catchers:
            r.clock = self
            r.mates = []
            r.mates_averages = []
        for g in mate_groups(links):
            flat: List[TimeAverage] = []
            for r in g:
                flat.extend(r.averages)
            for r in g:
                r.mates = g
                r.mates_averages = flat
        # Every stage and pool records when touched (see settle), a shared
        # stage too (its flows touch it: stages.py ``Flows``); on PyPy every
        # one records at every event.
        self.recorders = []
        if RECORD_ALL:
            self.recorders = list(self.catchers)

    def compact_ticks(self, now: float) -> None:
        """Every stage and pool catches up through ``now`` (the last tick),
        and the kept event times start again from it."""
        self.catch_up_all()
        self.ticks = vec[float]([now])
        self.gaps = vec[float]([0.0])
        r: Recorded
        for r in self.catchers:
            r.synced = 0

    def gaps_to(self, end: int) -> vec[float]:
        """``gaps`` through index ``end - 1``, each worked out once, when a
        catch-up first reads it (``gaps[0]`` is not read)."""
        gaps = self.gaps
        n = len(gaps)
        if n < end:
            ticks = self.ticks
            i: int
            for i in range(n, end):  # (typed: compiled, each gap unboxed)
                gaps = append(gaps, ticks[i] - ticks[i - 1])
            self.gaps = gaps
        return gaps

    def catch_up_all(self) -> None:
        """Every stage and pool adds the pieces it left for later, through
        the last event."""
        ticks = self.ticks
        end = len(ticks)
        r: Recorded
        for r in self.catchers:
            r.catch_up_to(ticks, end)  # (its mates may then have none left)

    def read_gauges(self) -> None:
        now = self.now
        g: GaugeTrace
        for g in self.gauges:
            v = g.fn(g.ctx)
            if not g.values or g.values[-1] != v:
                g.times.append(now)
                g.values.append(v)

    def end_warmup(self, _=None):
        self.warm = True
        now = self.now
        self.live_avg.restart(now)
        for st in self.stages:
            st.restart(now)
        for p in self.pools:
            p.restart(now)
