"""A ``serq capacity`` result read back for ``serq plot``: the ``--json``
object (``serq capacity ... --json > cap.json`` or ``-o cap.json``) or the
probes' CSV (``-o probes.csv``), checked and put in one shape
(:class:`Capacity`) for plot/capfigs.py.

A file that is neither (nor a sweep's table, which plot/cli.py reads with
sweep/table.py) is a :class:`UsageError` saying what it is not and what
writes a file that is.
"""
import csv
import json
import math
import re
from dataclasses import dataclass, field
from typing import List, Optional

from ..errors import UsageError

VERDICTS = ("pass", "fail", "undecided")
#: The columns of capacity's CSV after the parameter's (capacity/output.py).
CSV_COLUMNS = ("order", "slo", "mean", "ci_low", "ci_high", "n_seeds", "slo_verdict", "verdict")
CSV_EXTRA = ("unit", "goal", "confidence")
_SLO = re.compile(r"^(.*\S)\s+(<=|>=|<|>)\s+(\S+)$")  # greedy: the last operator
WRITE = ("write one with `serq capacity FILE ... --json > cap.json` (or `-o cap.json`, "
         "`-o probes.csv`)")


@dataclass
class Slo:
    text: str  # "p99(ttft) <= 0.5"
    statistic: str  # "p99(ttft)"
    op: str
    bound: float
    unit: Optional[str]  # "s", "share" or None (the program's units)


@dataclass
class Stat:
    mean: Optional[float]
    low: Optional[float]
    high: Optional[float]
    verdict: str


@dataclass
class Probe:
    order: int
    value: float
    seeds: int
    verdict: str
    stats: List[Stat]


@dataclass
class Capacity:
    path: str
    kind: str  # "json" or "csv"
    parameter: str
    goal: str  # "over" or "minimize"
    confidence: float
    low: Optional[float]
    high: Optional[float]
    answer: str
    slos: List[Slo]
    probes: List[Probe]
    status: Optional[str] = None
    partial: bool = False
    level: Optional[float] = None
    range: Optional[List[float]] = None
    notes: List[str] = field(default_factory=list)


def sniff(path: str) -> Optional[str]:
    """``"json"`` or ``"csv"`` for a file that looks like a capacity
    result (a JSON object; a CSV whose header has capacity's columns),
    None for anything else (a sweep's table, say)."""
    if path.lower().endswith(".parquet"):
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise UsageError("cannot read %s: %s" % (path, e.strerror or e)) from None
    text = head.decode("utf-8", "replace")
    if path.lower().endswith(".json") or text.lstrip().startswith(("{", "[")):
        return "json"
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        cols = next(csv.reader([line]), [])
        return "csv" if tuple(cols[1:1 + len(CSV_COLUMNS)]) == CSV_COLUMNS else None
    return None


def _bad(path: str, why: str) -> UsageError:
    return UsageError("%s is not a `serq capacity` result: %s" % (path, why), help=WRITE)


def _number(x, path: str, what: str, none: bool = True) -> Optional[float]:
    if x is None and none:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise _bad(path, "%s is %s, not a number" % (what, json.dumps(x)))
    return x


def describe(parameter: str, goal: str, low, high, confidence: float) -> str:
    """The answer in words (as capacity's text says it) from the bracket."""
    from ..report.text_ref import num
    conf = "%s%% confidence" % num(100 * confidence)
    what = ("the largest %s meeting every SLO" if goal == "over"
            else "the fewest %s meeting every SLO") % parameter
    if low is not None and high is not None:
        if low == high:
            return "%s is %s at %s" % (what, num(low), conf)
        return "%s is in [%s, %s] at %s" % (what, num(low), num(high), conf)
    if low is not None:
        return "%s is at least %s at %s" % (what, num(low), conf)
    if high is not None:
        return "%s is at most %s at %s" % (what, num(high), conf)
    return "%s is not decided: no probe passed or failed at %s" % (what, conf)


def _slo_parts(text: str):
    m = _SLO.match(text)
    return (m.group(1), m.group(2), m.group(3)) if m else (text, None, None)


def read_json(path: str) -> Capacity:
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except OSError as e:
        raise UsageError("cannot read %s: %s" % (path, e.strerror or e)) from None
    except UnicodeDecodeError as e:
        raise _bad(path, "it is not text (%s)" % e.reason) from None
    except ValueError as e:
        raise UsageError("%s is not JSON: %s" % (path, e),
                         help="serq plot draws a sweep's table (.csv, .parquet) or a capacity "
                         "result; " + WRITE) from None
    if not isinstance(d, dict):
        raise _bad(path, "it is a JSON %s, not an object" % type(d).__name__)
    missing = [k for k in ("parameter", "goal", "confidence", "low", "high", "slos", "probes")
               if k not in d]
    if missing:
        raise _bad(path, "its object has no %s" % ", ".join("`%s`" % k for k in missing))
    if d["goal"] not in ("over", "minimize") or not isinstance(d["parameter"], str):
        raise _bad(path, "`goal` is %s (over or minimize)" % json.dumps(d["goal"]))
    conf = _number(d["confidence"], path, "`confidence`", none=False)
    if not isinstance(d["slos"], list) or not d["slos"] or not isinstance(d["probes"], list):
        raise _bad(path, "`slos` and `probes` are lists (with at least one SLO)")
    slos = []
    for i, s in enumerate(d["slos"]):
        if not isinstance(s, dict) or not isinstance(s.get("slo"), str):
            raise _bad(path, "slos[%d] has no `slo` text" % i)
        stat, op, _b = _slo_parts(s["slo"])
        op = s.get("op", op)
        if op not in ("<=", "<", ">=", ">"):
            raise _bad(path, "slos[%d]'s `op` is %s" % (i, json.dumps(op)))
        unit = s.get("unit")
        slos.append(Slo(s["slo"], stat, op,
                        _number(s.get("bound"), path, "slos[%d].bound" % i, none=False),
                        unit if unit in ("s", "share") else None))
    probes = []
    for i, p in enumerate(d["probes"]):
        where = "probes[%d]" % i
        if not isinstance(p, dict) or not isinstance(p.get("stats"), list):
            raise _bad(path, "%s has no `stats` list" % where)
        if len(p["stats"]) not in (0, len(slos)):
            raise _bad(path, "%s has %d stats for %d SLOs" % (where, len(p["stats"]), len(slos)))
        stats = []
        for j, st in enumerate(p["stats"]):
            if not isinstance(st, dict):
                raise _bad(path, "%s.stats[%d] is not an object" % (where, j))
            stats.append(Stat(*[_number(st.get(k), path, "%s.stats[%d].%s" % (where, j, k))
                                for k in ("mean", "low", "high")],
                              st.get("verdict") if st.get("verdict") in VERDICTS
                              else "undecided"))
        probes.append(Probe(int(_number(p.get("order", i + 1), path, where + ".order",
                                        none=False)),
                            _number(p.get("value"), path, where + ".value", none=False),
                            int(_number(p.get("seeds", 0), path, where + ".seeds", none=False)),
                            p.get("verdict") if p.get("verdict") in VERDICTS else "undecided",
                            stats))
    low = _number(d["low"], path, "`low`")
    high = _number(d["high"], path, "`high`")
    answer = d.get("answer") if isinstance(d.get("answer"), str) else \
        describe(d["parameter"], d["goal"], low, high, conf)
    rng = d.get("range")
    rng = rng if isinstance(rng, list) and len(rng) == 2 and \
        all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rng) else None
    level = d.get("level")
    return Capacity(path, "json", d["parameter"], d["goal"], conf, low, high, answer, slos,
                    probes, d.get("status") if isinstance(d.get("status"), str) else None,
                    d.get("partial") is True,
                    level if isinstance(level, float) and 0 < level < 1 else None, rng)


def _cell(text: str, path: str, line: int, what: str, none: bool = True) -> Optional[float]:
    if text == "" and none:
        return None
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not math.isfinite(v):
        raise _bad(path, "line %d: %s is %r, not a number" % (line, what, text))
    return int(v) if v == int(v) and "." not in text and "e" not in text.lower() else v


def read_csv(path: str) -> Capacity:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            lines = list(csv.reader(f))
    except OSError as e:
        raise UsageError("cannot read %s: %s" % (path, e.strerror or e)) from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise _bad(path, str(e)) from None
    partial = False
    first = 0
    while first < len(lines) and lines[first] and lines[first][0].startswith("#"):
        partial = partial or ",".join(lines[first]).lstrip("#").strip().startswith("partial")
        first += 1
    header = lines[first] if first < len(lines) else []
    if tuple(header[1:1 + len(CSV_COLUMNS)]) != CSV_COLUMNS:
        raise _bad(path, "its header is not capacity's (NAME, %s)" % ", ".join(CSV_COLUMNS))
    col = {name: k for k, name in enumerate(header)}
    if not all(c in col for c in CSV_EXTRA):
        raise _bad(path, "it has no %s columns (an older serq's CSV): write it again, or "
                   "plot the --json result" % ", ".join(CSV_EXTRA))
    rows = [(first + 2 + i, r) for i, r in enumerate(lines[first + 1:]) if r]
    if not rows:
        raise _bad(path, "it has no probe")
    slos: List[Slo] = []
    index = {}
    probes = {}
    goal = confidence = None
    for line, r in rows:
        if len(r) != len(header):
            raise _bad(path, "line %d has %d cells, the header %d" % (line, len(r), len(header)))
        text = r[col["slo"]]
        if text not in index:
            stat, op, bound = _slo_parts(text)
            if op is None:
                raise _bad(path, "line %d: the slo %r is not `STAT(NAME) OP BOUND`"
                           % (line, text))
            index[text] = len(slos)
            unit = r[col["unit"]]
            slos.append(Slo(text, stat, op, _cell(bound, path, line, "the bound", none=False),
                            unit if unit in ("s", "share") else None))
        goal = r[col["goal"]]
        if goal not in ("over", "minimize"):
            raise _bad(path, "line %d: the goal is %r (over or minimize)" % (line, goal))
        confidence = _cell(r[col["confidence"]], path, line, "the confidence", none=False)
        order = int(_cell(r[col["order"]], path, line, "the order", none=False))
        if order not in probes:
            verdict = r[col["verdict"]]
            probes[order] = Probe(order, _cell(r[0], path, line, header[0], none=False),
                                  int(_cell(r[col["n_seeds"]], path, line, "n_seeds",
                                            none=False)),
                                  verdict if verdict in VERDICTS else "undecided", [])
        v = r[col["slo_verdict"]]
        probes[order].stats.append(Stat(_cell(r[col["mean"]], path, line, "the mean"),
                                        _cell(r[col["ci_low"]], path, line, "ci_low"),
                                        _cell(r[col["ci_high"]], path, line, "ci_high"),
                                        v if v in VERDICTS else "undecided"))
    out = sorted(probes.values(), key=lambda p: p.order)
    for p in out:
        if len(p.stats) != len(slos):
            raise _bad(path, "probe %d has %d rows for %d SLOs" % (p.order, len(p.stats),
                                                                   len(slos)))
    low, high = bracket(goal, out)
    answer = describe(header[0], goal, low, high, confidence)
    return Capacity(path, "csv", header[0], goal, confidence, low, high, answer, slos, out,
                    "interrupted" if partial else None, partial)


def bracket(goal: str, probes: List[Probe]):
    """The answer's (low, high) from the probes' verdicts, as the search
    makes it (capacity/search.py's ``bracket``)."""
    passed = [p.value for p in probes if p.verdict == "pass"]
    failed = [p.value for p in probes if p.verdict == "fail"]
    if goal == "over":
        return (max(passed) if passed else None), (min(failed) if failed else None)
    return (max(failed) + 1 if failed else None), (min(passed) if passed else None)


def read(path: str, kind: str) -> Capacity:
    return read_json(path) if kind == "json" else read_csv(path)
