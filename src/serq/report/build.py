"""A finished simulation -> the ``Report`` (report/model.py).

Rates and time averages are over ``[warmup, end]``; observations hold only
samples taken after warm-up; counts follow the feature map §8.
"""
from ..collector import relaxed
from ..ir import nodes as ir
from .findings import compute_findings
from .model import ClaimRow, GaugeRow, ObserveRow, PoolRow, Rates, Report, StageRow
from .quantiles import histogram_quantiles, observation_quantiles
from .stats import summarize_gauge, summarize_running, summarize_samples
from .units import observation_units

_TESTS = ("Lt", "Le", "Gt", "Ge", "Eq", "Ne", "And", "Or")


def _test_observations(prog):
    """Observation indices whose (first) expression is a comparison or logic."""
    out = set()
    seen = set()
    for block in prog.blocks:
        for st in block:
            if type(st) is ir.Observe and st.obs not in seen:
                seen.add(st.obs)
                v = st.value
                if (type(v) is ir.Binary and v.op in _TESTS) or \
                        (type(v) is ir.Unary and v.op == "Not"):
                    out.add(st.obs)
    return out


def _mean(w):
    return w.mean if w.n else None


_CLAIM_KIND = {"AtEnd": "at_end", "EveryIteration": "every_iteration",
               "SomeIteration": "some_iteration"}


def claim_row(c, live: int) -> ClaimRow:
    kind = _CLAIM_KIND[c.kind]
    if c.out_of_scope is not None:
        return ClaimRow(c.name, kind, "out_of_scope", c.checked, c.failures, c.first,
                        "session %d fails `given`" % c.out_of_scope)
    if c.kind == "AtEnd" and c.checked == 0:
        return ClaimRow(c.name, kind, "not_evaluated", 0, 0, None,
                        "%d session%s live at the end" % (live, "" if live == 1 else "s"))
    if c.kind == "SomeIteration":
        result = "witnessed" if c.first is not None else "not_witnessed"
    else:
        result = "fails" if c.failures else "holds"
    return ClaimRow(c.name, kind, result, c.checked, c.failures, c.first, None)


def _decode_tokens(stats) -> int:
    """Decodes served by the iterations begun after warm-up (the decode
    batch sizes' sum, from their mean and count)."""
    w = stats.decode_batch
    return int(round(w.n * w.mean)) if w.n else 0


def rates(report: Report, has_turns: bool) -> Rates:
    """The report's :class:`Rates` from its counts and step rows."""
    span = report.end - report.warmup
    per = (lambda x: x / span) if span > 0 else (lambda x: 0.0)
    tokens = None
    steps = [s.decode_tokens for s in report.stages if s.decode_tokens is not None]
    if steps:
        tokens = sum(steps)
    sessions, turns = per(report.ended), per(report.turns)
    return Rates(span=span, sessions=sessions, turns=turns,
                 requests=turns if has_turns else sessions,
                 tokens=None if tokens is None else per(tokens), decode_tokens=tokens)


def build_report(sim, extras: bool = True) -> Report:
    """The report of a finished run.  ``extras`` (serq's own measures, not
    the reference's JSON: the percentiles, units and rates) may be left out
    where only the reference's JSON is printed: it sorts each observation's
    samples once more.  (With the collector relaxed, as for the run:
    collector.py.)"""
    with relaxed():
        return _build_report(sim, extras)


def _build_report(sim, extras: bool) -> Report:
    prog = sim.prog
    end = sim.end
    span = end - prog.warmup
    tests = _test_observations(prog)
    units = observation_units(prog) if extras else None
    observes = {}
    for i, o in enumerate(sim.observations):
        ordered = None
        if o.running:  # --no-samples: ci and p99 estimated (report/stats.py)
            count, mean, ci, cv2, p99 = summarize_running(o.summary)
        else:
            ordered = sorted(o.values)  # (once, for the p99 and the percentiles)
            count, mean, ci, cv2, p99 = summarize_samples(o.values, ordered)
        row = ObserveRow(o.name, count, mean, ci, cv2, p99, is_test=i in tests)
        if units is not None:
            row.quantiles = observation_quantiles(o, ordered)
            row.unit = units[i]
        observes[o.name] = row
    gauges = {}
    for g in sim.gauges:
        mean, ci, lo, hi = summarize_gauge(g.times, g.values, prog.warmup, end)
        gauges[g.name] = GaugeRow(g.name, mean, ci, lo, hi)
    stages = []
    for st in sim.stages:
        s = st.stats
        row = StageRow(
            name=st.name, index=st.member, mean_number=s.number.mean(end),
            utilization=s.util.mean(end), completed=s.completed,
            throughput=s.completed / span if span > 0 else 0.0, mean_wait=_mean(s.wait),
            mean_service=_mean(s.service), iterations=0, prefill_only=0.0,
            decode_only=0.0, mixed=0.0, mean_decodes=0.0, mean_decode_batch=None,
            mean_decode_step=None, mean_itl=None, itl_p50=None, itl_p99=None,
            idle_with_work=False)
        row.kind = "ps" if st.kind == "shared" else st.kind
        if st.kind == "fifo":
            row.servers = int(st.servers)
        if st.kind == "step":
            row.iterations = st.iterations
            row.prefill_only = s.prefill_only.mean(end)
            row.decode_only = s.decode_only.mean(end)
            row.mixed = s.mixed.mean(end)
            row.mean_decodes = s.decodes.mean(end)
            row.mean_decode_batch = _mean(s.decode_batch)
            row.mean_decode_step = _mean(s.decode_step)
            row.mean_itl = s.itl.mean()
            row.itl_p50 = s.itl.quantile(0.5)
            row.itl_p99 = s.itl.quantile(0.99)
            row.idle_with_work = st.idle_with_work
            if extras:
                row.itl_quantiles = histogram_quantiles(s.itl)
                row.decode_tokens = _decode_tokens(s)
        stages.append(row)
    pools = []
    waiting = [q for q in sim.pools if q.queue]  # (over_cap reads only these)
    # (and of those, where no queue orders by keys, only the queues whose
    # head asks the pool: not every queue for every pool)
    asking = sim.asking(waiting) if waiting else None
    for p in sim.pools:
        s = p.stats
        pools.append(PoolRow(
            name=p.name, index=p.member, mean_used=s.used.mean(end),
            mean_cached=s.cached.mean(end), mean_queue=s.queue.mean(end),
            mean_holders=s.holders.mean(end), mean_wait=_mean(s.wait),
            admissions=s.admissions, evicted_entries=s.evicted_entries,
            evicted_units=s.evicted_units, preemptions=s.preemptions, spills=s.spills,
            rejected=s.rejected, stuck=s.stuck,
            over_cap=sim.over_cap(p, waiting if asking is None else asking.get(p, ()))))
    report = Report(
        horizon=prog.horizon, end=end, warmup=prog.warmup, seed=prog.seed,
        events=sim.events, arrivals=sim.arrived, ended=sim.ended, turns=sim.turns,
        mean_live=sim.live_avg.mean(end), observes=observes, gauges=gauges,
        claims=[claim_row(c, sim.live) for c in sim.claims] if sim.claims else None,
        stages=stages, pools=pools)
    report.findings = compute_findings(sim, report)
    if extras:
        report.rates = rates(report, any(type(x) is ir.Turn for x in ir.walk(prog.blocks)))
    return report
