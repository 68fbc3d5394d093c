"""The IR, version 11: one dataclass per node, shaped like serQ 0.1.3's IR.

The IR is the program's definition; the text front end is one way to make
it.  Field names follow the JSON keys (see ``ir/json.py``), so reading this
module next to a ``serq ir`` output needs no dictionary.

Expressions (``Expr``)::

    Num(value)  Attr(slot)  Ctx(var)  Reg(register)  Sample(dist, args)
    Call(fun, args: [Arg])  Unary(op, operand)  Binary(op, left, right)
    Cond(test, then, other)  AggRef(kind, obs)
    ExtSample(dist, args, values, counts, source, column)   (serq's extension)

``Arg`` is ``ArgExpr(expr)``, ``ArgPool(ref)`` or ``ArgStage(ref)``; a
``Ref`` names a pool or stage family by its first member (``base``), its size
(``count``) and an optional index expression.

Statements (``Stmt``) refer to nested blocks by their index in
``Program.blocks`` (an arena, numbered in pre-order by the text front end).
"""
from __future__ import annotations

from typing import List, Optional, Tuple, Union

from .._dataclass import dataclass, field

# ----------------------------------------------------------------- names

CTX_VARS = ("Now", "Waited", "Size", "Age", "Last", "Queued", "N", "Ntok",
            "Ndec", "Npre", "Nres", "Kvb", "Kvp", "Attn", "Decoding",
            "Admission", "Remaining", "Position", "Admitted", "Preempted",
            "Demand", "Served", "Arrived")
FUNS = ("Min", "Max", "Abs", "Floor", "Ceil", "Sqrt", "Exp", "Ln", "Pow",
        "Queue", "Busy", "Work", "Used", "Free", "CachedIn", "Holders",
        "Queued", "Price", "BudgetLeft", "EstLambda", "EstRho", "EstWait")
DISTS = ("Exp", "Det", "Uniform", "Erlang", "H2", "Bernoulli")
#: serq's extension distributions (``ExtSample``; not serQ 0.1.3)
EXT_DISTS = ("Lognormal", "Gamma", "Pareto", "Empirical")
UNOPS = ("Neg", "Not")
BINOPS = ("Add", "Sub", "Mul", "Div", "Pow", "Lt", "Le", "Gt", "Ge", "Eq",
          "Ne", "And", "Or")
AGGS = ("Total", "Count", "Largest", "Smallest", "PrefixTotal")
MODES = ("Plain", "Prefill", "Decode")
BUILTIN_ATTRS = ("cached", "serial", "turn_no", "new", "out", "think", "more",
                 "forced", "computed")

# ----------------------------------------------------------- expressions


@dataclass
class Num:
    value: float


@dataclass
class Attr:
    slot: int


@dataclass
class Ctx:
    var: str


@dataclass
class Reg:
    register: int


@dataclass
class Sample:
    dist: str
    args: List["Expr"]


@dataclass
class ExtSample:
    """A draw of serq's extension distributions (not serQ 0.1.3;
    docs/distributions.md): ``Lognormal(mean, cv2)``, ``Gamma(k, mean)``,
    ``Pareto(mean, alpha)``, or ``Empirical`` (no arguments) over a table:
    ``values`` ascending and distinct, ``counts`` the rows of each, and
    ``source`` and ``column`` the file and column it was read from (for
    people: the table is the distribution)."""
    dist: str
    args: List["Expr"]
    values: Optional[List[float]] = None
    counts: Optional[List[int]] = None
    source: Optional[str] = None
    # Nor this: some options as the program text writes them (``def`` uses
    # unexpanded), for ``serq draw`` (``syntax.ast.Program.surface``).
    surface: dict = field(default_factory=dict)
    column: Optional[str] = None


@dataclass
class Ref:
    base: int
    count: int
    index: Optional["Expr"] = None


@dataclass
class ArgExpr:
    expr: "Expr"


@dataclass
class ArgPool:
    ref: Ref


@dataclass
class ArgStage:
    ref: Ref


Arg = Union[ArgExpr, ArgPool, ArgStage]


@dataclass
class Call:
    fun: str
    args: List[Arg]


@dataclass
class Unary:
    op: str
    operand: "Expr"


@dataclass
class Binary:
    op: str
    left: "Expr"
    right: "Expr"


@dataclass
class Cond:
    test: "Expr"
    then: "Expr"
    other: "Expr"


@dataclass
class AggRef:
    kind: str
    obs: int


Expr = Union[Num, Attr, Ctx, Reg, Sample, ExtSample, Call, Unary, Binary, Cond, AggRef]

# ------------------------------------------------------------ statements


@dataclass
class Turn:
    pass


@dataclass
class End:
    pass


@dataclass
class Join:
    pass


@dataclass
class Set:
    slot: int
    value: Expr


@dataclass
class Observe:
    obs: int
    value: Expr


@dataclass
class HoldPool:
    ref: Ref
    units: Expr
    reserve: Optional[Expr] = None


@dataclass
class Hold:
    pools: List[HoldPool]
    reuse: Optional[Expr]
    body: int
    cache: Optional[Expr]
    lease: Optional[Tuple[Ref, Expr]]


@dataclass
class Grow:
    ref: Ref
    amount: Expr


@dataclass
class Drop:
    ref: Ref


@dataclass
class Release:
    ref: Ref


@dataclass
class Load:
    ref: Ref
    amount: Expr


@dataclass
class Run:
    stage: Ref
    mode: str
    work: Expr
    growing: Optional[Ref] = None
    also: List[Ref] = field(default_factory=list)


@dataclass
class Branch:
    test: Expr
    then: int
    other: int


@dataclass
class Loop:
    body: int


@dataclass
class Choose:
    var: int
    count: Expr
    key: List[Expr]


@dataclass
class Fork:
    body: int


Stmt = Union[Turn, End, Join, Set, Observe, Hold, Grow, Drop, Release, Load,
             Run, Branch, Loop, Choose, Fork]

# --------------------------------------------------- step iteration bodies


@dataclass
class IServe:
    only: Optional[Expr] = None
    by: Optional[List[Expr]] = None


@dataclass
class IAdmit:
    only: Optional[Expr] = None
    gate: Optional[Expr] = None


@dataclass
class IBranch:
    test: Expr
    then: List["IStmt"]
    other: List["IStmt"]


@dataclass
class ISet:
    register: int
    value: Expr


IStmt = Union[IServe, IAdmit, IBranch, ISet]

# ------------------------------------------------------- pools and stages


@dataclass
class Spill:
    to: int
    via: int
    work: Expr
    when: Expr


@dataclass
class Pool:
    name: str
    index: Optional[int] = None
    cap: float = float("inf")
    block: Optional[float] = None
    evict: Optional[List[Expr]] = None  # None: Lru
    preempt: Optional[List[Expr]] = None  # None: "None"
    preempt_tail: bool = False
    queue: Optional[List[Expr]] = None  # None: FIFO
    spill: Optional[Spill] = None
    admit_via: Optional[int] = None
    reserve_held: bool = False
    # serq's extensions (not serQ 0.1.3; docs/first_fit_watermark.md)
    first_fit: Optional["FirstFit"] = None
    watermark: float = 0.0  # units an admission leaves free; growth may spend them

    def extended(self) -> bool:
        """Uses an extension: its IR is not serQ 0.1.3's."""
        return self.first_fit is not None or self.watermark != 0.0


@dataclass
class FirstFit:
    """First-fit admission: when the selected hold does not fit, the next
    ``within`` waiting holds (all, if None) are tried in queue order, unless
    the selected hold has waited ``age`` or longer."""
    within: Optional[int] = None
    age: float = float("inf")


@dataclass
class Step:
    budget: Expr
    cost: Expr
    chunk: Expr
    granule: Optional[Expr] = None
    serve: Union[str, List[Expr]] = field(default_factory=list)  # keys or "ExclusivePrefill"
    memory: Optional[int] = None
    iteration: Optional[List[IStmt]] = None


@dataclass
class Fifo:
    servers: int


@dataclass
class Ps:
    capacity: Expr


@dataclass
class Delay:
    pass


StageKind = Union[Fifo, Ps, Delay, Step]


@dataclass
class Stage:
    name: str
    kind: StageKind
    index: Optional[int] = None

# ---------------------------------------------------------------- program


@dataclass
class Arrival:
    """``kind`` is Poisson (value: rate), Renewal (value: Expr), Closed and
    Batch (value: int), Sessions (value: list of dicts) or None."""
    kind: str
    value: object = None


@dataclass
class Gauge:
    name: str
    expr: Expr


@dataclass
class Claim:
    name: str
    kind: str  # "AtEnd" | "EveryIteration" | "SomeIteration"
    expr: Expr
    stage: Optional[int] = None
    given: Optional[Expr] = None


@dataclass
class Register:
    name: str
    stage: int
    init: float


@dataclass
class Program:
    attrs: List[str]
    observes: List[str]
    pools: List[Pool]
    stages: List[Stage]
    arrival: Arrival
    blocks: List[List[Stmt]]
    horizon: float
    warmup: float = 0.0
    seed: int = 1
    arrivals: Optional[int] = None
    trace: Optional[str] = None
    trace_ordered: bool = False
    init: int = 0
    turn: int = 1
    session: int = 2
    slots: Tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, 7, 8)  # cached .. computed
    hidden: List[int] = field(default_factory=list)
    share: Optional[str] = None  # "MaxMin" | "Bottleneck"
    gauges: List[Gauge] = field(default_factory=list)
    claims: List[Claim] = field(default_factory=list)
    registers: List[Register] = field(default_factory=list)
    version: int = 11
    # Not part of the IR: the directory a relative `trace` path is read from
    # (the program file's; None for text, IR input and `--trace`: the cwd).
    trace_dir: Optional[str] = None
    # Not part of the IR either: where each statement stands in the program
    # text ((block, index) -> Span) and that text, for run-time errors.
    spans: dict = field(default_factory=dict)
    source: Optional[str] = None
    # Nor this: the compile's warnings (``errors.SerqWarning``), for the
    # command line to print and the API to return.
    warnings: list = field(default_factory=list)


#: type -> the fields ``walk`` follows from a node of it; a list or a
#: tuple is ``_ITEMS``, anything else (a number, a string) ``_LEAF``
_FOLLOWED: dict = {}
_ITEMS = ("items",)
_LEAF = ("leaf",)


#: field annotations that never hold a node (``walk`` does not follow them)
_SCALARS = frozenset(("str", "int", "float", "bool"))


def _followed(t):
    if issubclass(t, (list, tuple)):
        return _ITEMS
    fields = getattr(t, "__dataclass_fields__", None)
    if fields is None:
        return _LEAF
    # (the annotations as written, read off the classes: the fields' own
    # types would make _dataclass.py build the standard Fields)
    types = {}
    for k in reversed(t.__mro__):
        types.update(k.__dict__.get("__annotations__", {}))
    skip = ("spans", "source") if t is Program else ()
    return tuple(f for f in fields if f not in skip and types.get(f) not in _SCALARS)


def walk(node):
    """Every IR node reachable from ``node`` (a program, a block, an
    expression...), each once, in no particular order."""
    seen = set()
    todo = [node]
    followed = _FOLLOWED
    while todo:
        x = todo.pop()
        t = type(x)
        try:
            fields = followed[t]
        except KeyError:
            fields = followed[t] = _followed(t)
        if fields is _ITEMS:
            todo.extend(x)
        elif fields is not _LEAF and id(x) not in seen:
            seen.add(id(x))
            yield x
            for f in fields:
                todo.append(getattr(x, f))
