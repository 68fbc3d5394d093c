"""Holds and the pool statements: ``hold``, ``grow``, ``load``, ``release``,
``drop``, leases, rejection and preemption (feature map §3.5–3.9, §4).

A hold runs as a generator frame inside its session's generator: it
enqueues in its first pool's queue and waits; the pools' admission (in the
simulator's settle) allocates and resumes it; the body runs; at its end
every pool's allocation is released (caching per the `cache` clause) or, for
the leased pool, kept as a lease.  A preempted hold receives ``Preempted``
at the point where its session waits: inner holds release and pass it on,
the target hold releases with its computed position and enters its first
pool's queue again.
"""
import math
from typing import TYPE_CHECKING, Any, Final, Iterator, List, Tuple

from ..ir import nodes as ir
from .exprs import fmt
from .pools import EPS, Pool, round_down, round_up

if TYPE_CHECKING:
    from .engine import Simulator
    from .session import Session

WAIT: Final = 0

#: One pool of a hold statement (``HoldOps.compile_hold``): its member, its
#: units and its reserve (functions of the session; the reserve None if the
#: hold has none) and which of the two are final when the hold is reached.
PoolSpec = Tuple[Any, Any, Any, Any]


class Preempted(Exception):
    """Thrown into a session whose hold ``run`` is preempted; ``tail``: the
    hold re-enters its queue at the back (``requeue tail``), else the front."""

    def __init__(self, run, tail=False):
        Exception.__init__(self)
        self.run = run
        self.tail = tail


class Rejected(Exception):
    """A hold that can never fit: its session ends."""


class HoldRun(object):
    """One execution of a hold statement by one session (or leg)."""
    __slots__ = ("session", "op", "pools", "alloc", "pos", "grown", "done", "reserve",
                 "resumed", "lease_ok")

    def __init__(self, session: Any, op: Tuple[Any, ...], pools: List[Pool]) -> None:
        self.session: Any = session
        self.op = op  # (the hold statement: HoldOps.compile_hold)
        self.pools = pools
        # (comprehensions, not ``[0.0] * n``: compiled, a repeat is the
        # generic sequence multiply, about 1 300 instructions a list)
        n = len(pools)
        self.alloc: List[float] = [0.0 for _k in range(n)]
        self.pos: List[float] = [0.0 for _k in range(n)]
        self.grown: List[bool] = [False for _k in range(n)]
        self.done: List[bool] = [False for _k in range(n)]  # released (by `release`, or at the end)
        # reservation not yet allocated (reserve held)
        self.reserve: List[float] = [0.0 for _k in range(n)]
        self.resumed = False
        self.lease_ok = True  # the lease (if any) names the member held


def try_grow(run: HoldRun, i: int, need: float) -> bool:
    """Grow ``run``'s allocation in its ``i``-th pool by ``need`` units if
    they fit beside the others' reservations (evicting cached units to make
    room), else nothing and False."""
    p = run.pools[i]
    others = p.reserved - run.reserve[i]
    if p.used + others + need > p.cap + EPS:
        return False
    if need == math.inf:
        raise infinite_units(p, run)
    p.make_room(need)
    p.used += need
    p.touched.add(p)
    run.alloc[i] = run.alloc[i] + need  # (not `+=`: compiled, that adds boxed)
    if run.reserve[i] > 0.0:
        take = min(run.reserve[i], need)
        run.reserve[i] = run.reserve[i] - take
        p.reserved -= take
    return True


def infinite_units(p: Pool, run: HoldRun) -> Exception:
    """The error for infinite units given to a hold (only a pool of cap
    inf has room for them): 0.1.3 allocates them, and once they are given
    back the pool's `used` is inf - inf = NaN and no hold is admitted
    again (docs/divergences.md; the link refuses a constant demand)."""
    sim = p.sim
    return sim.error(run.session, run.op[-1], "a hold of infinite units on pool `%s` (cap inf) "
                     "would leave its `used` undefined (inf - inf) when given back"
                     % sim.pool_label(p))


class Lease(object):
    """A leased allocation: ``session`` leased it (its attributes serve the
    `cache` clause); ``holder`` is who the holder list names for it."""
    __slots__ = ("pool", "alloc", "run", "session", "holder", "expires", "ended")

    def __init__(self, pool, alloc, run, session):
        self.pool = pool
        self.alloc = alloc
        self.run = run
        self.session = session
        self.holder = session
        self.expires = None
        self.ended = False


def reads_state(e) -> bool:
    """Whether an IR expression reads deployment state (queries, the clock)."""
    t = type(e)
    if t is ir.Call:
        if e.fun not in ("Min", "Max", "Abs", "Floor", "Ceil", "Sqrt", "Exp", "Ln", "Pow"):
            return True
        return any(type(a) is ir.ArgExpr and reads_state(a.expr) for a in e.args)
    if t is ir.Ctx:
        return True
    if t is ir.Unary:
        return reads_state(e.operand)
    if t is ir.Binary:
        return reads_state(e.left) or reads_state(e.right)
    if t is ir.Cond:
        return reads_state(e.test) or reads_state(e.then) or reads_state(e.other)
    if t is ir.Sample or t is ir.ExtSample:
        return any(reads_state(a) for a in e.args)
    return False


class HoldOps(object):
    """The interpreter's pool statements (mixed into ``Interpreter``)."""

    # (set by Interpreter; typed, so that compiled code calls the
    # simulator's methods through its method table, not by name)
    sim: "Simulator"

    def run_block(self, s: Any, b: int) -> Any:
        raise NotImplementedError  # (Interpreter's: declared so that run_hold calls it natively)

    def compile_hold(self, st, c, loc):
        pools = []
        for hp in st.pools:
            # Which of the units and the reserve are final when the hold is
            # reached (read no deployment state): each alone above the cap
            # rejects the request (0.1.3), the other part read or not.
            static = (not reads_state(hp.units),
                      hp.reserve is not None and not reads_state(hp.reserve))
            if not any(static):
                static = None
            pools.append((c.session_member(hp.ref), c.session(hp.units),
                          None if hp.reserve is None else c.session(hp.reserve), static))
        lease = None
        if st.lease is not None:
            refs = [hp.ref for hp in st.pools]
            # 0.1.3 reads the lease's member again, after the hold's members
            # (a drawn index draws again): the units stay as a lease when the
            # hold ends only if it names the member the hold took.
            lref = st.lease[0]
            lease = (refs.index(lref), c.session(st.lease[1]),
                     None if lref.index is None else c.session_member(lref))
        # (read at every admission attempt, every admission and every end:
        # typed trees where the core is compiled, exprs.Compiler.session)
        return (self.HOLD, pools, None if st.reuse is None else c.session(st.reuse), st.body,
                None if st.cache is None else c.session(st.cache), lease, loc)

    def amount(self, s, v, op, what="the amount"):
        if v != v or v < -1e-9:
            raise self.sim.error(s, op[-1], "%s is %s, not a number of units, tokens or seconds"
                                 % (what, fmt(v)))
        return max(v, 0.0)

    def run_hold(self, s: "Session", op: Tuple[Any, ...]) -> Iterator[Any]:
        sim = self.sim
        specs: List[Any] = op[1]
        all_pools = sim.pools
        pools: List[Pool] = []
        spec: PoolSpec
        for spec in specs:
            pools.append(all_pools[spec[0](s)])
        # (the first pool that an earlier reference names too: a pair of
        # loops, a hold has a pool or two)
        k: int
        for k in range(1, len(pools)):
            p = pools[k]
            for q in range(k):
                if pools[q].index == p.index:
                    raise sim.error(s, op[-1], "two references name the same member, `%s`: a "
                                    "hold takes each pool once" % sim.pool_label(p))
        run = HoldRun(s, op, pools)
        lease = op[5]
        if lease is not None and lease[2] is not None:
            run.lease_ok = lease[2](s) == pools[lease[0]].index
        self.reject_if_never_fits(s, op, run)
        while True:
            # (the queue's entry is not kept on the run: the two would be a
            # cycle, which only the collector frees)
            sim.enqueue(pools[0], run, front=run.resumed)
            try:
                # The admission puts the hold on the session's list at once
                # (``try_admit``): admitted, it is the session's innermost
                # hold even before the session runs again.
                yield WAIT
                yield from self.run_block(s, op[3])
            except Preempted as x:
                if run in s.holds:  # (not when preempted still waiting in the queue)
                    s.holds.remove(run)
                    self.release_all(s, run, preempted=True)
                if x.run is not run:
                    raise
                run.resumed = not x.tail
                self.reject_if_never_fits(s, op, run)
                continue
            s.holds.remove(run)
            self.end_hold(s, run)
            s.a[sim.prog.slots[8]] = 0.0
            return

    def reject_if_never_fits(self, s: "Session", op: Tuple[Any, ...], run: HoldRun) -> None:
        # 0.1.3 reads every header when the hold is reached, one that reads
        # state too (it is read again when the hold is tried): a negative
        # amount stops the run here, and a `budget_left(S)` whose budget
        # draws takes a draw of the machine stream.
        specs: List[Any] = op[1]
        pools = run.pools
        spec: PoolSpec
        k: int
        for k in range(len(pools)):  # (one spec per pool of the run: run_hold)
            spec = specs[k]
            p = pools[k]
            # (in order: units, then reserve; each read whether final or not)
            units = self.amount(s, spec[1](s), op)
            reserve_f = spec[2]
            reserve: Any = None if reserve_f is None else self.amount(s, reserve_f(s), op)
            static = spec[3]
            if static is None:
                continue
            units_final, reserve_final = static
            need = units if units_final else 0.0
            if reserve_final:
                need = max(need, reserve)
            # exact, as 0.1.3 rejects (an admission fits to 1e-9)
            if round_up(need, p.block) + p.watermark > p.cap:
                p.stats.rejected += 1
                raise Rejected()

    def end_hold(self, s: "Session", run: HoldRun) -> None:
        op = run.op
        sim = self.sim
        lease = op[5]
        li = lease[0] if lease is not None and run.lease_ok else -1
        i: int
        p: Pool
        for i, p in enumerate(run.pools):
            if run.done[i]:
                continue
            if i == li:
                run.done[i] = True
                p.reserved -= run.reserve[i]  # the hold's scope ends: so does its reservation
                sim.touched.add(p)
                run.reserve[i] = 0.0
                # The hold completes: the stuck memory goes, as for a release
                # (0.1.3), though its units stay as the lease.
                if s.preempt_memory:
                    s.preempt_memory.pop(p.index, None)
                sim.start_lease(s, run, i, lease[1](s))
                continue
            self.release_one(s, run, i)
        sim.pool_pass()

    def release_one(self, s: "Session", run: HoldRun, i: int, preempted: bool = False) -> None:
        """Give pool ``i`` of ``run`` back, caching per the `cache` clause,
        which is read once the units are back (it may read the pool)."""
        p = run.pools[i]
        run.done[i] = True
        p.used -= run.alloc[i]
        p.reserved -= run.reserve[i]
        self.sim.touched.add(p)
        run.reserve[i] = 0.0
        p.remove_holder(s)
        if not preempted:
            # A hold on the pool completes or is released: the stuck memory goes.
            if s.preempt_memory:
                s.preempt_memory.pop(p.index, None)
        if run.op[4] is not None:
            l = run.op[4](s)
            # `load` (or a growing run) on any pool of the hold makes every
            # pool's extent its position; otherwise the allocation.
            computed = run.pos[i] if (any(run.grown) or preempted) else run.alloc[i]
            p.keep(s.root(), round_down(max(0.0, min(l, computed)), p.block))
        run.alloc[i] = 0.0

    def release_all(self, s, run, preempted=False):
        for i in range(len(run.pools)):
            if not run.done[i]:
                self.release_one(s, run, i, preempted)

    # ----------------------------------------------------- pool statements

    def innermost(self, s: "Session", member: Any, op: Any, what: str) -> Any:
        """The innermost hold of ``s`` still holding pool ``member``.  None
        for a `release` (which then ends a lease); for `grow`, `load` and
        `growing` a run-time error, as in 0.1.3: the statement stands inside
        a hold of the pool, but a `release` gave that hold's units back."""
        run: HoldRun
        i: int
        p: Pool
        for run in reversed(s.holds):
            for i, p in enumerate(run.pools):
                if p.index == member and not run.done[i]:
                    return run, i
        if what == "release":
            return None, None
        name = self.sim.pool_label(self.sim.pools[member])
        msg = {"grow": "grow outside a hold of pool `{0}`",
               "load": "`load {0}` outside a hold of `{0}`",
               "growing": "`growing {0}` outside a hold of it"}[what].format(name)
        raise self.sim.error(s, op[-1], msg + " (a `release` gave it back)")

    def run_grow(self, s, op):
        sim = self.sim
        member = op[1](s)
        d = self.amount(s, op[2](s), op)
        run, i = self.innermost(s, member, op, "grow")
        yield from sim.grow(s, run, i, d, op)

    def run_load(self, s, op):
        member = op[1](s)
        n = self.amount(s, op[2](s), op)
        run, i = self.innermost(s, member, op, "load")
        if run.pos[i] + n > run.alloc[i] + EPS:
            raise self.sim.error(s, op[-1], "`load`: the hold has %s allocated and %s computed; "
                                 "a load must fit the allocation (grow first)"
                                 % (fmt(run.alloc[i]), fmt(run.pos[i])))
        run.pos[i] = run.pos[i] + n
        run.grown[i] = True

    def run_release(self, s, op):
        sim = self.sim
        member = op[1](s)
        run, i = self.innermost(s, member, op, "release")
        if run is not None:
            self.release_one(s, run, i)
            sim.pool_pass()
            return
        sim.end_first_lease(s.root(), member)

    def run_drop(self, s, op):
        self.sim.pools[op[1](s)].drop(s.root().serial)


def lease_time(v):
    return v if v == v else math.inf
