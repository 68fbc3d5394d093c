"""The text report in serq's first layout: ``serq run --format ref``.

This is the layout ``serq run`` printed by default up to the readable one
(report/text.py), kept byte for byte for scripts that read it:
tests/data/text_report/*.ref.txt hold its output, captured before the
change.  serQ 0.1.3 documents the report's content but not a text layout
(pyserq, the reference, gives JSON only: ``Report.json()``, which
``serq run --json`` matches byte for byte), so this layout is serq's own:

    run: horizon 100 end 100 warmup 0 seed 1 events 210 arrivals 103 ended 101 turns 0 mean live 1.2
    rates: 1.01 sessions/s

    observe  unit  count     mean   95% CI      cv2      p50      p90      p99    p99.9
    lat      s       101  1.02716  ±0.1764  0.93811  0.71011  2.36633  4.39027  4.39027

    stage  number    util  done  thru (/s)  wait (s)  service (s)  iters
    gpu      1.21  0.6543   101       1.01   0.21403      0.81312      0

followed, when present, by a step table (iteration statistics of stages
that iterated), the pool, gauge and claim tables, one ``note:`` line per
claim note and test observation constant 0 over >= 40 samples, the SLO
goodput (``serq run --slo``, report/slo.py) and last the findings
(report/findings.py: a deadlock, a livelock, a queue head over the cap, a
long backlog, a step stage idle with work), each a ``warning:`` line naming
the pool or stage, then its ``cause:`` and ``remedy:`` lines.

The ``rates:`` line gives sessions ended a second, turns begun a second
(for a program whose sessions take turns) and generated tokens a second
(decode tokens of the step stages, report/model.py ``Rates``).  An
observation's ``unit`` is ``s`` when it records times (report/units.py),
``-`` when it is in the program's own units; its p50 ... p99.9 are
nearest-rank percentiles as 0.1.3's p99 (report/quantiles.py).  A header
names its unit when the language fixes it: seconds for times, ``/s`` for
rates; pool amounts are in the program's units.  Numbers have 6
significant digits; ``-`` is an absent value; a CI below 40 samples is
``NaN``; ``util`` is 0.1.3's ``utilization`` (the share of the time a job
was present).  Plain text, columns aligned with spaces, ends with a newline.
"""
import math
from typing import List, Optional, Sequence

from .findings import report_findings
from .model import Report, StageRow
from .quantiles import QUANTILES


def num(x: Optional[float]) -> str:
    """A number for a table cell: 6 significant digits, ``-`` if absent."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    return "%.6g" % x


def _ci(x: Optional[float]) -> str:
    if x is None or math.isnan(x) or math.isinf(x):
        return "NaN"
    return "\u00b1" + num(x)


def table(header: Sequence[str], rows: Sequence[Sequence[str]],
          align: str = "") -> List[str]:
    """Lines of a table, two spaces between columns, no trailing spaces.
    ``align`` has one letter per column, ``l`` or ``r``; by default the first
    column is left-aligned and the others (numbers) right-aligned."""
    align = align or "l" + "r" * (len(header) - 1)
    widths = [len(h) for h in header]
    for r in rows:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    lines = []
    for r in [list(header)] + [list(r) for r in rows]:
        cells = [c.ljust(w) if a == "l" else c.rjust(w)
                 for c, w, a in zip(r, widths, align)]
        lines.append("  ".join(cells).rstrip())
    return lines


def _member(name: str, index: Optional[int]) -> str:
    return name if index is None else "%s[%d]" % (name, index)


def _quantiles(qs: Optional[List[Optional[float]]], p99: Optional[float]
               ) -> List[Optional[float]]:
    """The percentile cells; a report without them (read back from JSON)
    has the p99 alone."""
    if qs is not None:
        return qs
    return [p99 if name == "p99" else None for _, name in QUANTILES]


def _itl_quantiles(s: StageRow) -> List[Optional[float]]:
    if s.itl_quantiles is not None:
        return s.itl_quantiles
    return [s.itl_p50 if name == "p50" else s.itl_p99 if name == "p99" else None
            for _, name in QUANTILES]


def rates_line(r: Report, number=None) -> str:
    """``rates: 1.01 sessions/s, ...`` with each rate written by ``number``
    (this layout's ``num`` by default; the readable report and the notebook
    pass their own)."""
    number = number or num
    rt = r.rates
    assert rt is not None
    parts = ["%s sessions/s" % number(rt.sessions)]
    if r.turns:
        parts.append("%s turns/s" % number(rt.turns))
    if rt.tokens is not None:
        parts.append("%s generated tokens/s" % number(rt.tokens))
    return "rates: " + ", ".join(parts)


def report_text_ref(report: Report) -> str:
    """The report in the ``--format ref`` layout (ends with a newline)."""
    r = report
    out: List[str] = []
    out.append("run: horizon %s end %s warmup %s seed %d events %d arrivals %d "
               "ended %d turns %d mean live %s" % (
                   num(r.horizon), num(r.end), num(r.warmup), r.seed, r.events,
                   r.arrivals, r.ended, r.turns, num(r.mean_live)))
    if r.rates is not None:
        out.append(rates_line(r))
    if r.observes:
        out.append("")
        out += table(("observe", "unit", "count", "mean", "95% CI", "cv2")
                     + tuple(name for _, name in QUANTILES),
                     [(o.name, o.unit or "-", str(o.count), num(o.mean), _ci(o.ci), num(o.cv2))
                      + tuple(num(x) for x in _quantiles(o.quantiles, o.p99))
                      for o in r.observes.values()], align="llrrrrrrrr")
    if r.stages:
        out.append("")
        out += table(("stage", "number", "util", "done", "thru (/s)", "wait (s)", "service (s)",
                      "iters"),
                     [(_member(s.name, s.index), num(s.mean_number), num(s.utilization),
                       str(s.completed), num(s.throughput), num(s.mean_wait),
                       num(s.mean_service), str(s.iterations)) for s in r.stages])
        steps = [s for s in r.stages if s.iterations > 0]
        if steps:
            span = r.end - r.warmup
            out.append("")
            out += table(("step", "prefill", "decode", "mixed", "decodes", "batch",
                          "step time (s)", "tokens/s", "itl (s)")
                         + tuple("itl %s (s)" % name for _, name in QUANTILES),
                         [(_member(s.name, s.index), num(s.prefill_only), num(s.decode_only),
                           num(s.mixed), num(s.mean_decodes), num(s.mean_decode_batch),
                           num(s.mean_decode_step),
                           num(None if s.decode_tokens is None or span <= 0
                               else s.decode_tokens / span),
                           num(s.mean_itl))
                          + tuple(num(x) for x in _itl_quantiles(s)) for s in steps])
    if r.pools:
        out.append("")
        out += table(("pool", "used", "cached", "queue", "holders", "wait (s)", "admitted",
                      "evicted", "units", "preempt", "spills", "rejected", "stuck"),
                     [(_member(p.name, p.index), num(p.mean_used), num(p.mean_cached),
                       num(p.mean_queue), num(p.mean_holders), num(p.mean_wait),
                       str(p.admissions), str(p.evicted_entries), num(p.evicted_units),
                       str(p.preemptions), str(p.spills), str(p.rejected), str(p.stuck))
                      for p in r.pools])
    if r.gauges:
        out.append("")
        out += table(("gauge", "mean", "95% CI", "min", "max"),
                     [(g.name, num(g.mean), _ci(g.ci), num(g.min), num(g.max))
                      for g in r.gauges.values()])
    if r.claims:
        out.append("")
        out += table(("claim", "kind", "result", "checked", "failures", "first (s)"),
                     [(c.name, c.kind.replace("_", " "), c.result.replace("_", " "),
                       str(c.checked), str(c.failures), num(c.first)) for c in r.claims],
                     align="lllrrr")
    findings: List[str] = []
    for c in r.claims or ():
        if c.note is not None:
            findings.append("note: claim %s: %s" % (c.name, c.note))
    for o in r.observes.values():
        if o.constant_zero():
            findings.append("note: observe %s is constant 0 over %d samples" % (o.name, o.count))
    if findings:
        out.append("")
        out += findings
    if r.slo is not None:
        out.append("")
        out += r.slo.text_lines()
    warnings = report_findings(r)
    if warnings:
        out.append("")
        for f in warnings:
            out += f.lines()
    return "\n".join(out) + "\n"
