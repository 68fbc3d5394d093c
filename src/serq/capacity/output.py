"""A capacity search's result as text, as JSON and as a CSV of its probes.

JSON (``--json``), one object::

    {"parameter": "rate", "goal": "over", "low": 6.25, "high": 6.5,
     "confidence": 0.95, "answer": "...", "status": "resolved",
     "partial": false, "resolution": 0.25, "level": 0.99955,
     "max_probes": 14, "looks": [4, 8, 16, 32], "runs": 96,
     "budget_runs": 500, "first_seed": 1, "seed_step": 4294967296,
     "slos": [{"slo": "p99(ttft) <= 0.5", "statistic": "p99", "observe": "ttft",
               "op": "<=", "bound": 0.5, "unit": "s"}],
     "probes": [{"order": 1, "value": 1, "seeds": 4, "verdict": "pass",
                 "stats": [{"slo": "p99(ttft) <= 0.5", "mean": 0.031,
                            "low": 0.030, "high": 0.032, "verdict": "pass",
                            "missing": 0, "values": [0.031, ...]}]}]}

``low``/``high`` are null for an end the search could not close (the
answer below the range, above it, or not decided); the probes come in the
order they were run, each statistic's ``values`` one per seed in seed
order (null for a run that gave none).  The CSV (``-o FILE``) has one row
per probe and SLO: the parameter's value, ``order``, ``slo``, ``mean``,
``ci_low``, ``ci_high``, ``n_seeds``, ``slo_verdict``, ``verdict``,
``unit`` (as the JSON's, empty for null), ``goal`` and ``confidence``; a
partial search's file starts with a line ``# partial: ...``.  ``-o
FILE.json`` writes the ``--json`` object instead (``serq plot FILE.json``
draws it: plot/capfigs.py).
"""
import json
import math
from typing import Optional

from .search import PASS, FAIL, SEED_STEP


def _num(x) -> Optional[float]:
    if x is None:
        return None
    if isinstance(x, int):
        return x
    x = float(x)
    return x if math.isfinite(x) else None


STATUS = {
    "resolved": "resolved",
    "undecided": "the probes next to the answer stay undecided (the statistic sits near its "
                 "bound there): more seeds (--max-seeds) or a longer --horizon narrow it",
    "budget": "the budget of runs ran out (--budget-runs)",
    "probes": "the most probes the confidence was split over were made",
    "interrupted": "interrupted: the bracket reached so far (partial)",
}


def _spec_json(spec) -> dict:
    d = {"slo": spec.full_label(), "statistic": spec.stat, "op": spec.op,
         "bound": _num(spec.bound), "unit": spec.unit}
    if spec.kind == "goodput":
        d["slos"] = [s.label() for s in spec.slos]
    else:
        d["observe"] = spec.name
    return d


def result_dict(r) -> dict:
    p = r.plan
    probes = []
    for pr in r.probes:
        stats = []
        for spec, st in zip(r.specs, pr.stats):
            stats.append({"slo": spec.full_label(), "mean": _num(st.mean), "low": _num(st.low),
                          "high": _num(st.high), "verdict": st.verdict,
                          "missing": st.missing, "values": [_num(v) for v in st.values]})
        probes.append({"order": pr.order, "value": _num(pr.value), "seeds": pr.seeds,
                       "verdict": pr.verdict, "stats": stats})
    return {"parameter": p.name, "goal": p.goal, "low": _num(r.low), "high": _num(r.high),
            "confidence": p.confidence, "answer": r.describe(), "status": r.status,
            "partial": r.partial, "range": [_num(p.value(0)), _num(p.value(p.steps))],
            "resolution": _num(float(p.resolution) if not p.integer else int(p.resolution)),
            "level": p.level, "max_probes": p.max_probes, "looks": list(p.schedule),
            "runs": r.runs, "budget_runs": p.budget, "first_seed": p.first_seed,
            "seed_step": SEED_STEP, "slos": [_spec_json(s) for s in r.specs],
            "probes": probes}


def result_json(r) -> str:
    return json.dumps(result_dict(r), allow_nan=False)


def _cell(st) -> str:
    from ..report.text_ref import num
    if st is None or st.mean is None:
        return "-"
    mark = {PASS: "pass", FAIL: "fail"}.get(st.verdict, "?")
    if st.low is None:
        return "%s %s" % (num(st.mean), mark)
    return "%s [%s, %s] %s" % (num(st.mean), num(st.low), num(st.high), mark)


def result_text(r) -> str:
    from ..report.text_ref import num, table
    p = r.plan
    lines = ["%s: %s" % (p.name, r.describe())]
    if r.status != "resolved":
        lines.append("status: %s" % STATUS.get(r.status, r.status))
    lines.append("SLOs: %s" % "; ".join(s.full_label() for s in r.specs))
    lines.append("probes: %d (at most %d); runs: %d (budget %d); seeds a probe: %s; "
                 "resolution %s" % (len(r.probes), p.max_probes, r.runs, p.budget,
                                    ", ".join(str(n) for n in p.schedule),
                                    num(float(p.resolution)) if not p.integer
                                    else str(int(p.resolution))))
    lines.append("each interval: mean over seeds -+ Student t, each side at %s "
                 "(1 - %s / (%d probes x %d looks x %d SLO%s))"
                 % ("%.6g" % p.level, num(1 - p.confidence), p.max_probes, len(p.schedule),
                    len(r.specs), "" if len(r.specs) == 1 else "s"))
    lines.append("")
    header = ["#", p.name, "seeds"] + [s.full_label() for s in r.specs] + ["verdict"]
    rows = []
    for pr in sorted(r.probes, key=lambda x: x.value):
        stats = pr.stats or [None] * len(r.specs)
        rows.append([str(pr.order), num(pr.value), str(pr.seeds)] +
                    [_cell(st) for st in stats] + [pr.verdict])
    lines += table(header, rows, "rrr" + "l" * (len(r.specs) + 1))
    return "\n".join(lines) + "\n"


def result_csv(r) -> str:
    import csv
    import io
    from ..sweep.table import cell
    p = r.plan
    buf = io.StringIO()
    if r.partial:
        buf.write("# partial: %s\n" % STATUS["interrupted"])
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([p.name, "order", "slo", "mean", "ci_low", "ci_high", "n_seeds", "slo_verdict",
                "verdict", "unit", "goal", "confidence"])
    for pr in sorted(r.probes, key=lambda x: x.value):
        for spec, st in zip(r.specs, pr.stats):
            w.writerow([cell(pr.value), str(pr.order), spec.full_label(), cell(st.mean),
                        cell(st.low), cell(st.high), str(pr.seeds), st.verdict, pr.verdict,
                        spec.unit or "", p.goal, cell(p.confidence)])
    return buf.getvalue()


def summary(r, path: str) -> str:
    if path.lower().endswith(".json"):
        return "wrote %s: the answer and %d probe%s x %d SLO%s as JSON" % (
            path, len(r.probes), "" if len(r.probes) == 1 else "s", len(r.specs),
            "" if len(r.specs) == 1 else "s")
    rows = sum(len(pr.stats) for pr in r.probes)
    return "wrote %s: %d row%s (%d probe%s x %d SLO%s)" % (
        path, rows, "" if rows == 1 else "s", len(r.probes), "" if len(r.probes) == 1 else "s",
        len(r.specs), "" if len(r.specs) == 1 else "s")
