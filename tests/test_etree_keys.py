"""``choose`` keys and a hold's expressions as typed trees
(src/serq/sim/etree_choose.py ``build_keys``, ``choose_least``; etree.py ``SessionFn``,
``MemberFn``): over random pool and stage states, a tree reads the bits
the generated function reads, raises the same error on an index that names
no member, and the native loop picks the member the interpreted one picks;
a key with anything a tree does not say gets none."""
import math
import random
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest

from serq.compiler import compile_program
from serq.errors import RunError
from serq.ir import nodes as ir
from serq.sim import codegen, etree, etree_choose
from serq.sim.engine import NoSession, Simulator
from serq.sim.fifoq import new_fifo
from serq.sim.session import CHOOSE, _choose_one
from serq.sim.step_plan import StepContext

PROGRAM = """
pool kv[4] { cap 100; }
stage q[3] : fifo(2);
workload { arrive poisson(1); }
session { set r = 0; set x = 1; choose r in 4 by (used(kv[r]) + x); hold kv[r] (1) { run q[0] (1); } }
run { horizon 5; seed 3; }
"""

ROOT = Path(__file__).resolve().parent.parent
SPECIAL = [0.0, -0.0, 1.0, -2.5, 3.0, 2.0, math.inf, -math.inf, math.nan, 0.5]
SLOTS = 3  # the attributes the random keys read (the loop's slot is 0)


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "p.sq"
    path.write_text(PROGRAM)
    s = Simulator(compile_program(str(path)))
    s.now = 3.5
    return s


def _index(g):
    """An index expression: mostly the chosen member, sometimes off the end."""
    k = g.randrange(5)
    if k < 3:
        return ir.Attr(0)
    if k == 3:
        return ir.Binary("Sub", ir.Num(3.0), ir.Attr(0))
    return ir.Attr(g.randrange(1, SLOTS))  # (any value: a bad index now and then)


def _key(g, depth):
    k = g.randrange(8 if depth > 0 else 4)
    if k == 0:
        return ir.Num(g.choice(SPECIAL))
    if k == 1:
        return ir.Attr(g.randrange(SLOTS))
    if k == 2:
        q = g.choice(sorted(etree._POOL_QUERIES) + ["CachedIn"])
        return ir.Call(q, [ir.ArgPool(ir.Ref(0, 4, _index(g)))])
    if k == 3:
        q = g.choice(sorted(etree._STAGE_QUERIES))
        return ir.Call(q, [ir.ArgStage(ir.Ref(0, 3, _index(g) if g.random() < 0.7 else None))])
    if k == 4:
        return ir.Ctx("Now")
    if k in (5, 6):
        op = g.choice(["Add", "Sub", "Mul", "Div", "Lt", "Eq", "And", "Or"])
        return ir.Binary(op, _key(g, depth - 1), _key(g, depth - 1))
    return ir.Cond(_key(g, depth - 1), _key(g, depth - 1), _key(g, depth - 1))


def _shuffle_state(g, sim):
    for p in sim.pools:
        p.used = g.choice([0.0, 1.0, 50.0, 100.0, g.uniform(0, 100)])
        # (the session's own cached units, or none: ``cachedin``)
        p.entries = {_Session.SERIAL: SimpleNamespace(units=g.choice(SPECIAL))} \
            if g.random() < 0.5 else {}
        p.holders = [None] * g.randrange(3)
        p.queue = [None] * g.randrange(3)
        # (as the simulator does where a pool changes: the family counts of
        # a choose's reading are the recorded ones but for the pools touched)
        sim.touched.add(p)
    for st in sim.stages:
        st.serving = g.randrange(3)
        st.waiting = new_fifo()
        for _ in range(g.randrange(3)):
            st.waiting.append(None)


class _Session(object):
    SERIAL = 7

    def __init__(self, a):
        self.a = a
        self.serial = self.SERIAL

    def root(self):
        return self


def _outcome(f):
    try:
        return f()
    except RunError as err:
        return ("error", str(err))


def _bits(v):
    if isinstance(v, tuple):
        return v
    return struct.pack("<d", v) if v == v else "nan"


def _trees(sim, keys, chosen=-1):
    """The keys' trees (``build_keys`` without its test of the core: the
    trees are checked interpreted too); ``chosen``: the slot of the choose's
    variable, which a member's index reads as an integer."""
    k = etree.Keys(sim.pools, sim.stages, sim.compiler, chosen)
    trees = [etree.tree_of(e, sim, sim.compiler, k) for e in keys]
    return None if any(t is None for t in trees) else trees


def test_key_trees_read_the_bits_of_the_generated_keys(sim):
    g = random.Random(20261202)
    c = sim.compiler
    for _ in range(500):
        e = _key(g, g.randrange(0, 4))
        (tree,) = _trees(sim, [e])
        fast = c.fast(e)
        for _ in range(4):
            _shuffle_state(g, sim)
            a = [float(g.randrange(4))] + [g.choice(SPECIAL) for _ in range(SLOTS - 1)]
            ctx = StepContext(None)
            ctx.a = a
            ctx.session = _Session(a)
            want = _outcome(lambda: fast(_Session(a)))
            got = _outcome(lambda: tree.ev(ctx))
            assert _bits(got) == _bits(want), (e, a, got, want)


def test_the_native_choice_picks_the_interpreted_choice(sim):
    g = random.Random(7)
    c = sim.compiler
    batched = 0
    for _ in range(400):
        keys = [_key(g, g.randrange(0, 3)) for _ in range(g.choice([1, 1, 2]))]
        # (members indexed by the loop's variable, slot 0, read it as an
        # integer; past the array's end, the same error)
        trees = _trees(sim, keys, chosen=0)
        fns = [c.fast(e) for e in keys]
        _shuffle_state(g, sim)
        n = g.randrange(0, 7)
        rest = [g.choice(SPECIAL) for _ in range(SLOTS - 1)]
        a1, a2 = [0.0] + rest, [0.0] + rest
        s = _Session(a1)
        if len(fns) == 1:
            want = _outcome(lambda: _choose_one(s, a1, 0, fns[0], n))
        else:
            op = (CHOOSE, 0, lambda s: float(n), fns, None, None, None)
            want = _outcome(lambda: sim.interp.choose(s, op) or a1[0])
        got = _outcome(lambda: etree_choose.choose_least(trees, StepContext(None), _Session(a2), a2,
                                                  0, n))
        assert got == want, (keys, n, got, want)
        # the slot left unset while the keys are read, where no tree reads
        # it other than as a member's index: the same choice
        k = etree.Keys(sim.pools, sim.stages, c, 0)
        for e in keys:
            etree.tree_of(e, sim, c, k)
        if not k.reads:
            # (and where the one key is read node by node for every member,
            # Node.each, the same choice again)
            a3 = [-7.0] + rest
            chooser = etree_choose.Chooser(trees, False)
            batched += n <= chooser.alike
            got = _outcome(lambda: chooser.least(_Session(a3), a3, 0, n))
            assert got == want, (keys, n, got, want)
            assert a3[0] == -7.0
    assert batched > 100, batched


@pytest.mark.parametrize("e", [
    ir.Call("Used", [ir.ArgPool(ir.Ref(0, 4, ir.Sample("Exp", [ir.Num(1.0)])))]),
    ir.Call("Price", [ir.ArgStage(ir.Ref(0, 3, ir.Attr(0))), ir.ArgExpr(ir.Num(1.0)),
                      ir.ArgExpr(ir.Num(2.0))]),
    ir.Ctx("Ntok"),
    ir.Reg(0),
])
def test_a_key_with_anything_else_gets_no_tree(sim, e):
    assert _trees(sim, [ir.Attr(0), e]) is None


def test_the_program_picks_through_the_trees_where_the_core_is_compiled(sim):
    ops = [op for code in sim.interp.code for op in code if op[0] == CHOOSE]
    assert len(ops) == 1
    assert (ops[0][4] is not None) == codegen.NATIVE_CORE
    built = etree_choose.build_keys([ir.Attr(0)], sim, sim.compiler, sim.pools, sim.stages)
    assert (built is not None) == codegen.NATIVE_CORE


def test_a_hold_expression_called_as_a_tree_reads_the_bits_of_its_function(sim):
    g = random.Random(20261203)
    c = sim.compiler
    for _ in range(300):
        e = _key(g, g.randrange(0, 4))
        (tree,) = _trees(sim, [e])
        fn = etree.SessionFn(tree)
        fast = c.fast(e)
        ref = ir.Ref(0, 4, _index(g))
        member, pick = etree.MemberFn(etree._member(ref, sim, c, etree.Keys(
            sim.pools, sim.stages, c))), c.member(ref)
        for _ in range(3):
            _shuffle_state(g, sim)
            a = [float(g.randrange(4))] + [g.choice(SPECIAL) for _ in range(SLOTS - 1)]
            s = _Session(a)
            assert _bits(_outcome(lambda: fn(s))) == _bits(_outcome(lambda: fast(s))), (e, a)
            assert _outcome(lambda: member(s)) == _outcome(lambda: pick(s)), (ref, a)
        # the context is given back after each reading (a query may read the
        # same expression for another session before the first is done)
        assert fn.x.a is None and fn.x.session is None


def test_a_vllm_hold_reads_its_header_through_trees_where_the_core_is_compiled(tmp_path):
    path = tmp_path / "v.sq"
    path.write_text('use "%s";\n'
                    "pool slots { cap 8; admit via e; }\n"
                    "pool kv { cap 4096; block 16; preempt lifo; }\n"
                    "stage e : step { budget 512; cost vllm_step_cost(0.01, 0.0001, 0.0);"
                    " memory kv; }\n"
                    "workload { arrive poisson(5); }\n"
                    "session { set t0 = now; vllm_request(slots, kv, e, 64, 0, 16, t0); }\n"
                    "gauge in_flight = holders(slots) + queued(kv);\n"
                    "run { horizon 10; seed 2; }\n" % (ROOT / "lib" / "vllm.sq"))
    sim = Simulator(compile_program(str(path)))
    holds = [op for code in sim.interp.code for op in code if op[0] == sim.interp.HOLD]
    assert len(holds) == 1
    # (kv's units read `budget_left(e)` and `cachedin(kv)`; its reuse too)
    units = holds[0][1][1][1]
    assert isinstance(units, etree.SessionFn) == codegen.NATIVE_CORE
    assert isinstance(holds[0][2], etree.SessionFn) == codegen.NATIVE_CORE
    (gauge,) = sim.gauges
    assert isinstance(gauge.fn, etree.GaugeFn) == codegen.NATIVE_CORE


def test_a_gauge_called_as_a_tree_reads_the_bits_of_its_function(sim):
    g = random.Random(31)
    c = sim.compiler
    ctx = NoSession(None)
    done = 0
    while done < 200:
        e = _key(g, g.randrange(0, 4))
        if any(type(x) is ir.Attr for x in ir.walk(e)):
            assert etree.build_gauge(e, sim, c) is None  # (a gauge has no attributes)
            continue
        (tree,) = _trees(sim, [e])
        fn, fast = etree.GaugeFn(tree), c.fast(e)
        for _ in range(3):
            _shuffle_state(g, sim)
            assert _bits(_outcome(lambda: fn(ctx))) == _bits(_outcome(lambda: fast(ctx))), e
        done += 1


def test_a_hold_expression_read_again_inside_its_reading_keeps_each_session():
    # a query of the outer reading reads the same expression for another
    # session; the outer reading then reads its own session's attribute
    inner = []

    def query(m, session):
        if session.a[0] == 1.0:
            inner.append(fn(_Session([10.0])))
        return 0.5

    tree = etree.Arith(0, etree.Query(query, etree.Member(0, 1, None, lambda v: 0)),
                       etree.Attr(0))
    fn = etree.SessionFn(tree)
    assert fn(_Session([1.0])) == 1.5
    assert inner == [10.5]
    assert fn.x.a is None and fn.x.session is None


@pytest.mark.skipif(not codegen.NATIVE_CORE, reason="the family counts are read where trees are")
def test_a_family_read_takes_the_recorded_counts_and_the_touched_live(tmp_path):
    # kv[6]: each member recorded with some holders and queued; then some
    # change and are touched (not yet recorded), as within an event
    path = tmp_path / "fam.sq"
    path.write_text(PROGRAM.replace("kv[4]", "kv[6]").replace("in 4 by", "in 6 by"))
    s = Simulator(compile_program(str(path)))
    s.start_recording([])  # (what the run's start does: pools record to the clock)
    g = random.Random(7)
    kv = [p for p in s.pools if p.name == "kv"]
    assert [p.fam_at for p in kv] == list(range(6)) and len({id(p.family) for p in kv}) == 1
    base = s.pools.index(kv[0])
    for trial in range(200):
        for p in kv:
            p.holders = [None] * g.randrange(4)
            p.queue = [None] * g.randrange(4)
            p.record(s.now)
        s.touched.record_all(s.now)  # (the event's end: nothing touched)
        for p in g.sample(kv, g.randrange(4)):
            p.holders = [None] * g.randrange(4)
            p.queue = [None] * g.randrange(4)
            s.touched.add(p)
        for holders in (True, False):
            n = g.randrange(1, 7)
            out = etree.vec[float]([0.0] * n)
            assert etree._family_each(s.pools, base, n, holders, out)
            want = [float(len(p.holders) if holders else len(p.queue)) for p in kv[:n]]
            assert list(out) == want, (trial, holders)
    # pools that are not one family's members in order read as before
    assert not etree._family_each(s.pools, base + 1, 6, True, etree.vec[float]([0.0] * 6))
