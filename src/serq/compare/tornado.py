"""The tornado chart of ``serq sensitivity``: for each metric, one bar pair
per constant, the metric's relative change at the constant's low value and
at its high value, each with its confidence interval as an error bar at
the bar's tip; the constant that moves the metric most on top.

The chart is figure data (plot/figure.py: a panel per metric, its bars on
a row per constant), drawn as ``serq plot`` draws its figures: ``-o
FILE.png`` through matplotlib, ``-o FILE.html`` an interactive plotly page
that needs nothing else, the table below it.  Both are the ``plot`` extra,
imported only when a figure is asked for.
"""
from typing import List, Sequence

from ..plot.figure import Bar, Mark, Panel, Section
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


def _elasticity(e: Effect) -> str:
    """`` (elasticity 1.98 ± 0.12)`` for a lane's label."""
    if e.elasticity is None:
        return ""
    if e.elasticity_half is None:
        return " (elasticity %.3g)" % e.elasticity
    return " (elasticity %.3g ± %.2g)" % (e.elasticity, e.elasticity_half)


def tornado_figure(effects: Sequence[Effect], varies: Sequence[Vary], level: float,
                   seeds: int) -> Section:
    """One figure, a panel per metric."""
    from ..report.text import num
    by_name = {v.name: v for v in varies}
    panels: List[Panel] = []
    for group in _panels(effects):
        group = sorted(group, key=lambda e: -e.swing())  # the largest first: on top
        lanes = ["%s %s..%s%s" % (e.param, num(by_name[e.param].low), num(by_name[e.param].high),
                                   _elasticity(e)) for e in group]
        bars: List[Bar] = []
        for e, lane in zip(group, lanes):
            for side, color, what in (("low", LOW_COLOR, "at the low value"),
                                      ("high", HIGH_COLOR, "at the high value")):
                change = getattr(e, side + "_change")
                h = getattr(e, side + "_half")
                v = 100.0 * (change or 0.0)
                half = 100.0 * (h or 0.0)
                ci = None if change is None or h is None else (v, v - half, v + half)
                bars.append(Bar(lane, min(0.0, v), abs(v), what, color,
                                "%s %s: %+.3g%% ± %.3g%%" % (lane, what, v, half), ci))
        panels.append(Panel("%s (base %s)" % (group[0].metric, num(group[0].base)),
                            "change from the base (%)", "constant", bars=bars, lanes=lanes,
                            marks=[Mark(0.0, "", "#222222", "x", "solid")]))
    caption = ("Relative change of each metric at each constant's low and high value, from "
               "the base, paired over %d seeds (common random numbers); the black error bars "
               "are their %s%% confidence intervals (the elasticity is the distance between "
               "the two bars' tips over the constant's relative change; its interval is in the "
               "table)." % (seeds, num(level * 100.0)))
    return Section("Sensitivity", panels, caption)


def write_tornado(path: str, effects: Sequence[Effect], varies: Sequence[Vary], level: float,
                  seeds: int, title: str, table_text: str) -> None:
    """The chart to ``path``: ``.png`` or ``.html`` (written whole,
    serq.atomic)."""
    section = tornado_figure(effects, varies, level, seeds)
    if path.endswith(".html"):
        from ..plot.web import write_html
        write_html([section], path, title, [section.caption], report_text=table_text)
    else:
        from ..plot.mpl import write_png
        write_png([section], path)
