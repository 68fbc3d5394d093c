"""The statistics of paired runs: differences, relative differences and
elasticities over seeds, with Student-t intervals.

Every variant of a comparison runs at the same seeds (``S + k * 2^32``,
independent replications: sweep/seeds.py; common random numbers: the seed
decides every random stream, sim/rng.py), so seed ``s`` of A and seed ``s``
of B form a pair.  For one metric, with
``a_s`` and ``b_s`` its values and ``d_s = b_s - a_s``:

* the **difference** is ``mean(d)`` with the interval
  ``mean(d) ± t(1 - α/2, n-1) · sd(d) / sqrt(n)``: the paired t interval.
  When the pairs move together (``cov(a, b) > 0``), ``var(d) = var(a) +
  var(b) - 2 cov(a, b)`` is smaller than the ``var(a) + var(b)`` of two
  independent sets of runs;
* the **unpaired** interval is the one two independent sets of ``n`` runs
  would give, ``± t(1 - α/2, 2n-2) · sqrt((var(a) + var(b)) / n)`` (the
  two-sample t interval, equal sizes): what the pairing bought is the ratio
  of the two widths;
* the **relative difference** is ``mean(b) / mean(a) - 1``, a ratio of
  means, with the delta-method interval of a ratio estimator: ``R =
  mean(x) / mean(y)`` has ``± t(1 - α/2, n-1) · sd(x - R y) / (sqrt(n) ·
  |mean(y)|)``, here with ``x = d`` and ``y = a``;
* the **elasticity** of a metric ``m`` to a parameter ``p`` varied from
  ``p_lo`` to ``p_hi`` around its base ``p_0`` is the arc elasticity
  ``[(mean(m_hi) - mean(m_lo)) / mean(m_0)] / [(p_hi - p_lo) / p_0]``, the
  same ratio estimator with ``x = m_hi - m_lo`` and ``y = m_0``.

A seed counts for a metric when every run of it gave the metric a finite
value (a mean without samples, or an unbounded wait, leaves the seed out);
``n`` says how many did.  Below two seeds there is no interval.  The
numbers are sums in seed order (``math.fsum``): the same bytes whatever ran
the simulations.
"""
import difflib
import fnmatch
import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import UsageError
from ..sweep.tdist import t_quantile

Values = Sequence[Optional[float]]

#: The metrics compared when no ``--metric`` is given, those a program has:
#: its observations' means and p99s (end-to-end, TTFT, ITL, ...), step
#: engines' ITL, each stage's throughput, each pool's mean usage, and with
#: ``--slo`` the attainments and the goodput.
DEFAULT_METRICS = ("observe.*.mean", "observe.*.p99", "stage.*.mean_itl", "stage.*.itl_p99",
                   "stage.*.throughput", "pool.*.mean_used", "slo.*.attainment",
                   "slo.all.goodput")


def _finite(x: Optional[float]) -> bool:
    return x is not None and not math.isnan(x) and not math.isinf(x)


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def _var(xs: Sequence[float]) -> float:
    m = _mean(xs)
    return math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def _t(level: float, df: int) -> float:
    return t_quantile(0.5 + level / 2.0, df)


def mean_half(xs: Sequence[float], level: float) -> Optional[float]:
    """The half width of the t interval of ``mean(xs)`` (None below 2)."""
    n = len(xs)
    if n < 2:
        return None
    return _t(level, n - 1) * math.sqrt(_var(xs) / n)


def ratio(x: Sequence[float], y: Sequence[float], level: float
          ) -> Tuple[Optional[float], Optional[float]]:
    """``mean(x) / mean(y)`` and its delta-method half width (None when
    ``mean(y)`` is 0, the half width also below 2 pairs)."""
    n = len(x)
    if n == 0:
        return None, None
    my = _mean(y)
    if my == 0.0:
        return None, None
    r = _mean(x) / my
    if n < 2:
        return r, None
    e = [xi - r * yi for xi, yi in zip(x, y)]
    return r, _t(level, n - 1) * math.sqrt(_var(e) / n) / abs(my)


@dataclass
class Difference:
    """One metric of ``serq compare``: A's and B's means over the paired
    seeds, the difference B - A and the relative difference B/A - 1, each
    with the half width of its interval, and the unpaired half width."""
    metric: str
    n: int
    mean_a: Optional[float]
    mean_b: Optional[float]
    diff: Optional[float]
    diff_half: Optional[float]
    rel: Optional[float]
    rel_half: Optional[float]
    unpaired_half: Optional[float]

    def narrower(self) -> Optional[float]:
        """How many times narrower the paired interval is than the
        unpaired one (None when either is missing or the paired one is 0)."""
        if self.diff_half is None or self.unpaired_half is None or self.diff_half == 0.0:
            return None
        return self.unpaired_half / self.diff_half

    def significant(self) -> Optional[bool]:
        """Whether the interval of the difference leaves out 0."""
        if self.diff is None or self.diff_half is None:
            return None
        return abs(self.diff) > self.diff_half


def pairs(*columns: Values) -> List[Tuple[float, ...]]:
    """The seeds (tuples, one value per column) where every column has a
    finite value."""
    return [t for t in zip(*columns) if all(_finite(v) for v in t)]


def difference(metric: str, a: Values, b: Values, level: float) -> Difference:
    """``b - a`` over the seeds both runs gave a finite value (module notes)."""
    both = pairs(a, b)
    n = len(both)
    if n == 0:
        return Difference(metric, 0, None, None, None, None, None, None, None)
    xa = [p[0] for p in both]
    xb = [p[1] for p in both]
    d = [y - x for x, y in both]
    rel, rel_half = ratio(d, xa, level)
    unpaired = None
    if n >= 2:
        unpaired = _t(level, 2 * n - 2) * math.sqrt((_var(xa) + _var(xb)) / n)
    return Difference(metric, n, _mean(xa), _mean(xb), _mean(d), mean_half(d, level),
                      rel, rel_half, unpaired)


@dataclass
class Effect:
    """One (parameter, metric) of ``serq sensitivity``: the metric's base
    mean, its relative change at the low and at the high value (each with
    its half width) and the arc elasticity with its half width."""
    param: str
    metric: str
    n: int
    base: Optional[float]
    low_change: Optional[float]
    low_half: Optional[float]
    high_change: Optional[float]
    high_half: Optional[float]
    elasticity: Optional[float]
    elasticity_half: Optional[float]

    def swing(self) -> float:
        """``|high change - low change|``, what the tornado sorts by (0
        when undefined)."""
        lo, hi = self.low_change, self.high_change
        if lo is None or hi is None:
            return 0.0
        return abs(hi - lo)


def effect(param: str, metric: str, base: Values, low: Values, high: Values,
           p0: float, p_lo: float, p_hi: float, level: float) -> Effect:
    """The metric's changes and elasticity over the seeds where the base,
    low and high runs all gave a finite value (module notes)."""
    trips = pairs(base, low, high)
    n = len(trips)
    if n == 0:
        return Effect(param, metric, 0, None, None, None, None, None, None, None)
    m0 = [t[0] for t in trips]
    lo_c, lo_h = ratio([t[1] - t[0] for t in trips], m0, level)
    hi_c, hi_h = ratio([t[2] - t[0] for t in trips], m0, level)
    arc, arc_h = ratio([t[2] - t[1] for t in trips], m0, level)
    dp = (p_hi - p_lo) / p0
    e = None if arc is None else arc / dp
    e_h = None if arc_h is None else arc_h / abs(dp)
    return Effect(param, metric, n, _mean(m0), lo_c, lo_h, hi_c, hi_h, e, e_h)


def metric_names(runs: Sequence[Sequence[Tuple[str, Optional[float]]]]) -> List[str]:
    """Every metric the runs gave, in order of first appearance."""
    names: Dict[str, None] = {}
    for metrics in runs:
        for m, _v in metrics:
            names.setdefault(m, None)
    return list(names)


def select(common: Sequence[str], patterns: Sequence[str],
           elsewhere: Sequence[str] = ()) -> List[str]:
    """The metrics the ``--metric`` patterns (shell-style, as ``serq plot``
    takes them) name among ``common`` (those every variant gives), in the
    patterns' order; without patterns, ``DEFAULT_METRICS`` (those present).
    A pattern matching none is a usage error with the nearest names; one
    matching only ``elsewhere`` (metrics of some variants only) says so."""
    chosen: List[str] = []
    for pat in patterns or DEFAULT_METRICS:
        hits = [m for m in common if fnmatch.fnmatchcase(m, pat)]
        if not hits and patterns:
            partial = [m for m in elsewhere if fnmatch.fnmatchcase(m, pat)]
            if partial:
                raise UsageError("--metric %s matches %s, which not every program compared "
                                 "gives" % (pat, ", ".join(partial[:3])),
                                 help="compare metrics both programs have (their "
                                      "observations, stages and pools by the same names)")
            close = difflib.get_close_matches(pat, list(common), n=3)
            raise UsageError("--metric %s matches no metric of the runs%s" % (
                pat, "; did you mean %s?" % " or ".join(close) if close else
                " (metrics are named as in `serq sweep`'s table: observe.NAME.mean, "
                "observe.NAME.p99, stage.NAME.throughput, pool.NAME.mean_used, ...)"))
        chosen.extend(m for m in hits if m not in chosen)
    if not chosen:
        raise UsageError("the programs have none of the default metrics (%s): name some with "
                         "--metric" % ", ".join(DEFAULT_METRICS))
    return chosen
