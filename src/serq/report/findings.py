"""Findings: what the simulated system did that a reader must not miss.

A run that produced its report succeeded, whatever the simulated system
did; a deadlock, a livelock or a queue that can never move is a *finding*
about the system, printed as a warning at the end of the text report, under
``extended.findings`` with ``serq run --json --extended``, and as
``Report.findings`` in the Python API.  ``serq run --fail-on-findings``
exits 4 when there is one.

Findings are read from the simulator's state once the run has ended; the
event loop pays for none of it but two stores on rare paths (``Pool.
last_stall`` when a grow stalls, ``Pool.stuck_since`` when a session is
first counted stuck).  The kinds, in the order they are listed (pools in
declaration order first, then stages):

* ``deadlock`` (a pool): every session holding units of the pool waits to
  grow in it, no lease on it expires, and nothing may preempt; ``since`` is
  when the last of them stalled (nothing has moved in the pool since);
* ``livelock`` (a pool): sessions preempted again at a position not beyond
  the last preemption (the reference's ``stuck`` count); ``since`` is when
  the first was counted;
* ``over_cap`` (a pool): the head of a queue asks this pool for more than
  its cap and can never be admitted; ``since`` is the longest wait in that
  queue;
* ``backlog`` (a pool): sessions still queued at the end, the oldest of them
  waiting for more than half the measured interval (a transient queue at
  the horizon is no finding); not listed for a queue a ``deadlock`` or
  ``over_cap`` finding already counts;
* ``idle`` (a step stage): it ended with work it could not start (the
  report's ``idle_with_work``); not listed when a ``deadlock`` of its memory
  pool explains it (that finding names the stage); ``since`` is the start
  of its last iteration.

A report read back from JSON (no simulator state) gets the findings its
rows tell: ``idle``, ``over_cap`` and ``livelock``, without ``since``
(:func:`findings_from_rows`).
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Set, Tuple

from .._dataclass import dataclass
from .model import Report

EPS = 1e-9


@dataclass
class Finding:
    """One finding: ``kind`` (above), ``subject`` (``"pool"`` or
    ``"stage"``), the subject's ``name`` and member ``index`` (``None`` for a
    single pool or stage), the ``sessions`` concerned, ``since`` (the
    simulated time it started, ``None`` when unknown), the likely ``cause``
    and ``remedy``, and ``message`` (the warning's first line, without the
    ``warning: pool kv:`` prefix)."""
    kind: str
    subject: str
    name: str
    index: Optional[int]
    sessions: int
    since: Optional[float]
    message: str
    cause: str
    remedy: str

    FIELDS = ("kind", "subject", "name", "index", "sessions", "since", "message", "cause",
              "remedy")

    @property
    def label(self) -> str:
        return self.name if self.index is None else "%s[%d]" % (self.name, self.index)

    def to_dict(self) -> Dict[str, object]:
        return {"kind": self.kind, "subject": self.subject, "name": self.name,
                "index": self.index, "sessions": self.sessions, "since": self.since,
                "message": self.message, "cause": self.cause, "remedy": self.remedy}

    def lines(self) -> List[str]:
        """The warning as the text report prints it."""
        return ["warning: %s %s: %s" % (self.subject, self.label, self.message),
                "  cause: " + self.cause,
                "  remedy: " + self.remedy]


def t(x: float) -> str:
    """A simulated time in a message: 6 significant digits."""
    return "%.6g" % x


def _plural(n: int, word: str) -> str:
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def _label(x) -> str:
    return x.name if x.member is None else "%s[%d]" % (x.name, x.member)


# ---------------------------------------------------------------------------
# From the simulator's state at the end of the run


def _holders(sim, p) -> Tuple[Set[int], bool]:
    """The ids of the live sessions and legs holding units of ``p`` (a hold
    not done, or a lease that never expires), and whether a lease on ``p``
    expires later (its units come back: no deadlock)."""
    ids: Set[int] = set()
    expiring = False
    for e in sim.live_holders():
        for run in e.holds:
            for i, q in enumerate(run.pools):
                if q is p and not run.done[i] and run.alloc[i] > EPS:
                    ids.add(id(e))
        for lease in e.leases:
            if lease.pool is p and not lease.ended:
                if lease.expires is not None and lease.expires != math.inf:
                    expiring = True
                else:
                    ids.add(id(e))
    return ids, expiring


def _queued_for(sim, p) -> Tuple[int, Optional[float]]:
    """Sessions waiting in any queue for a hold that asks ``p``, and the
    earliest time one of them began to wait."""
    n = 0
    first: Optional[float] = None
    for q in sim.pools:
        for w in q.queue:
            if p in w.run.pools:
                n += 1
                if first is None or w.since < first:
                    first = w.since
    return n, first


def _oldest(q) -> Optional[float]:
    return min(w.since for w in q.queue) if q.queue else None


def compute_findings(sim, report: Report) -> List[Finding]:
    """The findings of a finished run (``report`` built from ``sim``)."""
    out: List[Finding] = []
    counted: Set[int] = set()  # pools whose queue a finding already counts
    deadlocked: Dict[int, Finding] = {}  # pool index -> its deadlock finding
    end = sim.end
    span = end - sim.prog.warmup
    rows = report.pools
    for p, row in zip(sim.pools, rows):
        f = _deadlock(sim, p)
        if f is not None:
            out.append(f)
            deadlocked[p.index] = f
            for q in sim.pools:
                if any(p in w.run.pools for w in q.queue):
                    counted.add(q.index)
        if p.stats.stuck:
            f = _livelock(sim, p)
            out.append(f)
            if f.sessions and "still live" in f.message:
                for q in sim.pools:
                    if any(p in w.run.pools for w in q.queue):
                        counted.add(q.index)
        if row.over_cap is not None:
            qlabel, need = row.over_cap
            q = next((x for x in sim.pools if _label(x) == qlabel), None)
            waiting = len(q.queue) if q is not None else 0
            since = _oldest(q) if q is not None else None
            if q is not None:
                counted.add(q.index)
            out.append(_over_cap(_label(p), p.name, p.member, qlabel, need, p.cap, waiting,
                                 since))
    idle = [st for st in sim.stages if st.kind == "step" and st.idle_with_work
            and st.memory not in deadlocked]
    for st in idle:
        for q in st.admits:  # the idle stage's finding counts them
            counted.add(q.index)
    for q in sim.pools:
        if not q.queue or q.index in counted:
            continue
        oldest = _oldest(q)
        if oldest is None or span <= 0 or end - oldest < 0.5 * span:
            continue
        n = len(q.queue)
        out.append(Finding(
            "backlog", "pool", q.name, q.member, n, oldest,
            "%s queued at the end, the oldest since t = %s s (waited %s s, more than half "
            "the run)" % (_plural(n, "session"), t(oldest), t(end - oldest)),
            "the pool admits more slowly than sessions arrive (overload), or what holds it "
            "does not release",
            "lower the load, or give the pool (and what its holders wait for) more "
            "capacity"))
    for st in idle:
        out.append(_idle_stage(st))
    return out


def _deadlock(sim, p) -> Optional[Finding]:
    if not p.growers:
        return None
    stalled = {id(entry[0]) for entry in p.growers}
    holders, expiring = _holders(sim, p)
    if expiring or not holders or not holders <= stalled:
        return None
    n = len(stalled)
    queued, _ = _queued_for(sim, p)
    since = p.last_stall
    msg = "deadlock since t = %s s: the %s holding it %s to grow" % (
        t(since) if since is not None else "?", _plural(n, "session"),
        "waits" if n == 1 else "wait")
    if queued:
        msg += ", %d more %s queued for it" % (queued, "is" if queued == 1 else "are")
    stages = [st for st in sim.memory_of.get(p.index, ()) if st.idle_with_work]
    if stages:
        msg += "; stage %s ended with this work and could not start it" % ", ".join(
            _label(st) for st in stages)
    if p.preempt_keys is None:
        cause = "the pool is full of holders that cannot grow and nothing may preempt"
        remedy = "add `preempt lifo`, a `reserve`, or a larger cap"
    else:
        cause = ("the pool is full of holders that cannot grow, and none of them is a "
                 "candidate for preemption")
        remedy = "a `reserve` (room to grow, kept at admission), or a larger cap"
    return Finding("deadlock", "pool", p.name, p.member, n + queued, since, msg, cause,
                   remedy)


def _livelock(sim, p) -> Finding:
    n = p.stats.stuck
    live = sum(1 for s, i in sim.stuck_sessions.items() if i == p.index and s.alive)
    since = p.stuck_since
    msg = "%s stuck since t = %s s: preempted again before %s progress (%s)" % (
        _plural(n, "session"), t(since) if since is not None else "?",
        "it made" if n == 1 else "they made", _plural(p.stats.preemptions, "preemption"))
    if live == n:
        msg += ", %s at the end" % ("still live" if n == 1 else "all still live")
    elif live:
        msg += ", %d still live at the end" % live
    else:
        msg += ", %s later" % ("it finished" if n == 1 else "all finished")
    if live:
        queued, _ = _queued_for(sim, p)
        if queued:
            msg += ", %d more %s queued for it" % (queued, "is" if queued == 1 else "are")
        cause = ("under `preempt`, a resumed session cannot grow and is preempted (or "
                 "preempts itself) over and over: the pool cannot hold what the running "
                 "sessions grow to")
    else:
        cause = ("under `preempt`, a resumed session could not grow and was preempted again "
                 "before it made progress: the pool was too small for what the running "
                 "sessions grew to")
    return Finding(
        "livelock", "pool", p.name, p.member, n, since, msg, cause,
        "a larger cap, or fewer concurrent requests (a smaller slot pool, or a `reserve` "
        "so that admission leaves room to grow)")


def _over_cap(label: str, name: str, index: Optional[int], qlabel: str, need: float,
              cap: Optional[float], waiting: int, since: Optional[float]) -> Finding:
    msg = "the head of queue %s asks for %s units, more than the cap%s: it can never be " \
          "admitted" % (qlabel, "%.6g" % need, "" if cap is None else " %.6g" % cap)
    if waiting > 1:
        msg += ", nor (first come, first served) the %d behind it" % (waiting - 1)
    if since is not None:
        msg += " (queued since t = %s s)" % t(since)
    return Finding(
        "over_cap", "pool", name, index, waiting, since, msg,
        "a request larger than the pool" if qlabel == label else
        "a request larger than the pool, waiting in the queue of %s" % qlabel,
        "a larger cap, or bound the hold's demand (its units, its `reserve`)")


def _idle_stage(st) -> Finding:
    residents = len(st.residents)
    waiting = sum(len(p.queue) for p in st.admits)
    parts = []
    if residents:
        parts.append(_plural(residents, "resident"))
    if waiting:
        parts.append("%d waiting to be admitted" % waiting)
    msg = "ended with work it could not start (%s)" % ", ".join(parts or ["its queue"])
    since: Optional[float] = None
    if st.iterations:
        since = st.iter_start
        msg += ", its last iteration at t = %s s" % t(since)
    else:
        times = [j.arrived for j in st.residents] + [w.since for p in st.admits
                                                     for w in p.queue]
        if times:
            since = min(times)
            msg += ", it never iterated; work waiting since t = %s s" % t(since)
    return Finding(
        "idle", "stage", st.name, st.member, residents + waiting, since, msg,
        "no resident could be given tokens and no waiting session admitted (a growth or a "
        "queue head that does not fit its pools, a budget of 0 or below the granule)",
        "see the pool findings and rows; `serq run --trace-iterations -` shows the last "
        "plans")


# ---------------------------------------------------------------------------
# From the report's rows alone (a report read back from JSON)


def findings_from_rows(report: Report) -> List[Finding]:
    """The findings a report's rows tell without the simulator's state."""
    out: List[Finding] = []
    for p in report.pools:
        label = p.name if p.index is None else "%s[%d]" % (p.name, p.index)
        if p.stuck:
            out.append(Finding(
                "livelock", "pool", p.name, p.index, p.stuck, None,
                "%s stuck: preempted again before %s progress (%s)" % (
                    _plural(p.stuck, "session"), "it made" if p.stuck == 1 else "they made",
                    _plural(p.preemptions, "preemption")),
                "under `preempt`, a resumed session cannot grow and is preempted (or "
                "preempts itself) over and over",
                "a larger cap, or fewer concurrent requests"))
        if p.over_cap is not None:
            out.append(_over_cap(label, p.name, p.index, p.over_cap[0], p.over_cap[1], None,
                                 0, None))
    for s in report.stages:
        if s.idle_with_work:
            out.append(Finding(
                "idle", "stage", s.name, s.index, 0, None,
                "ended with work it could not start",
                "no resident could be given tokens and no waiting session admitted",
                "see the pool findings and rows; `serq run --trace-iterations -` shows the "
                "last plans"))
    return out


def report_findings(report: Report) -> List[Finding]:
    """The report's findings: computed at the end of the run, or read from
    its rows when it has none (a report read back from JSON)."""
    if report.findings is not None:
        return report.findings
    return findings_from_rows(report)


def findings_json(findings: List[Finding]) -> str:
    """The findings as a compact JSON array (keys in ``Finding.FIELDS``
    order; ``since`` written as the report writes numbers)."""
    from .jsonfmt import format_float
    import json
    items = []
    for f in findings:
        parts = []
        for k in Finding.FIELDS:
            v = getattr(f, k)
            if v is None:
                text = "null"
            elif k == "since":
                text = format_float(v)
            elif isinstance(v, int):
                text = str(v)
            else:
                text = json.dumps(v, ensure_ascii=False)
            parts.append('"%s":%s' % (k, text))
        items.append("{" + ",".join(parts) + "}")
    return "[" + ",".join(items) + "]"
