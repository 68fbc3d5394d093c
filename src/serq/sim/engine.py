"""The simulator: clock, event heap, arrivals, sessions and the settle.

Events are kept in a heap keyed by (time, insertion sequence), so events at
one instant run in the order they were scheduled.  After every event the
simulator *settles* (feature map §7.5): it runs every ready session, in the
order they became ready, until each blocks; then lets each stage whose job
set changed reschedule; then records the time-average signals.  Gauges are
read just before the clock moves to a later instant, and at the end.

``run(program)`` returns a ``RunResult`` with everything the report needs.
"""
import heapq
import math
import platform
import time
from collections import deque

from ..errors import RunError
from ..ir import nodes as ir
from ..report.stats import RunningSummary, TimeAverage
from . import rng as streams
from .exprs import Compiler, fmt
from .holds import Rejected
from .poolsim import PoolSim
from .session import AGAIN, EndSession, Interpreter, Session
from .stages import Delay, Fifo, Flows, Ps, SharedStage
from .step import Step

READY_LIMIT = 1000

#: Event times kept for the time averages that add their pieces late
#: (settle); past this many, every stage and pool catches up.
TICKS_KEPT = 4096
_heappush = heapq.heappush
_log = math.log


class Observation(object):
    __slots__ = ("name", "values", "times", "sessions", "turns", "all_values")
    running = False

    def __init__(self, name):
        self.name = name
        self.values = []
        self.times = []
        self.sessions = []
        self.turns = []
        self.all_values = []  # warm-up included, for the `at end` aggregates


class RunningObservation(object):
    """``--no-samples``: the samples after warm-up go into running statistics
    (report/stats.py ``RunningSummary``) and are dropped; ``all_values`` is
    kept only for an observation that an aggregate reads."""
    __slots__ = ("name", "summary", "all_values", "keep_all")
    running = True

    def __init__(self, name, keep_all):
        self.name = name
        self.summary = RunningSummary()
        self.all_values = []
        self.keep_all = keep_all

    def add(self, value, warm):
        if self.keep_all:
            self.all_values.append(value)
        if warm:
            self.summary.add(value)


def aggregated_observations(prog):
    """Indices of the observations some ``AggRef`` reads."""
    return {x.obs for x in ir.walk(prog) if type(x) is ir.AggRef}


ESTIMATES = ("EstLambda", "EstRho", "EstWait", "Price")


def reads_estimates(prog):
    """Whether an expression of the program reads a stage's online
    estimates (``est_lambda est_rho est_wait price``)."""
    return any(type(x) is ir.Call and x.fun in ESTIMATES for x in ir.walk(prog))


class GaugeTrace(object):
    __slots__ = ("name", "fn", "times", "values")

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn
        self.times = []
        self.values = []


class NoSession(object):
    """The context of an expression evaluated with no session (a gauge)."""
    __slots__ = ("a", "rng")

    def __init__(self, rng):
        self.a = None
        self.rng = rng


def shared_members(prog):
    """Stage members that a run holds together with another stage (and so
    every member of those families)."""
    out = set()

    def family(r):
        return range(r.base, r.base + r.count)
    for block in prog.blocks:
        for st in block:
            if type(st) is ir.Run and st.also:
                for r in [st.stage] + st.also:
                    out.update(family(r))
    return out


class ClaimState(object):
    """A claim's reads so far (feature map §8.5)."""

    def __init__(self, claim, compiler):
        self.name = claim.name
        self.kind = claim.kind
        self.stage = claim.stage
        self.expr = compiler.expr(claim.expr)
        self.given = compiler.expr(claim.given) if claim.given is not None else None
        self.out_of_scope = None  # serial of the first session failing `given`
        self.checked = 0
        self.failures = 0
        self.first = None

    def read(self, sim, ctx):
        self.checked += 1
        v = self.expr(ctx)
        if v == 0.0:
            self.failures += 1
        if self.kind == "SomeIteration":
            if v != 0.0 and self.first is None:
                self.first = sim.now  # the first witness
        elif v == 0.0 and self.first is None:
            self.first = sim.now  # the first failure


class VictimContext(object):
    """What a preempt key reads about a candidate."""
    __slots__ = ("a", "rng", "admission", "decoding", "position")

    def __init__(self, rng):
        self.a = None
        self.rng = rng
        self.admission = self.decoding = self.position = 0.0


#: PyPy: every stage and pool records at every event, as its JIT runs that
#: loop faster than it keeps the set of those an event touched
#: (vllm_single 1.28 -> 1.22 s, chat_cache 1.41 -> 1.31 s there; router16
#: the same); CPython keeps the set (router16 -30 %).
RECORD_ALL = platform.python_implementation() == "PyPy"


class _Untracked(object):
    """``sim.touched`` under ``RECORD_ALL``: nothing to keep."""
    __slots__ = ()

    def add(self, r):
        pass

    def __bool__(self):
        return False  # (so settle never reads it)


UNTRACKED = _Untracked()


class Simulator(PoolSim):
    estimates = True  # whether stages keep their estimators (set by run)

    def __init__(self, prog: ir.Program, trace=None, check_invariants=False,
                 no_samples=False):
        self.prog = prog
        self.check_invariants = check_invariants
        self.partial = None  # why the run stopped early, if it did
        # A callback (stage, plan, assigned, cost) per iteration started, for
        # `serq run --trace-iterations`.
        self.trace_iterations = None
        self.now = 0.0
        self.heap = []
        self.seq = 0
        self.events = 0
        self.ready = deque()
        self.warm = prog.warmup <= 0.0
        self.seed = prog.seed
        self.arrival_rng = streams.arrival_stream(prog.seed)
        self.machine_rng = streams.machine_stream(prog.seed)
        self.trace_rng = streams.trace_stream(prog.seed)
        self.evict_rng = streams.evict_stream(prog.seed)
        # Sessions arrive in serial order: their streams are set up in batches.
        self.statement_streams = streams.StatementStreams(prog.seed)
        self.init_streams = streams.WorkloadStreams(prog.seed)
        self.victim_ctx = VictimContext(self.machine_rng)
        self.registers = [r.init for r in prog.registers]
        self.trace = trace  # corpus: list of sessions, each a list of turns
        self.arrived = 0
        self.live = 0
        self.roots = {}  # serial -> live session
        self.ended = 0
        self.turns = 0
        self.live_avg = TimeAverage(0.0)
        self.ticks = [0.0]  # the times of the events since the last catch-up (settle)
        self.gaps = [0.0]  # gaps[i] = ticks[i] - ticks[i - 1], as far as read (gaps_to)
        self.catchers = []
        # The stages and pools whose values may have changed in this event
        # (each adds itself where it changes): only they record at its end.
        self.touched = UNTRACKED if RECORD_ALL else set()
        # The pools with stalled growers, a queue or a blocked head, or that
        # had one at the last pool pass (the others have nothing to do).
        self.pool_watch = set()
        self.closed_at = -1.0  # livelock guard for closed workloads
        self.closed_count = 0
        self.changed = []
        self.compiler = Compiler(self)
        self.shared = shared_members(prog)
        self.flows = Flows(self, prog.share) if self.shared else None
        self.flows_dirty = False
        self.stages = [self._make_stage(i, st) for i, st in enumerate(prog.stages)]
        self.make_pools(prog)
        self.steps = [st for st in self.stages if st.kind == "step"]
        # a step stage's admissions may start ps jobs: then the declaration
        # order of the settle's stage loop matters (reschedule_changed)
        self.steps_and_ps = bool(self.steps) and any(st.kind == "ps" for st in self.stages)
        for p in self.pools:
            if p.decl.admit_via is not None:
                self.stages[p.decl.admit_via].admits.append(p)
        # pool index -> the step stages whose memory it is
        self.memory_of = {}
        for st in self.steps:
            if st.memory is not None:
                self.memory_of.setdefault(st.memory, []).append(st)
        if no_samples:  # `serq run --no-samples`: running statistics only
            agg = aggregated_observations(prog)
            self.observations = [RunningObservation(n, i in agg)
                                 for i, n in enumerate(prog.observes)]
        else:
            self.observations = [Observation(n) for n in prog.observes]
        self.interp = Interpreter(self, prog, self.compiler)
        self.session_block = self.interp.gens[prog.session]
        self.init_code = self.interp.code[prog.init]
        self.turn_code = self.interp.code[prog.turn]
        ctx = NoSession(self.machine_rng)
        self.gauges = [GaugeTrace(g.name, (lambda f: lambda: f(ctx))(self.compiler.expr(g.expr)))
                       for g in prog.gauges]
        self.claims = [ClaimState(c, self.compiler) for c in prog.claims]
        self.scoped_claims = [c for c in self.claims if c.given is not None]
        self.attrs0 = [0.0] * len(prog.attrs)
        self.serial_slot = prog.slots[1]
        self.poisson = prog.arrival.kind == "Poisson"
        if prog.arrival.kind == "Renewal":
            self.gap = self.compiler.expr(prog.arrival.value)
            self.gap_ctx = NoSession(self.arrival_rng)

    # ------------------------------------------------------------- building

    def _make_stage(self, i, st: ir.Stage):
        k = st.kind
        if type(k) is ir.Fifo:
            return Fifo(self, i, st.name, st.index, k.servers)
        if type(k) is ir.Delay:
            return Delay(self, i, st.name, st.index)
        if type(k) is ir.Ps and i in self.shared:
            return SharedStage(self, i, st.name, st.index, k.capacity.value)
        if type(k) is ir.Ps:
            return Ps(self, i, st.name, st.index, self.compiler.expr(k.capacity))
        return Step(self, i, st.name, st.index, k, self.compiler)

    def query(self, fun):
        pq = self.pool_query(fun)
        if pq is not None:
            return pq
        stages = self.stages
        if fun == "Queue":
            return lambda m, x: float(stages[m].present())
        if fun == "Busy":
            return lambda m, x: stages[m].busy()
        if fun == "Work":
            return lambda m, x: stages[m].work_left(self.now)
        if fun == "BudgetLeft":
            return lambda m, x: stages[m].budget_left()
        if fun == "EstLambda":
            return lambda m, x: stages[m].est.lam()
        if fun == "EstRho":
            return lambda m, x: stages[m].est.rho()
        if fun == "EstWait":
            return lambda m, x: stages[m].est.w()
        if fun == "Price":
            def price(m, x, s_hit, ds):
                est = stages[m].est
                lam, rho, w = est.lam(), est.rho(), est.w()
                s_miss = s_hit + ds
                return ds + lam * (s_miss * s_miss - s_hit * s_hit) / (2.0 * (1.0 - rho)) + \
                    lam * w * ds / (1.0 - rho)
            return price
        raise RunError("serq cannot read `%s(…)` yet" % fun)

    def aggregate_reader(self, kind, obs):
        """``total count largest smallest prefix_total`` of an observation,
        over every value observed (warm-up included); 0 when none."""
        def read(x):
            vals = self.observations[obs].all_values
            if not vals:
                return 0.0
            if kind == "Count":
                return float(len(vals))
            if kind == "Largest":
                return max(vals)
            if kind == "Smallest":
                return min(vals)
            if kind == "Total":
                total = 0.0
                for v in vals:
                    total += v
                return total
            total = prefix = 0.0
            for v in sorted(vals):
                prefix += v
                total += prefix
            return total
        return read

    def describe_index(self, ref):
        if type(ref.index) is ir.Attr:
            return self.prog.attrs[ref.index.slot]
        return "index"

    # --------------------------------------------------------------- events

    def schedule(self, t, fn, arg):
        self.seq += 1
        _heappush(self.heap, (t, self.seq, fn, arg))

    def mark_changed(self, stage):
        self.changed.append(stage)
        self.touched.add(stage)

    # ------------------------------------------------------------- sessions

    def error(self, s, loc, msg):
        """A run-time error in a statement of session ``s``: where the
        statement stands, the session, the time and what is wrong."""
        span = self.prog.spans.get(loc)
        return RunError("session %d, at t = %s: %s" % (s.serial, fmt(self.now), msg), span,
                        source=self.prog.source)

    def resume(self, s):
        if s is not None:
            self.make_ready(s)

    def spill_job(self, via, work):
        """The write of a spilled prefix: a job no session waits for."""
        if work > 1e-9:
            st = self.stages[via]
            if st.kind == "shared":
                self.flows.start(None, [st], work)
            else:
                st.submit(None, work)

    def make_ready(self, s):
        if s.ready_at == self.now:
            s.ready_count += 1
            if s.ready_count > READY_LIMIT:
                raise RunError("the instant t = %s does not settle: session %d became ready "
                               "%d times without time passing" % (fmt(self.now), s.serial,
                                                                  s.ready_count),
                               help="a loop of zero-time runs or holds never lets time pass")
        else:
            s.ready_at = self.now
            s.ready_count = 1
        s.steps = 0
        self.ready.append(s)

    def arrive(self, _=None):
        """An open arrival: the next one is scheduled, then the session starts."""
        limit = self.prog.arrivals
        if limit is None or self.arrived + 1 < limit:
            if self.poisson:
                gap = -_log(1.0 - self.arrival_rng.random_f64()) / self.prog.arrival.value
            else:
                gap = self.gap(self.gap_ctx)
                if not (gap > 0.0 and gap != math.inf):
                    raise RunError("`arrive renewal(…)`: the interarrival time is %s, not a "
                                   "positive time" % fmt(gap))
            self.seq += 1  # self.schedule(self.now + gap, self.arrive, None), inlined
            _heappush(self.heap, (self.now + gap, self.seq, self.arrive, None))
        self.spawn()

    def spawn(self):
        prog = self.prog
        serial = self.arrived
        self.arrived += 1
        self.live += 1
        a = self.attrs0[:]  # new_attrs(prog, serial)
        a[self.serial_slot] = float(serial)
        s = Session(serial, a, self.statement_streams.get(serial))
        self.roots[serial] = s
        if self.trace is not None:
            n = len(self.trace)
            i = serial % n if prog.trace_ordered else self.trace_rng.range_u32(0, n - 1)
            s.trace_turns = self.trace[i]
        if self.init_code:  # (an empty block draws nothing: its stream is not needed)
            self.run_workload_block(s, self.init_code, 0)
        for c in self.scoped_claims:  # (the claims with a `given`)
            if c.out_of_scope is None and c.given(s) == 0.0:
                c.out_of_scope = serial
        s.gen = self.session_block(s)
        # self.make_ready(s), inlined: a new session was never ready before
        s.ready_at = self.now
        s.ready_count = 1
        self.ready.append(s)
        return s

    def run_workload_block(self, s, code, turns_taken):
        saved = s.rng
        s.rng = (self.init_streams.get(s.serial) if turns_taken == 0 else
                 streams.workload_stream(self.seed, s.serial, turns_taken))
        try:
            for op in code:
                if op[0] == 0:  # SET
                    s.a[op[1]] = op[2](s)
                else:
                    self.observe(op[1], op[2](s), s)
        finally:
            s.rng = saved

    def turn(self, s):
        prog = self.prog
        a = s.a
        a[prog.slots[2]] += 1.0
        if self.warm:
            self.turns += 1
        s.turns += 1
        if s.trace_turns is not None:
            turns = s.trace_turns
            if s.trace_next < len(turns):
                new, out, think, forced = turns[s.trace_next]
                a[prog.slots[3]] = new
                a[prog.slots[4]] = out
                a[prog.slots[5]] = think
                a[prog.slots[7]] = forced
                s.trace_next += 1
                a[prog.slots[6]] = 1.0 if s.trace_next < len(turns) else 0.0
            else:
                a[prog.slots[6]] = 0.0
        self.run_workload_block(s, self.turn_code, s.turns)

    def fork(self, s, body):
        root = s.root()
        leg = Session(root.serial, list(s.a), streams.leg_stream(self.seed, root.serial,
                                                                 root.forks), leg_of=root)
        root.forks += 1
        root.legs_live += 1
        leg.gen = self.interp.run_block(leg, body)
        root.legs.append(leg)
        self.make_ready(leg)

    def observe(self, i, value, s):
        o = self.observations[i]
        if o.running:
            o.add(value, self.warm)
            return
        o.all_values.append(value)
        if self.warm:
            o.values.append(value)
            o.times.append(self.now)
            o.sessions.append(s.serial)
            o.turns.append(int(s.a[self.prog.slots[2]]))

    def step(self, s):
        """Run a ready session until it blocks or ends."""
        if not s.alive:
            return  # ended while it was in the ready queue (a leg was refused)
        try:
            if next(s.gen) == AGAIN:
                self.make_ready(s)
        except (StopIteration, EndSession):
            self.finish(s)
        except Rejected:
            if s.leg_of is None:
                s.legs_live = 0  # its legs go on as orphans (0.1.3)
            self.finish(s)
            s.alive = False
            if s.leg_of is not None and s.leg_of.alive:
                self.force_end(s.leg_of)

    def force_end(self, root):
        """A leg's hold can never fit: its session ends too (other legs go on
        as orphans)."""
        if root.cancel is not None:
            root.cancel()
            root.cancel = None
        root.gen.close()
        root.legs_live = 0
        root.joining = False
        self.finish(root)

    def finish(self, s):
        """A session (or leg) ends: its holds and leases are released.  The
        pools serve their queues only at the settle's pool pass, after the
        ready sessions ran (a closed workload's new session, ready from the
        end, joins its queue first), as in 0.1.3; a release within a
        session, by contrast, is served before that session goes on."""
        if s.leg_of is None:
            s.ending = True
        if s.holds:
            self.release_session(s)
        if s.leg_of is not None:
            root = s.leg_of
            if not root.alive:
                # An orphan leg (its session ended while it ran): its leases
                # end with it, having no session to pass to (0.1.3).
                for lease in list(s.leases):
                    self.end_lease(lease)
            # The leg's leases pass to the session, and the holder list then
            # names the session where it named the leg.
            for lease in s.leases:
                lease.holder = root
            root.leases.extend(s.leases)
            s.leases = []
            for p in self.pools:
                if s in p.holders:
                    p.holders = [root if h is s else h for h in p.holders]
            if s in root.legs:
                root.legs.remove(s)
            if not root.alive:
                return
            root.legs_live -= 1
            if root.legs_live == 0 and root.joining:
                root.joining = False
                self.make_ready(root)
            return
        if s.legs_live:
            raise RunError("session %d, at t = %s: the session ends while %d forked leg(s) run; "
                           "write `join;` before the end" % (s.serial, fmt(self.now),
                                                              s.legs_live))
        if s.leases:
            for lease in list(s.leases):
                self.end_lease(lease)
        s.alive = False
        self.roots.pop(s.serial, None)
        self.live -= 1
        if self.warm:
            self.ended += 1
        if self.prog.arrival.kind == "Closed":
            if self.closed_at == self.now:
                self.closed_count += 1
                if self.closed_count > READY_LIMIT * self.prog.arrival.value:
                    raise RunError("the instant t = %s does not settle: closed sessions end "
                                   "and restart %d times without time passing"
                                   % (fmt(self.now), self.closed_count),
                                   help="every session of a closed workload must let time pass "
                                   "(a `run` of positive work)")
            else:
                self.closed_at = self.now
                self.closed_count = 1
            self.spawn()

    # ----------------------------------------------------------------- run

    def settle(self):
        ready = self.ready
        pools = self.pools
        while True:
            while ready:
                s = ready.popleft()
                # self.step(s), inlined
                if not s.alive:
                    continue  # ended while it was in the ready queue (a leg was refused)
                k = -1  # (stays when the session ends)
                try:
                    for k in s.gen:  # next(s.gen), without a StopIteration
                        break
                except EndSession:
                    pass
                except Rejected:
                    if s.leg_of is None:
                        s.legs_live = 0  # its legs go on as orphans (0.1.3)
                    self.finish(s)
                    s.alive = False
                    if s.leg_of is not None and s.leg_of.alive:
                        self.force_end(s.leg_of)
                    continue
                if k == AGAIN:
                    self.make_ready(s)
                elif k == -1:
                    self.finish(s)
            if pools:  # (pool_pass has nothing to do without pools)
                self.pool_pass()
            if not ready:
                break
        if self.changed or (self.steps_and_ps and (not self.heap or self.heap[0][0] > self.now)):
            self.reschedule_changed()
        elif self.steps and (not self.heap or self.heap[0][0] > self.now):
            # The same with no ps stage to reschedule: the step stages only.
            for st in self.steps:
                if st.running is None and st.pending():
                    st.attempt()
        if self.flows_dirty:
            self.flows_dirty = False
            self.flows.recompute()
        now = self.now
        a = self.live_avg  # a.set(now, float(self.live)), inlined
        a.area += a.value * (now - a.last)
        a.last = now
        a.value = float(self.live)
        # Every stage's, then every pool's record (see run): a new piece of
        # each time average at every event, as the reference's float bits
        # need.  The event times are kept in ``ticks``, and a stage or pool
        # whose values did not change adds its pieces later (``catch_up``).
        ticks = self.ticks
        if ticks[-1] != now:
            ticks.append(now)
            if len(ticks) > TICKS_KEPT:
                self.compact_ticks(now)
        touched = self.touched
        if touched:
            for r in touched:
                r.record(now)
            touched.clear()
        for record in self.recorders:
            record(now)
        if self.check_invariants:
            self.check_pools()
        if self.check_touched:
            self.check_untouched()

    def check_wait_cycles(self):
        """At the end of the run, 0.1.3 refuses a hold-and-wait cycle that a
        `join` is part of: a session waits at its `join` for legs that each
        wait in a pool whose units are held (by holds, or by leases that
        never expire) only by sessions and legs that wait too.  Found as the
        largest set of waiters where each stays blocked: a session at a
        join while all its legs are; a waiter in a pool while the pool has
        holders, all of them blocked, and no lease that expires, and its hold
        does not fit now (behind a head that does not, it is not blocked)."""
        entities = []
        for root in self.roots.values():
            entities.append(root)
            entities.extend(root.legs)
        if not any(e.joining for e in entities):
            return
        holders = {}  # pool -> entities holding units of it
        expiring = set()  # pools with a lease that expires
        for e in entities:
            for run in e.holds:
                for i, p in enumerate(run.pools):
                    if not run.done[i] and run.alloc[i] > 0.0:
                        holders.setdefault(p, set()).add(e)
            for lease in e.leases:
                if lease.ended:
                    continue
                if lease.expires is not None and lease.expires != float("inf"):
                    expiring.add(lease.pool)
                else:
                    holders.setdefault(lease.pool, set()).add(e)
        blocked = {e for e in entities if e.joining or e.waiting_in is not None}
        # A waiter whose hold would fit now (queued behind a head that does
        # not) is not blocked to 0.1.3.
        with self.looking():
            for e in list(blocked):
                if e.waiting_in is not None:
                    for w in e.waiting_in.queue:
                        if w.run.session is e and self.fits(w.run):
                            blocked.discard(e)
                            break
        changed = True
        while changed:
            changed = False
            for e in list(blocked):
                if e.joining:
                    stays = all(l in blocked for l in e.legs)
                else:
                    p = e.waiting_in
                    hs = holders.get(p)
                    stays = bool(hs) and p not in expiring and all(h in blocked for h in hs)
                if not stays:
                    blocked.discard(e)
                    changed = True
        if not any(e.joining for e in blocked):
            return
        parts = []
        for e in entities:
            if e in blocked:
                who = "session %d" % e.serial if e.leg_of is None else \
                    "a leg of session %d" % e.serial
                where = "a `join`" if e.joining else "`%s`" % self.pool_label(e.waiting_in)
                parts.append("%s waits at %s" % (who, where))
        raise RunError("the run ends with sessions that wait for each other: %s. A leg waits for "
                       "memory that a lease holds until its session's copy, and the session waits "
                       "for the leg inside a hold another leg needs: a hold-and-wait cycle, which "
                       "a finite `lease` (the prefiller's lease expiry) breaks" % "; ".join(parts))

    #: Tests set this to check, after every settle, that no stage or pool
    #: changed without adding itself to ``touched`` (its record skipped),
    #: and that every pool with work is in ``pool_watch``.
    check_touched = False

    def check_untouched(self):
        for p in self.pools:
            sig = (p.used, p.cached, len(p.queue), len(p.holders), p.reserved, p.blocked)
            if sig != p.sig:
                raise AssertionError("pool %s changed untouched at %r: %r, recorded %r"
                                     % (self.pool_label(p), self.now, sig, p.sig))
            if (p.growers or p.queue or p.blocked) and p not in self.pool_watch:
                raise AssertionError("pool %s has work and is not watched at %r"
                                     % (self.pool_label(p), self.now))
        for st in self.stages:
            if st.kind != "shared" and st.present() != st.last_n:
                raise AssertionError("stage %s changed untouched at %r: %r present, recorded %r"
                                     % (st.name, self.now, st.present(), st.last_n))

    def reschedule_changed(self):
        """Stages in declaration order: a step stage with work and no
        running iteration plans one, unless another event is due at this
        instant; a ps stage whose job set changed reschedules."""
        changed = set(self.changed)
        self.changed = []
        quiet = not self.heap or self.heap[0][0] > self.now
        for st in self.stages:
            if st.kind == "step":
                if quiet and st.running is None and st.pending():
                    st.attempt()
            elif st in changed or (self.changed and st in self.changed):
                # (a step stage's attempt above may have changed it: its
                # admissions run sessions, which start jobs)
                if st in self.changed:
                    self.changed = [c for c in self.changed if c is not st]
                st.reschedule()
        # A ps stage declared before a step stage whose admissions changed it
        # waits in ``changed`` for the next settle, as in 0.1.3.

    def lean(self):
        """Whether the run can take ``run_lean``: no pools, step stages,
        shared stages, gauges or invariant checks."""
        return not (self.pools or self.steps or self.flows is not None or self.gauges
                    or self.check_invariants)

    def run_lean(self, horizon):
        """The event loop and ``settle`` in one, for a program that
        ``lean`` accepts and a run without limits or progress: the same
        steps as ``run``'s loop, less what cannot apply."""
        heap = self.heap
        heappop = heapq.heappop
        popleft = self.ready.popleft
        ready = self.ready
        make_ready = self.make_ready
        finish = self.finish
        live_avg = self.live_avg
        touched = self.touched
        recorders = self.recorders
        events = self.events
        try:
            while heap:
                t = heap[0][0]
                if t > horizon:
                    break
                _, _, fn, arg = heappop(heap)
                self.now = t
                events += 1
                fn(arg)
                while ready:  # settle (see there)
                    s = popleft()
                    if not s.alive:
                        continue
                    k = -1  # (stays when the session ends)
                    try:
                        for k in s.gen:  # next(s.gen), without a StopIteration
                            break
                    except EndSession:
                        pass
                    if k == AGAIN:
                        make_ready(s)
                    elif k == -1:
                        finish(s)
                if self.changed:
                    self.reschedule_changed()
                live_avg.area += live_avg.value * (t - live_avg.last)
                live_avg.last = t
                live_avg.value = float(self.live)
                ticks = self.ticks
                if ticks[-1] != t:
                    ticks.append(t)
                    if len(ticks) > TICKS_KEPT:
                        self.compact_ticks(t)
                if touched:
                    for r in touched:
                        r.record(t)
                    touched.clear()
                if recorders:  # (a lean run has no shared stage: only RECORD_ALL)
                    for record in recorders:
                        record(t)
        finally:
            self.events = events

    def compact_ticks(self, now):
        """Every stage and pool catches up through ``now`` (the last tick),
        and the kept event times start again from it."""
        self.catch_up_all()
        self.ticks = [now]
        self.gaps = [0.0]
        for r in self.catchers:
            r.synced = 0

    def gaps_to(self, end):
        """``gaps`` through index ``end - 1``, each worked out once, when a
        catch-up first reads it (``gaps[0]`` is not read)."""
        gaps = self.gaps
        n = len(gaps)
        if n < end:
            ticks = self.ticks
            gaps.extend([ticks[i] - ticks[i - 1] for i in range(n, end)])
        return gaps

    def catch_up_all(self):
        """Every stage and pool adds the pieces it left for later, through
        the last event."""
        end = len(self.ticks)
        for r in self.catchers:
            r.catch_up(self.ticks, end)

    def read_gauges(self):
        now = self.now
        for g in self.gauges:
            v = g.fn()
            if not g.values or g.values[-1] != v:
                g.times.append(now)
                g.values.append(v)

    def end_warmup(self, _=None):
        self.warm = True
        now = self.now
        self.live_avg.restart(now)
        for st in self.stages:
            st.restart(now)
        for p in self.pools:
            p.restart(now)

    def run(self, progress=None, max_events=None, max_wall=None):
        """Simulate to the end.  ``progress(now, horizon)``, if given, is
        called every few thousand events (a progress bar).  ``max_events``
        and ``max_wall`` (seconds), and Ctrl-C, stop the run early: the
        report then covers up to that instant and ``self.partial`` says why."""
        prog = self.prog
        horizon = prog.horizon
        if prog.warmup > 0.0:
            self.schedule(prog.warmup, self.end_warmup, None)
        a = prog.arrival
        if a.kind == "Poisson":
            self.schedule(0.0, self.arrive, None)
        elif a.kind == "Renewal":
            gap = self.gap(self.gap_ctx)
            if not (gap > 0.0 and gap != math.inf):
                raise RunError("`arrive renewal(…)`: the interarrival time is %s, not a positive "
                               "time" % fmt(gap))
            self.schedule(gap, self.arrive, None)
        elif a.kind in ("Batch", "Closed"):
            for _ in range(a.value):
                self.spawn()
        limit = prog.arrivals
        self.catchers = list(self.stages) + list(self.pools)
        # A shared stage's utilisation follows its flows' rates: it records
        # at every event.  The others record when touched (see settle).
        self.recorders = [st.record for st in self.stages if st.kind == "shared"]
        if RECORD_ALL:
            self.recorders = [r.record for r in self.catchers]
        self.estimates = reads_estimates(prog)  # else no stage keeps its estimator
        self.settle()
        end = horizon
        heap = self.heap
        heappop = heapq.heappop
        settle = self.settle
        gauges = self.gauges
        checks = progress is not None or max_wall is not None
        deadline = None if max_wall is None else time.monotonic() + max_wall
        try:
            if limit is None and max_events is None and not checks and self.lean():
                self.run_lean(horizon)
            while heap:
                if limit is not None and self.arrived >= limit and self.live == 0:
                    end = self.now
                    break
                t = heap[0][0]
                if t > horizon:
                    break
                if max_events is not None and self.events >= max_events:
                    self.partial = "--max-events %d" % max_events
                    break
                if gauges and t > self.now:
                    self.read_gauges()
                _, _, fn, arg = heappop(heap)
                self.now = t
                self.events += 1
                fn(arg)
                settle()
                if checks and not self.events & 4095:
                    if progress is not None:
                        progress(t, horizon)
                    if deadline is not None and time.monotonic() > deadline:
                        self.partial = "--max-wall %s" % fmt(max_wall)
                        break
            else:
                if limit is not None and self.arrived >= limit and self.live == 0:
                    end = self.now
        except KeyboardInterrupt:
            self.partial = "interrupted"
        if self.partial is not None:
            end = self.now
            limit = None  # a stopped run is not checked for its arrivals
        if self.partial is None and self.pools:
            self.check_wait_cycles()
        if limit is not None:
            if self.arrived < limit:
                raise RunError("run: horizon %s reached before requested arrivals: got %d, "
                               "requested %d" % (fmt(horizon), self.arrived, limit))
            if self.live:
                raise RunError("run: failed to drain %d active sessions within horizon %s"
                               % (self.live, fmt(horizon)))
            if end <= prog.warmup:
                raise RunError("run: arrivals drained at %s before or at warmup %s; no "
                               "measurement interval" % (fmt(end), fmt(prog.warmup)))
        self.read_gauges()
        self.catch_up_all()
        self.end = end
        for st in self.steps:
            st.close(end)
        self.now = end
        for c in self.claims:
            if c.kind == "AtEnd" and c.out_of_scope is None and self.live == 0:
                c.read(self, NoSession(self.machine_rng))
        return self
