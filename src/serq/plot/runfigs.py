"""One run's figures as data (figure.py): the observations' CDFs, each step
stage's inter-token latency, the pools (units held and cached, stacked,
against the cap) and queues over time, the program's gauges, and the Gantt
chart of the step engines' iterations (gantt.py)."""
import math
from typing import List, Optional, Sequence, Tuple

from ..errors import UsageError
from .figure import PROGRAM_UNITS, Mark, Panel, Section, Trace, axis_label, log_scale, \
    time_scale
from .rundata import SERIES_PREFIX, RunData

MAX_LINES = 12  # lines per time-series panel
MAX_POOLS = 8  # pool panels
MAX_GAUGES = 6  # the program's own gauges, one panel each
CDF_POINTS = 2000  # points of a drawn CDF at most (every sample when fewer)
SERIES_BINS = 1500  # a longer series is thinned to 4 points a bin (thin)
USED, CACHED, CAP = "#3a78b5", "#e0a030", "#c0392b"


def _nearest_rank(ordered: Sequence[float], q: float) -> float:
    n = len(ordered)
    return ordered[min(max(int(math.ceil(q * n)), 1), n) - 1]


def _cdf_points(xs: List[float]) -> Tuple[List[float], List[float]]:
    """The empirical CDF's corners, thinned to at most ``CDF_POINTS``
    (every sample's rank kept exact: a thinned point is a sample)."""
    n = len(xs)
    step = max(1, n // CDF_POINTS)
    idx = list(range(0, n, step))
    if idx[-1] != n - 1:
        idx.append(n - 1)
    return [xs[i] for i in idx], [(i + 1) / n for i in idx]


def _cdf_panel(name: str, xs: List[float], unit: Optional[str], what: str,
               mean: Optional[float] = None, counts: Optional[List[int]] = None) -> Panel:
    """A CDF: ``xs`` sorted (in seconds for a time), ``counts`` the weight
    of each (a histogram's buckets) or one each."""
    if unit == "s":
        label, k = time_scale(xs)
    else:
        label, k = PROGRAM_UNITS, 1.0
    if counts is None:
        n = len(xs)
        px, py = _cdf_points(xs)
        p50, p99 = _nearest_rank(xs, 0.5), _nearest_rank(xs, 0.99)
        mean = math.fsum(xs) / n if mean is None else mean
    else:
        n = sum(counts)
        cums, cum = [], 0
        for c in counts:
            cum += c
            cums.append(cum)
        px, py = list(xs), [c / n for c in cums]

        def rank(q: float) -> float:  # the report's nearest rank, over the buckets
            r = min(max(int(math.ceil(q * n)), 1), n)
            return next(x for x, c in zip(xs, cums) if c >= r)
        p50, p99 = rank(0.5), rank(0.99)
    log = log_scale(xs)
    u = "" if unit != "s" else " " + label
    marks = [Mark(p50 * k, "p50 %.4g%s" % (p50 * k, u), "#2e8b57", dash="dash"),
             Mark(p99 * k, "p99 %.4g%s" % (p99 * k, u), CAP, dash="dash")]
    if mean is not None:
        marks.insert(0, Mark(mean * k, "mean %.4g%s" % (mean * k, u), "#444444"))
    return Panel("%s (%d %s)" % (name, n, what), axis_label(name, label, log),
                 "P(value ≤ x) (share of %s)" % what,
                 [Trace(name, [x * k for x in px], py, shape="step", color=USED)],
                 marks=marks, xlog=log, ylim=(0.0, 1.02))


def cdf_section(data: RunData, names: Sequence[str]) -> Optional[Section]:
    names = [n for n in names if data.observes.get(n)]
    if not names:
        return None
    panels = [_cdf_panel(n, sorted(data.observes[n]), data.units.get(n), "samples")
              for n in names]
    return Section("Distributions", panels, "Empirical CDF of each observation's samples after "
                   "the warm-up, with its mean, median and 99th percentile. A time is in ms or "
                   "s; an x axis is logarithmic when the values span more than two decades.",
                   ncols=2)


def itl_section(data: RunData) -> Tuple[Optional[Section], Optional[str]]:
    """Each step stage's inter-token latency, from the run's histogram."""
    if not data.itl:
        return None, None
    panels = []
    for name, (n, mean, buckets) in data.itl.items():
        if n:
            panels.append(_cdf_panel("itl %s" % name, [b[0] for b in buckets], "s", "gaps",
                                     mean, [int(b[1]) for b in buckets]))
    if not panels:
        return None, "No step stage produced two tokens of a turn after the warm-up: no ITL."
    return Section("Inter-token latency", panels,
                   "CDF of the gaps between a turn's consecutive tokens at each step stage "
                   "after the warm-up (the report's 1 % log histogram: each value within "
                   "0.5 %), with their mean, median and 99th percentile.", ncols=2), None


def thin(ts: List[float], keys: List[float], bins: int = SERIES_BINS) -> List[int]:
    """The indices of a step function's points to draw: all of them when
    they are few, else in each of ``bins`` equal spans of time its first,
    its largest and smallest (by ``keys``) and its last point, so that
    every peak and trough stays drawn."""
    if len(ts) <= 4 * bins:
        return list(range(len(ts)))
    t0, width = ts[0], (ts[-1] - ts[0]) / bins or 1.0
    out: List[int] = []
    i, n = 0, len(ts)
    while i < n:
        b = int((ts[i] - t0) / width)
        j = i
        while j + 1 < n and int((ts[j + 1] - t0) / width) == b:
            j += 1
        span = range(i, j + 1)
        lo = min(span, key=lambda x: keys[x])
        hi = max(span, key=lambda x: keys[x])
        out.extend(sorted({i, lo, hi, j}))
        i = j + 1
    return out


def _step(data: RunData, name: str, k: float, end: Optional[float]) -> Tuple[List, List]:
    ts, vs = data.gauges[name]
    ts, vs = [t * k for t in ts], list(vs)
    if ts and end is not None and end * k > ts[-1]:
        ts.append(end * k)
        vs.append(vs[-1])
    keep = thin(ts, vs)
    return [ts[i] for i in keep], [vs[i] for i in keep]


def _pool_layers(data: RunData, pool: str, k: float, end: Optional[float]) -> List[Trace]:
    """Used and cached units on one grid, thinned by their sum (so that the
    stacked area keeps its peaks and never shows more than there was)."""
    from .figure import stacked
    names = [("used", USED, SERIES_PREFIX + "used." + pool),
             ("cached", CACHED, SERIES_PREFIX + "cached." + pool)]
    names = [n for n in names if n[2] in data.gauges]
    full = []
    for _, _, g in names:
        ts, vs = data.gauges[g]
        ts, vs = [t * k for t in ts], list(vs)
        if ts and end is not None and end * k > ts[-1]:
            ts.append(end * k)
            vs.append(vs[-1])
        full.append(Trace(g, ts, vs))
    grid, layers = stacked(full)
    keep = thin(grid, [sum(layer[i] for layer in layers) for i in range(len(grid))])
    return [Trace(name, [grid[i] for i in keep], [layer[i] for i in keep], shape="stack",
                  color=colour, hover="units")
            for (name, colour, _), layer in zip(names, layers)]


def _member(gauge: str) -> str:
    return gauge.split(".", 2)[2]


def series_section(data: RunData) -> Optional[Section]:
    end = data.end
    tunit, k = time_scale([end] if end else [])
    xlabel = axis_label("time", tunit)
    band = (0.0, data.warmup * k, "warm-up (not measured)") if data.warmup else None
    pools = [_member(n) for n in data.gauges if n.startswith(SERIES_PREFIX + "used.")]
    panels = []
    for pool in pools[:MAX_POOLS]:
        traces = _pool_layers(data, pool, k, end)
        cap = data.caps.get(pool)
        marks = [] if cap is None else [Mark(cap, "cap %.6g" % cap, CAP, axis="y", dash="dash")]
        panels.append(Panel("Pool %s: units held and cached%s" % (
            pool, "" if cap is None else " (cap %.6g)" % cap), xlabel, axis_label(
            pool, "units"), traces, marks=marks, band=band,
            ylim=None if cap is None else (0.0, cap * 1.05)))
    queues = [n for n in data.gauges if n.startswith(SERIES_PREFIX + "queued.")] + \
        [n for n in data.gauges if n.startswith(SERIES_PREFIX + "queue.")]
    if queues:
        traces = [Trace(("waiting for " if ".queued." in n else "at stage ") + _member(n),
                        *_step(data, n, k, end), shape="step", hover="sessions")
                  for n in queues[:MAX_LINES]]
        title = "Queue lengths: sessions waiting for a pool, sessions at a stage"
        if len(queues) > MAX_LINES:
            title += " (first %d of %d)" % (MAX_LINES, len(queues))
        panels.append(Panel(title, xlabel, "sessions (count)", traces, band=band))
    own = [n for n in data.gauges if not n.startswith(SERIES_PREFIX)]
    for n in own[:MAX_GAUGES]:
        panels.append(Panel("gauge %s" % n, xlabel, axis_label(n, PROGRAM_UNITS),
                            [Trace(n, *_step(data, n, k, end), shape="step")], band=band))
    if not panels:
        return None
    caption = "The state over the whole run, as step functions%s. A pool's panel stacks the " \
        "units its holds use and the units its cache keeps, against its cap." % (
            " (the warm-up shaded)" if band else "")
    if len(pools) > MAX_POOLS:
        caption += " The first %d pools of %d." % (MAX_POOLS, len(pools))
    if len(own) > MAX_GAUGES:
        caption += " The program's first %d gauges of %d." % (MAX_GAUGES, len(own))
    return Section("Over time", panels, caption, sharex=True)


def run_figures(data: RunData, observes: Sequence[str],
                window: Optional[Tuple[float, float]]) -> Tuple[List[Section], List[str]]:
    from .gantt import gantt_section
    unknown = [n for n in observes if n not in data.observes]
    if unknown:
        raise UsageError("--observe %s: no such observation (the run has: %s)"
                         % (unknown[0], ", ".join(data.observes) or "none"))
    sections, notes = [], []
    cdf = cdf_section(data, list(observes) or list(data.observes))
    if cdf is not None:
        sections.append(cdf)
    else:
        notes.append("No observation has samples after the warm-up: no distribution to draw.")
    for build in (lambda: itl_section(data), lambda: (series_section(data), None),
                  lambda: gantt_section(data, window)):
        section, note = build()
        if section is not None:
            sections.append(section)
        if note:
            notes.append(note)
    if not sections:
        raise UsageError("nothing to draw: the run has no samples, series or iterations")
    return sections, notes
