"""The scalars of one run, as ``(metric, value)`` pairs in report order.

Metric names are ``KIND.NAME.FIELD``: the kind is ``run``, ``observe``,
``gauge``, ``stage``, ``pool`` or ``claim``; NAME is the report's name (a
family member as ``gpu[1]``; an observation of a queue keeps its dot, as
``Q.x``); FIELD is the report's field name.  ``None`` is a value the report
leaves null (a mean without samples).

Beyond the report's fields: an observation's ``p50``, ``p90`` and
``p99_9`` (the p99.9: nearest rank over its samples, as its ``p99``) and
its ``rate`` (samples per unit of time after the warm-up).  A stage gives
its step fields (iterations, ITL, ...) only when it is a step engine.

With SLOs (``serq sweep --slo``, report/slo.py) a run also gives, last,
``slo.LABEL.attainment`` for each SLO (LABEL is the SLO without spaces, its
bound in the program's units: ``slo.ttft<=0.5.attainment``) and
``slo.all.attainment``, ``slo.all.goodput`` (requests meeting every SLO a
second), ``slo.all.requests`` (requests counted) and
``slo.all.requests_per_s``.
"""
from typing import List, Optional, Tuple

from ..report.stats import nearest_rank

Metric = Tuple[str, Optional[float]]

RUN_FIELDS = ("end", "events", "arrivals", "ended", "turns", "mean_live")
OBSERVE_FIELDS = ("count", "rate", "mean", "ci", "cv2", "p50", "p90", "p99", "p99_9")
GAUGE_FIELDS = ("mean", "ci", "min", "max")
STAGE_FIELDS = ("mean_number", "utilization", "completed", "throughput", "mean_wait",
                "mean_service")
STEP_FIELDS = ("iterations", "prefill_only", "decode_only", "mixed", "mean_decodes",
               "mean_decode_batch", "mean_decode_step", "mean_itl", "itl_p50", "itl_p99",
               "idle_with_work")
POOL_FIELDS = ("mean_used", "mean_cached", "mean_queue", "mean_holders", "mean_wait",
               "admissions", "evicted_entries", "evicted_units", "preemptions", "spills",
               "rejected", "stuck")
CLAIM_FIELDS = ("checked", "failures")


def _num(v) -> Optional[float]:
    if v is None:
        return None
    return float(v)


def member(name: str, index: Optional[int]) -> str:
    return name if index is None else "%s[%d]" % (name, index)


def run_metrics(sim, report) -> List[Metric]:
    """Every scalar of a finished run (``sim``) and its report."""
    out: List[Metric] = []
    for f in RUN_FIELDS:
        out.append(("run." + f, _num(getattr(report, f))))
    span = report.end - report.warmup
    for o in sim.observations:
        row = report.observes[o.name]
        ordered = sorted(o.values)
        extra = {"rate": row.count / span if span > 0 else None,
                 "p50": nearest_rank(ordered, 0.5) if ordered else None,
                 "p90": nearest_rank(ordered, 0.9) if ordered else None,
                 "p99_9": nearest_rank(ordered, 0.999) if ordered else None}
        for f in OBSERVE_FIELDS:
            v = extra[f] if f in extra else getattr(row, f)
            out.append(("observe.%s.%s" % (o.name, f), _num(v)))
    for name, g in report.gauges.items():
        for f in GAUGE_FIELDS:
            out.append(("gauge.%s.%s" % (name, f), _num(getattr(g, f))))
    for st, row in zip(sim.stages, report.stages):
        label = member(row.name, row.index)
        fields = STAGE_FIELDS + (STEP_FIELDS if st.kind == "step" else ())
        for f in fields:
            out.append(("stage.%s.%s" % (label, f), _num(getattr(row, f))))
    for row in report.pools:
        label = member(row.name, row.index)
        for f in POOL_FIELDS:
            out.append(("pool.%s.%s" % (label, f), _num(getattr(row, f))))
    for c in report.claims or ():
        for f in CLAIM_FIELDS:
            out.append(("claim.%s.%s" % (c.name, f), _num(getattr(c, f))))
    return out


def slo_label(slo) -> str:
    """An SLO's name in a metric: its label without spaces (``ttft<=0.5``)."""
    return "".join(slo.label().split())


def slo_metrics(result) -> List[Metric]:
    """The SLO attainments and the goodput of one run (a ``report.slo``
    ``SloResult``)."""
    out: List[Metric] = []
    for row in result.slos:
        out.append(("slo.%s.attainment" % slo_label(row.slo), _num(row.attainment)))
    out.append(("slo.all.attainment", _num(result.all.attainment)))
    out.append(("slo.all.goodput", _num(result.goodput)))
    out.append(("slo.all.requests", _num(result.requests)))
    out.append(("slo.all.requests_per_s", _num(result.rate)))
    return out
