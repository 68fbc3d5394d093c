"""The simulator's clock (the base of ``Simulator``): the time, the event
heap and the loop that advances them.

Events are kept in a heap keyed by (time, insertion sequence), so events at
one instant run in the order they were scheduled.  The loop pops the next
event, moves the clock to its time, runs it and settles (settle.py); gauges
are read just before the clock moves to a later instant (timeavg.py).
"""
import heapq
import os
import time
from typing import Any, Dict, List

from .events import OBJECTS, Event, pop_event, push_event
from .exprs import fmt

_heappush = heapq.heappush


def address_space() -> int:
    """This process's address space in bytes (what ``RLIMIT_AS`` bounds),
    0 where /proc does not say."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * _PAGE


try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):
    _PAGE = 4096


def check_memory(bound: int) -> None:
    """A MemoryError once the address space passes ``bound`` (--max-memory)."""
    if address_space() > bound:
        raise MemoryError("the address space passed --max-memory")


class Clock(object):

    def fold(self, st, horizon, max_events, checks):
        """A stretch of decode iterations (settle.py)."""
        raise NotImplementedError

    def sync_fold_top(self):
        raise NotImplementedError

    def sync_fold(self, st: Any) -> None:
        """A folded stretch's residents brought up to now (settle.py)."""
        raise NotImplementedError

    def stop_folds(self):
        raise NotImplementedError

    # (declared here so that the event loop calls them directly: compiled,
    # a method the class does not know is looked up by name at every call)
    def settle(self):
        raise NotImplementedError

    def read_gauges(self):
        raise NotImplementedError

    def init_clock(self) -> None:
        self.now: float = 0.0
        # Events (events.py: an ``Event`` each, or a tuple (time, seq, fn,
        # arg) on interpreted CPython)
        self.heap: List[Any] = []
        self.seq: int = 0
        self.events: int = 0
        # Ctrl-C during a run sets this (``interrupts``), and the event loops
        # stop at the next event boundary: a KeyboardInterrupt raised inside
        # compiled code (mypyc) would abort the process, the report lost.
        self.stop_requested: bool = False
        # A step stage that just started an iteration of decodes only
        # (Step.launch): the loop lets it fold (settle.py, fold.py); the
        # stretches in progress, by stage index (fold.py).
        self.fold_stage: Any = None
        self.folds: Dict[int, Any] = {}
        self.fold_uses: Dict[int, int] = {}  # pool index -> stretches using it (fold.py)
        # The monotonic time at which --max-wall stops the run (run_events):
        # read at every event, so that a run of slow events stops in time.
        self.deadline: Any = None
        # --max-memory: the address space (bytes) past which the run stops
        # with a MemoryError of its own, read every 1024 events (and
        # sessions started), below the hard bound the command line sets:
        # meeting that one, an allocation inside the compiled core aborts
        # the process instead of raising.
        self.memory_bound: Any = None

    def nothing_due(self) -> bool:
        """No event is due at this instant: the heap's first is later."""
        heap = self.heap
        if not heap:
            return True
        if OBJECTS:
            e: Event = heap[0]
            return e.t > self.now
        return heap[0][0] > self.now

    def schedule(self, t, fn, arg):
        self.seq += 1
        if OBJECTS:
            push_event(self.heap, Event(t, self.seq, fn, arg))
        else:
            _heappush(self.heap, (t, self.seq, fn, arg))

    def run_events(self, limit, progress, max_events, max_wall):
        """The event loop of ``run``, from its first settle to the end:
        returns the end of the run (the horizon, or the instant the
        requested arrivals drained or the run stopped early)."""
        horizon = self.prog.horizon
        end = horizon
        heap = self.heap
        heappop = heapq.heappop
        gauges = self.gauges
        checks = progress is not None or max_wall is not None or self.memory_bound is not None
        shows = progress is not None  # (a progress display every 4096 events)
        deadline = None if max_wall is None else time.monotonic() + max_wall
        self.deadline = deadline
        monotonic = time.monotonic
        try:
            if limit is None and max_events is None and not checks and self.lean():
                self.run_lean(horizon)
                if self.stop_requested:
                    self.partial = "interrupted"
                    return end
            while heap:
                if limit is not None and self.arrived >= limit and self.live == 0:
                    end = self.now
                    break
                if OBJECTS:
                    top: Event = heap[0]
                    t = top.t
                else:
                    t = heap[0][0]
                if t > horizon:
                    break
                if max_events is not None and self.events >= max_events:
                    self.partial = "--max-events %d" % max_events
                    break
                if self.folds:
                    self.sync_fold_top()  # (its stretch, if the event ends one's iteration)
                if gauges and t > self.now:
                    self.read_gauges()
                if OBJECTS:
                    e = pop_event(heap)
                    fn = e.fn
                    arg = e.arg
                else:
                    _, _, fn, arg = heappop(heap)
                self.now = t
                self.events += 1
                fn(arg)
                self.settle()
                while (self.fold_stage is not None or self.folds) and \
                        not self.stop_requested and not (shows and not self.events & 4095):
                    st = self.fold_stage
                    self.fold_stage = None
                    n = self.events
                    self.fold(st, horizon, max_events, shows)
                    if self.events == n:
                        break  # (the next event is the general loop's)
                if self.stop_requested:
                    self.partial = "interrupted"
                    break
                if checks:
                    if shows and not self.events & 4095:
                        progress(t, horizon)
                    if self.memory_bound is not None and not self.events & 1023:
                        check_memory(self.memory_bound)
                    if deadline is not None and monotonic() > deadline:
                        self.partial = "--max-wall %s" % fmt(max_wall)
                        break
            else:
                if limit is not None and self.arrived >= limit and self.live == 0:
                    end = self.now
        except KeyboardInterrupt:
            self.partial = "interrupted"
        finally:
            if self.folds:
                self.stop_folds()  # (the residents as the iterations left them)
        return end


class interrupts(object):
    """``with interrupts(sim):`` Ctrl-C (SIGINT) asks the run to stop at the
    next event boundary instead of raising where it lands; a second Ctrl-C
    raises KeyboardInterrupt as usual.  Only in the main thread (elsewhere
    signals cannot be handled, and nothing changes)."""

    def __init__(self, sim):
        self.sim = sim
        self.old: Any = None
        self.installed = False

    def handle(self, signum, frame):
        if self.sim.stop_requested:
            raise KeyboardInterrupt()
        self.sim.stop_requested = True

    def __enter__(self):
        import signal
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            try:
                self.old = signal.signal(signal.SIGINT, self.handle)
            except ValueError:  # not the main thread: SIGINT stays as it is
                return self
            self.installed = True
        return self

    def __exit__(self, *exc):
        if self.installed:
            import signal
            signal.signal(signal.SIGINT, self.old)
        return False
