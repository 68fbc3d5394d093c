"""The Gantt chart of one run's step iterations (``--trace-iterations``)
over a window of time: each stage's iterations on a row of their own,
coloured by their mix, and below them the requests they served.

The window is ``--window START:END``, or by default ``default_window``:
from the warm-up's end, ``LIFETIMES`` median request lifetimes long (a
request's lifetime: from its first iteration's start to its last one's
end), at least ``MIN_ITERATIONS`` iterations and at most ``MAX_ITERATIONS``
(the figure's size), within the run."""
import statistics
from typing import Dict, List, Optional, Tuple

from ..errors import UsageError
from .figure import Bar, Panel, Section, axis_label, time_scale
from .rundata import Iteration, RunData

LIFETIMES = 10
MIN_ITERATIONS = 300
MAX_ITERATIONS = 4000
MAX_JOBS = 40  # request rows
MIX_COLOURS = {"prefill": "#e07b39", "decode": "#3a78b5", "mixed": "#8e5ea2", "empty": "#999999"}
MODE = {"p": ("prefill", "#e07b39"), "d": ("decode", "#3a78b5")}


def _end(it: Iteration) -> float:
    return it.start + it.cost


def lifetimes(iters: List[Iteration]) -> List[float]:
    """Each request's span, from its first iteration's start to its last's end."""
    first: Dict[Tuple[int, int], float] = {}
    last: Dict[Tuple[int, int], float] = {}
    for it in iters:
        for s, t, _, _ in it.jobs:
            first.setdefault((s, t), it.start)
            last[(s, t)] = _end(it)
    return [last[j] - first[j] for j in first]


def default_window(iters: List[Iteration], warmup: Optional[float],
                   end: Optional[float]) -> Tuple[float, float]:
    """The window drawn without ``--window`` (the module's text)."""
    ordered = sorted(iters, key=lambda it: it.start)
    start = warmup or 0.0
    after = [it for it in ordered if it.start >= start]
    if not after:  # every iteration in the warm-up: from the first
        after, start = ordered, ordered[0].start
    spans = lifetimes(after[:MAX_ITERATIONS])
    length = LIFETIMES * statistics.median(spans) if spans else 0.0
    if len(after) > MIN_ITERATIONS:
        length = max(length, after[MIN_ITERATIONS - 1].start - start)
    else:
        length = max(length, _end(after[-1]) - start)
    if len(after) > MAX_ITERATIONS:
        length = min(length, after[MAX_ITERATIONS - 1].start - start)
    stop = start + length
    last = max(_end(it) for it in after)
    stop = min(stop, last if end is None else max(end, last))
    return start, max(stop, _end(after[0]))


def in_window(iters: List[Iteration], t0: float, t1: float) -> List[Iteration]:
    """The iterations that start in ``[t0, t1)``, in time order."""
    return sorted((it for it in iters if t0 <= it.start < t1), key=lambda it: it.start)


def _s(x: float) -> str:
    unit, k = time_scale([x])
    return "%.4g %s" % (x * k, unit)


def gantt_section(data: RunData, window: Optional[Tuple[float, float]]) -> Tuple[
        Optional[Section], Optional[str]]:
    iters = data.iterations
    if iters is None:
        return None, None
    if not iters:
        return None, "The program has no step engine (or none ran an iteration): no Gantt chart."
    chosen = window if window is not None else default_window(iters, data.warmup, data.end)
    shown = in_window(iters, *chosen)
    if not shown:
        raise UsageError("--window %g:%g: no iteration starts in it (they start from %g to %g)"
                         % (chosen[0], chosen[1], min(it.start for it in iters),
                            max(it.start for it in iters)))
    if len(shown) > MAX_ITERATIONS:
        shown = shown[:MAX_ITERATIONS]
        note = "; its first %d iterations" % MAX_ITERATIONS
    else:
        note = ""
    t0, t1 = chosen
    unit, k = time_scale([t1])
    xlabel = axis_label("time", unit)
    stages = list(dict.fromkeys(it.stage for it in shown))
    bars = [Bar(it.stage, it.start * k, it.cost * k, it.mix, MIX_COLOURS[it.mix],
                "%s at %s: %s, cost %s, %d residents, prefill %g tokens (%d jobs), decode %g "
                "tokens (%d jobs)" % (it.stage, _s(it.start), it.mix, _s(it.cost), it.residents,
                                      it.prefill_tokens, it.prefill_jobs, it.decode_tokens,
                                      it.decode_jobs))
            for it in shown]
    top = Panel("Iterations of the step engines (colour: the iteration's mix)", xlabel,
                "stage", bars=bars, lanes=stages, xlim=(t0 * k, t1 * k))
    jobs: List[Tuple[int, int]] = []
    runs: Dict[Tuple[int, int], List[List]] = {}
    for it in shown:
        for s, t, m, tokens in it.jobs:
            if (s, t) not in runs:
                if len(jobs) >= MAX_JOBS:
                    continue
                jobs.append((s, t))
                runs[(s, t)] = []
            spans = runs[(s, t)]
            if spans and spans[-1][2] == m and abs(spans[-1][1] - it.start) <= 1e-9 * (
                    1 + abs(it.start)):
                spans[-1][1] = _end(it)  # the next iteration straight after: one bar
                spans[-1][3] += tokens
                spans[-1][4] += 1
            else:
                spans.append([it.start, _end(it), m, tokens, 1])
    total = len({(s, t) for it in shown for s, t, _, _ in it.jobs})
    rows = []
    for (s, t) in jobs:
        lane = "%d:%d" % (s, t)
        for a, b, m, tokens, n in runs[(s, t)]:
            rows.append(Bar(lane, a * k, (b - a) * k, MODE[m][0], MODE[m][1],
                            "session %d turn %d: %s from %s to %s, %g tokens in %d iteration%s"
                            % (s, t, MODE[m][0], _s(a), _s(b), tokens, n,
                               "" if n == 1 else "s")))
    title = "Requests served (session:turn; orange: prefill, blue: decode)"
    if total > len(jobs):
        title += "; the first %d of %d" % (len(jobs), total)
    bottom = Panel(title, xlabel, "session:turn", bars=rows,
                   lanes=["%d:%d" % j for j in jobs], xlim=(t0 * k, t1 * k))
    how = "--window" if window is not None else (
        "the default: %d median request lifetimes from the warm-up's end, at least %d "
        "iterations; choose one with --window START:END" % (LIFETIMES, MIN_ITERATIONS))
    name = "Step iterations from t = %s to %s" % (_s(t0), _s(t1))
    return Section(name, [top, bottom], "Gantt chart of %d iterations from t = %.6g to %.6g s "
                   "(%s%s): each bar spans an iteration's cost; zoom in the HTML page."
                   % (len(shown), t0, t1, how, note), sharex=True), None
