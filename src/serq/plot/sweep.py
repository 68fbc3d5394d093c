"""A sweep's curves: each metric against one swept constant, the mean with
its confidence band, one curve per combination of the other swept
constants that vary."""
import difflib
import fnmatch
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import UsageError
from ..sweep.table import Table, cell
from .figure import Panel, Section, Trace

DEFAULT_METRICS = ("observe.*.mean", "observe.*.p99")
PALETTE = ("#3a78b5", "#e07b39", "#2e8b57", "#8e5ea2", "#c0392b", "#7f7f7f", "#b8860b",
           "#17becf")


def _metrics(table: Table, patterns: Sequence[str]) -> List[str]:
    names = list(dict.fromkeys(r.metric for r in table.rows))
    chosen: List[str] = []
    for pat in patterns or DEFAULT_METRICS:
        hits = [m for m in names if fnmatch.fnmatchcase(m, pat)]
        if not hits and patterns:
            close = difflib.get_close_matches(pat, names, n=3)
            raise UsageError("--metric %s matches no metric of the table%s" % (
                pat, "; did you mean %s?" % " or ".join(close) if close else
                " (metrics look like observe.NAME.mean, stage.NAME.throughput)"))
        chosen.extend(m for m in hits if m not in chosen)
    if not chosen:
        raise UsageError("the table has no observation; name metrics with --metric "
                         "(for example stage.*.throughput)")
    return chosen


def _x_axis(table: Table, x: Optional[str]) -> int:
    if not table.params:
        raise UsageError("the table sweeps no constant: nothing to draw a curve against")
    if x is not None:
        if x not in table.params:
            raise UsageError("--x %s: the table's swept constants are %s"
                             % (x, ", ".join(table.params)))
        j = table.params.index(x)
    else:
        varying = [j for j in range(len(table.params))
                   if len({r.point[j] for r in table.rows}) > 1]
        if not varying:
            raise UsageError("every swept constant has one value: nothing to draw a curve "
                             "against")
        j = varying[0]
    if not all(isinstance(r.point[j], float) for r in table.rows):
        raise UsageError("--x %s: its values are not all numbers" % table.params[j])
    return j


def _unit(metric: str) -> str:
    """The unit of a sweep metric, read from its name."""
    kind, _, stat = metric.rpartition(".")
    if metric.startswith("observe."):
        return "observation's unit" if stat not in ("count", "rate") else (
            "samples" if stat == "count" else "/s")
    if stat in ("throughput",) or stat.endswith("rate"):
        return "/s"
    if "wait" in stat or "service" in stat or "itl" in stat or stat.endswith("_step"):
        return "s"
    if stat in ("utilization", "prefill_only", "decode_only", "mixed"):
        return "share of time"
    if metric.startswith("pool.") and ("used" in stat or "cached" in stat or "units" in stat):
        return "units"
    if "queue" in stat or "holders" in stat or "number" in stat or "live" in stat:
        return "sessions"
    return "count"


def sweep_figures(table: Table, x: Optional[str], patterns: Sequence[str],
                  log_y: bool = False) -> Tuple[List[Section], List[Tuple[str, List[str],
                                                                          List[List[str]]]]]:
    """The sweep's section (one panel per metric) and its numbers as a
    table for the HTML page."""
    j = _x_axis(table, x)
    metrics = _metrics(table, patterns)
    others = [k for k in range(len(table.params)) if k != j and
              len({r.point[k] for r in table.rows}) > 1]
    fixed = [k for k in range(len(table.params)) if k != j and k not in others]
    xname = table.params[j]
    panels = []
    rows_out: List[List[str]] = []
    for metric in metrics:
        curves: Dict[Tuple, List] = {}
        for r in table.rows:
            if r.metric == metric and r.mean is not None:
                curves.setdefault(tuple(r.point[k] for k in others), []).append(r)
        traces = []
        for c, (key, rows) in enumerate(curves.items()):
            rows.sort(key=lambda r: r.point[j])
            label = ", ".join("%s=%s" % (table.params[k], cell(v))
                              for k, v in zip(others, key)) or metric
            banded = all(r.ci_low is not None and r.ci_high is not None for r in rows)
            traces.append(Trace(label, [r.point[j] for r in rows], [r.mean for r in rows],
                                markers=True, color=PALETTE[c % len(PALETTE)],
                                lo=[r.ci_low for r in rows] if banded else None,
                                hi=[r.ci_high for r in rows] if banded else None))
            for r in rows:
                rows_out.append([metric, cell(r.point[j]), label if others else "",
                                 "%.6g" % r.mean,
                                 "" if r.ci_low is None else "%.6g" % r.ci_low,
                                 "" if r.ci_high is None else "%.6g" % r.ci_high,
                                 str(r.n_seeds)])
        unit = _unit(metric)
        panels.append(Panel(metric, "%s (swept constant)" % xname,
                            "%s (%s%s)" % (metric.rsplit(".", 1)[-1], unit,
                                           ", log scale" if log_y else ""),
                            traces, ylog=log_y))
    seeds = sorted({r.n_seeds for r in table.rows if r.metric in metrics})
    caption = "Mean over %s seed%s per point, with its 95%% Student-t confidence band." % (
        "/".join(str(s) for s in seeds), "" if seeds == [1] else "s")
    if fixed:
        caption += " Fixed: %s." % ", ".join("%s=%s" % (table.params[k],
                                                        cell(table.rows[0].point[k]))
                                             for k in fixed)
    numbers = ("Points", ["metric", xname, "curve", "mean", "ci low", "ci high", "seeds"],
               rows_out)
    return [Section("Against %s" % xname, panels, caption, ncols=2)], [numbers]
