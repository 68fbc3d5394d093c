"""Step stages: continuous-batching engines (feature map §5.5–5.10).

A step stage serves its residents in iterations.  Planning an iteration
gives each resident, in serving order, a decode token or a prefill chunk
while the token budget lasts, growing the memory of `growing` runs (which
may preempt), and admits waiting holds from the pools it admits (`admit
via`) while budget is left; then the iteration costs ``cost`` time, and at
its end the tokens are committed.
"""
import math

from ..errors import RunError
from ..report.stats import IntervalAverage, ItlHistogram, Welford
from .exprs import fmt
from .holds import Preempted
from .pools import EPS, total_key
from .stages import Stage

INF = math.inf


class StepJob(object):
    """A resident: one `run E prefill|decode (n) [growing P]` of a session."""
    __slots__ = ("session", "decode", "remaining", "grow", "arrived", "gone", "stalled")

    def __init__(self, session, decode, work, grow, now):
        self.session = session
        self.decode = decode
        self.remaining = work
        self.grow = grow  # (HoldRun, pool index) of the growing pool, or None
        self.arrived = now
        self.gone = False
        self.stalled = False


class StepContext(object):
    """What budget, chunk, cost, serve keys and iteration bodies read."""
    __slots__ = ("a", "rng", "nres", "ndec", "kvb", "kvp", "ntok", "npre", "attn",
                 "decoding", "admission", "remaining", "admitted", "preempted", "demand",
                 "served", "arrived", "session")

    def __init__(self, rng):
        self.a = None
        self.rng = rng
        self.session = None
        for k in ("nres", "ndec", "kvb", "kvp", "ntok", "npre", "attn", "decoding",
                  "admission", "remaining", "admitted", "preempted", "demand", "served",
                  "arrived"):
            setattr(self, k, 0.0)


class Step(Stage):
    kind = "step"

    def __init__(self, sim, index, name, member, spec, compiler):
        Stage.__init__(self, sim, index, name, member)
        c = compiler
        self.budget = c.expr(spec.budget)
        self.cost = c.expr(spec.cost)
        self.chunk = c.expr(spec.chunk)
        self.granule = None if spec.granule is None else spec.granule.value
        self.exclusive = spec.serve == "ExclusivePrefill"
        self.serve_keys = [] if self.exclusive else [c.expr(k) for k in spec.serve]
        self.memory = spec.memory
        self.body = spec.iteration
        if self.body is not None:
            raise RunError("serq cannot run step stages with an `iteration` body yet "
                           "(stage `%s`)" % name)
        self.residents = []
        self.running = None  # the assignment of the running iteration
        self.ctx = StepContext(sim.machine_rng)
        self.iterations = 0
        self.served_total = 0.0
        self.idle_with_work = False
        self.preempted_now = False
        self.planning_left = None  # budget left, while planning an admission
        self.admits = []  # pools this stage admits (set by the simulator)
        st = self.stats
        st.prefill_only = IntervalAverage()
        st.decode_only = IntervalAverage()
        st.mixed = IntervalAverage()
        st.decodes = IntervalAverage()
        self.iter_start = 0.0
        st.decode_batch = Welford()
        st.decode_step = Welford()
        st.itl = ItlHistogram()

    # ------------------------------------------------------------ residents

    def present(self):
        return len(self.residents)

    def busy(self):
        return float(len(self.running)) if self.running else 0.0

    def work_left(self, now):
        total = 0.0
        for j in self.residents:
            total += j.remaining
        return total

    def submit_step(self, session, decode, work, grow):
        now = self.sim.now
        job = StepJob(session, decode, work, grow, now)
        adm = session.root().admission
        i = len(self.residents)
        while i > 0 and self.residents[i - 1].session.root().admission > adm:
            i -= 1
        self.residents.insert(i, job)
        session.cancel = lambda: self.withdraw(job)
        session.step_job = job

    def withdraw(self, job):
        """A preempted resident leaves the stage (and its iteration)."""
        job.gone = True
        if job in self.residents:
            self.residents.remove(job)
        if self.running is not None:
            self.running = [(j, t) for j, t in self.running if j is not job]

    def pending(self):
        return bool(self.residents) or any(p.queue for p in self.admits)

    # --------------------------------------------------------------- totals

    def memory_of(self, session):
        """Units all holds of ``session`` have in the stage's memory pool."""
        if self.memory is None:
            return 0.0
        total = 0.0
        root = session.root()
        for s in [root] + list(root.legs):
            for run in s.holds:
                for i, p in enumerate(run.pools):
                    if p.index == self.memory and not run.done[i]:
                        total += run.alloc[i]
        return total

    def totals(self, ctx, jobs):
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

    def attempt(self):
        """Plan an iteration (the default procedure)."""
        sim = self.sim
        ctx = self.ctx
        ctx.a = None
        ctx.rng = sim.machine_rng
        self.totals(ctx, self.residents)
        B = self.budget(ctx)
        C = self.chunk(ctx)
        left = B
        served = set()
        assigned = []  # [job, tokens]
        self.preempted_now = False
        refused = False
        prefill_at_start = any(not j.decode for j in self.residents)
        admitted = 0
        attention = 0.0
        while True:
            order = self.serving_order()
            job = None
            for j in order:
                if id(j) not in served:
                    job = j
                    break
            if job is None:
                if left > 0 and not self.preempted_now and not refused and self.admits:
                    self.planning_left = B if self.exclusive else left
                    got = sim.admit_for(self)
                    self.planning_left = None
                    if got:
                        admitted += 1
                        continue
                break
            served.add(id(job))
            if job.decode:
                want = min(1.0, job.remaining)
                if self.exclusive and prefill_at_start:
                    continue
            else:
                want = job.remaining if C == 0 else min(C, job.remaining)
            available = B if (self.exclusive and not job.decode) else left
            tokens = min(want, available)
            if not job.decode and self.granule is not None and tokens < job.remaining:
                g = self.granule
                tokens = 0.0 if g == INF else math.floor(tokens / g) * g
                if tokens <= 0:
                    refused = True
                    continue
            if tokens <= 0:
                continue
            if job.grow is not None:
                if job.stalled:
                    continue
                run, i = job.grow
                extra = run.pos[i] + tokens - run.alloc[i]
                if extra > EPS:
                    outcome = sim.grow_for_step(self, job, run, i, extra)
                    # residents given tokens and preempted meanwhile give them back
                    kept = []
                    for aj, at in assigned:
                        if aj.gone:
                            left += at
                        else:
                            kept.append([aj, at])
                    assigned = kept
                    if outcome == "stalled":
                        continue
                    if outcome == "self":
                        break
                pos = run.pos[i]
                attention += tokens * (pos + tokens / 2.0) if not job.decode else 0.0
            elif not job.decode:
                attention += tokens * tokens / 2.0
            if self.exclusive and not job.decode:
                assigned = []
                left = B
            assigned.append([job, tokens])
            left -= tokens
            if left <= 0 or (self.exclusive and not job.decode):
                break
        assigned = [(j, t) for j, t in assigned if not j.gone]
        for j, t in assigned:
            if j.grow is not None:
                run, i = j.grow
                run.pos[i] += t
                run.grown[i] = True
        if not assigned and not self.preempted_now:
            self.idle_with_work = self.pending()
            return
        self.idle_with_work = False
        ntok = npre = ndec = 0.0
        for j, t in assigned:
            ntok += t
            if j.decode:
                ndec += 1.0
            else:
                npre += t
        ctx.ntok = ntok
        ctx.npre = npre
        ctx.attn = attention
        ctx.nres = float(len(self.residents))
        ctx.ndec = ndec
        kvb = kvp = 0.0
        for j, t in assigned:
            if j.decode:
                kvb += self.memory_of(j.session)
            else:
                kvp += self.memory_of(j.session)
        ctx.kvb = kvb
        ctx.kvp = kvp
        cost = self.cost(ctx)
        if not cost > 0.0:
            cost = 0.0
            if ntok > 0:
                raise RunError("stage `%s`: an iteration of %s tokens costs %s; an iteration "
                               "takes time" % (self.name, fmt(ntok), fmt(cost)))
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
        self.running_kind = (npre > 0, ndec > 0)
        self.running_decodes = ndec
        if sim.warm and ndec > 0:
            self.stats.decode_batch.add(ndec)
            self.stats.decode_step.add(cost)
        sim.schedule(sim.now + cost, self.iteration_end, None)

    def demand(self, chunk):
        """What the residents want: a token per decode, a chunk per prefill."""
        total = 0.0
        for j in self.residents:
            if j.decode:
                total += min(1.0, j.remaining)
            else:
                total += j.remaining if chunk == 0 else min(chunk, j.remaining)
        return total

    def budget_left(self):
        """``budget_left(S)``: during an admission S plans, the budget left
        for it; otherwise the budget now less what the residents want."""
        if self.planning_left is not None:
            return self.planning_left
        ctx = self.ctx
        ctx.a = None
        self.totals(ctx, self.residents)
        b = self.budget(ctx)
        c = self.chunk(ctx)
        return max(0.0, b - self.demand(c))

    def serving_order(self):
        if not self.serve_keys:
            return list(self.residents)
        ctx = self.ctx
        self.totals(ctx, self.residents)
        keyed = []
        for n, j in enumerate(self.residents):
            ctx.a = j.session.a
            ctx.decoding = 1.0 if j.decode else 0.0
            ctx.admission = float(j.session.root().admission)
            ctx.remaining = j.remaining
            keyed.append(([total_key(f(ctx)) for f in self.serve_keys], n, j))
        ctx.a = None
        keyed.sort(key=lambda x: (x[0], x[1]))
        return [j for _, _, j in keyed]

    # ------------------------------------------------------------------ end

    def iteration_end(self, _):
        sim = self.sim
        now = sim.now
        self.account(now)
        assigned = self.running or []
        self.running = None
        for j, t in assigned:
            if j.gone:
                continue
            j.remaining -= t
            done = j.remaining <= 1e-9
            if j.decode or done:
                sim.token(j.session, self, j.decode)
            if done:
                j.gone = True
                self.residents.remove(j)
                job = [j.session, 0.0, j.arrived, j.arrived]
                self.done_flow(job, now)
                j.session.cancel = None
                sim.resume(j.session)

    # ------------------------------------------------------------ statistics

    def account(self, now):
        """The running iteration's share of the mix averages, up to ``now``
        (at its end, or at the run's end for one still running)."""
        st = self.stats
        pre, dec = self.running_kind
        t0 = self.iter_start
        st.prefill_only.add(t0, now, 1.0 if pre and not dec else 0.0)
        st.decode_only.add(t0, now, 1.0 if dec and not pre else 0.0)
        st.mixed.add(t0, now, 1.0 if pre and dec else 0.0)
        st.decodes.add(t0, now, self.running_decodes)

    def close(self, end):
        if self.running is not None:
            self.account(end)

    def restart(self, now):
        Stage.restart(self, now)
        st = self.stats
        for avg in (st.prefill_only, st.decode_only, st.mixed, st.decodes):
            avg.restart(now)

    running_kind = (False, False)
    running_decodes = 0.0
