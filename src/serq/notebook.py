"""How the Python API's objects show in a REPL and in a notebook: the
reprs of ``Program``, ``Report``, ``Observe`` and ``Gauge`` (one line each,
naming what one looks for first), and the HTML tables Jupyter shows for a
``Program`` and a ``Report`` (``_repr_html_``).

Numbers have 4 significant digits here (the text report and the JSON keep
theirs); an absent value is ``-``; times carry their unit (``s``) in the
column's header.  Every text that comes from the program (names, file
names, a finding's message) is escaped, so the HTML is well-formed
whatever the program calls its pools.  Tables longer than ``MAX_ROWS``
(a family of many members) end with a row saying how many were left out.
"""
import math
from html import escape
from typing import Iterable, List, Optional, Sequence, Tuple

MAX_ROWS = 40
MAX_REPR_OBSERVES = 3


def num(x, group: bool = False) -> str:
    """A number for a repr or a cell: 4 significant digits, ``-`` absent;
    from 10^4 on a whole number (``12345``; ``12,345`` with ``group``)."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    x = float(x)
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    if 1e4 <= abs(x) < 1e15:
        return ("{:,.0f}" if group else "{:.0f}").format(x)
    return "%.4g" % x


def _member(name: str, index: Optional[int]) -> str:
    return name if index is None else "%s[%d]" % (name, index)


def _families(items) -> List[Tuple[str, int, object]]:
    """``(name, members, first member)`` of IR pools or stages, in order."""
    out: List[Tuple[str, int, object]] = []
    for x in items:
        if out and out[-1][0] == x.name and x.index is not None:
            name, n, first = out[-1]
            out[-1] = (name, n + 1, first)
        else:
            out.append((x.name, 1, x))
    return out


def _expr(e) -> str:
    """A constant IR expression's value, else ``expr``."""
    if e is None:
        return "-"
    if type(e).__name__ == "Num":
        return num(e.value)
    return "expr"


def _kind(stage, prog) -> str:
    k = stage.kind
    name = type(k).__name__
    if name == "Fifo":
        return "fifo, %d server%s" % (k.servers, "" if k.servers == 1 else "s")
    if name == "Ps":
        return "ps, capacity %s" % _expr(k.capacity)
    if name == "Delay":
        return "delay"
    if name == "Step":
        parts = ["step, budget %s" % _expr(k.budget)]
        if k.memory is not None:
            parts.append("memory %s" % prog.pools[k.memory].name)
        return ", ".join(parts)
    return name.lower()


def _arrival(prog) -> str:
    a = prog.arrival
    if prog.trace is not None:
        return "trace %s" % prog.trace
    if a.kind == "Poisson":
        return "poisson(%s)" % num(a.value) if isinstance(a.value, (int, float)) else "poisson"
    if a.kind in ("Closed", "Batch"):
        return "%s(%s)" % (a.kind.lower(), a.value)
    if a.kind == "Renewal":
        return "renewal"
    if a.kind == "Sessions":
        return "%d listed sessions" % len(a.value or [])
    return "none"


def _source(program) -> str:
    return program.file if program.file is not None else \
        "<text>" if program._origin is not None else "<IR>"


def _names(fams: Sequence[Tuple[str, int, object]]) -> List[str]:
    return [name if n == 1 and first.index is None else "%s[%d]" % (name, n)
            for name, n, first in fams]


# ------------------------------------------------------------------ reprs

def program_repr(program) -> str:
    """``Program('chat.sq', pools=[kv], stages=[gpu: step], arrive=poisson(2),
    horizon=600, warmup=60, seed=7)``; a family shows its size (``gpu[4]``)."""
    p = program.ir
    stages = ["%s: %s" % (n, type(first.kind).__name__.lower())
              for n, first in zip(_names(_families(p.stages)),
                                  [f for _, _, f in _families(p.stages)])]
    extra = "" if p.arrivals is None else ", arrivals=%d" % p.arrivals
    return "Program(%r, pools=[%s], stages=[%s], arrive=%s, horizon=%s, warmup=%s, seed=%d%s)" % (
        _source(program), ", ".join(_names(_families(p.pools))), ", ".join(stages),
        _arrival(p), num(p.horizon), num(p.warmup), p.seed, extra)


def _quantile_text(o) -> str:
    unit = " s" if o.unit == "s" else ""
    return "n=%d mean=%s p50=%s p99=%s%s" % (o.count, num(o.mean), num(o.p50), num(o.p99), unit)


def report_repr(report) -> str:
    """``Report(horizon=600, end=600, warmup=60, seed=7, events=..., arrivals=...,
    ended=...; ttft: n=... mean=... p50=... p99=... s; ...; 1 finding)``, with
    ``partial='...'`` after the totals for a run that stopped early; the
    observations of times come first, at most ``MAX_REPR_OBSERVES``."""
    r = report
    head = "horizon=%s, end=%s, warmup=%s, seed=%d, events=%d, arrivals=%d, ended=%d" % (
        num(r.horizon), num(r.end), num(r.warmup), r.seed, r.events, r.arrivals, r.ended)
    if r.partial is not None:
        head += ", partial=%r" % r.partial
    parts = [head]
    obs = r._observes
    # times first (ttft, e2e: what one reads first), then the others, in order
    shown = sorted(obs, key=lambda o: o.unit != "s")[:MAX_REPR_OBSERVES]
    for o in shown:
        parts.append("%s: %s" % (o.name, _quantile_text(o)))
    if len(obs) > MAX_REPR_OBSERVES:
        parts.append("+%d more observe%s" % (len(obs) - MAX_REPR_OBSERVES,
                                            "" if len(obs) - MAX_REPR_OBSERVES == 1 else "s"))
    n = len(r.findings)
    if n:
        parts.append("%d finding%s" % (n, "" if n == 1 else "s"))
    return "Report(%s)" % "; ".join(parts)


def observe_repr(o) -> str:
    return "Observe(%r, count=%d, mean=%s, ci=%s, p50=%s, p90=%s, p99=%s, p999=%s, unit=%r)" % (
        o.name, o.count, num(o.mean), num(o.ci), num(o.p50), num(o.p90), num(o.p99),
        num(o.p999), o.unit)


def gauge_repr(g) -> str:
    return "Gauge(%r, mean=%s, ci=%s, min=%s, max=%s)" % (g.name, num(g.mean), num(g.ci),
                                                          num(g.min), num(g.max))


# ------------------------------------------------------------------ HTML

_STYLE = ("<style>.serq-t{margin:0 0 8px 0}"
          ".serq-t td,.serq-t th{text-align:right;padding:1px 8px}"
          ".serq-t td:first-child,.serq-t th:first-child{text-align:left}"
          ".serq-warn{color:#a40000}</style>")


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """An HTML table; every cell escaped (a number through ``num``)."""
    rows = list(rows)
    out = ["<table class=\"serq-t\"><thead><tr>"]
    out += ["<th>%s</th>" % escape(h) for h in header]
    out.append("</tr></thead><tbody>")
    for row in rows[:MAX_ROWS]:
        cells = (c if isinstance(c, str) else num(c, True) for c in row)
        out.append("<tr>" + "".join("<td>%s</td>" % escape(c) for c in cells) + "</tr>")
    if len(rows) > MAX_ROWS:
        out.append("<tr><td colspan=\"%d\">... and %d more</td></tr>"
                   % (len(header), len(rows) - MAX_ROWS))
    out.append("</tbody></table>")
    return "".join(out)


def _p(text: str, cls: Optional[str] = None) -> str:
    return "<p%s>%s</p>" % ("" if cls is None else " class=\"%s\"" % cls, escape(text))


def program_html(program) -> str:
    p = program.ir
    parts = [_STYLE, "<div class=\"serq-program\">",
             "<p><b>serq program</b> %s</p>" % escape(_source(program)),
             _p("arrive %s; horizon %s s, warm-up %s s, seed %d%s" % (
                 _arrival(p), num(p.horizon), num(p.warmup), p.seed,
                 "" if p.arrivals is None else ", %d arrivals" % p.arrivals))]
    pools = _families(p.pools)
    if pools:
        parts.append(_table(("pool", "members", "cap", "block", "preempt", "admit via"),
                            [(name, n, first.cap, first.block,
                              "yes" if first.preempt is not None else "no",
                              "-" if first.admit_via is None else p.stages[first.admit_via].name)
                             for name, n, first in pools]))
    stages = _families(p.stages)
    if stages:
        parts.append(_table(("stage", "members", "kind"),
                            [(name, n, _kind(first, p)) for name, n, first in stages]))
    if p.observes:
        parts.append(_p("observes: " + ", ".join(p.observes)))
    if p.gauges:
        parts.append(_p("gauges: " + ", ".join(g.name for g in p.gauges)))
    parts.append("</div>")
    return "".join(parts)


def report_html(report) -> str:
    r = report
    parts = [_STYLE, "<div class=\"serq-report\">",
             "<p><b>serq report</b>: %s</p>" % escape(
                 "horizon %s s, end %s s, warm-up %s s, seed %d; %d events, %d arrivals, "
                 "%d ended, %d turns, mean live %s" % (
                     num(r.horizon), num(r.end), num(r.warmup), r.seed, r.events, r.arrivals,
                     r.ended, r.turns, num(r.mean_live)))]
    if r.partial is not None:
        parts.append(_p("partial: the run stopped at t = %s s (%s); the report covers "
                        "[%s, %s]" % (num(r.end), r.partial, num(r.warmup), num(r.end)),
                        "serq-warn"))
    if r.rates is not None:
        from .report.text_ref import rates_line
        parts.append(_p(rates_line(r, num)))
    if r._observes:
        parts.append(_table(("observe", "unit", "count", "mean", "± 95% CI", "cv2", "p50",
                             "p90", "p99", "p99.9"),
                            [(o.name, o.unit or "-", o.count, o.mean, o.ci, o.cv2, o.p50,
                              o.p90, o.p99, o.p999) for o in r._observes]))
    if r.stages:
        parts.append(_table(("stage", "number", "util", "done", "thru (/s)", "wait (s)",
                             "service (s)", "iters", "itl (s)", "itl p99 (s)"),
                            [(_member(s.name, s.index), s.mean_number, s.utilization,
                              s.completed, s.throughput, s.mean_wait, s.mean_service,
                              s.iterations, s.mean_itl, s.itl_p99) for s in r.stages]))
    if r.pools:
        parts.append(_table(("pool", "used", "cached", "queue", "holders", "wait (s)",
                             "admitted", "evicted", "preempt", "rejected", "stuck"),
                            [(_member(p.name, p.index), p.mean_used, p.mean_cached,
                              p.mean_queue, p.mean_holders, p.mean_wait, p.admissions,
                              p.evicted_entries, p.preemptions, p.rejected, p.stuck)
                             for p in r.pools]))
    if r._gauges:
        parts.append(_table(("gauge", "mean", "± 95% CI", "min", "max"),
                            [(g.name, g.mean, g.ci, g.min, g.max) for g in r._gauges]))
    if r.slo is not None:
        s = r.slo
        parts.append(_table(("slo", s.per + "s", "met", "attainment", "± 95% CI"),
                            [(a.label(), s.requests, a.met, a.attainment, a.ci)
                             for a in s.slos + [s.all]]))
        parts.append(_p("goodput: %s %ss/s (meeting every SLO)" % (num(s.goodput), s.per)))
    for f in r.findings:
        lines = f.lines()
        parts.append("<p class=\"serq-warn\">%s<br>%s</p>" % (
            escape(lines[0]), "<br>".join(escape(x.strip()) for x in lines[1:])))
    parts.append("</div>")
    return "".join(parts)
