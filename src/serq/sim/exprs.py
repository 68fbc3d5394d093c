"""IR expressions -> Python closures, compiled once per run.

A compiled expression is ``f(x)``: ``x`` is the evaluation context — a
session (its attributes ``x.a``, its current stream ``x.rng``) or a stage
context (``x.a`` is None, ``x.rng`` the machine stream, ``x.present`` …).
serq's extension draws (``ExtSample``) read companions of ``x.rng``.
Context variables read the attribute of ``x`` of the same name in lower
case (``N`` -> ``x.present``), ``Now`` the simulator's clock.  Arithmetic is
IEEE as in the reference: comparisons and logic give 0.0 or 1.0, a division
by zero gives an infinity or NaN, ``ln(0)`` is ``-inf``.
"""
import sys
from typing import Callable

from ..errors import RunError
from ..ir import nodes as ir
from . import dist, etree, xdist
from .arith import CTX_FIELD, MATH1, MATH2, fdiv, fmt, fpow
from .codegen import ExprWriter

_PYPY = sys.implementation.name == "pypy"


class Compiler:
    """Compiles expressions for one simulator (``sim`` answers the queries)."""

    def __init__(self, sim):
        self.sim = sim
        self.trees = {}  # expression repr -> its tree (etree.build), or None

    def expr(self, e) -> Callable:
        t = type(e)
        if t is ir.Num:
            v = e.value
            return lambda x: v
        if t is ir.Attr:
            slot = e.slot
            return lambda x: x.a[slot]
        if t is ir.Ctx:
            if e.var == "Now":
                sim = self.sim
                return lambda x: sim.now
            name = CTX_FIELD[e.var]
            return lambda x: getattr(x, name)
        if t is ir.Binary:
            return self.binary(e)
        if t is ir.Unary:
            f = self.expr(e.operand)
            if e.op == "Neg":
                return lambda x: -f(x)
            return lambda x: 1.0 if f(x) == 0.0 else 0.0
        if t is ir.Cond:
            c, a, b = self.expr(e.test), self.expr(e.then), self.expr(e.other)
            return lambda x: a(x) if c(x) != 0.0 else b(x)
        if t is ir.Sample:
            law = dist.LAWS[e.dist.lower()]
            args = [self.expr(a) for a in e.args]
            if len(args) == 1:
                f0 = args[0]
                return lambda x: law(x.rng, f0(x))
            f0, f1 = args
            return lambda x: law(x.rng, f0(x), f1(x))
        if t is ir.ExtSample:
            return self.ext_sample(e)
        if t is ir.Call:
            return self.call(e)
        if t is ir.Reg:
            r = e.register
            regs = self.sim.registers
            return lambda x: regs[r]
        if t is ir.AggRef:
            return self.sim.aggregate_reader(e.kind, e.obs)
        raise TypeError(e)

    def ext_sample(self, e) -> Callable:
        """serq's extension draws (xdist.py): from the companion streams of
        the context's stream, never from the stream itself."""
        law = xdist.sampler(e.dist.lower(), e.values, e.counts)
        if not e.args:
            return lambda x: law(x.rng)
        f0, f1 = [self.expr(a) for a in e.args]
        return lambda x: law(x.rng, f0(x), f1(x))

    def fast(self, e) -> Callable:
        """``expr(e)`` written as one Python function (codegen.ExprWriter),
        for the expressions read at every step iteration.  Not on PyPy: its
        JIT warms up faster on the closures, whose code objects are shared
        by every expression (router16 -12 % there), where CPython gains by
        the call per node saved."""
        if _PYPY:
            return self.expr(e)
        if type(e) is ir.Num:  # (a step's budget or chunk: no source to write)
            v = float(e.value)
            return lambda x: v
        return ExprWriter(self.sim, self).function(e)

    def session(self, e) -> Callable:
        """``fast(e)`` for a hold's expressions, read at every attempt to
        admit it: where the core is compiled, a typed tree over the session
        if the expression is one a tree can say (etree.build_session)."""
        f = etree.build_session(e, self.sim, self)
        return self.fast(e) if f is None else f

    def gauge(self, e) -> Callable:
        """``fast(e)`` for a gauge, read before every advance of the clock:
        a typed tree where ``session`` would make one (etree.build_gauge)."""
        f = etree.build_gauge(e, self.sim, self)
        return self.fast(e) if f is None else f

    def session_member(self, r: ir.Ref) -> Callable:
        """``member(r)``, as a typed tree where ``session`` would make one."""
        f = etree.build_member(r, self.sim, self)
        return self.member(r) if f is None else f

    def binary(self, e) -> Callable:
        a, b = self.expr(e.left), self.expr(e.right)
        op = e.op
        if op == "Add":
            return lambda x: a(x) + b(x)
        if op == "Sub":
            return lambda x: a(x) - b(x)
        if op == "Mul":
            return lambda x: a(x) * b(x)
        if op == "Div":
            return lambda x: fdiv(a(x), b(x))
        if op == "Pow":
            return lambda x: fpow(a(x), b(x))
        if op == "Lt":
            return lambda x: 1.0 if a(x) < b(x) else 0.0
        if op == "Le":
            return lambda x: 1.0 if a(x) <= b(x) else 0.0
        if op == "Gt":
            return lambda x: 1.0 if a(x) > b(x) else 0.0
        if op == "Ge":
            return lambda x: 1.0 if a(x) >= b(x) else 0.0
        if op == "Eq":
            return lambda x: 1.0 if a(x) == b(x) else 0.0
        if op == "Ne":
            return lambda x: 1.0 if a(x) != b(x) else 0.0
        if op == "And":
            return lambda x: 1.0 if a(x) != 0.0 and b(x) != 0.0 else 0.0
        if op == "Or":
            return lambda x: 1.0 if a(x) != 0.0 or b(x) != 0.0 else 0.0
        raise TypeError(op)

    def call(self, e) -> Callable:
        fun = e.fun
        if fun in MATH1:
            f, a = MATH1[fun], self.expr(e.args[0].expr)
            return lambda x: f(a(x))
        if fun in MATH2:
            f, a, b = MATH2[fun], self.expr(e.args[0].expr), self.expr(e.args[1].expr)
            return lambda x: f(a(x), b(x))
        ref = self.member(e.args[0].ref)
        extra = [self.expr(a.expr) for a in e.args[1:]]
        query = self.sim.query(fun)
        if not extra:
            return lambda x: query(ref(x), x)
        s_hit, ds = extra
        return lambda x: query(ref(x), x, s_hit(x), ds(x))

    def member(self, r: ir.Ref) -> Callable:
        """The member index a reference names, checked at run time."""
        base, count = r.base, r.count
        if r.index is None:
            return lambda x: base
        idx = self.expr(r.index)
        sim = self.sim

        def pick(x):
            v = idx(x)
            if v >= 0 and v < count and v == int(v):
                return base + int(v)
            raise _bad_index(sim, r, v)
        return pick

    def index_of(self, r: ir.Ref) -> Callable:
        """``member(r)`` from the index's value (``r.index`` read by the
        caller): for expressions written as source (codegen.ExprWriter)."""
        base, count = r.base, r.count
        sim = self.sim

        def pick_value(v):
            if v >= 0 and v < count and v == int(v):
                return base + int(v)
            raise _bad_index(sim, r, v)
        return pick_value


def _bad_index(sim, r: ir.Ref, v: float) -> RunError:
    # (an attribute by its name; any other index expression is the one the
    # error's span points at)
    what = "index `%s`" % sim.describe_index(r) if type(r.index) is ir.Attr else "the index"
    return RunError("%s is %s: a member of an array of %d is 0 to %d"
                    % (what, fmt(v), r.count, r.count - 1))
