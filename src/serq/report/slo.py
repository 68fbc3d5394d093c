"""SLO attainment and goodput (``serq run --slo 'ttft <= 0.5'``).

An SLO bounds one of the program's observations: ``NAME OP BOUND`` with
``OP`` one of ``<= < >= >`` and ``BOUND`` a number, in seconds when it ends
in ``s`` or ``ms`` (only for an observation of times, report/units.py).

Requests.  A *request* is one turn of a session (one ``turn;``), or the
whole session in a program without ``turn;``.  Every sample the simulator
records is tagged with its session's serial and turn (sim/engine.py
``Observation``), and the simulator notes which session was the first to
arrive after the warm-up and how many turns each session took when it
ended (``Simulator.track_requests``): those tags join each request's
samples across observations.  The requests counted are those

* of sessions that arrived after the warm-up (so that none of their samples
  was dropped as a warm-up sample), and
* complete at the end of the run: the session ended, or (a turn) a later
  turn of its session began.  Requests in flight at the end are not
  counted.

A request *meets* an SLO when the **mean of its samples** of the
observation is within the bound (one sample: that sample): DistServe's
TPOT is the mean time per output token of a request, so an observation
recorded per token (``observe itl = now - last;``) is judged by its mean
over the request.  A request with **no sample** of the observation does not
meet it (a request that skipped the server, or was turned away).
Samples recorded before a session's first ``turn;`` belong to its first
request.  With ``per="session"`` the unit is the session: it meets an SLO
when each of its requests does (for an observation recorded once per
session, in the workload's ``init``, when that sample does: under the
default ``per="request"`` such an observation is an error in a program
whose sessions take turns, having no sample per request).

Results (:class:`SloResult`): for each SLO and for all together, the
*attainment* (the share of counted requests meeting it) with a 95 %
batch-means CI over the requests in arrival order (20 batches, as the
report's observations: report/stats.py; ``None`` below 40 requests), and
the *goodput*: requests meeting every SLO a second of the measurement
interval ``[warmup, end]``, whose CI is the all-SLO attainment's scaled by
``requests / span`` (the number of requests taken as given).  This is the
goodput of vLLM's benchmark (``--goodput``) and the per-request SLO
attainment of DistServe; DistServe's *goodput* is the largest rate whose
attainment stays above a goal (90 %), a capacity question for a sweep.
"""
import re
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import UsageError
from ..ir import nodes as ir
from .stats import batch_means_ci

OPS = {"<=": lambda x, b: x <= b, "<": lambda x, b: x < b,
       ">=": lambda x, b: x >= b, ">": lambda x, b: x > b}
PER = ("request", "session")

_SLO = re.compile(r"^\s*([A-Za-z_][A-Za-z_0-9.\[\]]*)\s*(<=|>=|<|>)\s*"
                  r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(ms|s)?\s*$")


class Slo(object):
    """One parsed SLO: observation ``name`` (index ``obs``), ``op``, ``bound``
    (in seconds for a bound written with a unit)."""

    __slots__ = ("text", "name", "obs", "op", "bound")

    def __init__(self, text: str, name: str, obs: int, op: str, bound: float) -> None:
        self.text = text
        self.name = name
        self.obs = obs
        self.op = op
        self.bound = bound

    def label(self) -> str:
        from .text_ref import num
        return "%s %s %s" % (self.name, self.op, num(self.bound))

    def met(self, x: float) -> bool:
        return bool(OPS[self.op](x, self.bound))


def _names(prog: ir.Program) -> str:
    return ", ".join(prog.observes) if prog.observes else "(none: the program has no `observe`)"


def _init_only(prog: ir.Program) -> set:
    """Observations recorded only in the workload's `init` block (once per
    session, before its first turn)."""
    where: Dict[int, set] = {}
    for b, block in enumerate(prog.blocks):
        for st in block:
            if type(st) is ir.Observe:
                where.setdefault(st.obs, set()).add(b)
    return {i for i, blocks in where.items() if blocks == {prog.init}}


def has_turns(prog: ir.Program) -> bool:
    return any(type(x) is ir.Turn for x in ir.walk(prog.blocks))


def parse_slos(texts: Sequence[str], prog: ir.Program, per: str = "request") -> List[Slo]:
    """The SLOs of ``--slo`` texts against a program's observations; a
    malformed one, an unknown name or one the program does not record per
    request is a :class:`UsageError` saying which and why."""
    from .units import observation_units
    if per not in PER:
        raise UsageError("`--slo-per %s`: write `request` (one per turn) or `session`" % per)
    units = observation_units(prog)
    init_only = _init_only(prog) if per == "request" and has_turns(prog) else set()
    out = []
    for text in texts:
        if not isinstance(text, str):
            raise UsageError("an SLO is a string such as 'ttft <= 0.5', not %r" % (text,))
        m = _SLO.match(text)
        if m is None:
            raise UsageError("`--slo %s`: an SLO is `NAME OP BOUND`, OP one of <= < >= >, "
                             "BOUND a number (seconds may end in `s` or `ms`)" % text,
                             help="for example --slo 'ttft <= 0.5' --slo 'tpot <= 50ms'; "
                             "the observations are: %s" % _names(prog))
        name, op, value, unit = m.groups()
        if name not in prog.observes:
            raise UsageError("`--slo %s`: the program has no observation `%s`" % (text, name),
                             help="the observations are: %s" % _names(prog))
        obs = prog.observes.index(name)
        bound = float(value)
        if unit is not None:
            if units[obs] != "s":
                raise UsageError("`--slo %s`: `%s` is not an observation of times, so its "
                                 "bound has no unit" % (text, name),
                                 help="write the bound as a plain number in the program's "
                                 "units, e.g. --slo '%s %s %s'" % (name, op, value))
            if unit == "ms":
                bound /= 1000.0
        if obs in init_only:
            raise UsageError("`--slo %s`: `%s` is recorded once per session (in `init`), not "
                             "per request" % (text, name),
                             help="add --slo-per session, or observe it in the session's turns")
        out.append(Slo(text, name, obs, op, bound))
    if not out:
        raise UsageError("no SLO given: write --slo 'NAME <= BOUND'",
                         help="the observations are: %s" % _names(prog))
    return out


class SloAttainment(object):
    """One SLO's (or, ``slo`` None, every SLO's) share of requests met."""

    __slots__ = ("slo", "met", "missing", "attainment", "ci")

    def __init__(self, slo: Optional[Slo], met: int, missing: int,
                 attainment: Optional[float], ci: Optional[float]) -> None:
        self.slo = slo
        self.met = met
        self.missing = missing  # requests with no sample of the observation
        self.attainment = attainment
        self.ci = ci

    def label(self) -> str:
        return "all" if self.slo is None else self.slo.label()


class SloResult(object):
    """Goodput and attainments of a run (see the module's notes)."""

    def __init__(self, per: str, requests: int, span: float, rows: List[SloAttainment],
                 all_row: SloAttainment) -> None:
        self.per = per
        self.requests = requests  # counted requests (or sessions)
        self.span = span
        self.slos = rows
        self.all = all_row
        per_s = (lambda x: x / span) if span > 0 else (lambda x: 0.0)
        self.goodput = per_s(all_row.met)
        self.goodput_ci = None if all_row.ci is None else per_s(all_row.ci * requests)
        self.rate = per_s(requests)  # counted requests a second

    def text_lines(self) -> List[str]:
        from .text_ref import num, table
        unit = self.per + "s"

        def ci(x):
            return "NaN" if x is None else "\u00b1" + num(x)
        rows = [(r.label(), str(self.requests), str(r.met), num(r.attainment), ci(r.ci),
                 "-" if r.slo is None else str(r.missing)) for r in self.slos + [self.all]]
        lines = table(("slo", unit, "met", "attainment", "95% CI", "missing"), rows)
        lines.append("goodput: %s %s/s %s (meeting every SLO, of %s %s/s counted)"
                     % (num(self.goodput), unit, ci(self.goodput_ci), num(self.rate), unit))
        if self.requests == 0:
            lines.append("note: no %s counted: none arrived after the warm-up and finished "
                         "before the end" % self.per)
        return lines

    def json(self) -> str:
        from .jsonfmt import _object, _str, _value

        def row(r: SloAttainment) -> str:
            pairs = [("slo", _str(r.label()))]
            if r.slo is not None:
                pairs += [("observe", _str(r.slo.name)), ("op", _str(r.slo.op)),
                          ("bound", _value(r.slo.bound))]
            pairs += [("met", _value(r.met)), ("attainment", _value(r.attainment)),
                      ("ci", _value(r.ci))]
            if r.slo is not None:
                pairs.append(("missing", _value(r.missing)))
            return _object(pairs)
        return _object([("per", _str(self.per)), ("requests", _value(self.requests)),
                        ("span", _value(self.span)), ("requests_per_s", _value(self.rate)),
                        ("goodput", _value(self.goodput)), ("goodput_ci", _value(self.goodput_ci)),
                        ("all", row(self.all)),
                        ("slos", "[" + ",".join(row(r) for r in self.slos) + "]")])


def _share(flags: List[float]) -> Tuple[Optional[float], Optional[float]]:
    if not flags:
        return None, None
    total = 0.0
    for x in flags:
        total += x
    return total / len(flags), batch_means_ci(flags)


def evaluate(sim, slos: Sequence[Slo], per: str = "request") -> SloResult:
    """Join each counted request's samples across the SLOs' observations
    (by the session serial and turn the simulator tagged them with) and
    judge it; see the module's notes for which requests count."""
    prog = sim.prog
    turns_kept = has_turns(prog)
    # (a run stopped before the warm-up's end measured nothing)
    first = sim.warm_serial if sim.warm else sim.arrived
    ended: Dict[int, int] = sim.session_turns
    # Requests in arrival order: (serial, turn) for turn 1..n.
    keys: List[Tuple[int, int]] = []
    live = sim.roots if per == "request" and turns_kept else {}
    for serial in range(first, sim.arrived):
        if serial in ended:
            n = max(ended[serial], 1) if turns_kept else 1
        elif serial in live:
            n = live[serial].turns - 1  # the last turn is still going
        else:
            continue
        for t in range(1, n + 1):
            keys.append((serial, t))
    # Per SLO: each request's mean sample, joined by (serial, turn).
    values: List[Dict[Tuple[int, int], float]] = []
    for slo in slos:
        o = sim.observations[slo.obs]
        sums: Dict[Tuple[int, int], List[float]] = {}
        for v, serial, turn in zip(o.values, o.sessions, o.turns):
            if serial < first:
                continue
            k = (serial, turn if turn > 1 else 1)
            c = sums.get(k)
            if c is None:
                sums[k] = [v, 1.0]
            else:
                c[0] += v
                c[1] += 1.0
        values.append({k: c[0] / c[1] for k, c in sums.items()})
    # One flag per request and SLO.
    flags = [[0.0] * len(keys) for _ in slos]
    missing = [0] * len(slos)
    for j, slo in enumerate(slos):
        vals = values[j]
        row = flags[j]
        for i, k in enumerate(keys):
            x = vals.get(k)
            if x is None:
                missing[j] += 1
            elif slo.met(x):
                row[i] = 1.0
    units = keys
    if per == "session":
        # A session meets an SLO when each of its requests does; for an
        # observation recorded once per session (in `init`), when its first
        # request (which holds that sample) does.
        once = _init_only(prog) if turns_kept else set()
        groups: Dict[int, List[int]] = {}
        for i, (serial, _) in enumerate(keys):
            groups.setdefault(serial, []).append(i)
        order = sorted(groups)

        def members(j: int, serial: int) -> List[int]:
            return groups[serial][:1] if slos[j].obs in once else groups[serial]
        missing = [sum(1 for s in order if any(keys[i] not in values[j] for i in members(j, s)))
                   for j in range(len(slos))]
        flags = [[1.0 if all(flags[j][i] for i in members(j, s)) else 0.0 for s in order]
                 for j in range(len(slos))]
        units = [(s, 0) for s in order]
    n = len(units)
    all_flags = [1.0 if all(flags[j][i] for j in range(len(slos))) else 0.0 for i in range(n)]
    rows = []
    for j, slo in enumerate(slos):
        share, ci = _share(flags[j])
        rows.append(SloAttainment(slo, int(sum(flags[j])), missing[j], share, ci))
    share, ci = _share(all_flags)
    all_row = SloAttainment(None, int(sum(all_flags)), 0, share, ci)
    return SloResult(per, len(units), sim.end - prog.warmup, rows, all_row)
