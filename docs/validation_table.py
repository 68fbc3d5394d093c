"""Build the table of docs/validation.md: serq's predictions against the
published measurements of tests/data/validation/points.csv.

    python docs/validation_table.py           # print the table
    python docs/validation_table.py --write   # put it into docs/validation.md
    python docs/validation_table.py --fit     # refit the calibrated parameters
                                              # (tests/data/validation/calibrated.json)

Each load of the data file (a model on GPUs, a number of requests with fixed
prompt and output lengths, sent at once or behind a concurrency cap) is
simulated with the cost library `serq cost` writes for it, once with the
default parameters and once with the calibrated ones.  The calibrated set is
one for every point, fitted (`--fit`, serq calibrate's Nelder-Mead search)
to the points of the `fit` half only; the `judge` half is held out.
tests/test_validation.py rebuilds the table and compares it with the doc.
"""
import csv
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "validation"
DOC = ROOT / "docs" / "validation.md"
BEGIN, END = "<!-- validation table: begin -->", "<!-- validation table: end -->"
SUMMARY_BEGIN, SUMMARY_END = "<!-- validation summary: begin -->", "<!-- validation summary: end -->"

# A published metric and the simulated one it is compared with.
METRIC = {"batch_latency": "e2el_mean",        # a batch's requests all finish together
          "ttft_mean": "ttft_mean",
          "itl_mean": "tpot_mean",             # AIPerf: (latency - TTFT) / (output - 1)
          "output_throughput": "output_throughput"}
UNIT = {"ms": 1e-3, "s": 1.0, "tok/s": 1.0}
# Metrics the 25 % target is about (decode speed and throughput).
DECODE_CLASS = ("batch_latency", "itl_mean", "output_throughput")


@dataclass
class Point:
    id: str
    load: str
    group: str
    half: str
    source: str
    figure: str
    engine: str
    model: str
    gpu: str
    tp: int
    dtype: str
    kv_dtype: str       # the KV cache's: auto (vLLM's default, bf16), bf16 or fp8
    kv_basis: str       # where that comes from, or the assumption
    admission: str      # as-needed (vLLM: blocks as written, recompute preemption) or
                        # reserve (TensorRT-LLM's GUARANTEED_NO_EVICT: the whole request's)
    requests: int
    concurrency: Optional[int]
    prompt: int
    output: int
    metric: str
    measured: float     # seconds or tokens a second
    unit: str


def read_points(path: Path = DATA / "points.csv") -> List[Point]:
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            out.append(Point(row["id"], row["load"], row["group"], row["half"], row["source"], row["figure"],
                             row["engine"], row["model"], row["gpu"], int(row["tp"]),
                             row["dtype"], row["kv_dtype"], row["kv_basis"], row["admission"],
                             int(row["requests"]),
                             int(row["concurrency"]) if row["concurrency"] else None,
                             int(row["prompt"]), int(row["output"]), row["metric"],
                             float(row["measured"]) * UNIT[row["unit"]], row["unit"]))
    return out


def read_calibrated(path: Path = DATA / "calibrated.json"):
    """The calibrated parameters of each group."""
    from serq.costmodel.roofline import Knobs
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    return {g: Knobs(k["compute_eff"], k["memory_eff"], k["step_overhead"])
            for g, k in d["groups"].items()}


def loads(points: List[Point]) -> Dict[str, List[Point]]:
    out: Dict[str, List[Point]] = {}
    for p in points:
        out.setdefault(p.load, []).append(p)
    return out


def simulators(points: List[Point]):
    """A serq Simulator for each load."""
    from serq.costmodel.catalogue import lookup
    from serq.costmodel.loadsim import Simulator, fixed_load
    from serq.costmodel.roofline import deploy
    from serq.costmodel.roofline import DEFAULT_KNOBS
    sims = {}
    for key, ps in loads(points).items():
        p = ps[0]
        d = deploy(lookup("model", p.model), lookup("gpu", p.gpu), tp=p.tp, dtype=p.dtype,
                   kv_dtype=p.kv_dtype)
        stagger = 0.0
        if p.concurrency and p.concurrency > 1:
            # The clients spread over one cycle of the closed loop in its
            # steady state (default parameters): in the time one request
            # lives, each of the c clients' prompts is prefilled once (a
            # step the decodes wait for) and the request decodes output - 1
            # tokens among c decodes.
            k = DEFAULT_KNOBS.as_tuple()
            c = p.concurrency
            prefill = d.step_time(p.prompt, 0, 0, p.prompt, p.prompt * p.prompt / 2, *k)
            decode = d.step_time(c, c, c * (p.prompt + p.output / 2), 0, 0, *k)
            stagger = c * prefill + (p.output - 1) * decode
        sims[key] = Simulator(d, fixed_load(p.requests, p.prompt, p.output, p.concurrency,
                                            label=key, stagger=stagger,
                                            reserve=p.admission == "reserve"))
    return sims


def predict(points: List[Point], knobs) -> Dict[str, float]:
    """Each point's prediction; ``knobs`` is one parameter set or a dict
    of them by group."""
    sims = simulators(points)
    try:
        out = {}
        for key, ps in loads(points).items():
            m = sims[key].run(knobs[ps[0].group] if isinstance(knobs, dict) else knobs)
            for p in ps:
                out[p.id] = m.values[METRIC[p.metric]]
        return out
    finally:
        for s in sims.values():
            s.close()


def fit(points: List[Point], group: str, max_evals: int = 60):
    """A group's parameters fitted to its `fit` half."""
    from serq.costmodel.calibrate import Case, fit_simulated
    from serq.costmodel.roofline import DEFAULT_KNOBS
    train = [p for p in points if p.half == "fit" and p.group == group]
    sims = simulators(train)
    try:
        cases = []
        for key, ps in loads(train).items():
            targets = {METRIC[p.metric]: p.measured for p in ps}
            cases.append(Case(sims[key], targets, tuple(targets)))
        return fit_simulated(cases, DEFAULT_KNOBS, max_evals)
    finally:
        for s in sims.values():
            s.close()


def _fmt(x: float, unit: str) -> str:
    v = x / UNIT[unit]
    if unit == "tok/s":
        return "%.1f tok/s" % v
    return "%.4g %s" % (v, unit)


def _err(pred: float, meas: float) -> float:
    return pred / meas - 1


def build(points: List[Point], knobs: Dict) -> Tuple[str, str, Dict]:
    """The markdown table, the summary paragraph and the figures in them."""
    from serq.costmodel.loadsim import percentile
    from serq.costmodel.roofline import DEFAULT_KNOBS
    before = predict(points, DEFAULT_KNOBS)
    after = predict(points, knobs)
    rows = ["| point | model, GPUs | engine | load | metric | measured | uncalibrated | "
            "calibrated | half |",
            "|---|---|---|---|---|---|---|---|---|"]
    groups = sorted({p.group for p in points})
    params = ["| group | compute_eff | memory_eff | step_overhead | fitted on |",
              "|---|---|---|---|---|"]
    for g in groups:
        k = knobs[g]
        params.append("| %s | %.4g | %.4g | %.4g ms | %s |" % (
            g, k.compute_eff, k.memory_eff, k.step_overhead * 1e3,
            ", ".join(sorted({p.load for p in points if p.group == g and p.half == "fit"}))))
    stats: Dict[str, List[float]] = {"before": [], "before_decode": [], "before_ttft": [],
                                     "after_judge": [], "after_fit": [], "before_judge": []}
    for p in points:
        eb, ea = _err(before[p.id], p.measured), _err(after[p.id], p.measured)
        stats["before"].append(abs(eb))
        (stats["before_decode"] if p.metric in DECODE_CLASS else stats["before_ttft"]).append(
            abs(eb))
        stats["after_" + p.half].append(abs(ea))
        if p.half == "judge":
            stats["before_judge"].append(abs(eb))
        load = ("batch of %d" % p.requests if p.concurrency is None else
                "concurrency %d (%d requests)" % (p.concurrency, p.requests))
        rows.append("| [%s](%s) | %s on %s%s, %s | %s | %s, %d in / %d out | %s | %s | "
                    "%s (%+.1f %%) | %s (%+.1f %%) | %s |" % (
                        p.id, p.source, p.model, "%d x " % p.tp if p.tp > 1 else "", p.gpu,
                        p.dtype + (", %s KV" % p.kv_dtype if p.kv_dtype not in ("auto", "bf16")
                                   else ""), p.engine, load, p.prompt, p.output, p.metric,
                        _fmt(p.measured, p.unit), _fmt(before[p.id], p.unit), 100 * eb,
                        _fmt(after[p.id], p.unit), 100 * ea, p.half))
    rows += [""] + params
    med = {k: percentile(v, 50) for k, v in stats.items()}
    within = sum(1 for e in stats["before_decode"] if e <= 0.25)
    summary = (
        "Uncalibrated, the median |error| is %.1f %% over all %d rows: %.1f %% over the %d "
        "decode-speed and throughput rows (batch latency, ITL, throughput; %d of them within "
        "the 25 %% target) and %.1f %% over the %d TTFT rows. Calibrated (each group on its "
        "`fit` rows), the median |error| on the %d held-out `judge` rows is %.1f %% "
        "(uncalibrated %.1f %%; target 10 %%), and %.1f %% on the %d `fit` rows." % (
            100 * med["before"], len(points), 100 * med["before_decode"],
            len(stats["before_decode"]), within, 100 * med["before_ttft"],
            len(stats["before_ttft"]), len(stats["after_judge"]), 100 * med["after_judge"],
            100 * med["before_judge"], 100 * med["after_fit"], len(stats["after_fit"])))
    return "\n".join(rows) + "\n", summary + "\n", {"median": med, "within_25": within,
                                                     "before": before, "after": after}


def splice(text: str, begin: str, end: str, body: str) -> str:
    i, j = text.index(begin) + len(begin), text.index(end)
    return text[:i] + "\n" + body + text[j:]


def main(argv: List[str]) -> int:
    points = read_points()
    if "--fit" in argv:
        from serq.costmodel.calibrate import rounded
        groups = {}
        for g in sorted({p.group for p in points}):
            knobs, tried = fit(points, g)
            knobs = rounded(knobs)
            groups[g] = {"compute_eff": knobs.compute_eff, "memory_eff": knobs.memory_eff,
                         "step_overhead": knobs.step_overhead, "parameter_sets_tried": tried}
            print("%s: %r (%d parameter sets)" % (g, knobs, tried))
        with open(DATA / "calibrated.json", "w", encoding="utf-8") as f:
            json.dump({"by": "python docs/validation_table.py --fit",
                       "fitted_on": "the rows of each group with half = fit",
                       "groups": groups}, f, indent=2)
            f.write("\n")
    knobs = read_calibrated()
    table, summary, _ = build(points, knobs)
    if "--write" in argv:
        text = DOC.read_text(encoding="utf-8")
        text = splice(text, BEGIN, END, table)
        text = splice(text, SUMMARY_BEGIN, SUMMARY_END, summary)
        DOC.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(table + "\n" + summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


__all__ = ["read_points", "build", "predict", "fit"]
