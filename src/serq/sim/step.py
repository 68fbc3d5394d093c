"""Step stages: continuous-batching engines (feature map §5.5–5.10).

A step stage serves its residents in iterations.  Planning an iteration
gives each resident, in serving order, a decode token or a prefill chunk
while the token budget lasts, growing the memory of `growing` runs (which
may preempt), and admits waiting holds from the pools it admits (`admit
via`) while budget is left; then the iteration costs ``cost`` time, and at
its end the tokens are committed.
"""
import math
from heapq import heappush
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

from ..errors import RunError
from ..report.stats import IntervalAverage, ItlHistogram, Welford
from . import etree
from .events import OBJECTS, Event, push_event
from .exprs import fmt
from .holds import try_grow
from .pools import EPS, Pool, round_up, total_key
from .stages import Job, Stage
from .step_body import run_body
from .step_plan import Assignment, Plan, StepContext, StepJob
from .step_reads import nan_attrs, reads_attrs, reads_totals

if TYPE_CHECKING:
    from .engine import Simulator
    from .holds import HoldRun
    from .session import Session

def _treed(x: StepContext) -> Any:
    """A step stage's budget, chunk or cost function where a tree reads it
    (never called: ``read_budget`` and the others read the tree)."""
    raise AssertionError("read through its tree")


class Step(Stage):
    kind = "step"

    # The fields every iteration reads (a folded one reads little else),
    # declared before ``__init__`` assigns them: compiled, a native class
    # lays its fields out in the order they are declared, so these sit
    # together in a few cache lines right after the base classes' fields
    # (at 256 replicas a stage is cold when its next iteration ends: each
    # line read is a miss).
    end_entry: Any
    running: "Optional[Assignment]"
    residents: "List[StepJob]"
    ctx: StepContext
    admits: "List[Pool]"
    itl: ItlHistogram
    entry_free: bool
    fold_ok: bool
    decode_launch: bool
    running_pre: bool
    running_dec: bool
    preempted_now: bool
    idle_with_work: bool
    cost_totals: bool
    preempt_count: int
    folded: int
    iterations: int
    running_decodes: float
    iter_start: float
    served_total: float
    # The mix averages (time shares of prefill-only, decode-only and mixed
    # iterations, and the mean decodes), accumulated as IntervalAverage
    # does, here rather than in four objects of their own; ``close`` hands
    # them to the stats' IntervalAverages, which the report reads.
    mix_start: float
    area_prefill_only: float
    area_decode_only: float
    area_mixed: float
    area_decodes: float
    memory: Optional[int]
    budget_tree: "Optional[etree.Node]"
    chunk_tree: "Optional[etree.Node]"
    budget: "Callable[[StepContext], Any]"
    chunk: "Callable[[StepContext], Any]"
    on_iteration_end: "Callable[[Any], None]"
    decode_batch: Welford
    decode_step: Welford

    def __init__(self, sim: "Simulator", index: int, name: str, member: Optional[int], spec: Any,
                 compiler: Any) -> None:
        Stage.__init__(self, sim, index, name, member)
        c = compiler
        # budget, chunk and cost as typed trees, where the core is compiled
        # and the expression is one a tree can say (etree.py), else as
        # functions (``read_budget`` and the others read whichever there
        # is: a function is not written where there is a tree, 256 of them
        # for 256 replicas)
        self.budget_tree = etree.build(spec.budget, sim, c)
        self.chunk_tree = etree.build(spec.chunk, sim, c)
        self.cost_tree = etree.build(spec.cost, sim, c)
        self.budget = (
            _treed if self.budget_tree is not None else c.fast(spec.budget))
        self.cost: Callable[[StepContext], Any] = (
            _treed if self.cost_tree is not None else c.fast(spec.cost))
        self.chunk = _treed
        if self.chunk_tree is None:
            self.chunk = c.fast(spec.chunk)
            if reads_attrs(spec.chunk):
                self.chunk = nan_attrs(self.chunk, spec.chunk)
        self.granule: Optional[float] = None if spec.granule is None else spec.granule.value
        self.exclusive: bool = spec.serve == "ExclusivePrefill"
        self.serve_keys: List[Callable[[StepContext], Any]] = (
            [] if self.exclusive else [c.fast(k) for k in spec.serve])
        # What reads the totals (``totals`` walks every resident's holds):
        # where nothing does, they are not computed.
        self.budget_totals = reads_totals(spec.budget, spec.chunk)
        self.cost_totals = reads_totals(spec.cost)
        self.serve_totals = not self.exclusive and reads_totals(spec.serve)
        self.memory = spec.memory
        self.body: Optional[List[Any]] = spec.iteration
        self.compiler: Any = compiler
        # The decode-only planning shortcut (plan_decodes) serves the
        # default procedure in admission order only.
        self.fast = self.body is None and not self.exclusive and not self.serve_keys
        self.compiled_cache: Dict[int, Callable[[StepContext], Any]] = {}
        self.residents = []
        self.changes = 0  # count of insertions into / removals from residents
        # the assignment of the running iteration: (job, tokens) pairs
        self.running = None
        self.ctx = StepContext(sim.machine_rng)
        self.iterations = 0
        self.served_total = 0.0
        self.idle_with_work = False
        self.preempted_now = False
        # budget left, while an admission's header is read
        self.planning_left: Optional[float] = None
        self.admits = []  # pools this stage admits (set by the simulator)
        # ``self.iteration_end`` made once (not a bound method per iteration)
        self.on_iteration_end = self.iteration_end
        st = self.stats
        # the mix averages, in the stats (the report reads them there; close
        # fills them from this stage's areas, where an iteration adds)
        st.prefill_only = IntervalAverage()
        st.decode_only = IntervalAverage()
        st.mixed = IntervalAverage()
        st.decodes = IntervalAverage()
        self.mix_start = 0.0
        self.area_prefill_only = 0.0
        self.area_decode_only = 0.0
        self.area_mixed = 0.0
        self.area_decodes = 0.0
        self.iter_start = 0.0
        # decode folding (fold.py): whether this stage may fold in this run,
        # and the heap entry of its running iteration's end
        self.fold_ok = False
        self.folded = 0  # iterations run folded (tests, bench)
        self.end_entry = None
        # whether ``end_entry`` has left the heap and may be pushed again as
        # the next iteration's end (fold.py sets it where it pops one)
        self.entry_free = False
        # the running iteration is every resident's decode (``plan_decodes``,
        # or a folded one): its end may start a stretch
        self.decode_launch = False
        self.decode_batch = st.decode_batch = Welford()
        self.decode_step = st.decode_step = Welford()
        self.itl = st.itl = ItlHistogram()

    # ------------------------------------------------------------ residents

    def present(self) -> int:
        return len(self.residents)

    def busy(self) -> float:
        return float(len(self.running)) if self.running else 0.0

    def work_left(self, now: float) -> float:
        # 0.1.3 sums the residents' remaining tokens from -0.0 (an idle
        # stage's work reads -0, and a p99 of such samples prints `-0`).
        total = -0.0
        for j in self.residents:
            total += j.remaining
        return total

    def submit_step(self, session: "Session", decode: bool, work: float,
                    grow: "Optional[Tuple[HoldRun, int]]") -> None:
        now = self.sim.now
        if self.sim.folds:
            self.sim.sync_fold(self)  # (a stretch's residents are its own: fold.py)
        job = StepJob(session, decode, work, grow, now)
        adm = session.admission
        i = len(self.residents)
        while i > 0 and self.residents[i - 1].session.admission > adm:
            i -= 1
        self.residents.insert(i, job)
        self.changes += 1
        self.sim.touched.add(self)
        self.sim.may_plan.add(self)
        session.cancel = lambda: self.withdraw(job)
        session.step_job = job

    def withdraw(self, job: StepJob) -> None:
        """A preempted resident leaves the stage (and its iteration)."""
        if self.sim.folds:
            self.sim.sync_fold(self)  # (a stretch's residents are its own: fold.py)
        job.gone = True
        if job in self.residents:
            self.residents.remove(job)
            self.changes += 1
            self.sim.touched.add(self)
        if self.running is not None:
            self.running = [(j, t) for j, t in self.running if j is not job]

    def pending(self) -> bool:
        if self.residents:
            return True
        for p in self.admits:
            if p.queue:
                return True
        return False

    # --------------------------------------------------------------- totals

    def memory_of(self, session: "Session") -> float:
        """Units all holds of ``session`` have in the stage's memory pool."""
        if self.memory is None:
            return 0.0
        mp: Pool = self.sim.pools[self.memory]
        total = 0.0  # the holds of this leg (or session) only, as 0.1.3 reads them
        for run in session.holds:
            # (by identity, as pools compare, without a comparison call each)
            i = 0
            for p in run.pools:
                if p is mp and not run.done[i]:
                    total += run.alloc[i]
                i += 1
        return total

    def totals(self, ctx: StepContext, jobs: List[StepJob]) -> None:
        ndec = kvb = kvp = 0.0
        for j in jobs:
            if j.decode:
                ndec += 1.0
                kvb += self.memory_of(j.session)
            else:
                kvp += self.memory_of(j.session)
        ctx.nres = float(len(self.residents))
        ctx.ndec = ndec
        ctx.kvb = kvb
        ctx.kvp = kvp

    # ------------------------------------------------------------- planning

    def read_budget(self, ctx: StepContext) -> float:
        t = self.budget_tree
        if t is not None:
            return t.ev(ctx)  # (a statement, not ``a if c else b``: that boxes the float)
        v: float = self.budget(ctx)
        return v

    def read_chunk(self, ctx: StepContext) -> float:
        t = self.chunk_tree
        if t is not None:
            return t.ev(ctx)
        v: float = self.chunk(ctx)
        return v

    def read_cost(self, ctx: StepContext) -> float:
        t = self.cost_tree
        if t is not None:
            return t.ev(ctx)
        v: float = self.cost(ctx)
        return v

    def attempt(self) -> None:
        """Plan an iteration (the default procedure, or the stage's
        ``iteration`` body) and start it, if it schedules anything."""
        sim = self.sim
        ctx = self.ctx
        ctx.a = None
        ctx.rng = sim.machine_rng
        if self.budget_totals:
            self.totals(ctx, self.residents)
        B = self.read_budget(ctx)
        C = self.read_chunk(ctx)
        if C != C:  # a NaN chunk (an attribute read with no session) is no limit
            C = 0.0
        self.preempted_now = False
        self.preempt_count = 0
        self.attempt_read(B, C)

    def attempt_read(self, B: float, C: float) -> None:
        """``attempt`` once the budget ``B`` and chunk ``C`` are read (a
        folded stretch that stops reads them itself: fold.py)."""
        sim = self.sim
        if self.fast and sim.trace_iterations is None:
            decodes = self.plan_decodes(B, C)
            if isinstance(decodes, list):
                # Every resident decoding, each given its token: no one is
                # gone, nothing admitted (plan_decodes says when it applies).
                self.idle_with_work = False
                self.start_decodes(C, decodes)
                return
            plan = decodes
            self.plan_default(plan)
        elif self.body is None:
            plan = Plan(self, B, C)
            self.plan_default(plan)
        else:
            plan = Plan(self, B, C)
            saved = list(sim.registers)
            run_body(self, plan, self.body)
        assigned: Assignment = []
        j: StepJob
        t: float
        for j, t in plan.assigned:  # (typed tuples: native reads of the job and its tokens)
            if j.gone:
                continue
            assigned.append((j, t))
            g = j.grow
            if g is not None:
                run, i = g
                run.pos[i] = run.pos[i] + t  # (not `+=`: compiled, that adds boxed)
                run.grown[i] = True
        if not assigned and not self.preempted_now:
            self.idle_with_work = self.pending()
            if self.body is not None and not plan.admitted:
                sim.registers[:] = saved  # an attempt that did nothing undoes its sets
            return
        self.idle_with_work = False
        self.start(C, plan.attention, assigned, plan)

    def plan_decodes(self, B: float, C: float) -> Union[Assignment, Plan]:
        """The default plan while every resident decodes, written for speed
        (most iterations of a loaded engine): each resident in order gets its
        token, growing its memory where that needs no eviction choice beyond
        the pool's own and no preemption.  Returns the assignment, or, at the
        first resident it does not handle (a prefill, a stalled one, a growth
        that does not fit) or when an admission is to be tried, a `Plan` in
        the state the general procedure would have reached, for it to go on."""
        assigned: Assignment = []
        left = B
        for j in self.residents:
            if not j.decode or j.stalled:
                return self.handover(B, C, assigned, left)
            r = j.remaining
            want = r if r < 1.0 else 1.0
            tokens = left if left < want else want
            if tokens <= 0:
                return self.handover(B, C, assigned, left)
            g = j.grow
            if g is not None:
                run, i = g
                alloc = run.alloc[i]
                extra = run.pos[i] + tokens - alloc
                if extra > EPS:
                    p = run.pools[i]
                    need = round_up(alloc + extra, p.block) - alloc
                    if need > 0.0:
                        if p.used + (p.reserved - run.reserve[i]) + need > p.cap + EPS:
                            return self.handover(B, C, assigned, left)
                        try_grow(run, i, need)
            assigned.append((j, tokens))
            left -= tokens
            if left <= 0:
                return assigned
        for p in self.admits:
            if p.queue:
                return self.handover(B, C, assigned, left)
        if not assigned:
            return self.handover(B, C, assigned, left)
        return assigned

    def handover(self, B: float, C: float, assigned: Assignment, left: float) -> Plan:
        plan = Plan(self, B, C)
        plan.prefill_at_start = False  # (the fast path stops at the first prefill)
        plan.assigned = assigned
        plan.left = left
        served = plan.served
        for j, _ in assigned:
            served.add(j)
        return plan

    def plan_default(self, plan: Plan) -> None:
        """Serve the residents in order while the budget lasts; when every
        resident has been served, admit one waiting hold and go on."""
        sim = self.sim
        served = plan.served
        keyed = bool(self.serve_keys)
        # Without serve keys the serving order is the residents list itself:
        # everything before ``first`` is served, as long as the list has not
        # changed (``self.changes``: an admission inserts, a preemption removes).
        first = 0
        changes = -1
        while True:
            job = None
            if keyed:
                for j in self.serving_order():
                    if j not in served:
                        job = j
                        break
            else:
                residents = self.residents
                if changes != self.changes:
                    changes = self.changes
                    first = 0
                n = len(residents)
                while first < n:
                    j = residents[first]
                    first += 1
                    if j not in served:
                        job = j  # (served below: the next scan starts after it)
                        break
            if job is None:
                if plan.left > 0 and not self.preempted_now and not plan.refused and \
                        self.admits:
                    # The header reads what is left (the whole budget under
                    # exclusive prefill); the admitted body reads budget_left
                    # as anywhere else (sim.admit_for).
                    self.planning_left = plan.B if self.exclusive else plan.left
                    got = sim.admit_for(self)
                    self.planning_left = None
                    if got:
                        plan.admitted += 1
                        continue
                break
            served.add(job)
            outcome = plan.give(job, self.exclusive)
            if outcome == "self":
                break
            if outcome == "given" and (plan.left <= 0 or (self.exclusive and not job.decode)):
                break

    def start(self, C: float, attn: Dict[StepJob, float], assigned: Assignment,
              plan: Plan) -> None:
        """Steps 6 of the iteration: the cost, the claims, the event.
        ``attn`` maps job to a prefill chunk's attention term; ``plan`` is
        for the iteration trace."""
        sim = self.sim
        ctx = self.ctx
        ctx.a = None
        # The attention term of the prefill chunks that are still assigned
        # (a resident preempted after it was given tokens gives them back).
        attention = ntok = npre = ndec = 0.0
        j: StepJob
        t: float
        for j, t in assigned:
            ntok += t
            if j.decode:
                ndec += 1.0
            else:
                npre += t
                attention += attn.get(j, 0.0)
        ctx.ntok = ntok
        ctx.npre = npre
        ctx.attn = attention
        ctx.nres = float(len(self.residents))
        ctx.ndec = ndec
        if self.cost_totals or sim.claims:  # (claims read the context too)
            kvb = kvp = 0.0
            for j, t in assigned:
                if j.decode:
                    kvb += self.memory_of(j.session)
                else:
                    kvp += self.memory_of(j.session)
            ctx.kvb = kvb
            ctx.kvp = kvp
        self.launch(C, assigned, plan, ntok, ndec, npre)

    def start_decodes(self, C: float, assigned: Assignment) -> None:
        """``start`` of a plan of decodes only (``plan_decodes``), in one
        pass: each job's position moves on by its token, and the sums
        ``start`` makes, in the same order (no prefill: ``prefilled``,
        ``attention`` and ``kv_prefill`` are 0)."""
        sim = self.sim
        ctx = self.ctx
        ctx.a = None
        mp = None
        if (self.cost_totals or sim.claims) and self.memory is not None:
            mp = sim.pools[self.memory]
        ntok = ndec = kvb = 0.0
        j: StepJob
        t: float
        for j, t in assigned:
            g = j.grow
            if g is not None:
                run, i = g
                run.pos[i] = run.pos[i] + t  # (not `+=`: compiled, that adds boxed)
                run.grown[i] = True
            ntok += t
            ndec += 1.0
            if mp is not None:
                # self.memory_of(j.session), inlined
                total = 0.0
                for run in j.session.holds:
                    pools = run.pools
                    if mp in pools:
                        i = 0
                        for p in pools:
                            if p is mp and not run.done[i]:
                                total += run.alloc[i]
                            i += 1
                kvb += total
        ctx.ntok = ntok
        ctx.npre = 0.0
        ctx.attn = 0.0
        ctx.nres = float(len(self.residents))
        ctx.ndec = ndec
        if self.cost_totals or sim.claims:
            ctx.kvb = kvb
            ctx.kvp = 0.0
        self.launch(C, assigned, None, ntok, ndec, 0.0)

    def launch(self, C: float, assigned: Assignment, plan: Optional[Plan], ntok: float,
               ndec: float, npre: float) -> None:
        """The rest of ``start``, once the context holds the sums: the
        cost, the claims, the statistics and the event."""
        sim = self.sim
        ctx = self.ctx
        cost = self.read_cost(ctx)
        if not cost > 0.0:
            cost = 0.0
            if ntok > 0:
                err = RunError("stage `%s`: an iteration of %s tokens costs %s; an iteration "
                               "takes time" % (self.name, fmt(ntok), fmt(cost)))
                err.stage = self
                raise err
        if sim.claims:
            ctx.demand = self.demand(C)
            ctx.served = self.served_total
            ctx.arrived = float(sim.arrived)
            for c in sim.claims:
                if c.stage == self.index and c.out_of_scope is None:
                    c.read(sim, ctx)
        self.served_total += ntok
        self.iterations += 1
        self.running = assigned
        self.iter_start = sim.now
        self.running_pre = npre > 0
        self.running_dec = ndec > 0
        self.running_decodes = ndec
        if sim.warm and ndec > 0:
            self.decode_batch.add(ndec)
            self.decode_step.add(cost)
        if sim.trace_iterations is not None:
            sim.trace_iterations(self, plan, assigned, cost)
        # sim.schedule(now + cost, …), keeping the entry: a stretch of
        # decodes folds while it is the heap's first (fold.py); its
        # argument is this stage (which ``iteration_end`` ignores), for
        # fold.py's ``_stage_of``
        sim.seq += 1
        entry: Any
        if OBJECTS:
            if self.entry_free:
                # the entry the fold loop took off the heap, as the new one
                # (its function and argument are the same): no allocation
                ev: Event = self.end_entry
                ev.t = sim.now + cost
                ev.seq = sim.seq
                self.entry_free = False
                entry = ev
            else:
                entry = Event(sim.now + cost, sim.seq, self.on_iteration_end, self)
            push_event(sim.heap, entry)
        else:
            # (typed Any: a tuple of known item types would be boxed anew
            # at each use, and the heap's item would not be this one)
            entry = (sim.now + cost, sim.seq, self.on_iteration_end, self)
            heappush(sim.heap, entry)
        self.end_entry = entry
        self.decode_launch = plan is None
        if plan is None and self.fold_ok:
            sim.fold_stage = self

    def demand(self, chunk: float) -> float:
        """What the residents want: a token per decode, a chunk per prefill."""
        total = 0.0
        for j in self.residents:
            if j.decode:
                total += min(1.0, j.remaining)
            else:
                total += j.remaining if chunk <= 0 else min(chunk, j.remaining)
        return total

    def budget_left(self) -> float:
        """``budget_left(S)``: during an admission S plans, the budget left
        for it; otherwise the budget now less what the residents want."""
        if self.planning_left is not None:
            return self.planning_left
        ctx = self.ctx
        ctx.a = None
        if self.budget_totals:  # (as ``attempt`` reads them)
            self.totals(ctx, self.residents)
        b = self.read_budget(ctx)
        c = self.read_chunk(ctx)
        if c != c:
            c = 0.0
        return max(0.0, b - self.demand(c))

    def serving_order(self, keys: Optional[List[Callable[[StepContext], Any]]] = None
                      ) -> List[StepJob]:
        """The residents in serving order: by the keys (the stage's `serve`
        order unless a body's `serve by` gives its own), stable, else in
        admission order."""
        totals = self.serve_totals if keys is None else True
        keys = self.serve_keys if keys is None else keys
        if not keys:
            return list(self.residents)
        ctx = self.ctx
        if totals:
            self.totals(ctx, self.residents)
        keyed: List[Tuple[List[Any], int, StepJob]] = []
        for n, j in enumerate(self.residents):
            ctx.a = j.session.a
            ctx.decoding = 1.0 if j.decode else 0.0
            ctx.admission = float(j.session.admission)
            ctx.remaining = j.remaining
            keyed.append(([total_key(f(ctx)) for f in keys], n, j))
        ctx.a = None
        keyed.sort(key=lambda x: (x[0], x[1]))
        return [j for _, _, j in keyed]

    # ------------------------------------------------------------------ end

    def iteration_end(self, _: Any) -> None:
        sim = self.sim
        now = sim.now
        self.account(now)
        assigned = self.running or []
        self.running = None
        sim.may_plan.add(self)
        warm = sim.warm
        slot = sim.turn_slot
        itl = self.itl
        # Gaps are added in runs of equal values (``add_repeat``: the same
        # float sum as one ``add`` each): in a batch of decodes most
        # residents' previous token ended with the previous iteration.
        gap = math.nan  # (no run yet: no x equals it; runs are added only when repeat > 0)
        repeat = 0
        j: StepJob
        t: float
        for j, t in assigned:
            if j.gone:
                continue
            j.remaining -= t
            done = j.remaining <= 1e-9
            decode = j.decode
            if decode or done:
                # A token of the session's turn ends here: the gap since the
                # turn's previous token is an inter-token latency (after
                # warm-up).  A decode always counts; a prefill end counts once
                # the turn has decoded, or when the session was preempted
                # (anywhere) since its previous token; otherwise it is the
                # turn's first token, replacing an earlier one.  Each fork leg
                # has a token stream of its own; the session's runs on across
                # its forks and joins.
                s = j.session
                turn: float = s.a[slot]
                same = s.itl_turn == turn  # (nan before its first token)
                if same and warm and (
                        decode or s.itl_dec or s.itl_preempted):
                    x = now - s.itl_at
                    if x == gap:
                        repeat += 1
                    else:
                        if repeat:
                            itl.add_repeat(gap, repeat)
                        gap = x
                        repeat = 1
                s.itl_dec = decode or (same and s.itl_dec)
                s.itl_turn = turn
                s.itl_at = now
                s.itl_preempted = False
            if done:
                j.gone = True
                self.residents.remove(j)
                self.changes += 1
                sim.touched.add(self)
                job = Job(j.session, 0.0, j.arrived)
                self.done_flow(job, now)
                j.session.cancel = None
                sim.resume(j.session)
        if repeat:
            itl.add_repeat(gap, repeat)

    # ------------------------------------------------------------ statistics

    def account(self, now: float) -> None:
        """The running iteration's share of the mix averages, up to ``now``
        (at its end, or at the run's end for one still running)."""
        # (IntervalAverage.add, inline, of the average of the iteration's
        # kind and of the decodes: an iteration is one of the three kinds,
        # and the other two would add 0 * (now - lo) = +0.0 to a sum that is
        # never -0.0, which leaves its bits as they are)
        pre = self.running_pre
        dec = self.running_dec
        t0 = self.iter_start
        start = self.mix_start
        lo = t0 if t0 > start else start
        if now > lo:
            if pre:
                if dec:
                    self.area_mixed += now - lo
                else:
                    self.area_prefill_only += now - lo
            elif dec:
                self.area_decode_only += now - lo
            d = self.running_decodes
            if d != 0.0:
                self.area_decodes += d * (now - lo)

    def close(self, end: float) -> None:
        """The run's end: the running iteration's share, and the mix
        averages handed to the stats' IntervalAverages."""
        if self.running is not None:
            self.account(end)
        st = self.stats
        start = self.mix_start
        for avg, area in ((st.prefill_only, self.area_prefill_only),
                          (st.decode_only, self.area_decode_only),
                          (st.mixed, self.area_mixed), (st.decodes, self.area_decodes)):
            avg.start = start
            avg.area = area

    def restart(self, now: float) -> None:
        Stage.restart(self, now)
        self.mix_start = now
        self.area_prefill_only = 0.0
        self.area_decode_only = 0.0
        self.area_mixed = 0.0
        self.area_decodes = 0.0

    preempt_count = 0
    running_pre = False
    running_dec = False
    running_decodes = 0.0
