"""Make a program's IR in Python, or edit a compiled one, then run it.

::

    import serq
    from serq.builder import ProgramBuilder, ctx, draw

    b = ProgramBuilder(horizon=500, warmup=50, seed=3)
    cpu = b.add_stage("cpu", b.fifo(1))
    b.poisson(0.8)
    b.session.extend([
        b.set("t0", ctx("now")),
        b.run(cpu, draw("exp", 1.0)),
        b.observe("resp", ctx("now") - b.attr("t0")),
    ])
    report = serq.run(b.program())

``serq.edit(program)`` starts from a compiled program (a copy: the program
itself is not changed).  Pools and stages are added at the end of their
lists, so the indices the program's statements use stay valid; a family of
``count`` members is one name with members numbered 0 to ``count - 1``.
``program()`` checks the result as an IR read from JSON is checked
(``serq.ir.validate``) and returns a ``serq.Program``.

Expressions are ``Ex`` values: Python numbers mix in, and ``+ - * / **``,
unary ``-``, ``< <= > >=``, ``&`` (and), ``|`` (or), ``~`` (not) build
the IR's operators (``==`` and ``!=`` are ``.eq()`` and ``.ne()``).
"""
import copy
import math
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from .errors import UsageError
from .ir import nodes as ir
from .ir.validate import validate
from .ir import laws
from .link.scope import AGGREGATES, CTX_NAMES, DISTRIBUTIONS, EXT_DISTRIBUTIONS, FUNCTIONS

Number = Union[int, float]


class Ex(object):
    """An IR expression with Python operators."""

    __slots__ = ("node",)

    def __init__(self, node: ir.Expr):
        self.node = node

    def _bin(self, op, other, swap=False):
        a, b = self.node, expr(other)
        return Ex(ir.Binary(op, b, a) if swap else ir.Binary(op, a, b))

    def __add__(self, o): return self._bin("Add", o)
    def __radd__(self, o): return self._bin("Add", o, True)
    def __sub__(self, o): return self._bin("Sub", o)
    def __rsub__(self, o): return self._bin("Sub", o, True)
    def __mul__(self, o): return self._bin("Mul", o)
    def __rmul__(self, o): return self._bin("Mul", o, True)
    def __truediv__(self, o): return self._bin("Div", o)
    def __rtruediv__(self, o): return self._bin("Div", o, True)
    def __pow__(self, o): return self._bin("Pow", o)
    def __rpow__(self, o): return self._bin("Pow", o, True)
    def __lt__(self, o): return self._bin("Lt", o)
    def __le__(self, o): return self._bin("Le", o)
    def __gt__(self, o): return self._bin("Gt", o)
    def __ge__(self, o): return self._bin("Ge", o)
    def __and__(self, o): return self._bin("And", o)
    def __rand__(self, o): return self._bin("And", o, True)
    def __or__(self, o): return self._bin("Or", o)
    def __ror__(self, o): return self._bin("Or", o, True)
    def eq(self, o): return self._bin("Eq", o)
    def ne(self, o): return self._bin("Ne", o)
    def __neg__(self): return Ex(ir.Unary("Neg", self.node))
    def __invert__(self): return Ex(ir.Unary("Not", self.node))

    __hash__ = None  # an Ex is a formula, not a value

    def __bool__(self):
        raise TypeError("an Ex is a formula: write cond(test, a, b), not `if`/`and`/`or`")

    def __repr__(self) -> str:
        return "Ex(%r)" % (self.node,)


def expr(x) -> ir.Expr:
    """An IR expression from an ``Ex``, a number or an IR node."""
    if isinstance(x, Ex):
        return x.node
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        if type(x) in (ir.Num, ir.Attr, ir.Ctx, ir.Reg, ir.Sample, ir.ExtSample, ir.Call,
                       ir.Unary, ir.Binary, ir.Cond, ir.AggRef):
            return x
        raise UsageError("%r is not an expression (an Ex, a number or an IR node)" % (x,))
    if x != x:
        raise UsageError("NaN is not a number serQ reads")
    return ir.Num(float(x))


def num(x: Number) -> Ex:
    return Ex(expr(x))


def ctx(name: str) -> Ex:
    """A context variable by its name in the language: ``now``, ``size``,
    ``waiting``, ``tokens``, ..."""
    if name not in CTX_NAMES:
        raise UsageError("no context variable `%s`; the language supplies %s"
                         % (name, ", ".join(sorted(CTX_NAMES))))
    return Ex(ir.Ctx(CTX_NAMES[name]))


def draw(dist: str, *args) -> Ex:
    """A draw: ``draw("exp", mean)``, ``draw("uniform", lo, hi)``,
    ``draw("erlang", k, mean)``, ``draw("h2", mean, cv2)``, ``draw("det", x)``,
    ``draw("bernoulli", p)``, as ``~dist(...)`` in the language; serq's
    extensions (not serQ 0.1.3) ``draw("lognormal", mean, cv2)``,
    ``draw("gamma", k, mean)``, ``draw("pareto", mean, alpha)`` and
    ``draw("empirical", [12, 40, 40, 7, …])`` (the rows of a table)."""
    if dist in EXT_DISTRIBUTIONS:
        return _ext_draw(dist, args)
    if dist not in DISTRIBUTIONS:
        raise UsageError("no distribution `%s`; there are %s"
                         % (dist, ", ".join(sorted(list(DISTRIBUTIONS) +
                                                   list(EXT_DISTRIBUTIONS)))))
    name, arity = DISTRIBUTIONS[dist]
    if len(args) != arity:
        raise UsageError("~%s takes %d argument(s), not %d" % (dist, arity, len(args)))
    return Ex(ir.Sample(name, [expr(a) for a in args]))


def _ext_draw(dist: str, args) -> Ex:
    name = EXT_DISTRIBUTIONS[dist]
    if dist != "empirical":
        if len(args) != laws.ARITY[dist]:
            raise UsageError("~%s takes %d argument(s), not %d"
                             % (dist, laws.ARITY[dist], len(args)))
        return Ex(ir.ExtSample(name, [expr(a) for a in args]))
    if len(args) != 1 or isinstance(args[0], (str, bytes)) or not hasattr(args[0], "__iter__"):
        raise UsageError('draw("empirical", rows) takes one sequence of numbers (a CSV file '
                         'is read by `~empirical("FILE.csv")` in a program)')
    counts = {}
    for v in args[0]:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise UsageError("draw(\"empirical\", rows): %r is not a finite number" % (v,))
        counts[float(v)] = counts.get(float(v), 0) + 1
    if not counts:
        raise UsageError('draw("empirical", rows): no rows')
    values = sorted(counts)
    return Ex(ir.ExtSample(name, [], values, [counts[v] for v in values]))


def cond(test, then, other) -> Ex:
    """``test ? then : other``."""
    return Ex(ir.Cond(expr(test), expr(then), expr(other)))


def fn(name: str, *args) -> Ex:
    """A function by its name in the language: ``fn("min", a, b)``,
    ``fn("used", kv)`` (a pool), ``fn("queue", gpu)`` (a stage)."""
    if name not in FUNCTIONS or FUNCTIONS[name][0] is None:
        raise UsageError("no function `%s`; there are %s"
                         % (name, ", ".join(sorted(k for k, v in FUNCTIONS.items() if v[0]))))
    irname, kinds = FUNCTIONS[name]
    if len(args) != len(kinds):
        raise UsageError("%s takes %d argument(s), not %d" % (name, len(kinds), len(args)))
    out = []
    for k, a in zip(kinds, args):
        if k == "e":
            out.append(ir.ArgExpr(expr(a)))
            continue
        want = "pool" if k == "p" else "stage"
        ref = a.ref if isinstance(a, (Family, Member)) and a.kind == want else None
        if ref is None:
            raise UsageError("%s reads a %s, not %r" % (name, want, a))
        out.append(ir.ArgPool(ref) if k == "p" else ir.ArgStage(ref))
    return Ex(ir.Call(irname, out))


class Family(object):
    """A pool or stage by name: all its members (one for a single one).
    ``family[i]`` is member ``i`` (``i`` may be an expression, e.g. an
    attribute set by ``choose``)."""

    def __init__(self, kind: str, items: list, base: int, count: int):
        self.kind = kind
        self._items = items
        self.base = base
        self.count = count

    @property
    def name(self) -> str:
        return self._items[self.base].name

    @property
    def members(self) -> list:
        """The IR nodes (``ir.Pool`` or ``ir.Stage``), to edit any field."""
        return self._items[self.base:self.base + self.count]

    @property
    def ref(self) -> ir.Ref:
        return ir.Ref(self.base, self.count, None)

    def __getitem__(self, i) -> "Member":
        if isinstance(i, int) and not isinstance(i, bool) and not 0 <= i < self.count:
            raise UsageError("%s `%s` has members 0 to %d, not %d"
                             % (self.kind, self.name, self.count - 1, i))
        return Member(self, expr(i))

    def _set_all(self, field, value):
        for m in self.members:
            setattr(m, field, value)

    # pools
    @property
    def cap(self) -> float:
        return self.members[0].cap

    @cap.setter
    def cap(self, value: Number) -> None:
        self._pool_only("cap")
        self._set_all("cap", float(value))

    @property
    def block(self) -> Optional[float]:
        return self.members[0].block

    @block.setter
    def block(self, value: Optional[Number]) -> None:
        self._pool_only("block")
        self._set_all("block", None if value is None else float(value))

    # stages
    @property
    def stage_kind(self) -> ir.StageKind:
        return self.members[0].kind

    @stage_kind.setter
    def stage_kind(self, kind: ir.StageKind) -> None:
        if self.kind != "stage":
            raise UsageError("`%s` is a pool; a pool has no stage kind" % self.name)
        for m in self.members:
            m.kind = copy.deepcopy(kind)

    def _pool_only(self, field):
        if self.kind != "pool":
            raise UsageError("`%s` is a stage; `%s` is a pool's" % (self.name, field))

    def __repr__(self) -> str:
        return "Family(%s %r, %d member(s))" % (self.kind, self.name, self.count)


class Member(object):
    """One member of a family, chosen by an expression."""

    def __init__(self, family: Family, index: ir.Expr):
        self.family = family
        self.kind = family.kind
        self.index = index

    @property
    def ref(self) -> ir.Ref:
        return ir.Ref(self.family.base, self.family.count, copy.deepcopy(self.index))


PoolLike = Union[Family, Member]


def _ref(x, kind: str) -> ir.Ref:
    if isinstance(x, (Family, Member)) and x.kind == kind:
        return x.ref
    raise UsageError("expected a %s (from add_%s or %s(name)), not %r" % (kind, kind, kind, x))


class ProgramBuilder(object):
    """A program's IR under construction.  ``ProgramBuilder()`` starts from
    an empty program (no pools, stages or workload); ``ProgramBuilder(p)``
    from a copy of the compiled program ``p`` (a ``serq.Program`` or an
    ``ir.Program``).  ``session``, ``init`` and ``turn_block`` are the
    statement lists of the session's three blocks, to edit as lists."""

    def __init__(self, program=None, *, horizon: Optional[float] = None,
                 warmup: Optional[float] = None, seed: Optional[int] = None):
        if program is None:
            p = ir.Program(attrs=list(ir.BUILTIN_ATTRS), observes=[], pools=[], stages=[],
                           arrival=ir.Arrival("None"), blocks=[[], [], []],
                           horizon=math.inf)
        else:
            src = getattr(program, "ir", program)
            if not isinstance(src, ir.Program):
                raise UsageError("edit takes a serq.Program, not %r" % (program,))
            p = copy.deepcopy(src)
            # Statement positions no longer match the text once edited.
            p.spans, p.source = {}, None
        self.ir = p
        if horizon is not None:
            p.horizon = float(horizon)
        if warmup is not None:
            p.warmup = float(warmup)
        if seed is not None:
            p.seed = seed

    # ------------------------------------------------------ run settings

    @property
    def horizon(self) -> float:
        return self.ir.horizon

    @horizon.setter
    def horizon(self, t: float) -> None:
        self.ir.horizon = float(t)

    @property
    def warmup(self) -> float:
        return self.ir.warmup

    @warmup.setter
    def warmup(self, t: float) -> None:
        self.ir.warmup = float(t)

    @property
    def seed(self) -> int:
        return self.ir.seed

    @seed.setter
    def seed(self, s: int) -> None:
        self.ir.seed = s

    def poisson(self, rate: float) -> None:
        """Sessions arrive as a Poisson stream of ``rate`` a second."""
        self.ir.arrival = ir.Arrival("Poisson", float(rate))

    def batch(self, n: int) -> None:
        """``n`` sessions arrive at time 0."""
        self.ir.arrival = ir.Arrival("Batch", int(n))

    def closed(self, n: int) -> None:
        """``n`` sessions, each replaced by a new one when it ends."""
        self.ir.arrival = ir.Arrival("Closed", int(n))

    def renewal(self, gap) -> None:
        """Sessions arrive with gaps drawn from ``gap`` (an expression)."""
        self.ir.arrival = ir.Arrival("Renewal", expr(gap))

    # ---------------------------------------------------------- blocks

    @property
    def session(self) -> List[ir.Stmt]:
        return self.ir.blocks[self.ir.session]

    @property
    def init(self) -> List[ir.Stmt]:
        return self.ir.blocks[self.ir.init]

    @property
    def turn_block(self) -> List[ir.Stmt]:
        return self.ir.blocks[self.ir.turn]

    def _block(self, stmts: Iterable[ir.Stmt]) -> int:
        stmts = list(stmts)
        for s in stmts:
            if isinstance(s, (Ex, int, float)) or not hasattr(s, "__dataclass_fields__"):
                raise UsageError("%r is not a statement (make one with run, set, observe...)"
                                 % (s,))
        self.ir.blocks.append(stmts)
        return len(self.ir.blocks) - 1

    # ------------------------------------------------- names: attributes

    def attr(self, name: str) -> Ex:
        """A session attribute (added if the program has none of that name)."""
        if name not in self.ir.attrs:
            if name in CTX_NAMES or name == "inf":
                raise UsageError("`%s` is a name the language supplies; use ctx(%r)"
                                 % (name, name))
            self.ir.attrs.append(name)
        return Ex(ir.Attr(self.ir.attrs.index(name)))

    def _observation(self, name: str) -> int:
        if name not in self.ir.observes:
            self.ir.observes.append(name)
        return self.ir.observes.index(name)

    def aggregate(self, kind: str, observation: str) -> Ex:
        """``total(x)``, ``count(x)``, ``largest(x)``, ``smallest(x)``,
        ``prefix_total(x)`` of an observation ``x``."""
        if kind not in AGGREGATES:
            raise UsageError("no aggregate `%s`; there are %s" % (kind, ", ".join(AGGREGATES)))
        return Ex(ir.AggRef(AGGREGATES[kind], self._observation(observation)))

    # ------------------------------------------------- pools and stages

    def _family(self, kind: str, name: str) -> Family:
        items = self.ir.pools if kind == "pool" else self.ir.stages
        idx = [i for i, x in enumerate(items) if x.name == name]
        if not idx:
            raise UsageError("no %s `%s`; the program's %ss are: %s"
                             % (kind, name, kind, ", ".join(dict.fromkeys(
                                 x.name for x in items)) or "(none)"))
        return Family(kind, items, idx[0], len(idx))

    def pool(self, name: str) -> Family:
        return self._family("pool", name)

    def stage(self, name: str) -> Family:
        return self._family("stage", name)

    def _check_new(self, items: list, name: str, count: Optional[int], what: str) -> int:
        if not name or any(x.name == name for x in items):
            raise UsageError("the program already has a %s `%s`" % (what, name))
        n = 1 if count is None else count
        if not isinstance(n, int) or not 1 <= n <= 1000000:
            raise UsageError("a %s family has 1 to 1000000 members, not %r" % (what, count))
        return n

    def add_pool(self, name: str, cap: Number = math.inf, *, block: Optional[Number] = None,
                 count: Optional[int] = None, preempt: Optional[str] = None,
                 admit_via: Optional[PoolLike] = None) -> Family:
        """A pool (``count`` members when ``count`` is given): ``cap`` units,
        ``block`` units a block, ``preempt="lifo"`` to preempt the youngest
        holder when it runs out, ``admit_via`` a step stage that admits from
        its queue."""
        n = self._check_new(self.ir.pools, name, count, "pool")
        if preempt not in (None, "lifo"):
            raise UsageError("preempt is None or \"lifo\", not %r" % (preempt,))
        via = None if admit_via is None else _ref(admit_via, "stage").base
        base = len(self.ir.pools)
        for k in range(n):
            p = ir.Pool(name=name, index=None if count is None else k, cap=float(cap),
                        block=None if block is None else float(block), admit_via=via)
            if preempt == "lifo":
                p.preempt = [ir.Unary("Neg", ir.Ctx("Admission"))]
            self.ir.pools.append(p)
        return Family("pool", self.ir.pools, base, n)

    def add_stage(self, name: str, kind: ir.StageKind, *, count: Optional[int] = None) -> Family:
        """A stage (``count`` replicas when ``count`` is given) of ``kind``:
        ``b.fifo(servers)``, ``b.ps(capacity)``, ``b.delay()`` or
        ``b.step(...)``."""
        n = self._check_new(self.ir.stages, name, count, "stage")
        if type(kind) not in (ir.Fifo, ir.Ps, ir.Delay, ir.Step):
            raise UsageError("a stage kind is b.fifo(), b.ps(), b.delay() or b.step(), not %r"
                             % (kind,))
        base = len(self.ir.stages)
        for k in range(n):
            self.ir.stages.append(ir.Stage(name, copy.deepcopy(kind),
                                           None if count is None else k))
        return Family("stage", self.ir.stages, base, n)

    @staticmethod
    def fifo(servers: int = 1) -> ir.Fifo:
        return ir.Fifo(int(servers))

    @staticmethod
    def ps(capacity=1.0) -> ir.Ps:
        return ir.Ps(expr(capacity))

    @staticmethod
    def delay() -> ir.Delay:
        return ir.Delay()

    @staticmethod
    def step(cost, *, budget=math.inf, chunk=0.0, memory: Optional[Family] = None) -> ir.Step:
        """A continuous-batching engine: each iteration takes ``cost``
        seconds (read ``ctx("tokens")``, ``ctx("kv_decode")``...) and
        serves at most ``budget`` tokens; ``memory`` is its KV pool."""
        return ir.Step(budget=expr(budget), cost=expr(cost), chunk=expr(chunk),
                       serve=[], memory=None if memory is None else _ref(memory, "pool").base)

    # ------------------------------------------------------- statements

    def run(self, stage, work, mode: str = "plain", growing: Optional[PoolLike] = None) -> ir.Run:
        """``run stage (work)``; ``mode`` ``"prefill"`` or ``"decode"`` on a
        step stage, ``growing`` the held pool its tokens grow."""
        modes = {"plain": "Plain", "prefill": "Prefill", "decode": "Decode"}
        if mode not in modes:
            raise UsageError("mode is plain, prefill or decode, not %r" % (mode,))
        return ir.Run(_ref(stage, "stage"), modes[mode], expr(work),
                      None if growing is None else _ref(growing, "pool"))

    def set(self, name: str, value) -> ir.Set:
        return ir.Set(self.attr(name).node.slot, expr(value))

    def observe(self, name: str, value) -> ir.Observe:
        return ir.Observe(self._observation(name), expr(value))

    def hold(self, pools: Union[Tuple, Sequence[Tuple]], body: Iterable[ir.Stmt], *,
             reuse=None, cache=None) -> ir.Hold:
        """``hold pool (units), ... { body }``: ``pools`` is one
        ``(pool, units)`` or ``(pool, units, reserve)`` or a list of them."""
        if isinstance(pools, tuple):
            pools = [pools]
        held = []
        for item in pools:
            if not isinstance(item, tuple) or len(item) not in (2, 3):
                raise UsageError("a held pool is (pool, units) or (pool, units, reserve)")
            reserve = expr(item[2]) if len(item) == 3 else None
            held.append(ir.HoldPool(_ref(item[0], "pool"), expr(item[1]), reserve))
        return ir.Hold(held, None if reuse is None else expr(reuse), self._block(body),
                       None if cache is None else expr(cache), None)

    def branch(self, test, then: Iterable[ir.Stmt], other: Iterable[ir.Stmt] = ()) -> ir.Branch:
        return ir.Branch(expr(test), self._block(then), self._block(other))

    def loop(self, body: Iterable[ir.Stmt]) -> ir.Loop:
        return ir.Loop(self._block(body))

    @staticmethod
    def turn() -> ir.Turn:
        return ir.Turn()

    @staticmethod
    def end() -> ir.End:
        return ir.End()

    def gauge(self, name: str, value) -> None:
        """A gauge: ``value`` (an expression of the deployment's state)
        averaged over time."""
        if any(g.name == name for g in self.ir.gauges):
            raise UsageError("the program already has a gauge `%s`" % name)
        self.ir.gauges.append(ir.Gauge(name, expr(value)))

    # ------------------------------------------------------------ result

    def program(self):
        """The program, checked (``IRError`` names the first problem) and
        copied: later edits of this builder do not change it."""
        from .api import Program
        p = copy.deepcopy(self.ir)
        if p.horizon == math.inf:
            raise UsageError("the program has no horizon: ProgramBuilder(horizon=T) or "
                             "b.horizon = T")
        return Program(validate(p))


def edit(program) -> ProgramBuilder:
    """A builder holding a copy of ``program`` (a ``serq.Program``)."""
    return ProgramBuilder(program)


__all__ = ["ProgramBuilder", "edit", "Ex", "Family", "Member", "expr", "num", "ctx", "draw",
           "cond", "fn"]
