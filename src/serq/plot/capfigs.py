"""A capacity search drawn (``serq plot cap.json``): one panel per SLO,
its statistic at each probed value of the parameter (the mean over the
probe's seeds) with the interval the search judged it by as an error bar,
coloured by that SLO's verdict there; the bound as a dashed line; the
answer's bracket [low, high] shaded (a line when it is one value or has
one end).  The section's title is the answer with its confidence; the
page's table lists the probes.  Times are in ms or s (figure.py's rule)."""
from typing import List, Optional, Tuple

from .capread import Capacity, Slo
from .figure import PROGRAM_UNITS, Mark, Panel, Section, Trace, time_scale
from .tables import Table

COLORS = {"pass": "#2e8b57", "fail": "#c0392b", "undecided": "#d4a017"}
WORDS = {"pass": "pass (the interval within the bound)",
         "fail": "fail (the interval beyond the bound)",
         "undecided": "undecided (the interval across the bound)"}
ANSWER_COLOR = "#8fb4e3"
BOUND_COLOR = "#222222"
MEAN_COLOR = "#9a9a9a"


def _g(x: Optional[float]) -> str:
    return "–" if x is None else "%.4g" % x


def scale(c: Capacity, j: int) -> Tuple[str, float]:
    """The unit of SLO ``j``'s axis and the factor from its values to it."""
    s = c.slos[j]
    if s.unit == "s":
        vals = [s.bound] + [v for p in c.probes if p.stats
                            for v in (p.stats[j].mean, p.stats[j].low, p.stats[j].high)]
        return time_scale(vals)
    if s.unit == "share":
        return "share of requests", 1.0
    return PROGRAM_UNITS, 1.0


def _k(x: Optional[float], k: float) -> Optional[float]:
    return None if x is None else x * k


def _bound(s: Slo, unit: str, k: float) -> str:
    """``<= 500 ms``, ``>= 0.9``."""
    if s.unit == "s":
        return "%s %s %s" % (s.op, "%.4g" % (s.bound * k), unit)
    return "%s %s" % (s.op, "%.4g" % s.bound)


def _answer(c: Capacity, panel: Panel) -> None:
    from ..report.text_ref import num
    conf = "%s %%" % num(100 * c.confidence)
    if c.low is not None and c.high is not None and c.low < c.high:
        panel.band = (c.low, c.high, "answer [%s, %s] at %s" % (num(c.low), num(c.high), conf))
        panel.band_text = "answer"
        panel.band_color = ANSWER_COLOR
    elif c.low is not None and c.high is not None:
        panel.marks.append(Mark(c.low, "answer %s at %s" % (num(c.low), conf), ANSWER_COLOR,
                                "x", "solid"))
    elif c.low is not None:
        panel.marks.append(Mark(c.low, "answer ≥ %s at %s" % (num(c.low), conf), ANSWER_COLOR,
                                "x", "solid"))
    elif c.high is not None:
        panel.marks.append(Mark(c.high, "answer ≤ %s at %s" % (num(c.high), conf),
                                ANSWER_COLOR, "x", "solid"))


def capacity_figures(c: Capacity) -> Tuple[List[Section], List[Table], List[str]]:
    """The figure (a panel per SLO), the probes' table, the notes."""
    from ..report.text_ref import num
    probes = sorted((p for p in c.probes if p.stats), key=lambda p: p.value)
    values = [p.value for p in probes] + list(c.range or [])
    lo_x, hi_x = (min(values), max(values)) if values else (0.0, 1.0)
    pad = 0.04 * (hi_x - lo_x) if hi_x > lo_x else 0.5
    panels = []
    header = ["#", c.parameter, "seeds"]
    for j, s in enumerate(c.slos):
        unit, k = scale(c, j)
        header.append("%s (%s)" % (s.text, unit))
        traces = []
        means = [(p.value, p.stats[j].mean * k) for p in probes if p.stats[j].mean is not None]
        if len(means) > 1:
            traces.append(Trace("mean over seeds", [x for x, _ in means], [y for _, y in means],
                                color=MEAN_COLOR, dash="dot", hover=unit))
        for verdict in ("pass", "fail", "undecided"):
            ps = [p for p in probes if p.stats[j].verdict == verdict and
                  p.stats[j].mean is not None]
            if not ps:
                continue
            sts = [p.stats[j] for p in ps]
            texts = ["%s = %s, %d seed%s: %s %s [%s, %s] %s, %s" % (
                c.parameter, num(p.value), p.seeds, "" if p.seeds == 1 else "s",
                _g(st.mean * k), unit, _g(_k(st.low, k)), _g(_k(st.high, k)), unit, verdict)
                for p, st in zip(ps, sts)]
            traces.append(Trace(verdict, [p.value for p in ps], [st.mean * k for st in sts],
                                shape="points", color=COLORS[verdict],
                                lo=[_k(st.low, k) for st in sts],
                                hi=[_k(st.high, k) for st in sts], texts=texts))
        panel = Panel("%s %s" % (s.statistic, _bound(s, unit, k)),
                      "%s (searched constant, program's units)" % c.parameter,
                      "%s (%s)" % (s.statistic, unit), traces,
                      marks=[Mark(s.bound * k, "bound %s" % _bound(s, unit, k), BOUND_COLOR,
                                  "y", "dash")],
                      xlim=(lo_x - pad, hi_x + pad))
        _answer(c, panel)
        panels.append(panel)
    rows = []
    for p in probes:
        cells = [str(p.order), num(p.value), str(p.seeds)]
        for j in range(len(c.slos)):
            unit, k = scale(c, j)
            st = p.stats[j]
            cells.append("%s [%s, %s] %s" % (_g(_k(st.mean, k)), _g(_k(st.low, k)),
                                             _g(_k(st.high, k)), st.verdict))
        rows.append(cells + [p.verdict])
    level = "" if c.level is None else (" (each side a one-sided bound at %.6g, the level the "
                                        "search took each test at)" % c.level)
    caption = ("Each point is a probe: the SLO's statistic, the mean over the probe's seeds "
               "(common random numbers), with its interval as an error bar%s, coloured by the "
               "SLO's verdict there: %s. The dashed line is the bound; the answer's bracket at "
               "%s %% confidence is %s." % (
                   level, "; ".join(WORDS.values()), num(100 * c.confidence),
                   "shaded" if c.low is not None and c.high is not None and c.low < c.high
                   else "a solid line"))
    title = c.answer[:1].upper() + c.answer[1:]
    notes = []
    if c.partial:
        notes.append("%s is partial: the search was interrupted, the bracket is the one "
                     "reached so far" % c.path)
    if c.status not in (None, "resolved", "interrupted"):
        from ..capacity.output import STATUS
        notes.append("status: %s" % STATUS.get(c.status, c.status))
    section = Section(title, panels, caption, ncols=min(2, len(panels)))
    table = ("Probes", header + ["verdict"], rows)
    return [section], [table], notes
