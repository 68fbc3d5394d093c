"""Expressions: AST -> IR under a moment.

Names resolve in this order: an aggregate variable being written out, ``inf``,
a ``let`` (replaced by its folded number; the surrounding expression is not
folded further, as in the reference), a context variable, a register, a
session attribute.  Every read is checked against the moment.
"""
import math
from typing import Dict, List, Optional, Tuple

from ..errors import LinkError
from ..ir import nodes as ir
from ..ir import laws
from ..syntax import ast
from . import consts
from .empirical import empirical_table
from .scope import (AGGREGATES, CTX_NAMES, DISTRIBUTIONS, EXT_DISTRIBUTIONS, FUNCTIONS, MATH,
                    WHERE_CTX, WHERE_TEXT, Moment, Scope)

# sim/dist.py's bound, said at link time when the shape is a constant (the
# front end imports nothing of the simulator)
MAX_ERLANG_PHASES = 1e9

_BINOPS = {"+": "Add", "-": "Sub", "*": "Mul", "/": "Div", "^": "Pow", "<": "Lt",
           "<=": "Le", ">": "Gt", ">=": "Ge", "==": "Eq", "!=": "Ne", "&&": "And",
           "||": "Or"}


class ExprLinker:
    def __init__(self, scope: Scope):
        self.scope = scope
        # ~empirical's tables read so far, by (absolute path, column)
        self.tables: Dict[Tuple[str, Optional[str]], Tuple[List[float], List[int]]] = {}

    def error(self, m: Moment, msg: str, node, help: Optional[str] = None) -> LinkError:
        return LinkError(m.context + msg, getattr(node, "span", None), help=help)

    def invalid(self, m: Moment, msg: str, node, help: Optional[str] = None) -> None:
        """A validation error: recorded, raised after name resolution."""
        span = None if m.nospan else (m.anchor or getattr(node, "span", None))
        self.scope.defer(LinkError(m.context + msg, span, help=help))

    # ------------------------------------------------------------ expressions

    def expr(self, e: ast.Expr, m: Moment, bound: Optional[Dict[str, float]] = None) -> ir.Expr:
        t = type(e)
        if t is ast.Num:
            return ir.Num(e.value)
        if t is ast.Name:
            return self.name(e, m, bound)
        if t is ast.Binary:
            return ir.Binary(_BINOPS[e.op], self.expr(e.left, m, bound),
                             self.expr(e.right, m, bound))
        if t is ast.Unary:
            return ir.Unary("Neg" if e.op == "-" else "Not", self.expr(e.operand, m, bound))
        if t is ast.Cond:
            return ir.Cond(self.expr(e.test, m, bound), self.expr(e.then, m, bound),
                           self.expr(e.other, m, bound))
        if t is ast.Call:
            return self.call(e, m, bound)
        if t is ast.Draw:
            return self.draw(e, m, bound)
        if t is ast.Agg:
            return self.agg(e, m, bound)
        raise self.error(m, "not an expression", e)

    def name(self, e: ast.Name, m: Moment, bound) -> ir.Expr:
        n = e.name
        if e.index is not None:
            if n in self.scope.pools or n in self.scope.stages:
                kind = "pool" if n in self.scope.pools else "stage"
                raise self.error(m, "%s `%s[…]` is not a number" % (kind, n), e,
                                 help="read it with a query such as `used(%s[…])` or `queue(%s[…])`"
                                 % (n, n))
            raise self.error(m, "`%s` is not an array" % n, e)
        if bound and n in bound:
            return ir.Num(bound[n])
        if n == "inf":
            return ir.Num(math.inf)
        if n in self.scope.lets:
            return ir.Num(self.scope.lets[n])
        var = CTX_NAMES.get(n)
        if var is not None:
            if var not in m.ctx or (var == "Now" and not m.now):
                where = [WHERE_TEXT[w] for w in WHERE_CTX.get(var, [])]
                self.invalid(
                    m, "`%s` is read in %s, where it does not exist" % (n, m.name or m.kind), e,
                    help="`%s` exists in %s" % (n, ", ".join(where) if where else "no expression"))
            return ir.Ctx(var)
        reg = self.scope.registers.get(n)
        if reg is not None:
            return self.register(e, reg, m)
        slot = self.scope.attr_slots.get(n)
        if slot is not None:
            if m.kind == "Victim" and n == "computed":
                self.invalid(m, "a preempt key reads `computed`, the position at the session's "
                             "last preemption; the candidate's position now is `position`", e,
                             help="read `position`")
            if n == "cached" and m.kind in ("Session", "Admit") and m.no_cache_hold:
                raise self.error(m, "`cached` is read in a hold on `%s` that has no `cache` "
                                 "clause: such a hold consumes nothing of the cached prefix, so "
                                 "`cached` is 0 there" % m.no_cache_hold, None,
                                 help="write `cache (0)` after the hold to consume the prefix")
            if not m.attrs and m.nan_attrs:
                self.scope.warn(m.context + "%s reads the session attribute `%s`, but has no "
                                "session: it reads NaN there (0.1.3 runs a NaN chunk as no limit)"
                                % (m.name or "this expression", n), e.span,
                                help="read constants and pool or stage queries here; "
                                     "`chunk 0` for no limit")
            elif not m.attrs:
                self.invalid(m, "%s reads the session attribute `%s`, but has no session"
                                 % (m.name or "this expression", n), e,
                                 help="read constants and pool or stage queries here")
            if n in self.scope.hidden and not m.hidden:
                self.invalid(m, "`%s` is hidden from the scheduler, but is read in %s"
                                 % (n, m.name or m.kind), e,
                                 help="read it only in session statements, or drop it from "
                                 "`hidden`")
            return ir.Attr(slot)
        if n in self.scope.pools or n in self.scope.stages:
            kind = "pool" if n in self.scope.pools else "stage"
            raise self.error(m, "%s `%s` is not a number" % (kind, n), e,
                             help="read it with a query such as `used(%s)` or `queue(%s)`" % (n, n))
        raise self.error(m, "unknown name `%s`" % n, e,
                         help="declare a `let` constant or assign a session attribute before "
                         "using it")

    def register(self, e: ast.Name, reg, m: Moment) -> ir.Expr:
        index, stage = reg
        ok = m.kind in ("Gauge", "End")
        if m.kind in ("Budget", "Step", "Serve", "Plan", "Iteration") and m.stage == stage:
            ok = True
        if m.kind in ("Select", "Admit") and m.stage is not None and m.stage == stage:
            ok = True
        if not ok:
            self.invalid(m, "the register `%s` of stage `%s` is read in %s, which it does "
                             "not reach" % (e.name, self._stage_label(stage), m.name or m.kind),
                             e, help="a register is read by its stage's options, iteration body "
                             "and claims, the pools it admits, gauges and `at end` claims")
        return ir.Reg(index)

    def _stage_label(self, member: int) -> str:
        for fam in self.scope.stages.values():
            if fam.base <= member < fam.base + fam.count:
                return fam.name if not fam.array else "%s[%d]" % (fam.name, member - fam.base)
        return str(member)

    def draw(self, e: ast.Draw, m: Moment, bound) -> ir.Expr:
        d = DISTRIBUTIONS.get(e.dist)
        if d is None and e.dist in EXT_DISTRIBUTIONS:
            return self.ext_draw(e, m, bound)
        if d is None:
            raise self.error(m, "unknown distribution `%s`" % e.dist, e,
                             help="the distributions are " + ", ".join(
                                 "~" + k for k in list(DISTRIBUTIONS) + list(EXT_DISTRIBUTIONS))
                             + " (the last four are serq's, not serQ 0.1.3's)")
        if len(e.args) != d[1]:
            raise self.error(m, "`~%s` takes %d argument(s), got %d"
                             % (e.dist, d[1], len(e.args)), e)
        if not m.draw:
            self.invalid(m, "%s may not draw" % (m.name or "this expression"), e,
                             help="sample into a session attribute first and read that")
        args = [self.expr(a, m, bound) for a in e.args]
        if d[0] == "Erlang" and type(args[0]) is ir.Num and not args[0].value <= MAX_ERLANG_PHASES:
            k = args[0].value
            if k == k:  # (NaN phases are one, as in 0.1.3)
                raise self.error(m, "`~erlang(%s, …)`: %s phases, more than the %d one draw "
                                 "takes at most (each phase is a draw of its own; serQ 0.1.3 "
                                 "draws for ever)" % (_fmt(k), _fmt(k), MAX_ERLANG_PHASES),
                                 e.args[0], help="k is the shape: cv2 = 1/k; a k this large "
                                 "is a constant already (write `~det(mean)` or the mean)")
        return ir.Sample(d[0], args)

    def ext_draw(self, e: ast.Draw, m: Moment, bound) -> ir.Expr:
        """serq's extension draws (``ir.ExtSample``): constant parameters
        checked here, ``~empirical``'s file read here (empirical_table)."""
        law = e.dist
        arity = laws.ARITY[law]
        if len(e.args) != arity:
            raise self.error(m, "`~%s` takes %d argument(s), got %d"
                             % (law, arity, len(e.args)), e, help=laws.HELP.get(law))
        if not m.draw:
            self.invalid(m, "%s may not draw" % (m.name or "this expression"), e,
                             help="sample into a session attribute first and read that")
        args = [self.expr(a, m, bound) for a in e.args]
        for i, a in enumerate(args):
            v = _ir_const(a)
            why = None if v is None else laws.problem(law, i, v)
            if why is not None:
                raise self.error(m, "`%s`: %s" % (laws.SIGNATURE[law], why), e.args[i],
                                 help=laws.HELP.get(law))
        x = ir.ExtSample(EXT_DISTRIBUTIONS[law], args)
        if law == "empirical":
            x.values, x.counts = empirical_table(self.tables, e)
            x.source = e.strings[0][0]
            x.column = e.strings[1][0] if len(e.strings) > 1 else None
        return x

    def call(self, e: ast.Call, m: Moment, bound) -> ir.Expr:
        f = e.func
        if f in AGGREGATES:
            return self.aggregate(e, m)
        spec = FUNCTIONS.get(f)
        if spec is None:
            raise self.error(m, "unknown function `%s`" % f, e)
        fun, kinds = spec
        if len(e.args) != len(kinds):
            raise self.error(m, "`%s` takes %d argument(s), got %d"
                             % (f, len(kinds), len(e.args)), e)
        if fun is None:  # blocksize(p): folded
            ref = self.ref(e.args[0], "p", m, bound)
            if m.kind == "Const":
                raise self.error(m, "`blocksize` is not a constant here", e,
                                 help="declare the block size as a `let` and use it in both places")
            pool = self.pool_decl(ref)
            if self.scope.blocks.get(pool.name) is None:
                raise self.error(m, "`blocksize(%s)`: pool `%s` has no `block`"
                                 % (pool.name, pool.name), e.args[0])
            return ir.Num(self.scope.pool_block(pool))
        if fun not in MATH:
            if not m.state:
                self.invalid(m, "%s reads `%s(…)`, which is live state"
                                 % (m.name or "this expression", f), e,
                                 help="read constants here")
            if fun == "Work" and not m.work:
                self.invalid(m, "%s may not read `work(…)`" % (m.name or "this expression"), e)
            if fun == "CachedIn" and not m.cachedin:
                self.invalid(m, "%s may not read `cachedin(…)`"
                                 % (m.name or "this expression"), e)
            if fun == "BudgetLeft" and not m.budget_left:
                self.invalid(m, "%s may not read `budget_left(…)`"
                                 % (m.name or "this expression"), e)
        args = []
        for a, k in zip(e.args, kinds):
            if k == "e":
                args.append(ir.ArgExpr(self.expr(a, m, bound)))
            elif k == "p":
                args.append(ir.ArgPool(self.ref(a, "p", m, bound, at=e)))
            else:
                ref = self.ref(a, "s", m, bound, at=e)
                if fun == "BudgetLeft":
                    self._check_step(ref, e, a, m)
                    if m.kind == "Plan" and ref.index is None and m.stage == ref.base:
                        self.invalid(m, "an iteration body may not read its own "
                                         "`budget_left`", e)
                args.append(ir.ArgStage(ref))
        return ir.Call(fun, args)

    def _check_step(self, ref: ir.Ref, node, arg, m: Moment) -> None:
        kinds = self.scope.stage_kinds[ref.base:ref.base + ref.count]
        if any(k != "step" for k in kinds):
            self.invalid(m.replace(anchor=None), "`budget_left(%s)`: `%s` is a %s stage; only a "
                         "step stage has a token budget" % (arg.name, arg.name,
                                [k for k in kinds if k != "step"][0]), node)

    def pool_decl(self, ref: ir.Ref):
        for fam in self.scope.pools.values():
            if fam.base == ref.base:
                return fam.decl
        raise AssertionError(ref)

    def aggregate(self, e: ast.Call, m: Moment) -> ir.Expr:
        if not m.aggregates:
            raise self.error(m, "`%s(…)` aggregates the run's observations and is read only by "
                             "a claim `at end`" % e.func, e)
        if len(e.args) != 1 or type(e.args[0]) is not ast.Name or e.args[0].index is not None:
            raise self.error(m, "`%s` takes the name of an observation" % e.func, e)
        name = e.args[0].name
        i = self.scope.obs_index.get(name)
        if i is None:
            raise self.error(m, "`%s(%s)`: `%s` is not an `observe` of the program"
                             % (e.func, name, name), e.args[0])
        return ir.AggRef(AGGREGATES[e.func], i)

    def agg(self, e: ast.Agg, m: Moment, bound) -> ir.Expr:
        if e.var in self.scope.attr_slots:
            raise self.error(m, "`%s %s in`: `%s` is also a session attribute"
                             % (e.kind, e.var, e.var), e,
                             help="name the index with a fresh name")
        try:
            n = consts.fold(e.count, self.scope.lets, bound)
        except consts.NotConstant as nc:
            raise self.error(m, nc.reason, nc.node,
                             help="the count of `%s %s in` is a number or a constant"
                             % (e.kind, e.var)) from None
        try:
            n = consts.write_out(e, n)
        except LinkError as err:
            raise self.error(m, err.message, e, help=err.help) from None
        terms = []
        for j in range(n):
            inner = dict(bound or {})
            inner[e.var] = float(j)
            terms.append(self.expr(e.body, m, inner))
        acc = terms[0]
        for t in terms[1:]:
            if e.kind == "sum":
                acc = ir.Binary("Add", acc, t)
            else:
                acc = ir.Call("Max" if e.kind == "max" else "Min",
                              [ir.ArgExpr(acc), ir.ArgExpr(t)])
        return acc

    # ------------------------------------------------------------- references

    def ref(self, e: ast.Expr, kind: str, m: Moment, bound=None, what: str = "",
            family_ok: bool = False, at=None) -> ir.Ref:
        """A pool (kind "p") or stage ("s") reference; ``family_ok`` lets an
        unindexed family stand for all its members (``admit via``, ``memory``)."""
        table = self.scope.pools if kind == "p" else self.scope.stages
        word = "pool" if kind == "p" else "stage"
        if type(e) is not ast.Name:
            raise self.error(m, "expected a %s%s" % (word, what), e)
        fam = table.get(e.name)
        if fam is None:
            other = self.scope.stages if kind == "p" else self.scope.pools
            if e.name in other:
                raise self.error(m, "`%s` is a %s, not a %s" % (
                    e.name, "stage" if kind == "p" else "pool", word), e)
            raise self.error(m, "unknown %s `%s`" % (word, e.name), e)
        if e.index is None:
            if fam.array and fam.count > 1 and not family_ok:
                raise self.error(m, "%s `%s` is an array; index it" % (word, e.name), at or e,
                                 help="write `%s[i]`" % e.name)
            return ir.Ref(fam.base, fam.count, None)
        idx = self.expr(e.index, m, bound)
        if type(idx) is ir.Num:
            v = idx.value
            if not (float(v).is_integer() and 0 <= v < fam.count):
                raise self.error(m, "%s `%s[%s]` is out of range: `%s` has %d member(s)"
                                 % (word, e.name, _fmt(v), e.name, fam.count), e)
        elif m.literal_index:
            self.invalid(m, "%s indexes `%s` with state; an index here is a number or an "
                             "aggregate variable" % (m.name or "this expression", e.name), e)
        return ir.Ref(fam.base, fam.count, idx)


def _fmt(v: float) -> str:
    if math.isinf(v) or math.isnan(v):
        return str(v)
    return str(int(v)) if float(v).is_integer() else repr(v)


def _ir_const(e: ir.Expr) -> Optional[float]:
    """The value of an IR expression of numbers and arithmetic, or None."""
    t = type(e)
    if t is ir.Num:
        return e.value
    if t is ir.Unary and e.op == "Neg":
        v = _ir_const(e.operand)
        return None if v is None else -v
    if t is ir.Binary and e.op in ("Add", "Sub", "Mul", "Div", "Pow"):
        a, b = _ir_const(e.left), _ir_const(e.right)
        if a is None or b is None:
            return None
        return consts.binop({"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Pow": "^"}[e.op],
                            a, b)
    if t is ir.Call and e.fun.lower() in consts.MATH_FUNS:
        vals = [_ir_const(x.expr) if type(x) is ir.ArgExpr else None for x in e.args]
        if any(v is None for v in vals):
            return None
        return consts.MATH_FUNS[e.fun.lower()](*vals)
    return None
