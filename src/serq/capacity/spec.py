"""SLO statistics for ``serq capacity --slo``: a statistic of an observation
against a bound.

    STAT(NAME) OP BOUND         p99(ttft) <= 0.5, p50(itl) <= 20ms, mean(e2e) <= 4
    goodput(SLO, ...) OP SHARE  goodput(ttft <= 0.5, tpot <= 50ms) >= 0.9

* ``STAT`` is ``mean`` or a percentile ``pQ`` (``p50``, ``p90``, ``p99``,
  ``p99.9``: the nearest-rank quantile of the run's samples after the
  warm-up, as the report's ``p99``).
* ``NAME`` is one of the program's observations, or ``STAGE.itl`` for a
  step stage's inter-token gaps (the report's step table: its mean and
  percentiles from the stage's histogram, within 0.5 %); ``STAGE[k].itl``
  for one member of a family, ``STAGE.itl`` for all of them together.
* ``OP`` is one of ``<= < >= >``; ``BOUND`` a number in the observation's
  units, or for an observation of times (report/units.py) a number ending
  in ``s`` or ``ms``.
* ``goodput(...)`` is the share of requests meeting every SLO inside the
  parentheses (each ``NAME OP BOUND`` as ``serq run --slo`` takes it, and
  judged as there: report/slo.py joins each request's samples across the
  observations); ``SHARE`` is a number from 0 to 1, or a percentage
  (``90%``).

Each spec reduces one run to one number (:meth:`Spec.value`); a run with
no sample (no request counted, for a goodput) gives ``None``.
"""
import math
import re
from typing import List, Optional, Sequence

from ..errors import UsageError

OPS = ("<=", "<", ">=", ">")

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_STAT = re.compile(r"^\s*(mean|p\d+(?:\.\d+)?)\s*\(\s*([A-Za-z_][A-Za-z_0-9.\[\]]*)\s*\)\s*"
                   r"(<=|>=|<|>)\s*(" + _NUMBER + r")\s*(ms|s)?\s*$")
_GOODPUT = re.compile(r"^\s*goodput\s*\((.*)\)\s*(<=|>=|<|>)\s*(" + _NUMBER + r")\s*(%)?\s*$")
_STAGE_ITL = re.compile(r"^([A-Za-z_][A-Za-z_0-9]*)(?:\[(\d+)\])?\.itl$")

EXAMPLES = ("p99(ttft) <= 500ms", "mean(e2e) <= 4", "p99(gpu.itl) <= 50ms",
            "goodput(ttft <= 0.5, tpot <= 50ms) >= 0.9")


class Spec(object):
    """One SLO statistic.  ``kind`` is ``"mean"``, ``"quantile"`` (``q``)
    or ``"goodput"`` (``slos``: report/slo.py's); ``source`` is
    ``("observe", index)`` or ``("itl", stage name, member or None)``."""

    __slots__ = ("text", "kind", "q", "name", "source", "op", "bound", "slos", "stat", "unit")

    def __init__(self, text: str, kind: str, q: Optional[float], name: str, source: tuple,
                 op: str, bound: float, slos: Optional[list], stat: str,
                 unit: Optional[str] = None) -> None:
        self.text = text
        self.kind = kind
        self.q = q
        self.name = name
        self.source = source
        self.op = op
        self.bound = bound
        self.slos = slos
        self.stat = stat
        #: the statistic's unit: ``"s"`` (a time), ``"share"`` (a goodput)
        #: or None (the program's own units)
        self.unit = unit

    def label(self) -> str:
        """``p99(ttft)``, ``goodput(ttft <= 0.5, tpot <= 0.05)``."""
        if self.kind == "goodput":
            return "goodput(%s)" % ", ".join(s.label() for s in self.slos)
        return "%s(%s)" % (self.stat, self.name)

    def full_label(self) -> str:
        from ..report.text_ref import num
        return "%s %s %s" % (self.label(), self.op, num(self.bound))

    def upper(self) -> bool:
        """Whether the bound is an upper one (``<=``, ``<``)."""
        return self.op in ("<=", "<")

    def value(self, sim) -> Optional[float]:
        """This statistic of one finished run."""
        if self.kind == "goodput":
            from ..report.slo import evaluate
            return evaluate(sim, self.slos).all.attainment
        if self.source[0] == "observe":
            values = sim.observations[self.source[1]].values
            if not values:
                return None
            if self.kind == "mean":
                return math.fsum(values) / len(values)
            from ..report.stats import nearest_rank
            return nearest_rank(sorted(values), self.q)
        hist = _itl(sim, self.source[1], self.source[2])
        if hist is None or hist.n == 0:
            return None
        return hist.mean() if self.kind == "mean" else hist.quantile(self.q)


def _itl(sim, name: str, member: Optional[int]):
    """The inter-token histogram of a step stage (every member's together
    for a family named without an index)."""
    from ..report.stats import ItlBucket, ItlHistogram
    parts = [st.itl for st in sim.stages
             if st.name == name and st.kind == "step" and
             (member is None or st.member == member) and st.itl is not None]
    if len(parts) == 1:
        return parts[0]
    out = ItlHistogram()
    for h in parts:
        out.n += h.n
        out.total += h.total
        for k, b in h.buckets.items():
            c = out.buckets.get(k)
            if c is None:
                out.buckets[k] = ItlBucket(b.count, b.lo, b.hi)
            else:
                c.merge(b)
    return out


def step_stages(prog) -> List[tuple]:
    """``(name, members or None)`` of the program's step stages (IR: one
    entry per member of a family, each with its ``index``)."""
    from ..ir import nodes as ir
    out: List[tuple] = []
    counts = {}
    for st in prog.stages:
        if type(st.kind) is ir.Step:
            if st.name not in counts:
                counts[st.name] = 0
                out.append(st.name)
            if st.index is not None:
                counts[st.name] += 1
    return [(name, counts[name] or None) for name in out]


def known_names(prog) -> str:
    names = list(prog.observes)
    for name, members in step_stages(prog):
        names.append("%s.itl" % name)
    return ", ".join(names) if names else "(none: the program has no `observe` and no step stage)"


def _source(text: str, name: str, prog) -> tuple:
    if name in prog.observes:
        return ("observe", prog.observes.index(name))
    m = _STAGE_ITL.match(name)
    if m is not None:
        stage, index = m.group(1), m.group(2)
        for sname, members in step_stages(prog):
            if sname == stage:
                if index is not None and (members is None or int(index) >= members):
                    raise UsageError("`--slo %s`: the step stage `%s` has no member %s"
                                     % (text, stage, index),
                                     help="its members are %s" % (
                                         "none (it is not a family): write %s.itl" % stage
                                         if members is None else "0 to %d" % (members - 1)))
                return ("itl", stage, None if index is None else int(index))
    raise UsageError("`--slo %s`: the program has no observation `%s`" % (text, name),
                     help="the observations are: %s (and `STAGE.itl`, a step stage's "
                     "inter-token gaps)" % known_names(prog))


def parse_spec(text: str, prog) -> Spec:
    """One ``--slo`` text against a program (its IR); a malformed one or an
    unknown name is a :class:`UsageError` saying how to write it."""
    from ..report.units import observation_units
    if not isinstance(text, str):
        raise UsageError("an SLO is a string such as 'p99(ttft) <= 0.5', not %r" % (text,))
    m = _GOODPUT.match(text)
    if m is not None:
        inner, op, value, percent = m.groups()
        parts = [p for p in inner.split(",")]
        if not inner.strip() or any(not p.strip() for p in parts):
            raise UsageError("`--slo %s`: goodput(...) takes SLOs separated by commas, as "
                             "`goodput(ttft <= 0.5, tpot <= 50ms) >= 0.9`" % text)
        from ..report.slo import parse_slos
        try:
            slos = parse_slos([p.strip() for p in parts], prog)
        except UsageError as e:
            raise UsageError("`--slo %s`: %s" % (text, e.message.replace("`--slo ", "`")),
                             help=e.help) from None
        share = float(value) / (100.0 if percent else 1.0)
        if not 0.0 <= share <= 1.0:
            raise UsageError("`--slo %s`: a goodput is a share of requests, from 0 to 1 (or "
                             "0%% to 100%%)" % text)
        return Spec(text, "goodput", None, "goodput", ("goodput",), op, share, slos, "goodput",
                    "share")
    m = _STAT.match(text)
    if m is None:
        head = text.strip().split("(")[0].strip()
        why = ""
        if "(" in text and head and not re.match(r"^(mean|p\d+(\.\d+)?|goodput)$", head):
            why = "; `%s` is not a statistic (mean, pQ such as p50 p99 p99.9, or goodput)" % head
        elif "(" not in text:
            why = "; name a statistic of the observation, e.g. p99(%s)" % head.split()[0] \
                if head.split() else ""
        raise UsageError("`--slo %s`: an SLO is `STAT(NAME) OP BOUND` or `goodput(SLO, ...) "
                         "OP SHARE`%s" % (text, why),
                         help="for example %s; the observations are: %s"
                         % (", ".join("--slo '%s'" % e for e in EXAMPLES), known_names(prog)))
    stat, name, op, value, unit = m.groups()
    q = None
    kind = "mean"
    if stat != "mean":
        q = float(stat[1:]) / 100.0
        if not 0.0 < q < 1.0:
            raise UsageError("`--slo %s`: a percentile is above p0 and below p100 (p50, p99, "
                             "p99.9)" % text)
        kind = "quantile"
    source = _source(text, name, prog)
    bound = float(value)
    is_time = source[0] == "itl" or observation_units(prog)[source[1]] == "s"
    if unit is not None:
        if not is_time:
            raise UsageError("`--slo %s`: `%s` is not an observation of times, so its bound "
                             "has no unit" % (text, name),
                             help="write the bound as a plain number in the program's units")
        if unit == "ms":
            bound /= 1000.0
    return Spec(text, kind, q, name, source, op, bound, None, stat, "s" if is_time else None)


def parse_specs(texts: Sequence[str], prog) -> List[Spec]:
    out = [parse_spec(t, prog) for t in texts]
    if not out:
        raise UsageError("no SLO given: write --slo 'p99(NAME) <= BOUND' (one or more)",
                         help="the observations are: %s" % known_names(prog))
    return out
