"""The simulator's side of pools (a base of ``Simulator``): queues and
admission at every settle, growth and preemption, leases, the end of a
session's holds, and the pool queries.
"""
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Dict, Final, List, Set, Tuple

from ..errors import RunError
from .exprs import fmt
from .fifoq import FifoQueue
from .holds import HoldRun, Lease, PoolSpec, Preempted, infinite_units, try_grow
from .pools import EPS, Pool, Waiting, join_families, round_up, total_key
from .recorded import Recorded
from .timeavg import TimeAverages

if TYPE_CHECKING:
    from .session import Interpreter, Session
    from .step import Step

WAIT: Final = 0
INF: Final = float("inf")  # (read as a constant: compiled, ``float("inf")`` parses a string)


def _in_order(members: Set[Any], after: int) -> List[Recorded]:
    """The members of ``members`` whose index is past ``after``, by index:
    an insertion sort (a handful of stages or pools, their indices compared
    natively where the core is compiled)."""
    order: List[Recorded] = []
    for m in members:
        y: Recorded = m
        k = y.index
        if k > after:
            order.append(y)
            j = len(order) - 1
            while j > 0 and order[j - 1].index > k:
                order[j] = order[j - 1]
                j -= 1
            order[j] = y
    return order


def walk_in_order(members: Set[Any], visit: Any) -> None:
    """``visit(x)`` for the members of the set ``members`` in the order of
    their ``index``, as a walk of a list of all of them in that order that
    skips non-members would: a member that joins during the walk is visited
    if its index is past the one being visited.  ``visit`` returns whether
    ``x`` stays a member (it may add members, never remove them)."""
    order = _in_order(members, -1)  # (indices are >= 0)
    i = 0
    while i < len(order):
        x = order[i]
        i += 1
        before = len(members)
        keep = visit(x)
        if len(members) > before:  # (joined during the visit)
            order = _in_order(members, x.index)
            i = 0
        if not keep:
            members.discard(x)


class PoolSim(TimeAverages):
    # Set by the simulator (engine.py), declared here so that the compiled
    # admission reads them as fields
    prog: Any
    interp: "Interpreter"
    compiler: Any
    pool_watch: Set[Any]
    ready: FifoQueue  # (the sessions ready to run: settle.py)

    def make_ready(self, s: "Session") -> None:
        raise NotImplementedError  # (settle.py's)

    def step(self, s: "Session") -> None:
        raise NotImplementedError  # (settle.py's: declared so that admit_for calls it natively)

    def make_pools(self, prog: Any) -> None:
        # (typed: compiled, ``sim.pools[i]`` and the counters are native)
        self.pools: List[Pool] = [Pool(self, i, p, self.compiler)
                                  for i, p in enumerate(prog.pools)]
        join_families(self.pools)
        # Legs and sessions counted stuck: each at most once in all, on the
        # first pool where it is stuck (0.1.3); session -> that pool's index
        self.stuck_sessions: Dict[Any, int] = {}
        self.release_seq = 0
        self.admission_seq = 0
        self.enqueue_seq = 0
        self.turn_slot: int = prog.slots[2]  # the `turn` attribute (a step token reads it)

    def pool_label(self, p):
        return p.name if p.member is None else "%s[%d]" % (p.name, p.member)

    # ------------------------------------------------------------ admission

    def enqueue(self, pool: Pool, run: HoldRun, front: bool = False) -> Waiting:
        self.enqueue_seq += 1
        w = Waiting(run, self.now, self.enqueue_seq, front)
        if front:
            pool.queue.insert(0, w)
        else:
            pool.queue.append(w)
        pool.qver += 1
        self.touched.add(pool)
        if pool.pass_admits:
            self.pool_watch.add(pool)
        else:
            # (the step stage admits this queue when it plans: the pass
            # has nothing to do for it, see pool_pass)
            sim: Any = self  # (the simulator: its stages and may_plan are settle's)
            sim.may_plan.add(sim.stages[pool.decl.admit_via])
        s = run.session
        s.waiting_in = pool
        s.cancel = lambda: self.leave_queue(pool, w)
        return w

    def leave_queue(self, pool, w):
        if w in pool.queue:
            pool.queue.remove(w)
            pool.qver += 1
            self.touched.add(pool)
            if pool.blocked and not pool.queue:
                self.pool_watch.add(pool)  # (the pass clears the mark)
        w.run.session.waiting_in = None

    def is_waiting(self, s):
        return s.waiting_in is not None

    def select(self, pool):
        q = pool.queue
        if pool.queue_keys is None or q[0].resumed:
            return q[0]
        best = best_key = None
        now = self.now
        for w in q:
            s = w.run.session
            s.waited = now - w.since
            key = [total_key(f(s)) for f in pool.queue_keys]
            key.append(w.seq)
            if best is None or key < best_key:
                best, best_key = w, key
        return best

    def admit_pool(self, pool):
        """Admit from ``pool``'s queue while the selected hold fits (under
        first fit, while the selected hold or one behind it fits)."""
        while pool.queue:
            w = self.select(pool)
            if self.try_admit(w):
                continue
            if pool.first_fit is not None and self.admit_past(pool, w) is not None:
                continue
            pool.blocked = self.held_back(pool, w)
            self.touched.add(pool)
            self.pool_watch.add(pool)
            if pool.blocked and self.warm:
                pool.admission.blocked_attempts += 1
            return
        pool.blocked = False
        self.touched.add(pool)

    def admit_past(self, pool, head):
        """First fit (serq's extension): ``head`` does not fit; admit the
        first hold behind it in queue order that does, trying at most
        ``within`` of them, and none once ``head`` has waited ``age``.  The
        admitted ``Waiting``, or None.  A scan that admitted nothing is
        redone only once the pools or the queue have changed (a header that
        reads other state, such as `now`, is read again at those moments)."""
        ff = pool.first_fit
        if self.now - head.since >= ff.age:
            return None
        key = (pool.qver, head, tuple([(p.used, p.reserved) for p in self.pools]))
        if pool.ff_key == key:
            return None
        order = self.queue_order(pool, head)
        whole = ff.within is None or ff.within >= len(order)
        if not whole:
            order = order[:ff.within]
        for w in order:
            if self.try_admit(w):
                return w
        pool.ff_key = key
        if whole:
            # Nothing behind the head fits: no head-of-line blocking (what
            # ``held_back`` would find by the same scan).
            pool.blocked_key = (pool.used, pool.reserved, len(pool.queue), head)
            pool.blocked = False
            self.touched.add(pool)
        return None

    def queue_order(self, pool, head):
        """The waiting holds other than ``head`` in queue order: as they
        wait under FIFO; under `queue by`, the resumed holds at the front
        first, then the others by their keys (ties to the earlier)."""
        q = pool.queue
        if pool.queue_keys is None:
            return [w for w in q if w is not head]
        front = []
        i = 0
        while i < len(q) and q[i].resumed:
            if q[i] is not head:
                front.append(q[i])
            i += 1
        now = self.now
        keyed = []
        for w in q[i:]:
            if w is head:
                continue
            s = w.run.session
            s.waited = now - w.since
            key = [total_key(f(s)) for f in pool.queue_keys]
            key.append(w.seq)
            keyed.append((key, w))
        keyed.sort(key=lambda kw: kw[0])
        return front + [w for _, w in keyed]

    def fits(self, run):
        units, needs = self.header(run)
        return all(p.used + p.reserved + round_up(need, p.block) + p.watermark <= p.cap + EPS
                   for p, need in zip(run.pools, needs))

    def held_back(self, pool, head):
        """Head-of-line blocking: some hold behind ``head`` would fit now.
        Scanning the queue is the costly part, so it is redone only when the
        pool's allocation, reservations or queue have changed since the last
        scan (a header that reads other state is read at those moments)."""
        key = (pool.used, pool.reserved, len(pool.queue), head)
        if pool.blocked_key == key:
            return pool.blocked
        pool.blocked_key = key
        with self.looking():  # (0.1.3 has no such scan)
            return any(w is not head and self.fits(w.run) for w in pool.queue)

    @contextmanager
    def looking(self):
        """Headers read only to look (does a hold fit?): a `budget_left(S)`
        may draw S's budget, and the machine stream must not move for it."""
        rng = self.machine_rng
        at = rng.position()
        try:
            yield
        finally:
            rng.rewind(at)

    def header(self, run: HoldRun) -> Tuple[List[float], List[float]]:
        """Units and needs of a waiting hold, evaluated now."""
        s = run.session
        op = run.op
        interp = self.interp
        units: List[float] = []
        needs: List[float] = []
        spec: PoolSpec
        for spec in op[1]:  # (one per pool of the run: run_hold)
            u: float = interp.amount(s, spec[1](s), op)
            need = u
            reserve_f = spec[2]
            if reserve_f is not None:
                need = max(u, interp.amount(s, reserve_f(s), op))
            units.append(u)
            needs.append(need)
        return units, needs

    def try_admit(self, w: Waiting) -> bool:
        run: HoldRun = w.run
        s: "Session" = run.session
        units, needs = self.header(run)
        p: Pool
        for p, need in zip(run.pools, needs):
            # (the watermark is 0.0 unless the pool declares one: x + 0.0 == x)
            if p.used + p.reserved + round_up(need, p.block) + p.watermark > p.cap + EPS:
                return False
        pool0 = run.pools[0]
        pool0.queue.remove(w)
        pool0.qver += 1
        touched = self.touched
        touched.add(pool0)
        if pool0.blocked and not pool0.queue:
            self.pool_watch.add(pool0)  # (the pass clears the mark)
        s.cancel = None
        op = run.op
        reuse = None if op[2] is None else op[2](s)
        consumed = 0.0
        root = s.root()
        i: int
        for i, p in enumerate(run.pools):
            pos = 0.0
            if op[4] is not None:
                pos = p.take_entry(root.serial, reuse)
                consumed = max(consumed, pos)
            alloc = round_up(units[i], p.block)
            if alloc == INF:
                raise infinite_units(p, run)
            p.make_room(alloc)
            p.used += alloc
            touched.add(p)
            run.alloc[i] = alloc
            run.pos[i] = pos
            run.grown[i] = False
            run.done[i] = False
            if p.decl.reserve_held:
                r = max(0.0, round_up(needs[i], p.block) - alloc)
                run.reserve[i] = r
                p.reserved += r
            p.holders.append(s)
            p.stats.admissions += 1
        # Out of the queue, but still `waiting` for the eviction keys (and
        # spill clauses) its own admission's make_room reads, as in 0.1.3.
        s.waiting_in = None
        s.a[self.prog.slots[0]] = consumed
        s.holds.append(run)  # the session's innermost hold from now on
        if self.warm:
            pool0.stats.wait.add(self.now - w.since)
        s.admission = float(self.admission_seq)  # the leg (or session) admitted
        self.admission_seq += 1
        self.make_ready(s)
        return True

    def pool_pass(self):
        """Every pool in declaration order serves its stalled growers, then
        its queue (unless a step stage admits it), and clears its blocked
        mark once its queue is empty.  The settle runs this, and so does a
        release, before the releasing session goes on.

        Only the pools in ``pool_watch`` can have any of that to do (each
        joins it where it gains such work: a stalled growth, a queue no step
        stage admits, a blocked mark left with an empty queue), so the pass
        visits those, in declaration order, including any that joins during
        the pass after the one being served, as a walk of every pool would."""
        if self.pool_watch:
            walk_in_order(self.pool_watch, self.serve_pool)

    def serve_pool(self, p: Pool) -> bool:
        """``pool_pass`` for one pool; whether it still has work for it."""
        if p.growers:
            self.retry_growers(p)
        if p.queue and p.pass_admits:
            self.admit_pool(p)
        elif p.blocked and not p.queue:
            p.blocked = False
            self.touched.add(p)
        return bool(p.growers or (p.queue and p.pass_admits) or (p.blocked and not p.queue))

    # --------------------------------------------------------------- growth

    def try_grow(self, run, i, need):
        return try_grow(run, i, need)  # (holds.py: compiled with the pools)

    def grow(self, s, run, i, d, op):
        """``grow P (d)`` on the innermost hold (a generator: it may wait)."""
        p = run.pools[i]
        need = round_up(run.alloc[i] + d, p.block) - run.alloc[i]
        if need <= 0.0:
            return
        while not self.try_grow(run, i, need):
            victim = None if p.preempt_keys is None else self.choose_victim(p)
            if victim is None:
                entry = (s, run, i, need)
                p.growers.append(entry)
                p.last_stall = self.now
                self.pool_watch.add(p)
                s.cancel = lambda: p.growers.remove(entry) if entry in p.growers else None
                yield WAIT
                return
            vs, vrun = victim
            self.preempt(p, vs, vrun, current=s)
        return

    def retry_growers(self, pool):
        while pool.growers:
            entry = pool.growers[0]
            s, run, i, need = entry[:4]
            if not self.try_grow(run, i, need):
                return
            pool.growers.pop(0)
            if len(entry) == 5:
                # A step resident gets tokens again.  As in 0.1.3, its
                # position advances by the growth it waited for, although
                # those tokens were never served (feature map §12, item 11).
                job = entry[4]
                job.stalled = False
                run.pos[i] = run.pos[i] + job.pending  # (not `+=`: compiled, that adds boxed)
                continue
            s.cancel = None
            self.make_ready(s)

    def choose_victim(self, p):
        """The smallest preempt key among the candidates, ties to the later
        one.  The candidates: for the memory of step stages, the sessions
        resident there, by latest admission; otherwise the entries of the
        holder list whose session holds ``p`` in a scope, in holder order.
        A session with a nested hold on ``p`` has an entry per admission,
        and each is a candidate (its innermost hold) at its own place, as
        in 0.1.3: `preempt lifo` picks the nested hold's session when it was
        admitted last, though its outer hold came before others."""
        if self.folds:
            self.sync_fold_pool(p)  # (the candidates' positions: fold.py)
        cands = []
        stages = self.memory_of.get(p.index)
        if stages:
            seen = set()
            jobs = [j for st in stages for j in st.residents]
            jobs.sort(key=lambda j: j.session.admission)
            for j in jobs:
                h = j.session
                if id(h) in seen:
                    continue
                seen.add(id(h))
                found = self.scope_hold(h, p)
                if found is not None:
                    cands.append(found)
        else:
            for h in p.holders:
                found = self.scope_hold(h, p)
                if found is not None:
                    cands.append(found)
        best = best_key = None
        ctx = self.victim_ctx
        for place, (vs, run, i) in enumerate(cands):
            ctx.a = vs.a
            ctx.admission = float(place)
            job = vs.step_job
            ctx.decoding = 1.0 if job is not None and not job.gone and job.decode else 0.0
            ctx.position = run.pos[i]
            key = [total_key(f(ctx)) for f in p.preempt_keys]
            if best is None or key <= best_key:
                best, best_key = (vs, run), key
        return best

    def scope_hold(self, s, p):
        """The innermost hold on ``p`` of session (or leg) ``s``."""
        for run in reversed(s.holds):
            for i, q in enumerate(run.pools):
                if q is p and not run.done[i]:
                    return (s, run, i)
        return None

    def preempt(self, p, vs, vrun, current):
        """Preempt ``vrun`` (a hold of ``vs``) to free room in ``p``."""
        i = vrun.pools.index(p)
        pos = vrun.pos[i]
        vs.a[self.prog.slots[8]] = pos
        mem = vs.preempt_memory  # the leg's own (or the session's)
        if mem is None:
            mem = vs.preempt_memory = {}
        last = mem.get(p.index)
        # Stuck: preempted again at a position not beyond the last preemption
        # on this pool (that memory goes when a hold on it completes); each
        # session counts at most once, on the first pool it is stuck on
        # (0.1.3: stuck on one pool, then on another, it counts on the first).
        if last is not None and pos <= last[0] + EPS:
            if vs not in self.stuck_sessions:
                self.stuck_sessions[vs] = p.index
                p.stats.stuck += 1
                if p.stuck_since is None:
                    p.stuck_since = self.now
        mem[p.index] = (pos, False)
        p.stats.preemptions += 1
        if self.warm:
            p.admission.preemption_times.append(self.now)
        tail = p.decl.preempt_tail
        # Any preemption (wherever the session is: on a step stage, queued
        # there, or in a tool call) makes its turn's next prefill end count
        # as the next token (0.1.3).
        vs.itl_preempted = True
        job = vs.step_job
        if job is not None and not job.gone:
            for st in self.memory_of.get(p.index, ()):
                if job in st.residents:
                    st.preempted_now = True
                    st.preempt_count += 1
        if vs is current:
            raise Preempted(vrun, tail)
        if vs.cancel is not None:
            vs.cancel()
            vs.cancel = None
        if vs in self.ready:
            # Ready (just admitted, say) but not yet run: the preemption moves
            # it to its next wait now, and a stale turn would run past that.
            self.ready.remove(vs)
        try:
            vs.gen.throw(Preempted(vrun, tail))
        except StopIteration:
            self.finish(vs)

    # ---------------------------------------------------------- step stages

    def admit_for(self, stage: "Step") -> bool:
        """One admission for a step stage from the pools it admits (in
        declaration order, the first with a waiting hold); the admitted
        session runs at once.  False when nothing was admitted."""
        for p in stage.admits:
            if not p.queue:
                continue
            w = self.select(p)
            if not self.try_admit(w):
                past = None if p.first_fit is None else self.admit_past(p, w)
                if past is None:
                    p.blocked = self.held_back(p, w)
                    self.touched.add(p)
                    if p.blocked and self.warm:
                        p.admission.blocked_attempts += 1
                    return False
                w = past
            if p.blocked:
                p.blocked = False
                self.touched.add(p)
            # The body runs now; its budget_left is the budget now less what
            # the residents want, not the planning's remainder (0.1.3).
            saved, stage.planning_left = stage.planning_left, None
            s = w.run.session
            # The admitted session runs now until it blocks, and so does every
            # session it makes ready meanwhile (a leg it forks, the session a
            # leg ending in no time joins), in turn, until none is ready
            # (0.1.3); their holds wait for the next pool pass.
            ready = self.ready
            while ready:
                self.step(ready.popleft())
            stage.planning_left = saved
            return True
        return False

    def grow_for_step(self, stage, job, run, i, extra):
        """Growth of a `growing` resident before it gets tokens: "ok",
        "stalled" (no room, no preemption: it waits as a grower) or "self"
        (it preempted itself)."""
        p = run.pools[i]
        need = round_up(run.alloc[i] + extra, p.block) - run.alloc[i]
        if need <= 0.0:
            return "ok"
        s = job.session
        while not self.try_grow(run, i, need):
            victim = None if p.preempt_keys is None else self.choose_victim(p)
            if victim is None:
                job.stalled = True
                job.pending = extra
                entry = (s, run, i, need, job)
                p.growers.append(entry)
                p.last_stall = self.now
                self.pool_watch.add(p)
                return "stalled"
            vs, vrun = victim
            self.preempt(p, vs, vrun, current=None)
            # The stage whose resident's growth preempted admits no more in
            # this plan, whether or not the pool is its memory (0.1.3).
            stage.preempted_now = True
            if vs is s or job.gone:
                return "self"
        return "ok"

    # ---------------------------------------------------------------- leases

    def start_lease(self, s, run, i, t):
        lease = Lease(run.pools[i], run.alloc[i], run, s)
        if not s.leases:
            s.leases = []  # (an empty tuple until the first: session.py)
        s.leases.append(lease)
        if t != t or t < 0:
            t = 0.0  # 0.1.3 runs a negative or NaN lease as a lease of 0
        if t != float("inf"):
            lease.expires = self.now + t
            self.schedule(lease.expires, self.expire_lease, lease)

    def expire_lease(self, lease):
        """A finite lease runs out."""
        self.end_lease(lease)

    def end_lease(self, lease):
        """A lease ends: its units come back, cached per its hold's clause,
        and every holder-list entry of its holder goes (the 0.1.3 quirk,
        feature map §4.12: the holder is the leg that leased, or the session
        once the leg has ended)."""
        if lease.ended:
            return
        lease.ended = True
        p = lease.pool
        p.used -= lease.alloc
        self.touched.add(p)
        root = lease.session.root()
        p.remove_holder(lease.holder)
        op = lease.run.op
        if op[4] is not None:
            run = lease.run
            i = run.pools.index(p)
            l = op[4](lease.session)
            computed = run.pos[i] if any(run.grown) else lease.alloc
            from .pools import round_down
            p.keep(root, round_down(max(0.0, min(l, computed)), p.block))
        owner = lease.session
        if lease in owner.leases:
            owner.leases.remove(lease)

    def end_first_lease(self, s, member):
        for lease in list(s.leases):
            if lease.pool.index == member and not lease.ended:
                self.end_lease(lease)
                self.pool_pass()
                return

    # ------------------------------------------------------- session's end

    def release_session(self, s):
        """At a session's (or leg's) end: every hold released, innermost
        first, caching per its clause."""
        interp = self.interp
        while s.holds:
            run = s.holds.pop()
            interp.release_all(s, run)

    # ------------------------------------------------------------ invariants

    def live_holders(self):
        """Every live session and leg, orphan legs included (a leg whose
        session ended when another leg's hold was refused runs on, and is
        named only by the pools it holds or waits in)."""
        out, seen = [], set()

        def add(s):
            if s is not None and id(s) not in seen:
                seen.add(id(s))
                out.append(s)
                for leg in s.legs:
                    add(leg)
        for root in self.live_roots():
            add(root)
        for p in self.pools:
            for h in p.holders:
                add(h)
            for w in p.queue:
                add(w.run.session)
        return out

    def check_pools(self):
        """The pool invariants, checked after every settle by
        ``--check-invariants``: ``used + cached <= cap``, nothing negative,
        the cache total equal to its entries, the allocation equal to what
        holds and leases have."""
        held = {}
        live = self.live_holders()
        for s in live:
            for run in s.holds:
                for i, p in enumerate(run.pools):
                    if not run.done[i]:
                        held[p.index] = held.get(p.index, 0.0) + run.alloc[i]
            for lease in s.leases:
                if not lease.ended:
                    held[lease.pool.index] = held.get(lease.pool.index, 0.0) + lease.alloc
        for p in self.pools:
            label = self.pool_label(p)
            entries = sum(e.units for e in p.entries.values()) + sum(e.units for e in p.dead)
            problems = []
            # Sums of floats drift with their magnitude: the tolerance is
            # 1e-12 of the largest amount in play, and never below 1e-6 (the
            # absolute tolerance once fired at 3e137 units, where one ulp is
            # 6e121).
            scale = max([1.0, abs(p.used), abs(p.cached), abs(p.reserved), abs(entries),
                         abs(held.get(p.index, 0.0))] + ([abs(p.cap)] if p.cap != float("inf")
                                                         else []))
            tol = max(1e-6, 1e-12 * scale)
            if p.used + p.cached > p.cap + tol:
                problems.append("used %s + cached %s > cap %s" % (fmt(p.used), fmt(p.cached),
                                                                   fmt(p.cap)))
            reserved = 0.0
            for s in live:
                for run in s.holds:
                    for i, q in enumerate(run.pools):
                        if q is p and not run.done[i]:
                            reserved += run.reserve[i]
            if abs(reserved - p.reserved) > max(tol, 1e-12 * abs(reserved)):
                problems.append("reserved %s but live holds reserve %s" % (fmt(p.reserved),
                                                                           fmt(reserved)))
            if p.used < -tol or p.cached < -tol or p.reserved < -tol:
                problems.append("a negative amount (used %s, cached %s, reserved %s)"
                                % (fmt(p.used), fmt(p.cached), fmt(p.reserved)))
            if abs(entries - p.cached) > tol:
                problems.append("cached %s but the entries hold %s" % (fmt(p.cached),
                                                                        fmt(entries)))
            if abs(held.get(p.index, 0.0) - p.used) > tol:
                problems.append("used %s but holds and leases have %s"
                                % (fmt(p.used), fmt(held.get(p.index, 0.0))))
            if problems:
                raise RunError("pool `%s` at t = %s: %s" % (label, fmt(self.now),
                                                            "; ".join(problems)),
                               help="this is a bug in serq: please report it with the program")

    # --------------------------------------------------------------- queries

    def pool_query(self, fun):
        """The pool queries; they look the pools up when read, since pools'
        own keys are compiled while the pools are being made."""
        sim = self
        if fun == "Used":
            return lambda m, x: sim.pools[m].used
        if fun == "Free":
            return lambda m, x: sim.pools[m].cap - sim.pools[m].used
        if fun == "Holders":
            return lambda m, x: float(len(sim.pools[m].holders))
        if fun == "Queued":
            return lambda m, x: float(len(sim.pools[m].queue))
        if fun == "CachedIn":
            def cachedin(m, x):
                root = getattr(x, "root", None)
                return sim.pools[m].own(root().serial) if root is not None else 0.0
            return cachedin
        return None

    def over_cap(self, p, waiting=None):
        """At the end: a queue's head asks ``p`` for more than its cap (a
        state-dependent demand that can never be admitted).  The row is the
        pool that cannot give; the label names the queue it waits in.
        ``waiting``: the pools whose queue is not empty, when the caller asks
        for every pool (found once, not once a pool: 20,000 pools)."""
        for q in (self.pools if waiting is None else waiting):
            if not q.queue:
                continue
            run = self.select(q).run
            if p not in run.pools:
                continue
            units, needs = self.header(run)
            need = needs[run.pools.index(p)]
            if round_up(need, p.block) + p.watermark > p.cap:  # exact, as in 0.1.3
                return (self.pool_label(q), need)  # the demand as the header reads it
        return None

    def asking(self, waiting):
        """For ``over_cap`` of every pool: each pool's queues of ``waiting``
        (in their order) whose head may ask it, as a dict by pool.  A
        queue's head is found without reading anything (``select``) unless
        the queue orders by keys: such a queue is every pool's, as it was
        read for each.  None where there is no such dict to make (a queue
        ordered by keys: ``over_cap`` then reads them all)."""
        out = {}
        for q in waiting:
            if q.queue_keys is not None and not q.queue[0].resumed:
                return None
            for p in q.queue[0].run.pools:
                mine = out.setdefault(p, [])
                if not mine or mine[-1] is not q:
                    mine.append(q)
        return out
