"""The numbers of a report as tables for the HTML page: (title, header,
rows of text cells), times in ms or s per column with the unit in the
header, as the text report gives them."""
import math
from typing import List, Optional, Sequence, Tuple

from .figure import PROGRAM_UNITS, time_scale

Table = Tuple[str, List[str], List[List[str]]]
EMPTY = "–"


def _num(x: Optional[float], k: float = 1.0) -> str:
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return EMPTY
    return "%.4g" % (x * k)


def _pct(x: Optional[float]) -> str:
    return EMPTY if x is None else "%.1f %%" % (100 * x)


def _member(name: str, index: Optional[int]) -> str:
    return name if index is None else "%s[%d]" % (name, index)


def _time_column(values: Sequence[Optional[float]]) -> Tuple[str, List[str]]:
    unit, k = time_scale(values)
    return unit, [_num(v, k) for v in values]


def report_tables(r) -> List[Table]:
    """The tables of a ``report.model.Report``."""
    out: List[Table] = []
    qnames = ["p50", "p90", "p99", "p99.9"]
    rows = []
    for o in r.observes.values():
        qs = list(o.quantiles or [None, None, o.p99, None])
        unit, k = (time_scale([o.mean] + qs) if o.unit == "s" else (PROGRAM_UNITS, 1.0))
        rows.append([o.name, unit, str(o.count), _num(o.mean, k), _num(o.ci, k),
                     _num(o.cv2)] + [_num(q, k) for q in qs])
    if rows:
        out.append(("Observations", ["observe", "unit", "count", "mean", "± 95% CI", "cv2"]
                    + qnames, rows))
    if r.stages:
        wunit, waits = _time_column([s.mean_wait for s in r.stages])
        sunit, services = _time_column([s.mean_service for s in r.stages])
        out.append(("Stages", ["stage", "kind", "number (sessions)", "util", "done",
                               "throughput (/s)", "wait (%s)" % wunit,
                               "service (%s)" % sunit, "iterations"],
                    [[_member(s.name, s.index), s.kind or EMPTY, _num(s.mean_number),
                      _pct(s.utilization), str(s.completed), _num(s.throughput), w, v,
                      str(s.iterations) if s.iterations else EMPTY]
                     for s, w, v in zip(r.stages, waits, services)]))
    steps = [s for s in r.stages if s.iterations]
    if steps:
        itls = [[s.mean_itl] + list(s.itl_quantiles or [s.itl_p50, None, s.itl_p99, None])
                for s in steps]
        unit, k = time_scale([x for row in itls for x in row])
        out.append(("Step stages", ["step", "prefill", "decode", "mixed", "batch",
                                    "itl mean (%s)" % unit]
                    + ["itl %s (%s)" % (q, unit) for q in qnames],
                    [[_member(s.name, s.index), _pct(s.prefill_only), _pct(s.decode_only),
                      _pct(s.mixed), _num(s.mean_decode_batch)] + [_num(x, k) for x in itl]
                     for s, itl in zip(steps, itls)]))
    if r.pools:
        wunit, waits = _time_column([p.mean_wait for p in r.pools])
        out.append(("Pools", ["pool", "used (units)", "cached (units)", "queue (sessions)",
                              "holders", "wait (%s)" % wunit, "admitted", "evicted",
                              "evicted units", "preempted", "rejected", "stuck"],
                    [[_member(p.name, p.index), _num(p.mean_used), _num(p.mean_cached),
                      _num(p.mean_queue), _num(p.mean_holders), w, str(p.admissions),
                      str(p.evicted_entries), _num(p.evicted_units), str(p.preemptions),
                      str(p.rejected), str(p.stuck)] for p, w in zip(r.pools, waits)]))
    if r.gauges:
        out.append(("Gauges", ["gauge", "mean", "± 95% CI", "min", "max"],
                    [[g.name, _num(g.mean), _num(g.ci), _num(g.min), _num(g.max)]
                     for g in r.gauges.values()]))
    return out


def sample_tables(observes, units) -> List[Table]:
    """An observation table from a dump's samples (no report there)."""
    rows = []
    for name, xs in observes.items():
        if not xs:
            continue
        xs = sorted(xs)
        n = len(xs)
        qs = [xs[min(max(int(math.ceil(q * n)), 1), n) - 1] for q in (0.5, 0.9, 0.99, 0.999)]
        mean = math.fsum(xs) / n
        unit, k = time_scale([mean] + qs) if units.get(name) == "s" else (PROGRAM_UNITS, 1.0)
        rows.append([name, unit, str(n), _num(mean, k)] + [_num(q, k) for q in qs])
    return [("Observations", ["observe", "unit", "count", "mean", "p50", "p90", "p99",
                              "p99.9"], rows)] if rows else []
