"""A step stage's ``budget``, ``chunk`` and ``cost`` as typed trees.

These expressions are read at every iteration of a step stage.  Written as
Python source (codegen.ExprWriter, ``Compiler.fast``), each reading is a
call of an interpreted function from the compiled core, and each context
field it reads a boxed float.  Where the core is compiled, an expression
made only of what a tree here can say is built as a tree of the classes
below instead, and read with ``Node.ev`` without leaving native code.

A tree does exactly the float operations of the generated source, in its
order: constants folded where an operation has only constants (with the
closures' own arithmetic), comparisons and logic give 1.0 or 0.0, ``&&``
and ``||`` read their right side only when the left does not decide,
a conditional reads the branch its test picks, division and the math
functions are those of arith.py.  An expression with anything else (an
attribute, a draw, a register, a query of a pool or stage, a field no
step context has) gets no tree: ``build`` returns None and the stage calls
the generated function, as before.

A ``choose`` key is a tree of the same classes over a session's
attributes (``build_keys``, in etree_choose.py): the context's ``a`` is
the session's, and a key may read an attribute and the queries of a pool or stage member, the
member's index read first, as the generated source does: the plain
readings (``used``, ``free``, ``holders``, ``queued``, ``queue``, ``busy``)
and ``cachedin`` are read here, any other query is the simulator's own
function, called with the session.  The loop over the members
(``choose_least``, through a ``Chooser``) then runs natively too: where no
tree reads the choose's variable but as a member's index, it is not set
for each member; where, besides, the one key reads only constants,
operations and pools and stages of the chosen member, each node reads
every member before the next node (``Node.each``, into vectors of
machine doubles), which gives the same floats: such a reading cannot
fail nor change anything.  A hold's units, reserve, reuse,
cache and lease time and its members' indices are such trees too
(``build_session``, ``build_member``), called as the functions they stand
for: they are read at every attempt to admit the hold; so is a gauge
(``build_gauge``), read before every advance of the clock.
Interpreted (PyPy, or
``SERQ_INTERPRETED=1``) no tree is built: there the generated source is
the faster.
"""
from typing import TYPE_CHECKING, Any, Callable, Dict, Final, List, Optional, cast

from ..floatvec import vec
from ..ir import nodes as ir
from .arith import fceil, fdiv, fexp, ffloor, fln, fmax, fmin, fpow, fsqrt
from .codegen import NATIVE_CORE, _pure
from .pools import Pool
from .recorded import TOUCHED_LIST
from .stages import Stage
from .step_plan import StepContext

if TYPE_CHECKING:
    # (in annotations only: a machine integer where mypyc compiles this
    # module, an int elsewhere)
    from mypy_extensions import i64

    from .clock import Clock

# The step context's fields a tree reads (``Field.k``), by context variable.
_FIELDS: Final = {"Ntok": 0, "Kvb": 1, "Ndec": 2, "Npre": 3, "Nres": 4, "Kvp": 5, "Attn": 6,
                  "Decoding": 7, "Admission": 8, "Remaining": 9, "Admitted": 10,
                  "Preempted": 11, "Demand": 12, "Served": 13, "Arrived": 14}

# Binary operations (``Arith.op``); ``And`` and ``Or`` are nodes of their own.
_OPS: Final = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3, "Pow": 4, "Lt": 5, "Le": 6, "Gt": 7,
               "Ge": 8, "Eq": 9, "Ne": 10}

_MATH1: Final = {"Abs": 0, "Floor": 1, "Ceil": 2, "Sqrt": 3, "Exp": 4, "Ln": 5}
_MATH2: Final = {"Min": 0, "Max": 1, "Pow": 2}

# Queries a key's tree reads (``PoolRead.q``, ``StageRead.q``).
_POOL_QUERIES: Final = {"Used": 0, "Free": 1, "Holders": 2, "Queued": 3}
_STAGE_QUERIES: Final = {"Queue": 0, "Busy": 1}


class Node(object):
    """An expression over a step context."""

    def ev(self, x: StepContext) -> float:
        raise NotImplementedError

    def each(self, x: StepContext, n: "i64", out: vec[float]) -> None:
        """``ev`` for the members ``0 .. n - 1`` of a choose (``x.chosen``
        each in turn) into ``out[0 .. n - 1]``, where the tree reads them all
        alike (``_alike``): its readings cannot fail nor change anything,
        so reading one node for every member before the next gives the
        same floats."""
        j: "i64" = 0
        while j < n:
            x.chosen = j
            out[j] = self.ev(x)
            j += 1


def room(v: vec[float], n: "i64") -> vec[float]:
    """``v``, or a longer vector where it has fewer than ``n`` items."""
    return v if len(v) >= n else vec[float]([0.0] * n)


class Const(Node):
    def __init__(self, v: float) -> None:
        self.v = v

    def ev(self, x: StepContext) -> float:
        return self.v

    def each(self, x: StepContext, n: "i64", out: vec[float]) -> None:
        v = self.v
        j: "i64" = 0
        while j < n:
            out[j] = v
            j += 1


class Field(Node):
    """A field of the step context (``_FIELDS``)."""

    def __init__(self, k: int) -> None:
        self.k = k

    def ev(self, x: StepContext) -> float:
        k = self.k
        if k < 4:
            if k == 0:
                return x.ntok
            if k == 1:
                return x.kvb
            return x.ndec if k == 2 else x.npre
        if k < 8:
            if k == 4:
                return x.nres
            if k == 5:
                return x.kvp
            return x.attn if k == 6 else x.decoding
        if k < 12:
            if k == 8:
                return x.admission
            if k == 9:
                return x.remaining
            return x.admitted if k == 10 else x.preempted
        if k == 12:
            return x.demand
        return x.served if k == 13 else x.arrived


class Now(Node):
    def __init__(self, sim: "Clock") -> None:
        self.sim = sim

    def ev(self, x: StepContext) -> float:
        return self.sim.now


class Arith(Node):
    """A binary operation of ``_OPS``: the left side read first."""

    def __init__(self, op: int, a: Node, b: Node) -> None:
        self.op: "i64" = op
        self.a = a
        self.b = b
        self.right = vec[float]()  # (``each``'s readings of ``b``)

    def ev(self, x: StepContext) -> float:
        a = self.a.ev(x)
        b = self.b.ev(x)
        return _arith(self.op, a, b)

    def each(self, x: StepContext, n: "i64", out: vec[float]) -> None:
        self.a.each(x, n, out)
        right = room(self.right, n)
        self.right = right
        self.b.each(x, n, right)
        op = self.op
        j: "i64" = 0
        if op == 0:  # (a sum: a router's key)
            while j < n:
                out[j] = out[j] + right[j]
                j += 1
            return
        while j < n:
            out[j] = _arith(op, out[j], right[j])
            j += 1


def _arith(op: "i64", a: float, b: float) -> float:
    """Operation ``op`` of ``_OPS`` (Arith)."""
    if op < 3:
        if op == 0:
            return a + b
        return a - b if op == 1 else a * b
    if op == 3:
        return fdiv(a, b)
    if op == 4:
        return fpow(a, b)
    if op < 8:
        if op == 5:
            return 1.0 if a < b else 0.0
        if op == 6:
            return 1.0 if a <= b else 0.0
        return 1.0 if a > b else 0.0
    if op == 8:
        return 1.0 if a >= b else 0.0
    if op == 9:
        return 1.0 if a == b else 0.0
    return 1.0 if a != b else 0.0


class And(Node):
    def __init__(self, a: Node, b: Node) -> None:
        self.a = a
        self.b = b

    def ev(self, x: StepContext) -> float:
        return 1.0 if self.a.ev(x) != 0.0 and self.b.ev(x) != 0.0 else 0.0


class Or(Node):
    def __init__(self, a: Node, b: Node) -> None:
        self.a = a
        self.b = b

    def ev(self, x: StepContext) -> float:
        return 1.0 if self.a.ev(x) != 0.0 or self.b.ev(x) != 0.0 else 0.0


class Neg(Node):
    def __init__(self, a: Node) -> None:
        self.a = a

    def ev(self, x: StepContext) -> float:
        return -self.a.ev(x)


class Not(Node):
    def __init__(self, a: Node) -> None:
        self.a = a

    def ev(self, x: StepContext) -> float:
        return 1.0 if self.a.ev(x) == 0.0 else 0.0


class Choice(Node):
    """``test ? then : other``: the test first, then one branch."""

    def __init__(self, test: Node, then: Node, other: Node) -> None:
        self.test = test
        self.then = then
        self.other = other

    def ev(self, x: StepContext) -> float:
        if self.test.ev(x) != 0.0:
            return self.then.ev(x)
        return self.other.ev(x)


class Math1(Node):
    """A math function of one argument (``_MATH1``), as arith.py has it."""

    def __init__(self, f: int, a: Node) -> None:
        self.f = f
        self.a = a

    def ev(self, x: StepContext) -> float:
        v = self.a.ev(x)
        f = self.f
        if f == 0:
            return abs(v)
        if f == 1:
            return ffloor(v)
        if f == 2:
            return fceil(v)
        if f == 3:
            return fsqrt(v)
        return fexp(v) if f == 4 else fln(v)


class Math2(Node):
    """A math function of two arguments (``_MATH2``), the first read first."""

    def __init__(self, f: int, a: Node, b: Node) -> None:
        self.f = f
        self.a = a
        self.b = b

    def ev(self, x: StepContext) -> float:
        a = self.a.ev(x)
        b = self.b.ev(x)
        f = self.f
        if f == 0:
            return fmin(a, b)
        return fmax(a, b) if f == 1 else fpow(a, b)


class Attr(Node):
    """A session attribute: ``a[slot]`` of the context's ``a``."""

    def __init__(self, slot: int) -> None:
        self.slot = slot

    def ev(self, x: StepContext) -> float:
        a: List[float] = x.a
        return a[self.slot]


class Member(object):
    """The member of an array a query names: ``base``, or ``base`` plus the
    index's value where that is a whole number below ``count``; any other
    value goes to ``pick`` (exprs.Compiler.index_of), which raises the
    run-time error the generated source raises."""

    def __init__(self, base: int, count: int, index: Optional[Node],
                 pick: Callable[[float], int], chosen: bool = False) -> None:
        self.base = base
        self.count = count
        self.limit = float(count)  # (compared with a float: no conversion per read)
        self.index = index
        self.pick = pick
        # the index is the variable of the ``choose`` whose key this is:
        # ``x.chosen`` holds its value as an integer (choose_least)
        self.chosen = chosen

    def of(self, x: StepContext) -> int:
        if self.chosen:
            j = x.chosen
            if j < self.count:
                return self.base + j
            return self.pick(float(j))
        index = self.index
        if index is None:
            return self.base
        v = index.ev(x)
        if v >= 0.0 and v < self.limit:
            i = int(v)
            if float(i) == v:
                return self.base + i
        return self.pick(v)


class MemberRead(Node):
    """A reading of a pool or stage member ``m`` (PoolRead, StageRead)."""

    def __init__(self, m: Member) -> None:
        self.m = m
        # a member the choose's variable names, found here without a call
        # of ``Member.of`` (a choose reads it for every member)
        self.chosen = m.chosen
        self.base: "i64" = m.base
        self.count: "i64" = m.count

    def at(self, x: StepContext) -> "i64":
        """The member's index."""
        j = x.chosen
        if self.chosen and j < self.count:
            return self.base + j
        return self.m.of(x)


class PoolRead(MemberRead):
    """A pool member's ``used``, ``free``, ``holders`` or ``queued``."""

    def __init__(self, q: int, m: Member, pools: List[Pool]) -> None:
        super().__init__(m)
        self.q = q
        self.pools = pools
        self.qi: "i64" = q

    def ev(self, x: StepContext) -> float:
        return _pool_value(self.pools[self.at(x)], self.qi)

    def each(self, x: StepContext, n: "i64", out: vec[float]) -> None:
        if not self.chosen:
            super().each(x, n, out)
            return
        pools = self.pools
        q = self.qi
        base = self.base
        j: "i64" = 0
        if (q == 2 or q == 3) and _family_each(pools, base, n, q == 2, out):
            return
        if q == 2:  # (holders and queued, a router's: no call per member)
            while j < n:
                out[j] = float(len(pools[base + j].holders))
                j += 1
        elif q == 3:
            while j < n:
                out[j] = float(len(pools[base + j].queue))
                j += 1
        else:
            while j < n:
                out[j] = _pool_value(pools[base + j], q)
                j += 1


def _family_each(pools: List[Pool], base: "i64", n: "i64", holders: bool,
                 out: vec[float]) -> bool:
    """``PoolRead.each`` of holders (else queued) of members ``base ..
    base + n - 1``, from their family's counts (pools.py ``FamilyCounts``)
    and the live counts of those the current event touched; False where
    those pools are not one family's members in order."""
    if not TOUCHED_LIST or base + n > len(pools) or n <= 0:
        return False
    p0 = pools[base]
    f = p0.family
    if f is None or pools[base + n - 1].family is not f:
        return False
    off: "i64" = p0.fam_at
    v = f.holders if holders else f.queued
    if off + n > len(v):
        return False
    j: "i64" = 0
    while j < n:
        out[j] = v[off + j]
        j += 1
    t = p0.touched
    items = t.items
    k: "i64" = 0
    m: "i64" = t.n
    while k < m:
        r = items[k]
        if isinstance(r, Pool) and r.family is f:
            i: "i64" = r.fam_at - off
            if 0 <= i < n:
                out[i] = float(len(r.holders)) if holders else float(len(r.queue))
        k += 1
    return True


def _pool_value(p: Pool, q: "i64") -> float:
    """Query ``q`` (``_POOL_QUERIES``) of pool ``p``."""
    if q == 0:
        return p.used
    if q == 1:
        return p.cap - p.used
    return float(len(p.holders)) if q == 2 else float(len(p.queue))


class StageRead(MemberRead):
    """A stage member's ``queue`` (jobs present) or ``busy``."""

    def __init__(self, q: int, m: Member, stages: List[Stage]) -> None:
        super().__init__(m)
        self.q = q
        self.stages = stages

    def ev(self, x: StepContext) -> float:
        st = self.stages[self.at(x)]
        return float(st.present()) if self.q == 0 else st.busy()

    def each(self, x: StepContext, n: "i64", out: vec[float]) -> None:
        if not self.chosen:
            super().each(x, n, out)
            return
        stages = self.stages
        present = self.q == 0
        base = self.base
        j: "i64" = 0
        while j < n:
            st = stages[base + j]
            out[j] = float(st.present()) if present else st.busy()
            j += 1


class Query(Node):
    """Any other query of a member (``budget_left``, ``work``, ``queue`` of
    a step stage, ...): the simulator's own reading (``Clock.query``),
    called with the member and the context's session, as the generated
    source calls it."""

    def __init__(self, f: Callable[[int, Any], float], m: Member) -> None:
        self.f = f
        self.m = m

    def ev(self, x: StepContext) -> float:
        return self.f(self.m.of(x), x.session)


class CachedIn(Node):
    """``cachedin(P)``: the units pool member ``P`` keeps cached for the
    context's session (its root's entry), as poolsim's query reads it."""

    def __init__(self, m: Member, pools: List[Pool]) -> None:
        self.m = m
        self.pools = pools

    def ev(self, x: StepContext) -> float:
        p = self.pools[self.m.of(x)]
        s = x.session
        return p.own(s.root().serial) if s is not None else 0.0


class BudgetLeft(Node):
    """``budget_left(S)`` of a step stage member: its folded stretch (if
    any) brought up to now, then the stage's reading (Simulator.query's)."""

    def __init__(self, m: Member, stages: List[Stage], sim: "Clock") -> None:
        self.m = m
        self.stages = stages
        self.sim = sim

    def ev(self, x: StepContext) -> float:
        st = self.stages[self.m.of(x)]
        sim = self.sim
        if sim.folds:
            sim.sync_fold(st)
        return st.budget_left()


class SessionFn(object):
    """A session expression's tree, called as its generated function is
    (``f(s)``): the context reads the session's attributes, and queries
    get the session."""

    def __init__(self, tree: Node) -> None:
        self.tree = tree
        self.x = StepContext(None)

    def __call__(self, s: Any) -> float:
        x = _bind(self.x, s)
        try:
            return self.tree.ev(x)
        finally:
            _unbind(x)


class GaugeFn(object):
    """A gauge's tree, called as its generated function is (``f(ctx)``,
    the context of no session): queries get no session."""

    def __init__(self, tree: Node) -> None:
        self.tree = tree
        self.x = StepContext(None)

    def __call__(self, ctx: Any) -> float:
        return self.tree.ev(self.x)


class MemberFn(object):
    """A reference's member index (``exprs.Compiler.member``) read from a
    session through the tree of its index."""

    def __init__(self, m: Member) -> None:
        self.m = m
        self.x = StepContext(None)

    def __call__(self, s: Any) -> int:
        x = _bind(self.x, s)
        try:
            return self.m.of(x)
        finally:
            _unbind(x)


def _bind(x: StepContext, s: Any) -> StepContext:
    """Context ``x`` reading session ``s`` (its attributes, and the session
    its queries get); a new context where ``x`` is in use: a query may read
    the same expression again, for another session, before the first
    reading is done."""
    if x.session is not None:
        x = StepContext(None)
    x.a = s.a
    x.session = s
    return x


def _unbind(x: StepContext) -> None:
    x.a = None
    x.session = None


class Keys(object):
    """What a ``choose`` key's tree reads beside the attributes: the
    simulator's pools and stages, and the compiler for members' indices."""

    def __init__(self, pools: List[Pool], stages: List[Stage], compiler: Any,
                 chosen: int = -1) -> None:
        self.pools = pools
        self.stages = stages
        self.compiler = compiler
        self.chosen = chosen  # (the slot of the choose's variable; -1: none)
        # a tree read the attribute ``chosen`` (not as a member's index) or
        # calls the simulator: Chooser.sets
        self.reads = False


def build(e: Any, sim: "Clock", compiler: Any) -> Optional[Node]:
    """The tree of expression ``e``, or None where it has a node no tree
    says (or the core is interpreted).  ``compiler`` (exprs.Compiler)
    folds the constant parts, as the generated source does."""
    if not NATIVE_CORE:  # (where the core is compiled: codegen's own test)
        return None
    # One tree for equal expressions (a family's members' budgets and
    # costs): such a tree keeps nothing of a stage's, and at 256 replicas
    # 256 copies of a cost's nodes were 256 places in memory that each
    # iteration reads (a cache miss at most reads).  The key is the
    # expression's repr, its whole structure (floats as their shortest
    # repr, so 0.0 and -0.0 differ).
    trees: Dict[str, Optional[Node]] = compiler.trees
    key = repr(e)
    if key in trees:
        return trees[key]
    t = tree_of(e, sim, compiler, None)
    trees[key] = t
    return t


def build_session(e: Any, sim: Any, compiler: Any) -> Optional[SessionFn]:
    """A session expression (a hold's units, reserve, reuse, cache and
    lease time) as a callable tree over the session, or None where it has a
    node no tree says (or the core is interpreted)."""
    if not NATIVE_CORE:
        return None
    t = tree_of(e, sim, compiler, Keys(sim.pools, sim.stages, compiler))
    return None if t is None else SessionFn(t)


def build_gauge(e: Any, sim: Any, compiler: Any) -> Optional[GaugeFn]:
    """A gauge's expression (read before every advance of the clock) as a
    callable tree, or None (as ``build_session``; and where it reads an
    attribute, which a gauge's context has none of)."""
    if not NATIVE_CORE or any(type(x) is ir.Attr for x in ir.walk(e)):
        return None
    t = tree_of(e, sim, compiler, Keys(sim.pools, sim.stages, compiler))
    return None if t is None else GaugeFn(t)


def build_member(r: Any, sim: Any, compiler: Any) -> Optional[MemberFn]:
    """A reference's member read from a session, or None (as ``build_session``)."""
    if not NATIVE_CORE or r.index is None:
        return None
    m = _member(r, sim, compiler, Keys(sim.pools, sim.stages, compiler))
    return None if m is None else MemberFn(m)


def _member(r: Any, sim: "Clock", c: Any, keys: "Keys") -> Optional[Member]:
    if r.index is None:
        return Member(r.base, r.count, None, c.index_of(r))
    if type(r.index) is ir.Attr and r.index.slot == keys.chosen:
        return Member(r.base, r.count, None, c.index_of(r), True)
    index = tree_of(r.index, sim, c, keys)
    return None if index is None else Member(r.base, r.count, index, c.index_of(r))


def tree_of(e: Any, sim: "Clock", c: Any, keys: Optional[Keys]) -> Optional[Node]:
    t = type(e)
    if t is ir.Num:
        return Const(float(e.value))
    if _pure(e):
        return Const(float(c.expr(e)(None)))
    if t is ir.Attr:
        if keys is None:
            return None
        if e.slot == keys.chosen:
            keys.reads = True
        return Attr(e.slot)
    if t is ir.Ctx:
        if e.var == "Now":
            return Now(sim)
        if keys is not None:
            return None  # (a session has no step context's fields)
        k = _FIELDS.get(e.var)
        return None if k is None else Field(k)
    if t is ir.Binary:
        a = tree_of(e.left, sim, c, keys)
        b = tree_of(e.right, sim, c, keys)
        if a is None or b is None:
            return None
        if e.op == "And":
            return And(a, b)
        if e.op == "Or":
            return Or(a, b)
        op = _OPS.get(e.op)
        return None if op is None else Arith(op, a, b)
    if t is ir.Unary:
        a = tree_of(e.operand, sim, c, keys)
        if a is None:
            return None
        return Neg(a) if e.op == "Neg" else Not(a)
    if t is ir.Cond:
        test = tree_of(e.test, sim, c, keys)
        then = tree_of(e.then, sim, c, keys)
        other = tree_of(e.other, sim, c, keys)
        if test is None or then is None or other is None:
            return None
        return Choice(test, then, other)
    if t is ir.Call and keys is not None and len(e.args) == 1 \
            and type(e.args[0]) is not ir.ArgExpr:
        # a query of a member (``holders(slots[r])``)
        arg = e.args[0]
        m = _member(arg.ref, sim, c, keys)
        if m is None:
            return None
        if type(arg) is ir.ArgPool:
            q = _POOL_QUERIES.get(e.fun)
            if q is not None:
                return PoolRead(q, m, keys.pools)
            if e.fun == "CachedIn":
                return CachedIn(m, keys.pools)
        else:
            q = _STAGE_QUERIES.get(e.fun)
            if q is not None:
                return StageRead(q, m, keys.stages)
            if e.fun == "BudgetLeft":
                keys.reads = True
                return BudgetLeft(m, keys.stages, sim)
        keys.reads = True
        return Query(cast(Any, sim).query(e.fun), m)  # (Simulator.query)
    if t is ir.Call:
        args: List[Optional[Node]] = [
            tree_of(a.expr, sim, c, keys) if type(a) is ir.ArgExpr else None for a in e.args]
        if any(a is None for a in args):
            return None
        if e.fun in _MATH1 and len(args) == 1:
            a0 = args[0]
            assert a0 is not None
            return Math1(_MATH1[e.fun], a0)
        if e.fun in _MATH2 and len(args) == 2:
            a0, a1 = args[0], args[1]
            assert a0 is not None and a1 is not None
            return Math2(_MATH2[e.fun], a0, a1)
    return None
