"""The measurements ``serq calibrate`` reads: a per-step CSV and the result
JSON of ``vllm bench serve``.  Every problem with a file is a ``SerqError``
naming the file and the row and column (CSV) or the field (JSON), what is
wrong and how to fix it."""
import csv
import io
import json
import math
import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..errors import SerqError, Span
from .loadsim import Load, Request, percentile

# ---------------------------------------------------------------- the step CSV

# Each step variable and the header names taken for it (compared after
# lower-casing and turning spaces and dashes into `_`).
STEP_COLUMNS: List[Tuple[str, Tuple[str, ...]]] = [
    ("tokens", ("tokens", "num_tokens", "scheduled_tokens", "batched_tokens")),
    ("prefilled", ("prefilled", "prefill_tokens", "num_prefill_tokens")),
    ("decoders", ("decoders", "decodes", "num_decodes", "decode_requests")),
    ("kv_decode", ("kv_decode", "kv_decode_tokens", "context_tokens")),
    ("kv_prefill", ("kv_prefill", "kv_prefill_tokens")),
    ("kv_tokens", ("kv_tokens", "kv", "kv_cache_tokens")),
    ("attention", ("attention", "attention_pairs")),
]
# The step's measured time and the factor to seconds.
DURATION_COLUMNS: List[Tuple[str, float]] = [
    ("duration", 1.0), ("duration_s", 1.0), ("step_time", 1.0), ("step_time_s", 1.0),
    ("seconds", 1.0), ("duration_ms", 1e-3), ("step_time_ms", 1e-3), ("ms", 1e-3),
    ("duration_us", 1e-6), ("step_time_us", 1e-6), ("us", 1e-6),
]

STEP_HELP = ("a per-step CSV has a header row naming at least `tokens` and the step time "
             "(`duration` in seconds, `duration_ms` or `duration_us`), and may have "
             "`prefilled`, `decoders`, `kv_decode`, `kv_prefill` (or `kv_tokens`) and "
             "`attention`; docs/costs.md lists every accepted name")


@dataclass
class Step:
    line: int
    tokens: float
    prefilled: float
    decoders: float
    kv_decode: float
    kv_prefill: float
    attention: float
    duration: float     # seconds

    @property
    def kind(self) -> str:
        if self.prefilled <= 0:
            return "decode"
        return "prefill" if self.decoders <= 0 else "mixed"


@dataclass
class Steps:
    path: str
    rows: List[Step]
    columns: List[str]          # the step variables the file gave
    notes: List[str] = field(default_factory=list)


def _norm(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def _read_text(path: str, what: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise SerqError("cannot read the %s %s: %s" % (what, path, e.strerror or e))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise SerqError("%s is not UTF-8 text (byte %d)" % (path, e.start),
                        help="save the %s as UTF-8" % what)


def _cell_col(line_text: str, index: int) -> int:
    """1-based column of the index-th comma-separated cell of a line (quotes
    aside: good enough for a caret)."""
    col = 1
    for _ in range(index):
        j = line_text.find(",", col - 1)
        if j < 0:
            break
        col = j + 2
    return col


def read_steps(path: str) -> Steps:
    text = _read_text(path, "step CSV")
    lines = text.splitlines()
    rows = list(csv.reader(io.StringIO(text)))
    # the first non-blank row is the header
    start = 0
    while start < len(rows) and not any(c.strip() for c in rows[start]):
        start += 1
    if start == len(rows):
        raise SerqError("%s is empty: no header row, no steps" % path, help=STEP_HELP)
    header = [_norm(c) for c in rows[start]]
    header_line = start + 1

    def span(line: int, index: int, length: int = 1) -> Span:
        text_line = lines[line - 1] if 0 < line <= len(lines) else ""
        return Span(path, line, _cell_col(text_line, index), max(1, length))

    found: Dict[str, int] = {}
    for var, names in STEP_COLUMNS:
        for i, h in enumerate(header):
            if h in names:
                found[var] = i
                break
    dur: Optional[Tuple[int, float, str]] = None
    for name, scale in DURATION_COLUMNS:
        if name in header:
            dur = (header.index(name), scale, name)
            break
    missing = []
    if "tokens" not in found:
        missing.append("no `tokens` column (the tokens each step served)")
    if dur is None:
        missing.append("no step-time column (`duration` in seconds, `duration_ms` or "
                       "`duration_us`)")
    if missing:
        raise SerqError("the header has %s; it names %s" % (
            " and ".join(missing),
            ", ".join("`%s`" % h for h in rows[start]) or "nothing"),
            span=span(header_line, 0, len(lines[header_line - 1]) if lines else 1),
            source=text, help=STEP_HELP)
    if "kv_tokens" in found and ("kv_decode" in found or "kv_prefill" in found):
        raise SerqError("`kv_tokens` and `kv_decode`/`kv_prefill` both given", span=span(header_line, found["kv_tokens"]), source=text,
            help="give the KV tokens of the decodes and of the prefills apart "
                 "(`kv_decode`, `kv_prefill`), or their sum (`kv_tokens`), not both")
    assert dur is not None
    steps: List[Step] = []
    for k in range(start + 1, len(rows)):
        row = rows[k]
        line = k + 1
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise SerqError("%d cells, the header has %d" % (len(row), len(header)),
                            span=span(line, 0, len(lines[k]) if k < len(lines) else 1),
                            source=text, help="every row has one cell for each header name")
        vals: Dict[str, float] = {}
        for var, i in list(found.items()) + [("duration", dur[0])]:
            cell = row[i].strip()
            name = rows[start][i].strip()
            try:
                v = float(cell)
            except ValueError:
                v = math.nan
            if math.isnan(v) or math.isinf(v):
                raise SerqError("column `%s` is `%s`, not a number" % (name, cell), span=span(line, i, len(row[i]) or 1), source=text,
                    help="write a plain number (%s)" % (
                        "the step time in %s" % ("seconds" if dur[1] == 1 else
                                                 "milliseconds" if dur[1] == 1e-3
                                                 else "microseconds")
                        if var == "duration" else "a count of tokens or requests"))
            if v < 0 or (var == "duration" and v == 0):
                raise SerqError("column `%s` is %s; it must be %s" % (
                    name, cell, "positive" if var == "duration" else
                    "zero or more"), span=span(line, i, len(row[i]) or 1), source=text,
                    help="a step takes some time and counts no negative tokens")
            vals[var] = v * dur[1] if var == "duration" else v
        tokens = vals["tokens"]
        prefilled = vals.get("prefilled")
        decoders = vals.get("decoders")
        if prefilled is None:
            prefilled = tokens - decoders if decoders is not None else 0.0
        if decoders is None:
            decoders = tokens - prefilled
        if prefilled + decoders > tokens + 1e-9 or prefilled < 0 or decoders < 0:
            raise SerqError(("%g prefilled tokens are more than the step's %g tokens" % (
                prefilled, tokens)) if decoders < 0 or prefilled > tokens else
                ("%g prefilled tokens and %g decodes make more than the step's %g tokens" % (
                    prefilled, decoders, tokens)),
                            span=span(line, found.get("prefilled", found["tokens"])),
                            source=text, help="`tokens` counts each decode's token and each "
                            "prefill chunk's tokens: prefilled + decoders = tokens")
        kv_decode = vals.get("kv_decode", 0.0)
        kv_prefill = vals.get("kv_prefill", 0.0)
        if "kv_tokens" in vals:
            # A sum: the decodes' when the step decodes, else the prefills'.
            if decoders > 0:
                kv_decode = vals["kv_tokens"]
            else:
                kv_prefill = vals["kv_tokens"]
        attention = vals.get("attention")
        if attention is None:
            # one prompt from position 0: about n^2 / 2 (query, key) pairs
            attention = prefilled * prefilled / 2.0
        steps.append(Step(line, tokens, prefilled, decoders, kv_decode, kv_prefill, attention,
                          vals["duration"]))
    if len(steps) < 3:
        raise SerqError("%s has %d step row%s; a fit of three parameters needs at least 3 "
                        "(and many more to mean anything)" % (path, len(steps),
                                                               "" if len(steps) == 1 else "s"),
                        help="record more steps: decode-only steps at a few batch sizes "
                             "and some steps with prefills")
    notes = []
    if "decoders" not in found and "prefilled" not in found:
        notes.append("no `decoders` or `prefilled` column: every token taken for a decode")
    if "attention" not in found and any(s.prefilled for s in steps):
        notes.append("no `attention` column: each step's prefill taken as one prompt from "
                     "position 0 (prefilled^2 / 2 pairs)")
    return Steps(path, steps, sorted(found), notes)


# ---------------------------------------------------------- vllm bench serve

BENCH_HELP = ("`vllm bench serve --save-result --save-detailed` writes the per-request "
              "lists serq needs (input_lens, output_lens, ttfts, itls, latencies)")

# The targets: metric key, the per-request list, the summary field (ms).
TARGETS = [("ttft", "median_ttft_ms", "p99_ttft_ms"),
           ("tpot", "median_tpot_ms", "p99_tpot_ms"),
           ("itl", "median_itl_ms", "p99_itl_ms"),
           ("e2el", "median_e2el_ms", "p99_e2el_ms")]


@dataclass
class Bench:
    path: str
    load: Load
    targets: Dict[str, float]          # metric key -> measured value (seconds)
    throughput: Optional[float]        # output tokens a second, measured
    arrivals: str                      # how the send times were obtained
    failed: int = 0


def _field(path: str, data: dict, key: str, required: bool = True):
    if key not in data:
        if required:
            raise SerqError("%s: no field `%s`" % (path, key), help=BENCH_HELP)
        return None
    return data[key]


def _number(path: str, where: str, v, allow_none: bool = False) -> Optional[float]:
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or v < 0:
        raise SerqError("%s: `%s` is %s, not a non-negative number" % (
            path, where, json.dumps(v)[:40]),
            help="the field holds seconds, tokens or requests as JSON numbers: %s" % BENCH_HELP)
    return float(v)


def _list(path: str, data: dict, key: str, n: Optional[int], required: bool = True):
    v = _field(path, data, key, required)
    if v is None:
        return None
    if not isinstance(v, list):
        raise SerqError("%s: `%s` is %s, not a list" % (path, key, type(v).__name__),
                        help=BENCH_HELP)
    if n is not None and len(v) != n:
        raise SerqError("%s: `%s` has %d entries, `input_lens` %d" % (path, key, len(v), n),
                        help="the per-request lists have one entry for each request, in "
                             "the same order")
    return v


def read_bench(path: str, seed: int = 0) -> Bench:
    text = _read_text(path, "benchmark result")
    if not text.strip():
        raise SerqError("%s is empty" % path, help=BENCH_HELP)
    try:
        data = json.loads(text)
    except ValueError as e:
        line = getattr(e, "lineno", 1)
        col = getattr(e, "colno", 1)
        msg = getattr(e, "msg", str(e))
        raise SerqError("not JSON: %s" % msg,
                        span=Span(path, line, col), source=text,
                        help="give the file `vllm bench serve --save-result` wrote")
    if not isinstance(data, dict):
        raise SerqError("%s: the JSON is a %s, not an object of fields" % (
            path, type(data).__name__), help=BENCH_HELP)
    ins = _list(path, data, "input_lens", None)
    n = len(ins)
    if n == 0:
        raise SerqError("%s: `input_lens` is empty: no requests" % path, help=BENCH_HELP)
    outs = _list(path, data, "output_lens", n)
    errors = _list(path, data, "errors", n, required=False)
    ok = []
    for i in range(n):
        p = _number(path, "input_lens[%d]" % i, ins[i])
        o = _number(path, "output_lens[%d]" % i, outs[i])
        err = errors[i] if errors is not None else ""
        failed = (isinstance(err, str) and err.strip() != "") or o == 0
        ok.append((i, int(p), int(o), not failed))
    good = [k for k in ok if k[3]]
    if not good:
        raise SerqError("%s: every request failed (empty output or an error)" % path,
                        help="benchmark a server that answers")
    # when each request was sent
    starts = _list(path, data, "start_times", n, required=False)
    conc_v = data.get("max_concurrency")
    conc = None
    if conc_v is not None:
        c = _number(path, "max_concurrency", conc_v)
        assert c is not None
        if c < 1 or c != int(c):
            raise SerqError("%s: `max_concurrency` is %s, not a whole number of requests" % (
                path, json.dumps(conc_v)), help="null, or the --max-concurrency it ran with")
        conc = int(c)
    sent: List[float]
    if starts is not None:
        vals = [_number(path, "start_times[%d]" % i, s) for i, s in enumerate(starts)]
        t0 = min(v for v in vals if v is not None)
        sent = [(v or 0.0) - t0 for v in vals]
        how = "the recorded start times"
    else:
        rate_v = _field(path, data, "request_rate")
        if isinstance(rate_v, str) and rate_v.strip().lower() in ("inf", "infinity"):
            rate = math.inf
        else:
            r = _number(path, "request_rate", rate_v)
            assert r is not None
            if r == 0:
                raise SerqError("%s: `request_rate` is 0" % path,
                                help="a positive rate, or \"inf\" (all requests at once)")
            rate = r
        burst_v = data.get("burstiness", 1.0)
        burst = _number(path, "burstiness", burst_v)
        if not burst:
            raise SerqError("%s: `burstiness` is 0" % path, help="a positive gamma shape; "
                            "1 is a Poisson stream")
        if math.isinf(rate):
            sent = [0.0] * n
            how = "all at once (request_rate inf)"
        else:
            # vllm bench serve draws gamma gaps of mean 1/rate, shape
            # burstiness; serq draws its own with the seed (not the same
            # draws: the send times were not saved).
            rng = random.Random(seed)
            sent, t = [], 0.0
            for _ in range(n):
                sent.append(t)
                t += rng.gammavariate(burst, 1.0 / (rate * burst))
            how = "%s arrivals at %g a second, seed %d" % (
                "Poisson" if burst == 1 else "gamma (shape %g)" % burst, rate, seed)
    reqs = [Request(sent[i], p, o) for i, p, o, good_ in ok if good_]
    load = Load(reqs, conc, path)
    targets = _targets(path, data, n, [k[3] for k in ok], [k[2] for k in ok])
    if not targets:
        raise SerqError("%s: no measured latencies: neither the per-request `ttfts`, `itls`, "
                        "`latencies` nor the summary `median_ttft_ms` and friends" % path,
                        help=BENCH_HELP)
    tp = data.get("output_throughput")
    throughput = _number(path, "output_throughput", tp) if tp is not None else None
    return Bench(path, load, targets, throughput, how, n - len(good))


def _targets(path: str, data: dict, n: int, good: List[bool], outs: List[int]) -> Dict[str, float]:
    out: Dict[str, float] = {}
    ttfts = _list(path, data, "ttfts", n, required=False)
    lat_key = "latencies" if "latencies" in data else "e2els"
    lats = _list(path, data, lat_key, n, required=False)
    itls = _list(path, data, "itls", n, required=False)
    t_vals: List[float] = []
    l_vals: List[float] = []
    tp_vals: List[float] = []
    i_vals: List[float] = []
    for i in range(n):
        if not good[i]:
            continue
        t = _number(path, "ttfts[%d]" % i, ttfts[i]) if ttfts is not None else None
        lat = _number(path, "%s[%d]" % (lat_key, i), lats[i]) if lats is not None else None
        if t is not None:
            t_vals.append(t)
        if lat is not None:
            l_vals.append(lat)
        if t is not None and lat is not None and outs[i] > 1:
            tp_vals.append((lat - t) / (outs[i] - 1))
        if itls is not None:
            row = itls[i]
            if not isinstance(row, list):
                raise SerqError("%s: `itls[%d]` is %s, not a list of gaps" % (
                    path, i, json.dumps(row)[:40]), help=BENCH_HELP)
            for j, g in enumerate(row):
                v = _number(path, "itls[%d][%d]" % (i, j), g)
                assert v is not None
                i_vals.append(v)
    for key, vals in (("ttft", t_vals), ("e2el", l_vals), ("tpot", tp_vals), ("itl", i_vals)):
        if vals:
            out[key + "_median"] = percentile(vals, 50)
            out[key + "_p99"] = percentile(vals, 99)
    for key, med, p99 in TARGETS:
        for suffix, name in (("_median", med), ("_p99", p99)):
            if key + suffix not in out and name in data:
                v = _number(path, name, data[name], allow_none=True)
                if v is not None:
                    out[key + suffix] = v / 1000.0
    return out
