"""The report as plain data: one dataclass per JSON object, fields in the
order pyserq 0.1.3 writes them.

``None`` stands for JSON ``null`` (a mean without samples, a CI below 40
samples, a stage's ``mean_wait`` when nothing started, ...); non-finite
floats are also written as ``null``.  Count fields are ``int``; every other
number is a ``float`` (pyserq prints integral floats without a fraction, so
the JSON text alone does not tell them apart).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from .._dataclass import dataclass, field

if TYPE_CHECKING:
    from .findings import Finding
    from .slo import SloResult

SERQ_VERSION = "0.1.3"


@dataclass
class ObserveRow:
    """``observes.NAME``.  ``is_test`` (not in JSON) is set by the simulator
    when the observed expression's outermost operator is a comparison or a
    logical operator; the text report then notes a constant 0 over >= 40
    samples."""
    name: str
    count: int
    mean: Optional[float]
    ci: Optional[float]
    cv2: Optional[float]
    p99: Optional[float]
    is_test: bool = False
    # serq's own (not in the reference's JSON; report/quantiles.py,
    # report/units.py): the p50, p90, p99 and p99.9 (p99 as above), and
    # "s" for an observation of times (None: the program's units).
    quantiles: Optional[List[Optional[float]]] = field(default=None, compare=False)
    unit: Optional[str] = field(default=None, compare=False)

    JSON_FIELDS = ("count", "mean", "ci", "cv2", "p99")

    def constant_zero(self) -> bool:
        """A test observation (values 0/1) that read 0 in all of >= 40 samples."""
        return self.is_test and self.count >= 40 and self.mean == 0


@dataclass
class GaugeRow:
    """``gauges.NAME``: time average over [warmup, end] of a gauge."""
    name: str
    mean: float
    ci: float
    min: float
    max: float

    JSON_FIELDS = ("mean", "ci", "min", "max")


@dataclass
class ClaimRow:
    """``claims[]``: ``kind`` is ``every_iteration``, ``some_iteration`` or
    ``at_end``; ``result`` one of ``holds fails witnessed not_witnessed
    not_evaluated out_of_scope``."""
    name: str
    kind: str
    result: str
    checked: int
    failures: int
    first: Optional[float]
    note: Optional[str]

    JSON_FIELDS = ("name", "kind", "result", "checked", "failures", "first", "note")
    INT_FIELDS = ("checked", "failures")


@dataclass
class StageRow:
    """``stages[]``, one per stage member in declaration order."""
    name: str
    index: Optional[int]
    mean_number: float
    utilization: float
    completed: int
    throughput: float
    mean_wait: Optional[float]
    mean_service: Optional[float]
    iterations: int
    prefill_only: float
    decode_only: float
    mixed: float
    mean_decodes: float
    mean_decode_batch: Optional[float]
    mean_decode_step: Optional[float]
    mean_itl: Optional[float]
    itl_p50: Optional[float]
    itl_p99: Optional[float]
    idle_with_work: bool
    # serq's own (not in the reference's JSON): a step stage's ITL p50, p90,
    # p99, p99.9 (report/quantiles.py) and its decode tokens after warm-up
    # (the generated tokens, see Rates); None for other stages.
    itl_quantiles: Optional[List[Optional[float]]] = field(default=None, compare=False)
    decode_tokens: Optional[int] = field(default=None, compare=False)
    # serq's own, for the text report's `kind` and `util` (report/text.py):
    # the stage's policy (``fifo``, ``ps``, ``delay``, ``step``; ``ps`` also
    # for a stage a `share` relation shares) and a fifo's servers; None for
    # a report read back from JSON.
    kind: Optional[str] = field(default=None, compare=False)
    servers: Optional[int] = field(default=None, compare=False)

    JSON_FIELDS = (
        "name", "index", "mean_number", "utilization", "completed",
        "throughput", "mean_wait", "mean_service", "iterations",
        "prefill_only", "decode_only", "mixed", "mean_decodes",
        "mean_decode_batch", "mean_decode_step", "mean_itl", "itl_p50",
        "itl_p99", "idle_with_work")
    INT_FIELDS = ("index", "completed", "iterations")


@dataclass
class PoolRow:
    """``pools[]``, one per pool member in declaration order (queue pools
    named ``Q.p``).  ``over_cap`` is ``None`` or ``(queue_label, need)``."""
    name: str
    index: Optional[int]
    mean_used: float
    mean_cached: float
    mean_queue: float
    mean_holders: float
    mean_wait: Optional[float]
    admissions: int
    evicted_entries: int
    evicted_units: float
    preemptions: int
    spills: int
    rejected: int
    stuck: int
    over_cap: Optional[Tuple[str, float]]

    JSON_FIELDS = (
        "name", "index", "mean_used", "mean_cached", "mean_queue",
        "mean_holders", "mean_wait", "admissions", "evicted_entries",
        "evicted_units", "preemptions", "spills", "rejected", "stuck",
        "over_cap")
    INT_FIELDS = ("index", "admissions", "evicted_entries", "preemptions",
                  "spills", "rejected", "stuck")


@dataclass
class Rates:
    """serq's own: rates over the measurement interval ``[warmup, end]``
    (``span`` seconds).

    * ``sessions``: sessions ended after warm-up, a second (``ended / span``);
    * ``turns``: turns begun after warm-up, a second (``turns / span``);
    * ``requests``: ``turns`` for a program whose sessions take turns, else
      ``sessions`` (a session is then one request);
    * ``tokens``: generated tokens a second: the decode tokens of every step
      stage (each decode a step iteration begun after warm-up serves is one
      token), ``None`` without a step stage.  The token a prefill yields
      (an answer's first, in vLLM's accounting) is not a decode and is not
      counted: add ``requests`` for it."""
    span: float
    sessions: float
    turns: float
    requests: float
    tokens: Optional[float]
    decode_tokens: Optional[int]

    JSON_FIELDS = ("span", "sessions", "turns", "requests", "tokens", "decode_tokens")


@dataclass
class Report:
    """The whole report.  ``claims`` is ``None`` when the program declares
    no claim (the key is then absent from the JSON)."""
    horizon: float
    end: float
    warmup: float
    seed: int
    events: int
    arrivals: int
    ended: int
    turns: int
    mean_live: float
    observes: Dict[str, ObserveRow] = field(default_factory=dict)
    gauges: Dict[str, GaugeRow] = field(default_factory=dict)
    claims: Optional[List[ClaimRow]] = None
    stages: List[StageRow] = field(default_factory=list)
    pools: List[PoolRow] = field(default_factory=list)
    serq_version: str = SERQ_VERSION
    # serq's own (never in the reference's JSON): the findings computed at
    # the end of the run (report/findings.py); None for a report read back
    # from JSON, whose findings come from its rows.
    findings: Optional[List["Finding"]] = field(default=None, compare=False)
    # serq's own: the rates (None for a report read back from JSON) and the
    # goodput under `--slo` (report/slo.py; None without SLOs).
    rates: Optional[Rates] = field(default=None, compare=False)
    slo: Optional["SloResult"] = field(default=None, compare=False)

    SCALAR_FIELDS = ("serq_version", "horizon", "end", "warmup", "seed",
                     "events", "arrivals", "ended", "turns", "mean_live")
    INT_FIELDS = ("seed", "events", "arrivals", "ended", "turns")

    def stuck(self) -> int:
        """Sessions counted stuck in pools (a `livelock` finding)."""
        return sum(p.stuck for p in self.pools)


# ---------------------------------------------------------------------------
# Reading pyserq's JSON (for tests and tools)

def _num(v) -> Optional[float]:
    return None if v is None else float(v)


def _int(v) -> Optional[int]:
    return None if v is None else int(v)


def _parse_int(text: str):
    # "-0" is a float written as an integer; every other integer text keeps
    # full precision (a u64 seed) and becomes a float where a float is due.
    return -0.0 if text == "-0" else int(text)


def _row(cls, obj: dict):
    ints = getattr(cls, "INT_FIELDS", ())
    kw = {}
    for k in cls.JSON_FIELDS:
        v = obj[k]
        if k in ints:
            v = _int(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            v = float(v)
        kw[k] = v
    return cls(**kw)


def from_pyserq_json(text: str) -> Report:
    """A :class:`Report` from pyserq's ``Report.json()`` text.

    ``-0`` keeps its sign, count fields become ``int`` and every other
    number a ``float`` (``100000000000000000000`` is the float 1e20);
    ``null`` becomes ``None``.
    """
    import json
    d = json.loads(text, parse_int=_parse_int)
    observes = {}
    for name, o in d["observes"].items():
        observes[name] = ObserveRow(name=name, count=int(o["count"]), mean=_num(o["mean"]),
                                    ci=_num(o["ci"]), cv2=_num(o["cv2"]), p99=_num(o["p99"]))
    gauges = {name: GaugeRow(name=name, mean=_num(g["mean"]), ci=_num(g["ci"]),
                             min=_num(g["min"]), max=_num(g["max"]))
              for name, g in d["gauges"].items()}
    claims = None
    if "claims" in d:
        claims = [_row(ClaimRow, c) for c in d["claims"]]
    stages = [_row(StageRow, s) for s in d["stages"]]
    pools = []
    for p in d["pools"]:
        row = _row(PoolRow, p)
        if row.over_cap is not None:
            row.over_cap = (row.over_cap["queue"], _num(row.over_cap["need"]))
        pools.append(row)
    return Report(serq_version=d["serq_version"], horizon=_num(d["horizon"]),
                  end=_num(d["end"]), warmup=_num(d["warmup"]), seed=int(d["seed"]),
                  events=int(d["events"]), arrivals=int(d["arrivals"]),
                  ended=int(d["ended"]), turns=int(d["turns"]),
                  mean_live=_num(d["mean_live"]), observes=observes, gauges=gauges,
                  claims=claims, stages=stages, pools=pools)
