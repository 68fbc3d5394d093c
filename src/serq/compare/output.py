"""What ``serq compare`` and ``serq sensitivity`` print and write: a text
table, one JSON object (``--json``) and a CSV table (``-o FILE.csv``).

CSV numbers are the shortest text that reads back to the same float, as in
``serq sweep``'s table; an empty cell is a missing value (no interval below
two seeds, a relative change against a mean of 0).  Intervals are written
as their two ends, ``*_ci_low`` and ``*_ci_high``.
"""
import csv
import io
import json
from typing import Dict, List, Optional, Sequence, Tuple

from ..report.text import num, table
from ..sweep.table import cell
from .paired import Difference, Effect
from .vary import Vary


def _pm(half: Optional[float]) -> str:
    return "-" if half is None else "\u00b1" + num(half)


def _pct(x: Optional[float]) -> str:
    if x is None:
        return "-"
    v = x * 100.0
    return "%s%%" % (("+" if v > 0 else "") + num(float("%.4g" % v)))


def _pct_half(h: Optional[float]) -> str:
    return "-" if h is None else "\u00b1%s%%" % num(float("%.3g" % (h * 100.0)))


def _ends(x: Optional[float], half: Optional[float]) -> Tuple[Optional[float], Optional[float]]:
    if x is None or half is None:
        return None, None
    return x - half, x + half


def _level(level: float) -> str:
    return "%s%%" % num(level * 100.0)


def _seeds(seeds: Sequence[int]) -> str:
    from ..sweep.seeds import describe
    return describe(list(seeds)) if seeds else "no seeds"


# ----------------------------------------------------------------- compare

def compare_text(diffs: Sequence[Difference], a: str, b: str, seeds: Sequence[int],
                 level: float, incomplete: Optional[str]) -> str:
    lines = ["A: %s" % a, "B: %s" % b,
             "%s, each run of A paired with B's at the same seed (common random numbers); "
             "%s confidence intervals" % (_seeds(seeds), _level(level))]
    if incomplete:
        lines.append(incomplete)
    lines.append("")
    ci = "%s CI" % _level(level)
    rows = []
    for d in diffs:
        sig = d.significant()
        gain = d.narrower()
        rows.append((d.metric, num(d.mean_a), num(d.mean_b), num(d.diff), _pm(d.diff_half),
                     "-" if sig is None else ("yes" if sig else "no"), _pct(d.rel),
                     _pct_half(d.rel_half), _pm(d.unpaired_half),
                     "-" if gain is None else "%sx" % num(float("%.3g" % gain))))
    lines += table(("metric", "A", "B", "B - A", ci, "differs", "B/A - 1", ci, "unpaired CI",
                    "narrower"), rows)
    short = [d for d in diffs if d.n < len(seeds)]
    for d in short:
        lines.append("note: %s: %d of %d seeds gave both runs a value" % (d.metric, d.n,
                                                                        len(seeds)))
    lines.append("differs: the interval of B - A leaves out 0; unpaired CI: the interval two "
                 "independent sets of runs would give; narrower: how many times narrower "
                 "the paired one is")
    return "\n".join(lines) + "\n"


def _difference_fields(d: Difference) -> List[Tuple[str, object]]:
    dl, dh = _ends(d.diff, d.diff_half)
    rl, rh = _ends(d.rel, d.rel_half)
    ul, uh = _ends(d.diff, d.unpaired_half)
    return [("metric", d.metric), ("n_seeds", d.n), ("mean_a", d.mean_a), ("mean_b", d.mean_b),
            ("diff", d.diff), ("diff_ci_low", dl), ("diff_ci_high", dh), ("rel_diff", d.rel),
            ("rel_ci_low", rl), ("rel_ci_high", rh), ("unpaired_ci_low", ul),
            ("unpaired_ci_high", uh)]


def compare_json(diffs: Sequence[Difference], a: Dict[str, object], b: Dict[str, object],
                 seeds: Sequence[int], level: float, incomplete: Optional[str]) -> str:
    out = {"a": a, "b": b, "seeds": list(seeds), "confidence": level,
           "incomplete": incomplete,
           "metrics": [dict(_difference_fields(d) + [("narrower", d.narrower())])
                       for d in diffs]}
    return json.dumps(out, indent=2) + "\n"


def compare_csv(diffs: Sequence[Difference]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([k for k, _ in _difference_fields(diffs[0])] if diffs else ["metric"])
    for d in diffs:
        w.writerow([cell(v) for _, v in _difference_fields(d)])
    return buf.getvalue()


# ------------------------------------------------------------- sensitivity

def sensitivity_text(effects: Sequence[Effect], varies: Sequence[Vary], file: str,
                     seeds: Sequence[int], level: float, incomplete: Optional[str]) -> str:
    lines = ["sensitivity of %s: %s, each constant's low and high runs paired with the base "
             "run at the same seed (common random numbers); %s confidence intervals"
             % (file, _seeds(seeds), _level(level))]
    for v in varies:
        lines.append("  " + v.describe())
    if incomplete:
        lines.append(incomplete)
    lines.append("")
    ci = "%s CI" % _level(level)
    rows = []
    for e in effects:
        v = next(x for x in varies if x.name == e.param)
        rows.append((e.metric, e.param, num(e.base), "%s: %s" % (num(v.low), _pct(e.low_change)),
                     _pct_half(e.low_half), "%s: %s" % (num(v.high), _pct(e.high_change)),
                     _pct_half(e.high_half), num(e.elasticity), _pm(e.elasticity_half)))
    lines += table(("metric", "constant", "base", "at low", ci, "at high", ci, "elasticity",
                    ci), rows, "llrrrrrrr")
    lines.append("at low, at high: the metric's change from the base at the constant's low "
                 "and high value; elasticity: (change from low to high) / (the constant's "
                 "relative change), sorted by its size within each metric")
    return "\n".join(lines) + "\n"


def _effect_fields(e: Effect, v: Vary) -> List[Tuple[str, object]]:
    ll, lh = _ends(e.low_change, e.low_half)
    hl, hh = _ends(e.high_change, e.high_half)
    el, eh = _ends(e.elasticity, e.elasticity_half)
    return [("constant", e.param), ("low", v.low), ("base", v.base), ("high", v.high),
            ("integer", v.integer), ("metric", e.metric), ("n_seeds", e.n),
            ("base_mean", e.base), ("low_change", e.low_change), ("low_change_ci_low", ll),
            ("low_change_ci_high", lh), ("high_change", e.high_change),
            ("high_change_ci_low", hl), ("high_change_ci_high", hh),
            ("elasticity", e.elasticity), ("elasticity_ci_low", el),
            ("elasticity_ci_high", eh)]


def _vary_of(varies: Sequence[Vary], name: str) -> Vary:
    return next(v for v in varies if v.name == name)


def sensitivity_json(effects: Sequence[Effect], varies: Sequence[Vary], file: str,
                     seeds: Sequence[int], level: float, incomplete: Optional[str]) -> str:
    out = {"file": file, "seeds": list(seeds), "confidence": level, "incomplete": incomplete,
           "constants": [{"name": v.name, "base": v.base, "low": v.low, "high": v.high,
                          "integer": v.integer, "asked": list(v.asked)} for v in varies],
           "effects": [dict(_effect_fields(e, _vary_of(varies, e.param))) for e in effects]}
    return json.dumps(out, indent=2) + "\n"


def sensitivity_csv(effects: Sequence[Effect], varies: Sequence[Vary]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = None
    for e in effects:
        fields = _effect_fields(e, _vary_of(varies, e.param))
        if header is None:
            header = [k for k, _ in fields]
            w.writerow(header)
        w.writerow(["yes" if v is True else "no" if v is False else cell(v)
                    for _, v in fields])
    return buf.getvalue()
