"""The text report of ``serq run`` (without ``--json``): the readable layout.

    run: horizon 120 s, warm-up 10 s, end 120 s, seed 5, 16131 events
    sessions: 184 arrived, 162 ended after the warm-up, 11.5 live on average, 401 turns
    rates: 1.47 sessions/s, 3.65 turns/s, 252 generated tokens/s

    observe    unit  count  mean  95% CI    cv2   p50   p90   p99  p99.9
    ttft       ms      401  13.2   ±1.30  0.385  11.3  20.9  52.4   69.9
    turn_time  ms      402   437   ±20.7  0.171   435   690   742    764

    stage  kind   number   util  done  thru (/s)  wait (s)  service (s)  iters
    gpu    step     1.58  80.0%   803       7.30         0        0.217  15702
    user   delay    9.94      -   233       2.12         0         4.57      -

followed, when present, by the step, pool, gauge and claim tables, a key
of the columns that need one (``key:`` lines), the notes, the SLO goodput
and last the findings (report/findings.py), as in the reference layout
(report/text_ref.py, ``serq run --format ref``), whose content this is:

* **Times** are in ``ms`` when every value of the column is below a
  second, else in ``s``; the header says which (``wait (ms)``).  In the
  observe table, whose rows are different quantities, each row of times
  chooses its unit (mean, CI and percentiles together) and says it in its
  ``unit`` cell; ``-`` there is the program's own units (report/units.py).
  The itl columns of the step table share one unit.
* **Numbers** have 3 significant digits, trailing zeros kept (``3.80``),
  and a number of 100 or more is rounded to a whole number (``15300``,
  ``2698300``, never ``2.6983e+06``); counts are whole numbers; shares of
  time are percentages.
* **Empty cells** are ``-``, whatever the reason: no sample, a CI below
  40 samples, a value that does not apply (a delay stage's util, a
  non-step stage's iterations).
* **util** is the share of the measured time the stage was busy serving:
  for a step stage, the time an iteration ran (``prefill + decode +
  mixed`` of the step table: an engine deadlocked holding work shows the
  little it iterated before, not 100 %); for fifo and ps stages, 0.1.3's
  ``utilization``, the time at least one job was served (on a stage a
  ``share`` relation shares, the capacity its flows carried); a delay
  stage (think time, a network latency) serves no one and has no util:
  its ``number`` is the mean count of sessions in it.  A report read back
  from JSON knows no stage kinds: it has no kind column, and a stage that
  did not iterate shows 0.1.3's ``utilization``.

Each line is a list of ``(text, style)`` pieces (:func:`report_lines`);
``report_text`` joins the texts, and cli/colour.py paints the styles on a
terminal (the table headers bold, warnings yellow, a failing claim red).
The text without the styles is the same either way.
"""
import math
from typing import List, Optional, Sequence, Tuple, Union

from .findings import report_findings
from .model import Report, StageRow
from .quantiles import QUANTILES
from .text_ref import _itl_quantiles, _member, _quantiles, num, rates_line, report_text_ref, table

__all__ = ["report_text", "report_lines", "report_text_ref", "num", "table", "fmt", "EMPTY"]

#: The mark of every empty cell.
EMPTY = "-"

#: A piece of a line: its text and its style (``""``: plain; cli/colour.py
#: names the others).
Piece = Tuple[str, str]
Line = List[Piece]
Cell = Union[str, Piece]


# ---------------------------------------------------------------------------
# Numbers

def _finite(x: Optional[float]) -> Optional[float]:
    """``x``, or None when it is absent, NaN or infinite."""
    if x is None or math.isnan(x) or math.isinf(x):
        return None
    return x


def _scaled(x: Optional[float], k: float, digits: int = 3) -> str:
    """``fmt`` of ``x`` in a unit ``k`` to the second."""
    return fmt(None if x is None else x * k, digits)


def fmt(x: Optional[float], digits: int = 3) -> str:
    """A number for a cell: ``digits`` significant digits (trailing zeros
    kept), whole from ``10 ** (digits - 1)`` up and when integral, ``-`` when
    absent or NaN."""
    if x is None:
        return EMPTY
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return EMPTY
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 1e15:
        return "%.*e" % (digits - 1, x)
    if ax >= 10 ** (digits - 1):
        return "%.0f" % x
    if x == int(x):
        return "%d" % x
    # the digits kept, trailing zeros included (3.80, 84.0): a column reads
    # at one precision
    text = "%#.*g" % (digits, x)
    return text[:-1] if text.endswith(".") else text


def pct(x: Optional[float]) -> str:
    """A share (0 to 1) as a percentage with one decimal."""
    v = _finite(x)
    if v is None:
        return EMPTY
    return "%.1f%%" % (100.0 * v + 0.0)


def _pm(x: Optional[float], scale: float = 1.0, share: bool = False) -> str:
    """A CI half-width: ``±`` and the number, ``-`` when there is none."""
    v = _finite(x)
    if v is None:
        return EMPTY
    return "\u00b1" + (pct(v) if share else fmt(v * scale))


def time_unit(values: Sequence[Optional[float]]) -> Tuple[str, float]:
    """``("ms", 1000)`` when every value given is below a second (and one
    is not 0), else ``("s", 1)``."""
    xs = [abs(v) for v in map(_finite, values) if v is not None]
    if xs and 0 < max(xs) < 1:
        return "ms", 1000.0
    return "s", 1.0


def _times(values: Sequence[Optional[float]]) -> Tuple[str, List[str]]:
    unit, k = time_unit(values)
    return unit, [_scaled(v, k) for v in values]


def _seconds(x: float) -> str:
    """An instant or a setting in running text, 4 digits: ``7.185 s``,
    ``250 ms``."""
    unit, k = time_unit([x])
    return "%s %s" % (fmt(x * k, 4), unit)


def _instants(values: Sequence[Optional[float]]) -> Tuple[str, List[str]]:
    """A column of instants (a claim's first failure, t = 100.4 s): 4 digits."""
    unit, k = time_unit(values)
    return unit, [_scaled(v, k, 4) for v in values]


# ---------------------------------------------------------------------------
# Tables

def lines_table(header: Sequence[str], rows: Sequence[Sequence[Cell]],
                align: str = "") -> List[Line]:
    """A table as styled lines: the header bold, two spaces between columns,
    no trailing spaces; ``align`` one letter a column (``l``/``r``), by
    default the first left and the others right.  A cell is its text or a
    ``(text, style)`` piece."""
    align = align or "l" + "r" * (len(header) - 1)
    body = [[c if isinstance(c, tuple) else (c, "") for c in r] for r in rows]
    widths = [len(h) for h in header]
    for r in body:
        for i, (text, _) in enumerate(r):
            widths[i] = max(widths[i], len(text))
    out: List[Line] = [[("  ".join(h.ljust(w) if a == "l" else h.rjust(w)
                                   for h, w, a in zip(header, widths, align)).rstrip(), "head")]]
    for r in body:
        line: Line = []
        for i, ((text, style), w, a) in enumerate(zip(r, widths, align)):
            if i:
                line.append(("  ", ""))
            pad = (" " * (w - len(text)), "")
            line += [(text, style), pad] if a == "l" else [pad, (text, style)]
        out.append(_rstrip(line))
    return out


def _rstrip(line: Line) -> Line:
    keep = len("".join(t for t, _ in line).rstrip())
    out: Line = []
    for text, style in line:
        if keep <= 0:
            break
        if text:
            out.append((text[:keep], style))
            keep -= len(text)
    return out


def plain(lines: Sequence[Line]) -> str:
    """The text of styled lines, each ended by a newline."""
    return "".join("".join(t for t, _ in line) + "\n" for line in lines)


# ---------------------------------------------------------------------------
# The sections

def _run_lines(r: Report) -> List[Line]:
    out = [[("run: horizon %s, warm-up %s, end %s, seed %d, %d events" % (
        _seconds(r.horizon), _seconds(r.warmup), _seconds(r.end), r.seed, r.events), "")]]
    sessions = "sessions: %d arrived, %d ended after the warm-up, %s live on average" % (
        r.arrivals, r.ended, fmt(r.mean_live))
    if r.turns:
        sessions += ", %d turn%s" % (r.turns, "" if r.turns == 1 else "s")
    out.append([(sessions, "")])
    if r.rates is not None:
        out.append([(rates_line(r, fmt), "")])
    return out


def _observe_table(r: Report) -> List[Line]:
    rows = []
    for o in r.observes.values():
        qs = _quantiles(o.quantiles, o.p99)
        unit, k = "-", 1.0
        if o.unit == "s":
            unit, k = time_unit([o.mean] + qs)
        rows.append([o.name, unit, str(o.count), _scaled(o.mean, k),
                     _pm(o.ci, k), fmt(o.cv2)]
                    + [_scaled(x, k) for x in qs])
    return lines_table(("observe", "unit", "count", "mean", "95% CI", "cv2")
                       + tuple(name for _, name in QUANTILES), rows, align="llrrrrrrrr")


def _kind(s: StageRow) -> Optional[str]:
    """The stage's kind, or what its row tells without one: ``step`` for a
    stage that iterated or ended idle with work."""
    if s.kind is not None:
        return s.kind
    return "step" if s.iterations > 0 or s.idle_with_work else None


def busy_share(s: StageRow) -> Optional[float]:
    """The util cell: the share of the time the stage served (the module's
    notes); None for a delay stage."""
    kind = _kind(s)
    if kind == "delay":
        return None
    if kind == "step":
        return min(1.0, max(0.0, s.prefill_only + s.decode_only + s.mixed))
    return s.utilization


def _kind_cell(s: StageRow) -> str:
    if s.kind == "fifo" and s.servers is not None and s.servers != 1:
        return "fifo(%d)" % s.servers
    return s.kind or EMPTY


def _stage_table(r: Report) -> List[Line]:
    kinds = any(s.kind is not None for s in r.stages)
    wait_unit, waits = _times([s.mean_wait for s in r.stages])
    service_unit, services = _times([s.mean_service for s in r.stages])
    rows = []
    for s, wait, service in zip(r.stages, waits, services):
        iters = str(s.iterations) if _kind(s) == "step" or s.kind is None else EMPTY
        rows.append(([_member(s.name, s.index)] + ([_kind_cell(s)] if kinds else [])
                     + [fmt(s.mean_number), pct(busy_share(s)), str(s.completed),
                        fmt(s.throughput), wait, service, iters]))
    header = (("stage",) + (("kind",) if kinds else ())
              + ("number", "util", "done", "thru (/s)", "wait (%s)" % wait_unit,
                 "service (%s)" % service_unit, "iters"))
    return lines_table(header, rows, align="ll" + "r" * (len(header) - 2) if kinds else "")


def _step_table(r: Report, steps: List[StageRow]) -> List[Line]:
    span = r.end - r.warmup
    step_unit, step_times = _times([s.mean_decode_step for s in steps])
    itls = [[s.mean_itl] + _itl_quantiles(s) for s in steps]
    itl_unit, k = time_unit([x for row in itls for x in row])
    rows = []
    for s, step_time, itl in zip(steps, step_times, itls):
        idle = max(0.0, 1.0 - s.prefill_only - s.decode_only - s.mixed)
        tokens = None if s.decode_tokens is None or span <= 0 else s.decode_tokens / span
        rows.append([_member(s.name, s.index), pct(s.prefill_only), pct(s.decode_only),
                     pct(s.mixed), pct(idle), fmt(s.mean_decodes), fmt(s.mean_decode_batch),
                     step_time, fmt(tokens)]
                    + [_scaled(x, k) for x in itl])
    header = (("step", "prefill", "decode", "mixed", "idle", "decodes", "batch",
               "step (%s)" % step_unit, "tokens/s", "itl (%s)" % itl_unit)
              + tuple("itl %s (%s)" % (name, itl_unit) for _, name in QUANTILES))
    return lines_table(header, rows)


def _pool_table(r: Report) -> List[Line]:
    wait_unit, waits = _times([p.mean_wait for p in r.pools])
    rows = [[_member(p.name, p.index), fmt(p.mean_used), fmt(p.mean_cached),
             fmt(p.mean_queue), fmt(p.mean_holders), wait, str(p.admissions),
             str(p.evicted_entries), fmt(p.evicted_units), str(p.preemptions), str(p.spills),
             str(p.rejected), (str(p.stuck), "bad" if p.stuck else "")]
            for p, wait in zip(r.pools, waits)]
    return lines_table(("pool", "used", "cached", "queue", "holders", "wait (%s)" % wait_unit,
                        "admitted", "evicted", "evicted units", "preempt", "spills",
                        "rejected", "stuck"), rows)


def _gauge_table(r: Report) -> List[Line]:
    return lines_table(("gauge", "mean", "95% CI", "min", "max"),
                       [[g.name, fmt(g.mean), _pm(g.ci), fmt(g.min), fmt(g.max)]
                        for g in r.gauges.values()])


_RESULT_STYLE = {"holds": "good", "witnessed": "good", "fails": "bad", "not_witnessed": "bad"}


def _claim_table(r: Report) -> List[Line]:
    claims = r.claims or []
    unit, firsts = _instants([c.first for c in claims])
    return lines_table(("claim", "kind", "result", "checked", "failures", "first (%s)" % unit),
                       [[c.name, c.kind.replace("_", " "),
                         (c.result.replace("_", " "), _RESULT_STYLE.get(c.result, "")),
                         str(c.checked), str(c.failures), first]
                        for c, first in zip(claims, firsts)], align="lllrrr")


def _slo_lines(r: Report) -> List[Line]:
    res = r.slo
    assert res is not None
    unit = res.per + "s"

    def label(a) -> str:
        if a.slo is None:
            return "all"
        o = r.observes.get(a.slo.name)
        bound = _seconds(a.slo.bound) if o is not None and o.unit == "s" else fmt(a.slo.bound)
        return "%s %s %s" % (a.slo.name, a.slo.op, bound)
    rows = [[label(a), str(res.requests), str(a.met), pct(a.attainment),
             _pm(a.ci, share=True), EMPTY if a.slo is None else str(a.missing)]
            for a in res.slos + [res.all]]
    lines = lines_table(("slo", unit, "met", "attainment", "95% CI", "missing"), rows)
    lines.append([("goodput: %s %s/s %s meeting every SLO, of %s %s/s counted" % (
        fmt(res.goodput), unit, _pm(res.goodput_ci), fmt(res.rate), unit), "")])
    if res.requests == 0:
        lines.append(_note("no %s counted: none arrived after the warm-up and finished "
                           "before the end" % res.per))
    return lines


def _note(text: str) -> Line:
    return [("note:", "note"), (" " + text, "")]


def _key_lines(r: Report, steps: List[StageRow]) -> List[Line]:
    """One line a table whose columns need a key."""
    out = []
    if any(_kind(s) in ("delay", "step") or (s.servers or 1) > 1 for s in r.stages):
        out.append("key: util = share of the time serving (step: an iteration running; "
                   "fifo(c): a server busy); a delay stage (think time) has none: its number "
                   "is the mean count in it")
    if steps:
        out.append("key: step: prefill, decode, mixed, idle = share of the time by iteration "
                   "kind; decodes = mean in the running iteration, batch = in one that "
                   "decodes, step = its mean length; itl = time between tokens")
    return [[(text, "dim")] for text in out]


def _finding_lines(r: Report) -> List[Line]:
    out: List[Line] = []
    for f in report_findings(r):
        first, cause, remedy = f.lines()
        out.append([("warning:", "warn"), (first[len("warning:"):], "warn_text")])
        for text in (cause, remedy):
            label, rest = text.split(":", 1)
            out.append([(label + ":", "dim"), (rest, "")])
    return out


def report_lines(report: Report) -> List[Line]:
    """The report as styled lines (the text of each, joined, is
    :func:`report_text`)."""
    r = report
    out = _run_lines(r)
    steps = [s for s in r.stages if s.iterations > 0]
    tables = []
    if r.observes:
        tables.append(_observe_table(r))
    if r.stages:
        tables.append(_stage_table(r))
        if steps:
            tables.append(_step_table(r, steps))
    if r.pools:
        tables.append(_pool_table(r))
    if r.gauges:
        tables.append(_gauge_table(r))
    if r.claims:
        tables.append(_claim_table(r))
    for t in tables:
        out.append([])
        out += t
    key = _key_lines(r, steps)
    if key:
        out.append([])
        out += key
    notes = [_note("claim %s: %s" % (c.name, c.note)) for c in r.claims or ()
             if c.note is not None]
    notes += [_note("observe %s is constant 0 over %d samples" % (o.name, o.count))
              for o in r.observes.values() if o.constant_zero()]
    for block in (notes, _slo_lines(r) if r.slo is not None else [], _finding_lines(r)):
        if block:
            out.append([])
            out += block
    return out


def report_text(report: Report) -> str:
    """The readable report as plain text (ends with a newline)."""
    return plain(report_lines(report))


# ---------------------------------------------------------------------------
# What `serq run` prints around the report

def partial_line(end: float, events: int, reason: str, warmup: float) -> Line:
    """The line before the report of a run that stopped early."""
    return [("partial:", "warn"), (" the run stopped at t = %s after %d events (%s); the report "
                                   "covers %s to %s" % (_seconds(end), events, reason,
                                                        _seconds(warmup), _seconds(end)), "")]


def no_samples_note() -> Line:
    return _note("--no-samples: observe count, mean and cv2 are exact; the percentiles are "
                 "estimated (within 0.5%), and so is the CI above 10240 samples (within about "
                 "1%); see serq run --help")


def admission_lines(rows) -> List[Line]:
    """``serq run --admission``'s table (report/admission.py's rows):
    ``blocked time`` is the share of the measured time the queue's head held
    back a hold that fits; ``storm`` the most preemptions within ``window``,
    from ``storm at``."""
    window_unit, windows = _times([a.storm_window for a in rows])
    at_unit, ats = _instants([a.storm_at for a in rows])
    return lines_table(("admission", "blocked", "blocked time", "reserved", "preempt", "storm",
                        "window (%s)" % window_unit, "storm at (%s)" % at_unit),
                       [[_member(a.name, a.index), str(a.blocked_attempts),
                         pct(a.blocked_fraction), fmt(a.mean_reserved), str(a.preemptions),
                         str(a.storm_peak), window, at]
                        for a, window, at in zip(rows, windows, ats)])
