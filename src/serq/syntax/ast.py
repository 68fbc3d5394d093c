"""The kernel AST: what the parser hands to the linker.

Every node carries the ``Span`` of the token it starts at.  Sugar is already
expanded (``def`` uses, ``use`` libraries, ``server`` spliced at every
``request;``, gateway routes, queue stations and relations, serving forms
``prefill``/``decode``/``tool``/``transfer``, ``branch with``, ``at admission``
bindings, ``mark``, ``preempt lifo``, ``serve decode first``, stage-level
``serve only``), so the linker sees only the nodes below.

Names are plain strings as the program (after lowering) spells them: a queue
pool of ``Q`` is the pool ``"Q.p"``, a mark is the attribute ``"Q.first"``.
Array sizes are resolved by the parser (they may read earlier ``let``s), so a
declaration's ``size`` is an ``int`` or ``None`` for a single member.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union

from .._dataclass import dataclass, field
from ..errors import SerqWarning, Span

# ---------------------------------------------------------------- expressions


@dataclass
class Num:
    value: float
    span: Span


@dataclass
class Name:
    """A name, optionally indexed: ``x``, ``inf``, ``kv``, ``kv[j]``, ``Q.p``.

    What it denotes (constant, attribute, context variable, pool, stage,
    register, aggregate variable) is decided by the linker.
    """
    name: str
    span: Span
    index: Optional["Expr"] = None


@dataclass
class Unary:
    op: str  # "-" or "!"
    operand: "Expr"
    span: Span


@dataclass
class Binary:
    op: str  # + - * / ^ < <= > >= == != && ||
    left: "Expr"
    right: "Expr"
    span: Span


@dataclass
class Cond:
    test: "Expr"
    then: "Expr"
    other: "Expr"
    span: Span


@dataclass
class Call:
    """``f(args)``: a function of 2.3 of the feature map.  Pool and stage
    arguments are ``Name`` nodes; the linker knows which parameter is which."""
    func: str
    args: List["Expr"]
    span: Span


@dataclass
class Draw:
    """``~dist(args)``.  ``strings``: the string arguments of serq's
    ``~empirical("FILE.csv"[, "COLUMN"])`` (text and place), which takes no
    other."""
    dist: str
    args: List["Expr"]
    span: Span
    strings: List[Tuple[str, Span]] = field(default_factory=list)


@dataclass
class Agg:
    """``max j in COUNT (body)`` (also ``min``, ``sum``); the linker writes out
    the terms once COUNT is folded."""
    kind: str  # "max" | "min" | "sum"
    var: str
    count: "Expr"
    body: "Expr"
    span: Span


Expr = Union[Num, Name, Unary, Binary, Cond, Call, Draw, Agg]

# ----------------------------------------------------------------- statements


@dataclass
class Set:
    name: str
    value: Expr
    span: Span


@dataclass
class Observe:
    name: str
    value: Expr
    span: Span


@dataclass
class Turn:
    span: Span


@dataclass
class End:
    span: Span


@dataclass
class Join:
    span: Span


@dataclass
class HoldPool:
    ref: Name
    units: Expr
    reserve: Optional[Expr]
    span: Span


@dataclass
class Lease:
    ref: Name
    time: Expr
    span: Span


@dataclass
class Hold:
    pools: List[HoldPool]
    reuse: Optional[Expr]
    body: List["Stmt"]
    cache: Optional[Expr]
    lease: Optional[Lease]
    span: Span


@dataclass
class Grow:
    ref: Name
    amount: Expr
    span: Span


@dataclass
class Load:
    ref: Name
    amount: Expr
    span: Span


@dataclass
class Drop:
    ref: Name
    span: Span


@dataclass
class Release:
    ref: Name
    span: Span


@dataclass
class Run:
    """``run S (w)``, ``run E prefill (n) growing P``, ``run A, B (w)``.
    ``stages[0]`` is the IR's ``stage``, the rest its ``also``."""
    stages: List[Name]
    mode: str  # "plain" | "prefill" | "decode"
    work: Expr
    growing: Optional[Name]
    span: Span


@dataclass
class Branch:
    test: Expr
    then: List["Stmt"]
    other: List["Stmt"]
    span: Span


@dataclass
class Loop:
    body: List["Stmt"]
    span: Span


@dataclass
class Choose:
    var: str
    count: Expr
    keys: List[Expr]
    span: Span


@dataclass
class Fork:
    body: List["Stmt"]
    span: Span


Stmt = Union[Set, Observe, Turn, End, Join, Hold, Grow, Load, Drop, Release,
             Run, Branch, Loop, Choose, Fork]

# ------------------------------------------------------ step iteration bodies


@dataclass
class IServe:
    only: Optional[Expr]
    by: Optional[List[Expr]]  # None: the stage's order; [] admission order
    span: Span


@dataclass
class IAdmit:
    only: Optional[Expr]
    gate: Optional[Expr]  # ``while (g)``
    span: Span


@dataclass
class IBranch:
    test: Expr
    then: List["IStmt"]
    other: List["IStmt"]
    span: Span


@dataclass
class ISet:
    register: str
    value: Expr
    span: Span


IStmt = Union[IServe, IAdmit, IBranch, ISet]

# ---------------------------------------------------------------------- items


@dataclass
class Let:
    name: str
    value: Expr
    span: Span


@dataclass
class Spill:
    to: Name
    via: Name
    work: Expr
    when: Expr
    span: Span


@dataclass
class FirstFit:
    """``first fit [within (N)] [until waited (T)]`` after a pool's `queue`
    option (serq's extension, docs/first_fit_watermark.md)."""
    span: Span
    within: Optional[Expr] = None  # None: every waiting hold
    age: Optional[Expr] = None  # None: the head never blocks again


@dataclass
class PoolDecl:
    name: str
    size: Optional[int]  # None: a single pool; N: a family of N members
    span: Span
    cap: Optional[Expr] = None
    block: Optional[Expr] = None
    evict: Optional[List[Expr]] = None  # None: lru
    preempt: Optional[List[Expr]] = None  # None: none; lifo is [-admission]
    preempt_tail: bool = False
    queue: Optional[List[Expr]] = None  # None: fifo
    admit_via: Optional[Name] = None
    spill: Optional[Spill] = None
    reserve_held: bool = False
    # serq's extensions (not serQ 0.1.3): first-fit admission, a watermark
    first_fit: Optional[FirstFit] = None
    watermark: Optional[Expr] = None


@dataclass
class Register:
    name: str
    init: Expr
    span: Span


@dataclass
class StepOptions:
    cost: Expr
    budget: Optional[Expr] = None  # None: inf
    chunk: Optional[Expr] = None  # None: 0
    granule: Optional[Expr] = None
    serve: Union[str, List[Expr]] = field(default_factory=list)  # keys, or "exclusive"
    memory: Optional[Name] = None
    registers: List[Register] = field(default_factory=list)
    iteration: Optional[List[IStmt]] = None


@dataclass
class StageDecl:
    name: str
    size: Optional[int]
    kind: str  # "fifo" | "ps" | "delay" | "step"
    span: Span
    servers: Optional[Expr] = None  # fifo (c); None: 1
    capacity: Optional[Expr] = None  # ps (phi)
    step: Optional[StepOptions] = None


@dataclass
class Arrive:
    kind: str  # "poisson" | "renewal" | "closed" | "batch" | "none"
    arg: Optional[Expr]
    span: Span


@dataclass
class Workload:
    span: Span
    arrive: Optional[Arrive] = None
    trace: Optional[str] = None
    trace_ordered: bool = False
    trace_span: Optional[Span] = None
    init: List[Stmt] = field(default_factory=list)
    turn: List[Stmt] = field(default_factory=list)
    hidden: List[Tuple[str, Span]] = field(default_factory=list)


@dataclass
class GaugeDecl:
    name: str
    expr: Expr
    span: Span


@dataclass
class ClaimDecl:
    name: str
    given: Optional[Expr]
    kind: str  # "at_end" | "every" | "some"
    stage: Optional[Name]
    expr: Expr
    span: Span


@dataclass
class RunSetting:
    key: str  # "horizon" | "warmup" | "seed" | "arrivals"
    value: Expr
    span: Span


@dataclass
class ShareDecl:
    policy: str  # "maxmin" | "bottleneck"
    span: Span


Item = Union[Let, PoolDecl, StageDecl, GaugeDecl, ClaimDecl, RunSetting, ShareDecl]


@dataclass
class Program:
    """A parsed program with every piece of sugar expanded.

    ``items`` keeps ``let``s, pools, stages, gauges, claims, run settings and
    ``share`` in source order (queue stations contribute their generated pools
    and stages where the queue stands).  The session program is one block:
    the top-level ``session``, or the workload's client session with the
    ``server`` spliced in.
    """
    file: str
    source: str
    items: List[Item] = field(default_factory=list)
    workload: Optional[Workload] = None
    session: List[Stmt] = field(default_factory=list)
    session_span: Optional[Span] = None
    # ``let`` names whose value (directly or through another ``let``) sizes
    # an array: an override of one of them is refused.
    array_lets: List[str] = field(default_factory=list)
    # Names of the expression definitions (for ``--def`` diagnostics).
    expr_defs: List[str] = field(default_factory=list)
    # serq's language extensions used, in source order: (what, where), for
    # ``serq check --strict``.
    extensions: List[Tuple[str, Span]] = field(default_factory=list)
    # Hazards of a program serQ 0.1.3 runs as written (``SerqWarning``s), in
    # the order found: the parser's, then the linker's.
    warnings: List["SerqWarning"] = field(default_factory=list)
    # Options as the program writes them (``def`` uses unexpanded), for
    # ``serq draw``: "stage NAME cost" -> "cost_step(eff, 0.8)".
    surface: Dict[str, str] = field(default_factory=dict)


def walk(stmts: List[Stmt]):
    """Every statement of a block and of its nested blocks, in pre-order
    (a hold's body, a branch's then and else, a loop's or fork's body)."""
    for s in stmts:
        yield s
        t = type(s)
        if t is Hold or t is Loop or t is Fork:
            yield from walk(s.body)
        elif t is Branch:
            yield from walk(s.then)
            yield from walk(s.other)


def sets_and_holds(blocks: List[List[Stmt]]) -> Tuple[Dict[str, int], List["Hold"]]:
    """Over the given blocks and their nested blocks: how many statements set
    each attribute (`set`, and `choose` of its variable), leaving out the
    `set`s the parser writes at the top of a hold's body for the bindings the
    body reads; and every hold, in program order."""
    sets: Dict[str, int] = {}
    holds: List[Hold] = []

    def scan(stmts: list) -> None:
        for st in stmts:
            t = type(st)
            if t is Set or t is Choose:
                name = st.name if t is Set else st.var
                sets[name] = sets.get(name, 0) + 1
            elif t is Hold:
                holds.append(st)
                scan(st.body[len(getattr(st, "read_bindings", None) or []):])
                continue
            for f in ("body", "then", "other"):
                sub = getattr(st, f, None)
                if sub:
                    scan(sub)

    for b in blocks:
        scan(b)
    return sets, holds
