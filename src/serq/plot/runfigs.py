"""One run's figures: the observations' CDFs, the pools and stages over
time, and a Gantt chart of the step engines' iterations."""
import math
from typing import List, Optional, Sequence, Tuple

from ..errors import UsageError
from .figure import Section, pyplot
from .rundata import SERIES_PREFIX, RunData

MAX_LINES = 12  # lines per time-series panel
MAX_GAUGES = 6  # the program's own gauges, one panel each
MAX_JOBS = 30  # request rows of the Gantt chart
MIX_COLOURS = {"prefill": "#e07b39", "decode": "#3a78b5", "mixed": "#8e5ea2", "empty": "#999999"}
MODE_COLOURS = {"p": "#e07b39", "d": "#3a78b5"}


def _grid(plt, n: int, ncols: int, height: float):
    ncols = min(ncols, n)
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, height * nrows), squeeze=False,
                             layout="constrained")
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def cdf_section(plt, data: RunData, names: Sequence[str]) -> Optional[Section]:
    names = [n for n in names if data.observes.get(n)]
    if not names:
        return None
    fig, axes = _grid(plt, len(names), 2, 3.0)
    for ax, name in zip(axes, names):
        xs = sorted(data.observes[name])
        n = len(xs)
        ys = [(i + 1) / n for i in range(n)]
        ax.step(xs, ys, where="post", color="#3a78b5", lw=1.4)
        mean = math.fsum(xs) / n
        p99 = xs[min(max(int(math.ceil(0.99 * n)), 1), n) - 1]
        ax.axvline(mean, color="#444444", ls=":", lw=1, label="mean %.4g" % mean)
        ax.axvline(p99, color="#c0392b", ls="--", lw=1, label="p99 %.4g" % p99)
        if xs[0] > 0 and xs[-1] / xs[0] > 50:
            ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_title("%s (%d samples)" % (name, n), fontsize=10)
        ax.set_xlabel(name)
        ax.set_ylabel("P(value ≤ x)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    return Section("Distributions", fig, "Empirical CDF of each observation's samples after "
                   "the warm-up, with its mean and 99th percentile.")


def _series_panel(ax, data: RunData, names: List[str], end: Optional[float], label_of) -> None:
    for name in names[:MAX_LINES]:
        ts, vs = data.gauges[name]
        if not ts:
            continue
        ts, vs = list(ts), list(vs)
        if end is not None and end > ts[-1]:
            ts.append(end)
            vs.append(vs[-1])
        ax.step(ts, vs, where="post", lw=1.1, label=label_of(name))
    if len(names) > MAX_LINES:
        ax.plot([], [], " ", label="(%d more not drawn)" % (len(names) - MAX_LINES))
    if data.warmup:
        ax.axvspan(0, data.warmup, color="#dddddd", alpha=0.5, lw=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", ncol=2 if len(names) > 4 else 1)


def series_section(plt, data: RunData) -> Optional[Section]:
    occ = [n for n in data.gauges if n.startswith(SERIES_PREFIX + "occupancy.") or
           n.startswith(SERIES_PREFIX + "used.")]
    queues = [n for n in data.gauges if n.startswith(SERIES_PREFIX + "queued.")] + \
        [n for n in data.gauges if n.startswith(SERIES_PREFIX + "queue.")]
    own = [n for n in data.gauges if not n.startswith(SERIES_PREFIX)]
    panels = [p for p in (("occupancy", occ), ("queues", queues)) if p[1]] + \
        [("gauge", [n]) for n in own[:MAX_GAUGES]]
    if not panels:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(10.4, 2.7 * len(panels)), squeeze=False,
                             sharex=True, layout="constrained")
    for ax, (kind, names) in zip([a[0] for a in axes], panels):
        if kind == "occupancy":
            _series_panel(ax, data, names, data.end, lambda n: n.split(".", 2)[2] +
                          ("" if ".occupancy." in n else " (units)"))
            ax.set_title("Pool occupancy (used / cap)", fontsize=10)
            ax.set_ylabel("occupancy")
        elif kind == "queues":
            _series_panel(ax, data, names, data.end, lambda n: (
                "waiting for " if ".queued." in n else "at stage ") + n.split(".", 2)[2])
            ax.set_title("Queue lengths: sessions waiting for a pool, sessions at a stage",
                         fontsize=10)
            ax.set_ylabel("sessions")
        else:
            _series_panel(ax, data, names, data.end, lambda n: n)
            ax.set_title("gauge %s" % names[0], fontsize=10)
            ax.set_ylabel(names[0])
    axes[-1][0].set_xlabel("time")
    caption = "Step functions of the state over the whole run%s." % (
        " (the warm-up shaded)" if data.warmup else "")
    if len(own) > MAX_GAUGES:
        caption += " The program's first %d gauges of %d." % (MAX_GAUGES, len(own))
    return Section("Over time", fig, caption)


def gantt_window(iters, start: float, count: int):
    """The first ``count`` iterations starting at or after ``start``."""
    chosen = sorted((it for it in iters if it.start >= start), key=lambda it: it.start)
    return chosen[:count]


def gantt_section(plt, data: RunData, start: Optional[float], count: int) -> Tuple[
        Optional[Section], Optional[str]]:
    if data.iterations is None:
        return None, None
    if not data.iterations:
        return None, "The program has no step engine (or none ran an iteration): no Gantt chart."
    if start is None:
        start = data.warmup or 0.0
    window = gantt_window(data.iterations, start, count)
    if not window:
        raise UsageError("--gantt-from %g: no iteration starts at or after it (the last starts "
                         "at %g)" % (start, max(it.start for it in data.iterations)))
    stages = list(dict.fromkeys(it.stage for it in window))
    jobs: List[Tuple[int, int]] = []
    for it in window:
        for s, t, _, _ in it.jobs:
            if (s, t) not in jobs:
                jobs.append((s, t))
    shown = jobs[:MAX_JOBS]
    row_of = {j: i for i, j in enumerate(shown)}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10.4, 1.2 + 0.45 * len(stages) +
                                                      0.22 * len(shown) + 1.0),
                                      sharex=True, layout="constrained",
                                      gridspec_kw={"height_ratios": [max(1, len(stages)),
                                                                     max(2, len(shown) / 2.0)]})
    labelled = set()
    for lane, st in enumerate(stages):
        for mix in MIX_COLOURS:
            bars = [(it.start, it.cost) for it in window if it.stage == st and it.mix == mix]
            if bars:
                top.broken_barh(bars, (lane - 0.4, 0.8), facecolors=MIX_COLOURS[mix],
                                edgecolor="white", lw=0.4,
                                label=None if mix in labelled else mix)
                labelled.add(mix)
    top.set_yticks(range(len(stages)), stages)
    top.set_ylim(-0.6, len(stages) - 0.4)
    top.invert_yaxis()
    top.set_title("Iterations of the step engines (colour: the iteration's mix)", fontsize=10)
    top.legend(fontsize=8, loc="upper right", ncol=4)
    for mode in ("p", "d"):
        bars = {}
        for it in window:
            for s, t, m, _ in it.jobs:
                if m == mode and (s, t) in row_of:
                    bars.setdefault((s, t), []).append((it.start, it.cost))
        for job, b in bars.items():
            bottom.broken_barh(b, (row_of[job] - 0.4, 0.8), facecolors=MODE_COLOURS[mode],
                               edgecolor="white", lw=0.3)
    bottom.set_yticks(range(len(shown)), ["%d:%d" % j for j in shown], fontsize=7)
    bottom.set_ylim(-0.6, max(len(shown), 1) - 0.4)
    bottom.invert_yaxis()
    bottom.set_ylabel("session:turn")
    bottom.set_xlabel("time")
    title = "Requests served in each iteration (orange: prefill, blue: decode)"
    if len(jobs) > len(shown):
        title += "; first %d of %d requests" % (len(shown), len(jobs))
    bottom.set_title(title, fontsize=10)
    for ax in (top, bottom):
        ax.grid(axis="x", alpha=0.3)
    t0, t1 = window[0].start, max(it.start + it.cost for it in window)
    bottom.set_xlim(t0 - 0.01 * (t1 - t0), t1 + 0.01 * (t1 - t0))
    return Section("Step iterations", fig, "Gantt chart of %d iterations from t = %.6g to "
                   "%.6g: each bar spans an iteration's cost." % (len(window), t0, t1)), None


def run_figures(data: RunData, observes: Sequence[str], gantt_from: Optional[float],
                gantt_iterations: int) -> Tuple[List[Section], List[str]]:
    plt = pyplot()
    unknown = [n for n in observes if n not in data.observes]
    if unknown:
        raise UsageError("--observe %s: no such observation (the run has: %s)"
                         % (unknown[0], ", ".join(data.observes) or "none"))
    sections, notes = [], []
    cdf = cdf_section(plt, data, list(observes) or list(data.observes))
    if cdf is not None:
        sections.append(cdf)
    else:
        notes.append("No observation has samples after the warm-up: no distribution to draw.")
    series = series_section(plt, data)
    if series is not None:
        sections.append(series)
    gantt, note = gantt_section(plt, data, gantt_from, gantt_iterations)
    if gantt is not None:
        sections.append(gantt)
    if note:
        notes.append(note)
    if not sections:
        raise UsageError("nothing to draw: the run has no samples, series or iterations")
    return sections, notes
