"""The admission table: what the admission-control chapter says an operator
must measure, per pool member (beyond pyserq 0.1.3's report).

The simulator records (``pool.admission``, src/serq/sim/pools.py) and this
module summarizes over the measured interval ``[warmup, end]``:

* ``blocked_attempts``: admission attempts (one per pool pass, i.e. per
  settle or release) whose selected hold did not fit while a hold waiting
  behind it would have: head-of-line blocking;
* ``blocked_fraction``: the fraction of the time the head held back a hold
  that fits (time average of a 0/1 signal);
* ``mean_reserved``: time-average units reserved but not yet allocated
  (``reserve held``: the reserve the pool carries for growth it promised);
* ``preemptions`` and ``preemption_times``: every preemption after warm-up
  (the reference's pool ``preemptions`` counts the warm-up's too);
* the **storm indicator**: ``storm_peak`` is the largest number of
  preemptions inside any window of width ``storm_window`` (1 % of the
  measured interval), and ``storm_at`` the start of the first such window
  (a preemption instant).  Read it against ``preemptions / 100``, the count
  an even spread would put in one window: a peak many times that is a
  storm.  With no preemption the peak is 0 and ``storm_at`` absent.

``serq run --admission`` prints :func:`admission_text` after the report;
``serq run --json --extended`` appends :func:`admission_json` under the
key ``"extended"`` (see jsonfmt.report_json).
"""
import bisect
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from .jsonfmt import _object, _value, format_float
from .text_ref import _member, num, table

#: The storm window as a fraction of the measured interval.
STORM_FRACTION = 0.01


@dataclass
class AdmissionRow:
    """One pool member's admission observables (JSON keys in this order)."""
    name: str
    index: Optional[int]
    blocked_attempts: int
    blocked_fraction: float
    mean_reserved: float
    preemptions: int
    storm_window: float
    storm_peak: int
    storm_at: Optional[float]
    preemption_times: List[float] = field(default_factory=list)

    JSON_FIELDS = ("name", "index", "blocked_attempts", "blocked_fraction",
                   "mean_reserved", "preemptions", "storm_window", "storm_peak",
                   "storm_at", "preemption_times")


def storm(times: Sequence[float], window: float) -> Tuple[int, Optional[float]]:
    """``(peak, at)``: the most preemptions in a half-open window
    ``[at, at + window)``, over windows starting at a preemption (the
    busiest window can always be slid right to start at one); the first
    such window on ties.  ``(0, None)`` without preemptions."""
    best, at = 0, None
    for i, t in enumerate(times):
        k = bisect.bisect_left(times, t + window, lo=i) - i
        if k > best:
            best, at = k, t
    return best, at


def admission_rows(sim) -> List[AdmissionRow]:
    """The admission rows of a finished simulator, one per pool member in
    declaration order (the order of the report's ``pools``)."""
    end = sim.end
    warmup = sim.prog.warmup
    window = STORM_FRACTION * (end - warmup)
    rows = []
    for p in sim.pools:
        ad = p.admission
        times = sorted(ad.preemption_times)
        peak, at = storm(times, window)
        rows.append(AdmissionRow(
            name=p.name, index=p.member, blocked_attempts=ad.blocked_attempts,
            blocked_fraction=ad.blocking.mean(end), mean_reserved=ad.reserved.mean(end),
            preemptions=len(times), storm_window=window, storm_peak=peak, storm_at=at,
            preemption_times=times))
    return rows


def admission_text(rows: Sequence[AdmissionRow]) -> str:
    """The table printed by ``serq run --admission`` (ends with a newline).

        admission  blocked  blocked time  reserved  preempt  storm  window  storm at
        kv              12      0.0413        1536       40      9   5.4        301.2

    ``blocked time`` is a fraction of the measured interval; ``storm`` is
    the most preemptions in any ``window`` seconds, starting at ``storm at``.
    """
    lines = table(("admission", "blocked", "blocked time", "reserved", "preempt",
                   "storm", "window", "storm at"),
                  [(_member(r.name, r.index), str(r.blocked_attempts),
                    num(r.blocked_fraction), num(r.mean_reserved), str(r.preemptions),
                    str(r.storm_peak), num(r.storm_window), num(r.storm_at))
                   for r in rows])
    return "\n".join(lines) + "\n"


def _row_json(r: AdmissionRow) -> str:
    pairs = []
    for k in AdmissionRow.JSON_FIELDS:
        v = getattr(r, k)
        if k == "preemption_times":
            text = "[" + ",".join(format_float(t) for t in v) + "]"
        else:
            text = _value(v)
        pairs.append((k, text))
    return _object(pairs)


def admission_json(rows: Sequence[AdmissionRow]) -> str:
    """The JSON array of admission rows, numbers written as the report's."""
    return "[" + ",".join(_row_json(r) for r in rows) + "]"
