"""A figure as data, drawn by either backend (mpl.py: PNG through
matplotlib; web.py: an interactive page through plotly), and the rules both
follow for axes: times in ms or s chosen from the data, a CDF's x axis
logarithmic when its positive values span more than two decades, every
axis label saying its unit and its scale.

Values in a ``Trace`` or a ``Bar`` are already in the axis's unit."""
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

#: A CDF's x axis is logarithmic when max / min exceeds this (2 decades).
LOG_SPAN = 100.0


@dataclass
class Trace:
    """A line: ``shape`` ``"line"`` (points joined), ``"step"`` (a step
    function: each value holds until the next point), ``"stack"`` (a step
    function filled down to the trace below it, stacked) or ``"points"``
    (markers, not joined). ``lo``/``hi``: a confidence band around it, or
    for ``"points"`` each point's interval drawn as an error bar (None: no
    bar at that point).  ``texts``: each point's hover text."""
    name: str
    xs: List[float]
    ys: List[float]
    shape: str = "line"
    color: Optional[str] = None
    dash: Optional[str] = None
    markers: bool = False
    lo: Optional[List[float]] = None
    hi: Optional[List[float]] = None
    hover: Optional[str] = None  # the hover text's unit or note
    texts: Optional[List[str]] = None


@dataclass
class Mark:
    """A labelled line across the panel: vertical at ``at`` on the x axis
    (a mean, a percentile) or horizontal on the y axis (a pool's cap)."""
    at: float
    label: str
    color: str
    axis: str = "x"
    dash: str = "dot"


@dataclass
class Bar:
    """A horizontal bar (of a Gantt chart, a tornado chart): on row
    ``lane`` from ``start`` for ``width``; bars of one ``group`` share a
    colour and a legend entry.  ``ci``: ``(value, low, high)``, an error
    bar from ``low`` to ``high`` at ``value`` (the bar's tip)."""
    lane: str
    start: float
    width: float
    group: str
    color: str
    hover: str = ""
    ci: Optional[Tuple[float, float, float]] = None


#: The legend entry of bars' error bars.
CI_LABEL = "confidence interval"


@dataclass
class Panel:
    title: str
    xlabel: str
    ylabel: str
    traces: List[Trace] = field(default_factory=list)
    marks: List[Mark] = field(default_factory=list)
    bars: List[Bar] = field(default_factory=list)
    lanes: List[str] = field(default_factory=list)  # the Gantt rows, top first
    xlog: bool = False
    ylog: bool = False
    ylim: Optional[Tuple[float, float]] = None
    xlim: Optional[Tuple[float, float]] = None
    # a shaded x interval and its label (the warm-up), the word written on
    # it and its colour
    band: Optional[Tuple[float, float, str]] = None
    band_text: str = "warm-up"
    band_color: str = "#bbbbbb"


@dataclass
class Section:
    """One figure of a report: its panels on a grid of ``ncols`` columns
    (sharing the x axis when ``sharex``)."""
    title: str
    panels: List[Panel]
    caption: str = ""
    ncols: int = 1
    sharex: bool = False


def time_scale(values: Sequence[Optional[float]]) -> Tuple[str, float]:
    """``("ms", 1000)`` when every value given is below a second (and one
    is not 0), else ``("s", 1)``: the text report's rule."""
    xs = [abs(v) for v in values if v is not None and v == v and abs(v) != float("inf")]
    if xs and 0 < max(xs) < 1:
        return "ms", 1000.0
    return "s", 1.0


def log_scale(values: Sequence[float]) -> bool:
    """The CDF rule: logarithmic when every value is positive and they span
    more than two decades."""
    if not values:
        return False
    lo, hi = min(values), max(values)
    return lo > 0 and hi / lo > LOG_SPAN


def axis_label(name: str, unit: str, log: bool = False) -> str:
    """``ttft (ms)``, ``ttft (ms, log scale)``."""
    return "%s (%s%s)" % (name, unit, ", log scale" if log else "")


#: The unit of a value that is not known to be a time (report/units.py).
PROGRAM_UNITS = "program's units"


def stacked(traces: Sequence[Trace]) -> Tuple[List[float], List[List[float]]]:
    """Step functions on one grid (the union of their times), each value
    the one it holds there: the layers a stacked area draws."""
    import bisect
    grid = sorted({x for t in traces for x in t.xs})
    layers = []
    for t in traces:
        ys = []
        for x in grid:
            i = bisect.bisect_right(t.xs, x) - 1
            ys.append(t.ys[i] if i >= 0 else 0.0)
        layers.append(ys)
    return grid, layers
