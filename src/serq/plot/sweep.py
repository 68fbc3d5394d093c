"""A sweep's curves: each metric against one swept constant, the mean with
its confidence band, one curve per combination of the other swept
constants that vary."""
import difflib
import fnmatch
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import UsageError
from ..sweep.table import Table, cell
from .figure import Section, pyplot

DEFAULT_METRICS = ("observe.*.mean", "observe.*.p99")


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


def sweep_figures(table: Table, x: Optional[str], patterns: Sequence[str],
                  log_y: bool = False) -> List[Section]:
    plt = pyplot()
    j = _x_axis(table, x)
    metrics = _metrics(table, patterns)
    others = [k for k in range(len(table.params)) if k != j and
              len({r.point[k] for r in table.rows}) > 1]
    fixed = [k for k in range(len(table.params)) if k != j and k not in others]
    ncols = min(2, len(metrics))
    nrows = (len(metrics) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.4 * ncols, 3.4 * nrows), squeeze=False,
                             layout="constrained")
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(metrics):]:
        ax.set_visible(False)
    xname = table.params[j]
    for ax, metric in zip(flat, metrics):
        curves: Dict[Tuple, List] = {}
        for r in table.rows:
            if r.metric == metric and r.mean is not None:
                curves.setdefault(tuple(r.point[k] for k in others), []).append(r)
        for key, rows in curves.items():
            rows.sort(key=lambda r: r.point[j])
            xs = [r.point[j] for r in rows]
            ys = [r.mean for r in rows]
            label = ", ".join("%s=%s" % (table.params[k], cell(v))
                              for k, v in zip(others, key)) or None
            line, = ax.plot(xs, ys, marker="o", ms=3.5, lw=1.5, label=label)
            band = [(r.point[j], r.ci_low, r.ci_high) for r in rows if r.ci_low is not None]
            if band:
                ax.fill_between([b[0] for b in band], [b[1] for b in band],
                                [b[2] for b in band], color=line.get_color(), alpha=0.2, lw=0)
        ax.set_title(metric, fontsize=10)
        ax.set_xlabel(xname)
        ax.set_ylabel(metric.rsplit(".", 1)[-1])
        if log_y:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
        if others and curves:
            ax.legend(fontsize=8)
    seeds = sorted({r.n_seeds for r in table.rows if r.metric in metrics})
    caption = "Mean over %s seed%s per point, with its 95%% Student-t confidence band." % (
        "/".join(str(s) for s in seeds), "" if seeds == [1] else "s")
    if fixed:
        caption += " Fixed: %s." % ", ".join("%s=%s" % (table.params[k],
                                                        cell(table.rows[0].point[k]))
                                             for k in fixed)
    return [Section("Against %s" % xname, fig, caption)]
