"""What the linker knows about a program's names, and where each expression
is evaluated (its *moment*).

A ``Moment`` lists what an expression may read at one kind of position:
which context variables exist there, whether it may draw, read session
attributes (hidden ones included or not), the clock, pool and stage queries,
and which registers.  The tables follow section 2.6 of the feature map.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional

from .._dataclass import dataclass, field
from ..errors import SerqWarning

# surface name -> IR context variable
CTX_NAMES: Dict[str, str] = {
    "now": "Now", "waited": "Waited", "size": "Size", "age": "Age",
    "last": "Last", "waiting": "Queued", "present": "N", "residents": "Nres",
    "decoders": "Ndec", "kv_decode": "Kvb", "kv_prefill": "Kvp",
    "tokens": "Ntok", "prefilled": "Npre", "attention": "Attn",
    "decoding": "Decoding", "admission": "Admission", "remaining": "Remaining",
    "position": "Position", "admitted": "Admitted", "preempted": "Preempted",
    "demand": "Demand", "served": "Served", "arrived": "Arrived",
}
SUPPLIED = frozenset(CTX_NAMES) | {"inf"}

# surface function -> (IR function, parameter kinds: e expression, p pool, s stage)
FUNCTIONS: Dict[str, tuple] = {
    "min": ("Min", "ee"), "max": ("Max", "ee"), "abs": ("Abs", "e"),
    "floor": ("Floor", "e"), "ceil": ("Ceil", "e"), "sqrt": ("Sqrt", "e"),
    "exp": ("Exp", "e"), "ln": ("Ln", "e"), "pow": ("Pow", "ee"),
    "queue": ("Queue", "s"), "busy": ("Busy", "s"), "work": ("Work", "s"),
    "used": ("Used", "p"), "free": ("Free", "p"), "cachedin": ("CachedIn", "p"),
    "holders": ("Holders", "p"), "queued": ("Queued", "p"),
    "price": ("Price", "see"), "budget_left": ("BudgetLeft", "s"),
    "est_lambda": ("EstLambda", "s"), "est_rho": ("EstRho", "s"),
    "est_wait": ("EstWait", "s"), "blocksize": (None, "p"),
}
AGGREGATES = {"total": "Total", "count": "Count", "largest": "Largest",
              "smallest": "Smallest", "prefix_total": "PrefixTotal"}
DISTRIBUTIONS = {"exp": ("Exp", 1), "det": ("Det", 1), "uniform": ("Uniform", 2),
                 "erlang": ("Erlang", 2), "h2": ("H2", 2), "bernoulli": ("Bernoulli", 1)}
# serq's extensions (ir.ExtSample; refused by --strict): name -> IR name
EXT_DISTRIBUTIONS = {"lognormal": "Lognormal", "gamma": "Gamma", "pareto": "Pareto",
                     "empirical": "Empirical"}
MATH = frozenset(("Min", "Max", "Abs", "Floor", "Ceil", "Sqrt", "Exp", "Ln", "Pow"))

_STEP_TOTALS = frozenset(("Nres", "Ndec", "Kvb", "Kvp"))


@dataclass(frozen=True)
class Moment:
    """Where an expression is evaluated and what it may read there."""
    name: str  # for messages: "a hold's units", "a gauge", ...
    kind: str  # Session Admit Select Evict Ps Budget Step Serve Victim Plan
    #            Gauge Given Iteration End Renewal Const
    ctx: FrozenSet[str] = frozenset()
    draw: bool = False
    attrs: bool = True
    hidden: bool = False
    now: bool = True
    state: bool = True  # pool and stage queries
    work: bool = True
    cachedin: bool = True
    budget_left: bool = True
    aggregates: bool = False
    literal_index: bool = False
    stage: Optional[int] = None  # the stage whose registers / budget this reads
    context: str = ""  # message prefix, e.g. "gauge `g`: "
    # Where a validation error about this expression points: the statement's
    # anchor (a run's stage, a hold's first pool) instead of the node itself.
    anchor: object = None
    nospan: bool = False
    # Inside the body of a hold without `cache` (the innermost hold's pool name).
    no_cache_hold: str = ""
    # A session attribute read here reads NaN in 0.1.3, to no harm (a step's
    # chunk: NaN is no limit): a warning, not an error.
    nan_attrs: bool = False

    def replace(self, **kw) -> "Moment":
        return _copy(self, kw)


def _copy(base: Moment, kw: dict) -> Moment:
    """``base`` with the fields in ``kw`` changed.  The linker makes a few
    moments per statement; this skips the frozen dataclass's field-by-field
    ``__init__`` (nothing there checks or derives a field)."""
    for k in kw:
        if k not in _FIELDS:
            raise TypeError("Moment has no field %r" % k)
    new = object.__new__(Moment)
    d = new.__dict__
    d.update(base.__dict__)
    d.update(kw)
    return new


_FIELDS = frozenset(Moment.__dataclass_fields__)


def moment(kind: str, name: str, **kw) -> Moment:
    kw["name"] = name
    return _copy(_MOMENTS[kind], kw)


_MOMENTS: Dict[str, Moment] = {
    "Session": Moment("", "Session", frozenset(("Now",)), draw=True, hidden=True),
    "Admit": Moment("", "Admit", frozenset(("Now",))),
    "Select": Moment("", "Select", frozenset(("Now", "Waited"))),
    "Evict": Moment("", "Evict", frozenset(("Now", "Size", "Age", "Last", "Queued")), draw=True),
    "Ps": Moment("", "Ps", frozenset(("Now", "N")), draw=True, attrs=False),
    "Budget": Moment("", "Budget", frozenset(("Now",)) | _STEP_TOTALS, draw=True,
                     attrs=False, budget_left=False),
    "Step": Moment("", "Step", frozenset(("Now", "Ntok", "Npre", "Attn")) | _STEP_TOTALS,
                   draw=True, attrs=False),
    "Serve": Moment("", "Serve", frozenset(("Now", "Decoding", "Admission", "Remaining"))
                    | _STEP_TOTALS),
    "Only": Moment("", "Serve", frozenset(("Decoding", "Admission", "Remaining"))
                   | _STEP_TOTALS, now=False, work=False),
    "Victim": Moment("", "Victim", frozenset(("Now", "Decoding", "Admission", "Position")),
                     budget_left=False),
    "Plan": Moment("", "Plan", frozenset(("Ntok", "Npre", "Admitted", "Preempted"))
                   | _STEP_TOTALS, attrs=False, now=False, work=False),
    "Gauge": Moment("", "Gauge", frozenset(), attrs=False, now=False, work=False,
                    cachedin=False, budget_left=False, literal_index=True),
    "Given": Moment("", "Given", frozenset(), hidden=True, now=False, state=False),
    "Iteration": Moment("", "Iteration", frozenset(("Now", "Ntok", "Npre", "Attn", "Demand",
                                                      "Served", "Arrived")) | _STEP_TOTALS,
                        attrs=False, work=False, cachedin=False, budget_left=False,
                        literal_index=True),
    "End": Moment("", "End", frozenset(("Now",)), attrs=False, state=False, aggregates=True),
    "Renewal": Moment("", "Renewal", frozenset(), draw=True, attrs=False, now=False,
                      state=False),
    "Const": Moment("", "Const", frozenset(), attrs=False, now=False, state=False),
}

# Which moments supply each context variable, for messages.
WHERE_CTX: Dict[str, List[str]] = {}
for _m in ("Session", "Admit", "Select", "Evict", "Ps", "Budget", "Step", "Serve",
           "Victim", "Plan", "Iteration"):
    for _v in _MOMENTS[_m].ctx:
        WHERE_CTX.setdefault(_v, []).append(_m)
WHERE_TEXT = {
    "Session": "session statements", "Admit": "hold headers", "Select": "queue keys",
    "Evict": "eviction keys and spill clauses", "Ps": "a ps stage's capacity",
    "Budget": "a step stage's budget and chunk", "Step": "a step stage's cost",
    "Serve": "serve keys", "Victim": "preempt keys", "Plan": "iteration bodies",
    "Iteration": "iteration claims",
}


@dataclass
class Family:
    """A pool or stage family: ``base`` is the first member's index."""
    name: str
    base: int
    count: int
    array: bool  # declared with [N] (a family of one is still a family)
    span: object
    decl: object = None


@dataclass
class Scope:
    lets: Dict[str, float] = field(default_factory=dict)
    pools: Dict[str, Family] = field(default_factory=dict)
    stages: Dict[str, Family] = field(default_factory=dict)
    stage_kinds: List[str] = field(default_factory=list)  # per member
    attrs: List[str] = field(default_factory=list)
    attr_slots: Dict[str, int] = field(default_factory=dict)
    observes: List[str] = field(default_factory=list)
    obs_index: Dict[str, int] = field(default_factory=dict)
    registers: Dict[str, tuple] = field(default_factory=dict)  # name -> (index, stage)
    hidden: Dict[str, object] = field(default_factory=dict)  # name -> span
    # stage member index -> pool member indices admitted via it
    admitted_by: Dict[int, List[int]] = field(default_factory=dict)
    blocks: Dict[str, Optional[float]] = field(default_factory=dict)  # pool name -> block
    # pool name -> the step stage member that admits its (first) member, if any
    admit_stage: Dict[str, Optional[int]] = field(default_factory=dict)
    # Validation errors, raised (the first by phase, then by order) once names
    # have resolved: the reference resolves every name before it validates.
    deferred: List[tuple] = field(default_factory=list)
    phase: int = 0
    # Hazards serQ 0.1.3 links as written (``SerqWarning``s), in the order found.
    warnings: list = field(default_factory=list)

    def defer(self, err) -> None:
        self.deferred.append((self.phase, len(self.deferred), err))

    def warn(self, message: str, span, help: Optional[str] = None) -> None:
        self.warnings.append(SerqWarning(message, span, help=help))

    def first_deferred(self):
        return min(self.deferred)[2] if self.deferred else None

    def pool_block(self, decl) -> float:
        return self.blocks[decl.name]

    def attr(self, name: str) -> int:
        slot = self.attr_slots.get(name)
        if slot is None:
            slot = len(self.attrs)
            self.attrs.append(name)
            self.attr_slots[name] = slot
        return slot

    def observe(self, name: str) -> int:
        i = self.obs_index.get(name)
        if i is None:
            i = len(self.observes)
            self.observes.append(name)
            self.obs_index[name] = i
        return i
