"""The tornado chart of ``serq sensitivity``: for each metric, one bar pair
per constant, the metric's relative change at the constant's low value and
at its high value, with their confidence intervals as error bars; the
constant that moves the metric most on top.

``-o FILE.png`` writes the panels as one PNG; ``-o FILE.html`` a page
that needs nothing else (the figure embedded, the table below it), as
``serq plot`` writes them.  Matplotlib (the ``plot`` extra) is imported
only here, when a figure is asked for.
"""
from typing import List, Sequence

from ..plot.figure import Section, pyplot
from .paired import Effect
from .vary import Vary

LOW_COLOR = "#4c72b0"
HIGH_COLOR = "#dd8452"


def _panels(effects: Sequence[Effect]) -> List[List[Effect]]:
    """The effects grouped by metric, in their order."""
    out: List[List[Effect]] = []
    index = {}
    for e in effects:
        if e.metric not in index:
            index[e.metric] = len(out)
            out.append([])
        out[index[e.metric]].append(e)
    return out


def tornado_figure(effects: Sequence[Effect], varies: Sequence[Vary], level: float,
                   seeds: int) -> Section:
    """One figure, a panel per metric."""
    from ..report.text import num
    plt = pyplot()
    panels = _panels(effects)
    by_name = {v.name: v for v in varies}
    heights = [0.9 + 0.42 * len(p) for p in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.2, sum(heights) + 0.6), squeeze=False,
                             layout="constrained",
                             gridspec_kw={"height_ratios": heights})
    for ax, group in zip([row[0] for row in axes], panels):
        group = sorted(group, key=lambda e: e.swing())  # the largest last: on top
        ys = list(range(len(group)))
        for side, color in (("low", LOW_COLOR), ("high", HIGH_COLOR)):
            vals = [100.0 * (getattr(e, side + "_change") or 0.0) for e in group]
            errs = [100.0 * (getattr(e, side + "_half") or 0.0) for e in group]
            ax.barh(ys, vals, height=0.6, color=color, alpha=0.85,
                    xerr=errs, error_kw={"ecolor": "#333333", "capsize": 3, "lw": 1},
                    label="at the low value" if side == "low" else "at the high value")
        ax.axvline(0.0, color="#222222", lw=0.8)
        ax.set_yticks(ys)
        ax.set_yticklabels(["%s %s..%s" % (e.param, num(by_name[e.param].low),
                                           num(by_name[e.param].high)) for e in group],
                           fontsize=8)
        ax.set_title("%s (base %s)" % (group[0].metric, num(group[0].base)), fontsize=10)
        ax.set_xlabel("change from the base (%)", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=2, fontsize=8, frameon=False)
    caption = ("Relative change of each metric at each constant's low and high value, from "
               "the base, paired over %d seeds (common random numbers), with %s%% "
               "confidence intervals." % (seeds, num(level * 100.0)))
    return Section("Sensitivity", fig, caption)


def write_tornado(path: str, effects: Sequence[Effect], varies: Sequence[Vary], level: float,
                  seeds: int, title: str, table_text: str) -> None:
    """The chart to ``path``: ``.png`` or ``.html`` (written whole,
    serq.atomic)."""
    from ..plot.output import write_html, write_png
    section = tornado_figure(effects, varies, level, seeds)
    if path.endswith(".html"):
        write_html([section], path, title, [section.caption], table_text)
    else:
        write_png([section], path)
