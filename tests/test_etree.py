"""A step stage's budget, chunk and cost as typed trees (src/serq/sim/etree.py)
give the bits of the generated functions and of the closures, for every
node a tree can say, on ordinary and on special values (NaN, infinities,
-0, division by zero); anything else gets no tree."""
import math
import random
import struct

import pytest

from serq.compiler import compile_program
from serq.ir import nodes as ir
from serq.sim import codegen, etree
from serq.sim.arith import CTX_FIELD
from serq.sim.engine import Simulator
from serq.sim.step_plan import StepContext

PROGRAM = """
pool kv { cap 4096; block 16; }
stage engine : step { budget 512; cost 0.001 + 0.0001 * tokens; memory kv; }
workload { arrive poisson(5); }
session { set t0 = now; hold kv (64) { run engine prefill (64); } observe latency = now - t0; }
run { horizon 50; seed 2; }
"""

SPECIAL = [0.0, -0.0, 1.0, -2.5, 3.0, 1e300, -1e-300, math.inf, -math.inf, math.nan, 0.5, 7.0]
BINARY = ["Add", "Sub", "Mul", "Div", "Pow", "Lt", "Le", "Gt", "Ge", "Eq", "Ne", "And", "Or"]


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    path = tmp_path_factory.mktemp("etree") / "p.sq"
    path.write_text(PROGRAM)
    s = Simulator(compile_program(str(path)))
    s.now = 12.25
    return s


def _expr(g, depth):
    """A random expression of the nodes a tree says."""
    k = g.randrange(9 if depth > 0 else 3)
    if k == 0:
        return ir.Num(g.choice(SPECIAL))
    if k == 1:
        return ir.Ctx(g.choice(sorted(etree._FIELDS)))
    if k == 2:
        return ir.Ctx("Now")
    if k in (3, 4, 5):
        return ir.Binary(g.choice(BINARY), _expr(g, depth - 1), _expr(g, depth - 1))
    if k == 6:
        return ir.Unary(g.choice(["Neg", "Not"]), _expr(g, depth - 1))
    if k == 7:
        return ir.Cond(_expr(g, depth - 1), _expr(g, depth - 1), _expr(g, depth - 1))
    if g.random() < 0.5:
        return ir.Call(g.choice(sorted(etree._MATH1)), [ir.ArgExpr(_expr(g, depth - 1))])
    return ir.Call(g.choice(sorted(etree._MATH2)),
                   [ir.ArgExpr(_expr(g, depth - 1)), ir.ArgExpr(_expr(g, depth - 1))])


def _bits(v):
    return struct.pack("<d", v) if v == v else "nan"


def _context(g):
    ctx = StepContext(None)
    for name in etree._FIELDS:
        setattr(ctx, CTX_FIELD[name], g.choice(SPECIAL + [g.uniform(-10, 10)]))
    return ctx


def _value(f, ctx):
    try:
        return f(ctx)
    except (OverflowError, ValueError, ZeroDivisionError) as err:
        return type(err)


def test_trees_give_the_bits_of_the_functions_and_closures(sim):
    g = random.Random(20261202)
    compiler = sim.compiler
    for _ in range(600):
        e = _expr(g, g.randrange(1, 5))
        tree = etree.tree_of(e, sim, compiler, None)
        assert tree is not None, e
        fast, closure = compiler.fast(e), compiler.expr(e)
        for _ in range(4):
            ctx = _context(g)
            want = _value(closure, ctx)
            got = _value(tree.ev, ctx)
            assert _value(fast, ctx) == want or _bits(_value(fast, ctx)) == _bits(want)
            if isinstance(want, float):
                assert isinstance(got, float) and _bits(got) == _bits(want), (e, got, want)
            else:
                assert got is want, (e, got, want)


@pytest.mark.parametrize("e", [
    ir.Attr(0),
    ir.Ctx("N"),
    ir.Reg(0),
    ir.Sample("Exp", [ir.Num(1.0)]),
    ir.Binary("Add", ir.Num(1.0), ir.Attr(2)),
    ir.Call("Max", [ir.ArgExpr(ir.Ctx("Ntok")), ir.ArgExpr(ir.Sample("Exp", [ir.Num(2.0)]))]),
])
def test_anything_else_gets_no_tree(sim, e):
    assert etree.tree_of(e, sim, sim.compiler, None) is None


def test_a_step_stage_reads_its_trees_where_the_core_is_compiled(sim):
    st = sim.steps[0]
    if codegen.NATIVE_CORE:
        assert st.budget_tree is not None and st.cost_tree is not None
        assert isinstance(st.cost_tree, etree.Arith)
    else:  # (interpreted, the generated functions are the faster)
        assert st.budget_tree is None and st.cost_tree is None
    ctx = StepContext(None)
    ctx.ntok = 300.0
    assert st.read_budget(ctx) == 512.0
    # (the tree and the function the interpreted core reads give the same
    # bits; compiled, the stage keeps only the tree)
    cost = sim.prog.stages[0].kind.cost
    assert _bits(etree.tree_of(cost, sim, sim.compiler, None).ev(ctx)) == \
        _bits(sim.compiler.fast(cost)(ctx)) == _bits(st.read_cost(ctx))


FAMILY = """
pool kv[3] { cap 4096; block 16; }
stage e[3] : step { budget 512; cost 0.001 + 0.0001 * tokens; memory kv; }
stage solo : step { budget 256; cost 0.001 + 0.0002 * tokens; }
stage zero : step { budget 256; cost -0.0 + 0.0002 * tokens; }
stage plus : step { budget 256; cost 0.0 + 0.0002 * tokens; }
workload { arrive poisson(5); }
session { set t0 = now; choose r in 3 by (holders(kv[r])); hold kv[r] (64) { run e[r] prefill (64); } observe latency = now - t0; }
run { horizon 5; seed 2; }
"""


@pytest.mark.skipif(not codegen.NATIVE_CORE, reason="trees are built where the core is compiled")
def test_equal_expressions_share_one_tree_and_others_do_not(tmp_path):
    path = tmp_path / "f.sq"
    path.write_text(FAMILY)
    s = Simulator(compile_program(str(path)))
    e0, e1, e2, solo, zero, plus = s.steps
    # a family's members: one tree each for budget and cost, read by all three
    assert e0.cost_tree is e1.cost_tree is e2.cost_tree is not None
    assert e0.budget_tree is e1.budget_tree is e2.budget_tree is not None
    # other expressions, -0.0 against 0.0 included, keep trees of their own
    trees = [e0.cost_tree, solo.cost_tree, zero.cost_tree, plus.cost_tree]
    assert len({id(t) for t in trees}) == 4
    assert solo.budget_tree is zero.budget_tree  # (both `256`)
    assert e0.budget_tree is not solo.budget_tree
    ctx = StepContext(None)
    ctx.ntok = 300.0
    for st in s.steps:
        cost = s.prog.stages[st.index].kind.cost
        assert _bits(st.read_cost(ctx)) == _bits(s.compiler.fast(cost)(ctx))
