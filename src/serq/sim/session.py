"""Sessions and the statements' compiled form.

Each statement is compiled to a tuple (its opcode, its compiled parts, last
its location for run-time errors); codegen.py writes every block out as a
Python generator function once per program, and the statements it does not
write out (holds, growth, loads, the less common runs) run here.

A session (or a fork leg) runs its block as a Python generator: statements
that take no time run inline; a statement that must wait yields, and the
simulator resumes the generator when the wait is over.  What is yielded:

* ``WAIT``  — the session waits for a stage job or a ``join``; whoever ends
  the wait calls ``sim.resume(session)``;
* ``AGAIN`` — the session goes to the back of the ready queue at once (a
  run of zero work, as the reference does).

``end;`` raises ``EndSession``; a block that runs out ends the session the
same way.
"""
import math
from typing import Any, Dict, Final, List, Optional

from ..ir import nodes as ir
from . import etree, etree_choose
from . import rng as streams
from .codegen import BlockWriter
from .exprs import fmt
from .holds import HoldOps, HoldRun
from .pools import keys_less, total_less
from .step_plan import INF

WAIT: Final = 0
AGAIN: Final = 1

NEVER_ADMITTED: Final = float(2 ** 64 - 1)

SET, OBSERVE, RUN, BRANCH, LOOP, CHOOSE, END, TURN, FORK, JOIN, HOLD, GROW, LOAD, RELEASE, \
    DROP, STEPRUN = range(16)

MAX_STEPS = 1000000


class EndSession(Exception):
    """``end;`` was executed."""


class Session(object):
    """One arrival's session (``leg_of`` is None) or one of its fork legs."""

    __slots__ = ("serial", "a", "rng", "gen", "leg_of", "legs_live", "forks", "joining",
                 "steps", "ready_at", "ready_count", "turns", "trace_turns", "trace_next",
                 "alive", "holds", "leases", "legs", "waiting_in", "cancel", "waited",
                 "admission", "preempt_memory", "ending", "step_job", "itl_turn",
                 "itl_at", "itl_dec", "itl_preempted", "cached_in")

    def __init__(self, serial: Any, attrs: List[float], rng: Any,
                 leg_of: "Optional[Session]" = None) -> None:
        self.serial: int = serial
        self.a = attrs  # (the attribute slots' values: typed, so compiled reads are native)
        self.rng: Any = rng
        self.gen: Any = None
        self.leg_of = leg_of
        self.legs_live: int = 0
        self.forks: int = 0
        self.joining: bool = False
        self.steps: int = 0
        self.ready_at: float = -1.0
        self.ready_count: int = 0
        self.turns: int = 0
        self.trace_turns: Any = None
        self.trace_next: Any = 0
        self.alive: bool = True
        self.holds: List[HoldRun] = []  # active HoldRuns, outermost first
        # Leases, live fork legs (of a root session) and the preemption
        # memory: an empty tuple (None for the memory) until the first one,
        # then a list (a dict): most sessions have none, and a live
        # session's size is what a million of them cost.
        self.leases: Any = ()
        self.legs: Any = ()
        self.waiting_in: Any = None  # the pool whose queue the session waits in
        self.cancel: Any = None  # undoes the wait the session is blocked in
        self.waited: float = 0.0
        # Latest admission sequence number (from 0); before any, u64::MAX as
        # 0.1.3 reads it, so a session that never held a pool orders last.
        self.admission: float = NEVER_ADMITTED
        self.preempt_memory: Any = None  # pool index -> (position, counted stuck)
        self.ending: bool = False  # the session's end is releasing what it holds
        self.step_job: Any = None
        # its last token: its turn (nan before the first: equal to no turn)
        # and time, and whether that turn has decoded (typed fields, not a
        # tuple per token)
        self.itl_turn: float = math.nan
        self.itl_at: float = 0.0
        self.itl_dec: bool = False
        self.itl_preempted: bool = False  # preempted since its last token
        # The pools whose cache entries name this (root) session: an empty
        # tuple until the first, then a list.  At the session's end the
        # entries let go of it (Simulator.finish), so that an ended session
        # is freed at once, not kept, with its stream and generator, until
        # its entries are evicted.
        self.cached_in: Any = ()

    def root(self) -> "Session":
        return self.leg_of if self.leg_of is not None else self


class Interpreter(HoldOps):
    """Compiled blocks of one program and their generator functions."""

    HOLD = HOLD
    MAX_STEPS = MAX_STEPS

    def __init__(self, sim, prog, compiler):
        self.sim = sim
        self.prog = prog
        c = compiler
        self.code = []
        # the workload's blocks, run by ``run_workload_block`` for every
        # session and turn, read each value through one Python function
        self.workload_blocks = (prog.init, prog.turn)
        for b, block in enumerate(prog.blocks):
            self.code.append([self.compile(st, c, (b, i)) for i, st in enumerate(block)])
        # Every block as a generator function written in Python (codegen.py)
        self.gens = BlockWriter(self, prog, c).build(EndSession)

    def compile(self, st, c, loc):
        """One statement as a tuple: its opcode, its compiled parts, and last
        its location (block, index) for run-time errors."""
        t = type(st)
        if t is ir.Set or t is ir.Observe:
            value = (c.fast if loc[0] in self.workload_blocks else c.expr)(st.value)
            return (SET if t is ir.Set else OBSERVE, st.slot if t is ir.Set else st.obs, value, loc)
        if t is ir.Run:
            if st.mode != "Plain":
                # (codegen.py writes a step stage's runs out: the tuple is
                # the statement's location)
                return (STEPRUN, loc)
            also = [c.member(r) for r in st.also]
            return (RUN, c.member(st.stage), c.expr(st.work), also, loc)
        if t is ir.Branch:
            return (BRANCH, c.expr(st.test), st.then, st.other, loc)
        if t is ir.Loop:
            return (LOOP, st.body, None, loc)
        if t is ir.Choose:
            # (the keys are read for every member at every choice)
            # (and where the core is compiled, as typed trees: etree.py)
            chooser = etree_choose.build_keys(st.key, self.sim, c, self.sim.pools,
                                              self.sim.stages, st.var)
            # (the None: where the trees' context was, which the chooser keeps)
            return (CHOOSE, st.var, c.expr(st.count), [c.fast(k) for k in st.key], chooser,
                    None, loc)
        if t is ir.End:
            return (END, loc)
        if t is ir.Turn:
            return (TURN, loc)
        if t is ir.Fork:
            return (FORK, st.body, loc)
        if t is ir.Join:
            return (JOIN, loc)
        if t is ir.Hold:
            return self.compile_hold(st, c, loc)
        if t is ir.Grow:
            return (GROW, c.member(st.ref), c.expr(st.amount), loc)
        if t is ir.Load:
            return (LOAD, c.member(st.ref), c.expr(st.amount), loc)
        if t is ir.Release:
            return (RELEASE, c.member(st.ref), loc)
        if t is ir.Drop:
            return (DROP, c.member(st.ref), loc)
        raise NotImplementedError("serq cannot run `%s` statements yet" % t.__name__)

    def run_block(self, s: Any, b: int) -> Any:
        """The generator of block ``b`` for session (or leg) ``s``."""
        return self.gens[b](s)

    def run_op(self, s, op):
        """A plain ``run`` that the generated code does not write out:
        several stages held together, or a shared stage (codegen.py writes
        out the others, and every step stage's prefill and decode)."""
        sim = self.sim
        # the member first, then the work (0.1.3's order of draws)
        stage = sim.stages[op[1](s)]
        work = op[2](s)
        if work != work or work < -1e-9:  # (0.1.3 forgives -1e-9)
            raise sim.error(s, op[-1], "the amount is %s, not a number of units, tokens "
                            "or seconds" % fmt(work))
        if op[3]:
            stages = [stage] + [sim.stages[m(s)] for m in op[3]]
            if len(set(stages)) < len(stages):
                raise sim.error(s, op[-1], "the run names stage `%s` twice" % stage.name)
        else:
            stages = None
        if work <= 0.0:
            yield AGAIN
        elif stage.kind == "shared":
            sim.flows.start(s, stages or [stage], work)
            yield WAIT
        else:
            stage.submit(s, work)
            yield WAIT

    def choose(self, s, op):
        n = op[2](s)
        if not (n >= 0 and n != INF and n == int(n)):
            raise self.sim.error(s, op[-1], "the count is %s, not a whole number" % fmt(n))
        slot, keys = op[1], op[3]
        a = s.a
        chooser = op[4]
        if chooser is not None:
            a[slot] = chooser.least(s, a, slot, int(n))
            return
        if len(keys) == 1:
            a[slot] = _choose_one(s, a, slot, keys[0], int(n))
            return
        best = None
        best_j = 0.0
        for j in range(int(n)):
            a[slot] = float(j)
            key = [float(f(s)) for f in keys]
            if best is None or keys_less(key, best):
                best = key
                best_j = float(j)
        a[slot] = best_j


def _choose_one(s: Any, a: Any, slot: int, f: Any, n: int) -> float:
    """``choose`` by one key: the first member of least key in Rust's
    ``total_cmp`` order (``total_key``), compared as floats: NaN after every
    number, -0 before +0, ties to the first."""
    best_j = 0.0
    bv = 0.0
    for j in range(n):
        a[slot] = float(j)
        v = f(s)
        if j == 0:
            bv = v
        elif total_less(v, bv):
            bv = v
            best_j = float(j)
    return best_j


def new_attrs(prog, serial):
    a = [0.0] * len(prog.attrs)
    a[prog.slots[1]] = float(serial)
    return a


def leg_rng(seed, serial, k):
    return streams.leg_stream(seed, serial, k)
