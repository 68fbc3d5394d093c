"""The samples of each ``observe``: what the report's observations read.

``Observation`` keeps every sample after warm-up with its time, session
and turn, and every value (warm-up included) for the ``at end``
aggregates.  They are kept in machine arrays (8 bytes a sample in each,
where a list would hold a pointer to a 24-byte float or a 28-byte int: a
kept sample cost some 116 bytes, against the reference's 16).  Appending
to an array one value at a time is slow, though (each append parses its
argument), so samples first go into short pending vectors, moved into the
arrays ``FLUSH`` at a time; reading ``values``, ``times``, ``sessions``,
``turns`` or ``all_values`` moves what is pending first, so a reader sees
every sample in order.  Where the core is compiled the pending vectors are
librt's (``vec[float]``, ``vec[i64]``: machine values, appended without a
boxed float or int, and moved as their bytes); interpreted, they are lists,
packed with ``struct`` when moved.

``RunningObservation`` is ``--no-samples``: the samples after warm-up go
into running statistics (report/stats.py ``RunningSummary``) and are
dropped.
"""
import struct
from array import array
from typing import TYPE_CHECKING, Any, Final

from ..floatvec import COMPILED, append, i64, vec
from ..report.stats import RunningSummary

if TYPE_CHECKING:
    # (only annotations: codegen, which session and clock import, imports this)
    from .session import Session
    from .timeavg import TimeAverages

#: Samples pending in the lists before they are moved into the arrays.
FLUSH: Final = 512


class Observation(object):
    """The samples of one ``observe`` (see the module's docstring)."""

    __slots__ = ("name", "turn_slot", "keep_all", "_values", "_times", "_sessions", "_turns",
                 "_all", "p_values", "p_times", "p_sessions", "p_turns", "p_all")
    running = False

    def __init__(self, name: str, turn_slot: int, keep_all: bool = True) -> None:
        self.name = name
        self.turn_slot = turn_slot  # (the attribute slot of the session's turn)
        # whether every value is kept, warm-up included: only for an
        # observation that an `at end` aggregate reads (engine.py)
        self.keep_all = keep_all
        self._values: Any = array("d")
        self._times: Any = array("d")
        self._sessions: Any = array("q")
        self._turns: Any = array("q")
        self._all: Any = array("d")  # warm-up included (``keep_all``)
        # pending, in the order taken (the generated session code of the
        # interpreted core appends to these itself, then calls ``flush``
        # at ``FLUSH``)
        self.p_values: vec[float] = vec[float]()
        self.p_times: vec[float] = vec[float]()
        self.p_sessions: vec[i64] = vec[i64]()
        self.p_turns: vec[i64] = vec[i64]()
        self.p_all: vec[float] = vec[float]()

    def take(self, value: float, s: "Session", sim: "TimeAverages") -> None:
        """A sample of session ``s`` at ``sim.now`` (``Simulator.observe``;
        the generated session code calls this where the core is compiled)."""
        if self.keep_all:
            self.p_all = append(self.p_all, value)
        if sim.warm:
            pending = append(self.p_values, value)
            self.p_values = pending
            self.p_times = append(self.p_times, sim.now)
            self.p_sessions = append(self.p_sessions, s.serial)
            self.p_turns = append(self.p_turns, int(s.a[self.turn_slot]))
            if len(pending) >= FLUSH:
                self.flush()
        elif len(self.p_all) >= FLUSH:
            self.flush()

    def flush(self) -> None:
        """Move the pending samples into the arrays."""
        if COMPILED:
            if len(self.p_all):
                _move_bytes(self.p_all, self._all)
                self.p_all = vec[float]()
            if len(self.p_values):
                _move_bytes(self.p_values, self._values)
                _move_bytes(self.p_times, self._times)
                _move_bytes(self.p_sessions, self._sessions)
                _move_bytes(self.p_turns, self._turns)
                self.p_values = vec[float]()
                self.p_times = vec[float]()
                self.p_sessions = vec[i64]()
                self.p_turns = vec[i64]()
            return
        _move(self.p_all, self._all, "d")
        _move(self.p_values, self._values, "d")
        _move(self.p_times, self._times, "d")
        _move(self.p_sessions, self._sessions, "q")
        _move(self.p_turns, self._turns, "q")

    @property
    def values(self) -> Any:
        """The values after warm-up (an ``array("d")``)."""
        self.flush()
        return self._values

    @property
    def times(self) -> Any:
        """When each value after warm-up was taken."""
        self.flush()
        return self._times

    @property
    def sessions(self) -> Any:
        """The serial of the session that took each value after warm-up."""
        self.flush()
        return self._sessions

    @property
    def turns(self) -> Any:
        """The session's turn when it took each value after warm-up."""
        self.flush()
        return self._turns

    @property
    def all_values(self) -> Any:
        """Every value, warm-up included (empty unless ``keep_all``)."""
        self.flush()
        return self._all


def _move_bytes(pending: Any, into: Any) -> None:
    """Append the machine values of librt's vector ``pending`` to the array
    ``into`` (of the same item type and size): its bytes, at once."""
    into.frombytes(memoryview(pending).cast("B"))


def _move(pending: Any, into: Any, code: str) -> None:
    """Append ``pending`` to the array ``into`` (of type ``code``) and empty
    it: packed as bytes at once, without the array's parse of each value."""
    n = len(pending)
    if n:
        into.frombytes(struct.pack("%d%s" % (n, code), *pending))
        pending.clear()


class RunningObservation(object):
    """``--no-samples``: the samples after warm-up go into running statistics
    (report/stats.py ``RunningSummary``) and are dropped; ``all_values`` is
    kept only for an observation that an aggregate reads."""
    __slots__ = ("name", "summary", "all_values", "keep_all")
    running = True

    def __init__(self, name: str, keep_all: bool) -> None:
        self.name = name
        self.summary = RunningSummary()
        self.all_values: Any = array("d")
        self.keep_all = keep_all

    def add(self, value: float, warm: bool) -> None:
        if self.keep_all:
            self.all_values.append(value)
        if warm:
            self.summary.add(value)
