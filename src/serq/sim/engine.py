"""The simulator: its building, arrivals, sessions and the run.

``Simulator`` stands on a chain of bases, each a room of its own:
``Clock`` (clock.py: the time, the event heap, the event loop),
``TimeAverages`` (timeavg.py: the time averages' ticks and catch-ups, the
gauges), ``PoolSim`` (poolsim.py: pools, holds and leases) and ``Settle``
(settle.py: the ready queue and the settle after every event).  This module
builds the stages, pools and compiled code of a program, starts and ends
sessions, and runs the whole: ``run`` schedules the arrivals, runs the event
loop and checks the end.

``run(program)`` returns a ``RunResult`` with everything the report needs.
"""
import heapq
import math
import time
from typing import Any, Dict, List, Set, cast

from ..errors import RunError
from ..ir import nodes as ir
from .clock import check_memory, interrupts
from .events import OBJECTS, Event, push_event
from . import rng as streams
from .rng_batch import StatementStreams, WorkloadStreams
from .samples import Observation, RunningObservation
from .exprs import Compiler, fmt
from .fold import prepare as prepare_fold
from .pools import let_go
from .recorded import Recorded
from .session import Interpreter, Session
from .settle import READY_LIMIT, Settle
from .stages import Delay, Fifo, Flows, Ps, SharedStage
from .step import Step
from .timeavg import GaugeTrace

_heappush = heapq.heappush


ESTIMATES = ("EstLambda", "EstRho", "EstWait", "Price")


def program_facts(prog):
    """In one walk of the program: the indices of the observations some
    ``AggRef`` reads, and whether an expression reads a stage's online
    estimates (``est_lambda est_rho est_wait price``)."""
    agg = set()
    estimates = False
    for x in ir.walk(prog):
        t = type(x)
        if t is ir.AggRef:
            agg.add(x.obs)
        elif t is ir.Call and x.fun in ESTIMATES:
            estimates = True
    return agg, estimates


class NoSession(object):
    """The context of an expression evaluated with no session (a gauge)."""
    __slots__ = ("a", "rng")

    def __init__(self, rng):
        self.a: Any = None
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
        self.out_of_scope: Any = None  # serial of the first session failing `given`
        self.checked = 0
        self.failures = 0
        self.first: Any = None

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
        self.a: Any = None
        self.rng = rng
        self.admission = self.decoding = self.position = 0.0


class Simulator(Settle):
    estimates = True  # whether stages keep their estimators (set by run)

    def __init__(self, prog: ir.Program, trace=None, check_invariants=False,
                 no_samples=False):
        self.prog = prog
        self.check_invariants = check_invariants
        self.partial: Any = None  # why the run stopped early, if it did
        # A callback (stage, plan, assigned, cost) per iteration started, for
        # `serq run --trace-iterations`.
        self.trace_iterations: Any = None
        self.init_clock()
        self.init_settle()
        self.warm = prog.warmup <= 0.0
        self.seed = prog.seed
        self.arrival_rng = streams.arrival_stream(prog.seed)
        self.machine_rng = streams.machine_stream(prog.seed)
        self.trace_rng = streams.trace_stream(prog.seed)
        self.evict_rng = streams.evict_stream(prog.seed)
        # Sessions arrive in serial order: their streams are set up in batches.
        self.statement_streams: StatementStreams = StatementStreams(prog.seed)
        self.init_streams: WorkloadStreams = WorkloadStreams(prog.seed)
        self.victim_ctx = VictimContext(self.machine_rng)
        self.registers = [r.init for r in prog.registers]
        self.trace = trace  # corpus: list of sessions, each a list of turns
        self.arrived = 0
        self.live = 0
        # The sessions started, in serial order; those that ended are
        # dropped now and then (``finish``): ``live_roots`` are the others.
        # (A list, not a dict by serial: one append per session.)
        self.spawned: List[Session] = []
        self.spawned_dead: int = 0
        self.ended = 0
        self.turns = 0
        # For `serq run --slo` (report/slo.py): the serial of the first
        # session to arrive after the warm-up, and, when asked for
        # (track_requests), the turns each session took when it ended.
        self.warm_serial = 0
        self.session_turns: Any = None
        self.init_averages()
        # The pools with stalled growers, a queue or a blocked head, or that
        # had one at the last pool pass (the others have nothing to do).
        self.pool_watch: Set[Any] = set()
        self.closed_at = -1.0  # livelock guard for closed workloads
        self.closed_count = 0
        self.compiler = Compiler(self)
        self.shared = shared_members(prog)
        self.flows: Any = Flows(self, cast(str, prog.share)) if self.shared else None
        self.flows_dirty = False
        self.stages = [self._make_stage(i, st) for i, st in enumerate(prog.stages)]
        self.make_pools(prog)
        self.steps = [st for st in self.stages if st.kind == "step"]
        # The step stages that may plan at a settle: every one with no
        # running iteration and work (``pending``) is in it (a stage joins
        # where it gains work or its iteration ends), so the settle looks at
        # these, not at every step stage (settle.plan_steps).
        self.may_plan: Set[Step] = set()
        # a step stage's admissions may start ps jobs: then the declaration
        # order of the settle's stage loop matters (reschedule_changed)
        self.steps_and_ps = bool(self.steps) and any(st.kind == "ps" for st in self.stages)
        for p in self.pools:
            if p.decl.admit_via is not None:
                self.stages[p.decl.admit_via].admits.append(p)
        # pool index -> the step stages whose memory it is
        self.memory_of: Dict[int, List[Any]] = {}
        for st in self.steps:
            if st.memory is not None:
                self.memory_of.setdefault(st.memory, []).append(st)
        self.observations: List[Any]
        # (every value is kept only for the observations ``agg`` names)
        agg, self.reads_estimates = program_facts(prog)
        if no_samples:  # `serq run --no-samples`: running statistics only
            self.observations = [RunningObservation(n, i in agg)
                                 for i, n in enumerate(prog.observes)]
        else:
            self.observations = [Observation(n, prog.slots[2], i in agg)
                                 for i, n in enumerate(prog.observes)]
        self.interp = Interpreter(self, prog, self.compiler)
        self.session_block = self.interp.gens[prog.session]
        self.init_code = self.interp.code[prog.init]
        self.turn_code = self.interp.code[prog.turn]
        ctx = NoSession(self.machine_rng)
        # (read at every event: each one Python function, not a closure a
        # node; a typed tree where the core is compiled)
        self.gauges = [GaugeTrace(g.name, self.compiler.gauge(g.expr), ctx) for g in prog.gauges]
        self.claims = [ClaimState(c, self.compiler) for c in prog.claims]
        self.scoped_claims = [c for c in self.claims if c.given is not None]
        self.attrs0 = [0.0] * len(prog.attrs)
        self.serial_slot = prog.slots[1]
        self.poisson = prog.arrival.kind == "Poisson"
        self.closed: bool = prog.arrival.kind == "Closed"  # (read at every session's end)
        self.arrival_rate: float = (float(cast(float, prog.arrival.value)) if self.poisson
                                    else 0.0)
        # (read at every arrival: a typed field, -1 for no limit, and the
        # bound method made once, not at each arrival)
        self.arrival_limit: int = -1 if prog.arrivals is None else int(prog.arrivals)
        self.arrive_fn: Any = self.arrive
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
            return SharedStage(self, i, st.name, st.index, cast(Any, k.capacity).value)
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
            def work(m, x):
                if self.folds:
                    self.sync_fold(stages[m])  # (its residents' tokens left: fold.py)
                return stages[m].work_left(self.now)
            return work
        if fun == "BudgetLeft":
            def budget_left(m, x):
                if self.folds:
                    self.sync_fold(stages[m])
                return stages[m].budget_left()
            return budget_left
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

    def track_requests(self):
        """Note each session's turns when it ends (for the SLO goodput's
        requests; a dict write per session, not per event)."""
        self.session_turns = {}

    def end_warmup(self, _=None):
        self.warm_serial = self.arrived
        Settle.end_warmup(self, _)

    # ------------------------------------------------------------- sessions

    def error(self, s, loc, msg):
        """A run-time error in a statement of session ``s``: where the
        statement stands, the session, the time and what is wrong."""
        span = self.prog.spans.get(loc)
        return RunError("session %d, at t = %s: %s" % (s.serial, fmt(self.now), msg), span,
                        source=self.prog.source)

    def spill_job(self, via, work):
        """The write of a spilled prefix: a job no session waits for."""
        if work > 0.0:
            st = self.stages[via]
            if st.kind == "shared":
                self.flows.start(None, [st], work)
            else:
                st.submit(None, work)

    def arrive(self, _: Any = None) -> None:
        """An open arrival: the next one is scheduled, then the session starts."""
        limit = self.arrival_limit
        if limit < 0 or self.arrived + 1 < limit:
            if self.poisson:
                gap = -math.log(1.0 - self.arrival_rng.random_f64()) / self.arrival_rate
            else:
                gap = self.gap(self.gap_ctx)
                if not (gap > 0.0 and gap != math.inf):
                    raise RunError("`arrive renewal(…)`: the interarrival time is %s, not a "
                                   "positive time" % fmt(gap))
            self.seq += 1  # self.schedule(self.now + gap, self.arrive, None), inlined
            if OBJECTS:
                push_event(self.heap, Event(self.now + gap, self.seq, self.arrive_fn, None))
            else:
                _heappush(self.heap, (self.now + gap, self.seq, self.arrive_fn, None))
        self.spawn()

    def live_roots(self) -> List[Session]:
        """The sessions (not legs) started and not ended, in serial order."""
        return [x for x in self.spawned if x.alive]

    @property
    def roots(self) -> Dict[int, Session]:
        """``live_roots`` by serial."""
        return {x.serial: x for x in self.live_roots()}

    def spawn(self) -> Session:
        prog = self.prog
        serial = self.arrived
        self.arrived += 1
        self.live += 1
        a = self.attrs0[:]  # new_attrs(prog, serial)
        a[self.serial_slot] = float(serial)
        s = Session(serial, a, self.statement_streams.get(serial))
        self.spawned.append(s)
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

    def run_workload_block(self, s: Session, code: List[Any], turns_taken: int) -> None:
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
        if not root.legs:
            root.legs = []  # (an empty tuple until the first: session.py)
        root.legs.append(leg)
        self.make_ready(leg)

    def observe(self, i: int, value: float, s: Session) -> None:
        o = self.observations[i]
        if o.running:
            o.add(value, self.warm)
            return
        o.take(value, s, self)

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

    def finish(self, s: Session) -> None:
        """A session (or leg) ends: its holds and leases are released.  The
        pools serve their queues only at the settle's pool pass, after the
        ready sessions ran (a closed workload's new session, ready from the
        end, joins its queue first), as in 0.1.3; a release within a
        session, by contrast, is served before that session goes on."""
        # (its last step job points back at it: dropped, the two are freed
        # by reference counts, not left as a cycle for the collector; a
        # preemption reads it only of a holder, which an ended session is not)
        s.step_job = None
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
            if s.leases:
                for lease in s.leases:
                    lease.holder = root
                if not root.leases:
                    root.leases = []  # (an empty tuple until the first: session.py)
                root.leases.extend(s.leases)
                s.leases = ()
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
        if s.cached_in:
            let_go(s)
        if self.session_turns is not None:
            self.session_turns[s.serial] = s.turns
        self.spawned_dead += 1  # (``s.alive`` is now False: it leaves ``live_roots``)
        if self.spawned_dead > 32 and 2 * self.spawned_dead > len(self.spawned):
            self.spawned = [x for x in self.spawned if x.alive]
            self.spawned_dead = 0
        self.live -= 1
        if self.warm:
            self.ended += 1
        if self.closed:
            if self.closed_at == self.now:
                self.closed_count += 1
                if self.closed_count > READY_LIMIT * cast(int, self.prog.arrival.value):
                    raise RunError("the instant t = %s does not settle: closed sessions end "
                                   "and restart %d times without time passing"
                                   % (fmt(self.now), self.closed_count),
                                   help="every session of a closed workload must let time pass "
                                   "(a `run` of positive work)")
            else:
                self.closed_at = self.now
                self.closed_count = 1
            self.spawn()

    def catch_up_links(self) -> List[List[Recorded]]:
        """Each step stage with its memory and the pools admitted via it:
        they change together, so they catch up together (timeavg.py)."""
        links: List[List[Recorded]] = []
        for st in self.steps:
            link: List[Recorded] = [st]
            if st.memory is not None:
                link.append(self.pools[st.memory])
            link.extend(st.admits)
            links.append(link)
        return links

    def start_and_run(self, a, progress, max_events, max_wall, started):
        """``run``'s sessions started (a batch or closed population), the
        first settle and the event loop; returns the run's end."""
        prog = self.prog
        end = prog.horizon
        if a.kind in ("Batch", "Closed"):
            # A million sessions take a while to start: --max-wall counts
            # from here, and stops the starting too.
            for i in range(a.value):
                self.spawn()
                if i & 1023 == 1023:
                    if self.memory_bound is not None:
                        check_memory(self.memory_bound)
                    if self.stop_requested:
                        self.partial = "interrupted"
                        break
                    if max_wall is not None and time.monotonic() - started > max_wall:
                        self.partial = "--max-wall %s" % fmt(max_wall)
                        break
        self.start_recording(self.catch_up_links())
        prepare_fold(self)
        self.estimates = self.reads_estimates  # else no stage keeps its estimator
        if self.partial is None:
            # (a start cut short is not settled: the report is of t = 0)
            self.settle()
        if self.partial is None:
            left = None if max_wall is None else max(1e-9, max_wall - (time.monotonic() - started))
            end = self.run_events(prog.arrivals, progress, max_events, left)
            if left is not None:
                self.wall_as_asked(max_wall)
        return end

    def wall_as_asked(self, max_wall) -> None:
        """A stop at ``--max-wall`` names the limit asked for, not what was
        left of it when the events began.  (A method of its own: mypyc
        keeps the caller's ``self.partial is None`` across the call.)"""
        why = self.partial
        if why is not None and why.startswith("--max-wall"):
            self.partial = "--max-wall %s" % fmt(max_wall)

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
        started = time.monotonic()
        with interrupts(self):  # (Ctrl-C while a batch starts keeps its report too)
            end = self.start_and_run(a, progress, max_events, max_wall, started)
        limit = prog.arrivals
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
