"""The settle (a base of ``Simulator``): after every event the simulator
*settles* (feature map §7.5).  It runs every ready session, in the order
they became ready, until each blocks, with a pool pass (poolsim.py) after
each round; then lets each stage whose job set changed reschedule; then
records the time-average signals (timeavg.py).

Also here: the ready queue, ``run_lean`` (the event loop and the settle in
one, for the programs that need neither pools nor step stages), and the
checks of a settled run: the hold-and-wait cycles at its end, and (tests)
the stages and pools that changed without saying so.
"""
import heapq
from typing import Any, Final, List, Set, cast

from ..errors import RunError
from ..floatvec import append
from . import fold as folding
from .events import OBJECTS, Event, pop_event
from .exprs import fmt
from .holds import Rejected
from .poolsim import PoolSim, walk_in_order
from .fifoq import new_fifo
from .recorded import TOUCHED_LIST, Recorded, record_set
from .session import AGAIN, EndSession, Session
from .step import Step

READY_LIMIT: Final = 1000


def _plan(st: Step) -> bool:
    """``plan_steps`` for one stage: it plans if it has work and no
    iteration; whether it still has work and no iteration."""
    if st.running is None and st.pending():
        st.attempt()
    return st.running is None and st.pending()


class Settle(PoolSim):
    # Set by the simulator (engine.py), declared here so that the compiled
    # settle reads them as fields
    may_plan: Set[Step]
    steps_and_ps: bool
    check_invariants: Any
    flows: Any
    flows_dirty: bool

    def finish(self, s: Session) -> None:
        """A session's end (engine.py; declared here for direct calls)."""
        raise NotImplementedError

    def force_end(self, s: Session) -> None:
        raise NotImplementedError  # (engine.py's)

    def init_settle(self) -> None:
        self.live: int = 0  # sessions and legs alive (the engine counts them)
        self.ready = new_fifo()  # (declared on PoolSim)
        self.changed: List[Any] = []  # the stages whose job set changed (reschedule_changed)

    # ---------------------------------------------------------- ready queue

    def mark_changed(self, stage):
        self.changed.append(stage)
        self.touched.add(stage)

    def resume(self, s):
        if s is not None:
            self.make_ready(s)

    def make_ready(self, s: Session) -> None:
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

    def step(self, s: Session) -> None:
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

    # ---------------------------------------------------------------- settle

    def fold(self, st, horizon, max_events, checks):
        folding.fold(self, st, horizon, max_events, checks)

    def sync_fold(self, st: Recorded) -> None:
        folding.sync(cast(Any, self), st)  # (self is the Simulator)

    def sync_fold_pool(self, p):
        folding.sync_pool(self, p)

    def sync_fold_top(self):
        folding.sync_top(self)

    def stop_folds(self):
        folding.stop_all(self)

    def settle(self) -> None:
        ready = self.ready
        pools = self.pools
        s: Session
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
        if self.changed or (self.steps_and_ps and self.nothing_due()):
            self.reschedule_changed()
        elif self.may_plan and self.nothing_due():
            # The same with no ps stage to reschedule: the step stages only.
            self.plan_steps()
        if self.flows_dirty:
            self.flows_dirty = False
            self.flows.recompute()
        # the live average, the event's tick and the records (fold.py: a
        # folded event ends with the same tail)
        folding.settle_tail(cast(Any, self), self.now)  # (self is the Simulator)
        if self.check_invariants:
            self.check_pools()
        if self.check_touched:
            self.check_untouched()

    def plan_steps(self):
        """Every step stage with no running iteration and work plans one,
        in declaration order, as a walk of every step stage would: those in
        ``may_plan`` (the others have nothing to plan), including any that
        joins during the walk after the stage planning (its admissions run
        sessions).  A stage stays in the set while it has work and no
        iteration (a plan that started none is tried again)."""
        walk_in_order(self.may_plan, _plan)

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
        for root in self.live_roots():
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
            if sig != p.recorded():
                raise AssertionError("pool %s changed untouched at %r: %r, recorded %r"
                                     % (self.pool_label(p), self.now, sig, p.recorded()))
            if (p.growers or (p.queue and p.pass_admits)
                    or (p.blocked and not p.queue)) and p not in self.pool_watch:
                raise AssertionError("pool %s has work and is not watched at %r"
                                     % (self.pool_label(p), self.now))
        for st in self.steps:
            if st.running is None and st.pending() and st not in self.may_plan:
                raise AssertionError("step stage %s has work and no iteration and is not in "
                                     "may_plan at %r" % (st.name, self.now))
        for st in self.stages:
            if st.present() != st.last_n:
                raise AssertionError("stage %s changed untouched at %r: %r present, recorded %r"
                                     % (st.name, self.now, st.present(), st.last_n))
            if st.kind == "shared":
                u = st.load()
                if u == u and u != st.last_util:  # (a NaN load is set at every record)
                    raise AssertionError("stage %s changed untouched at %r: utilisation %r, "
                                         "recorded %r" % (st.name, self.now, u, st.last_util))

    def reschedule_changed(self):
        """Stages in declaration order: a step stage with work and no
        running iteration plans one, unless another event is due at this
        instant; a ps stage whose job set changed reschedules."""
        changed = set(self.changed)
        self.changed = []
        quiet = self.nothing_due()
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

    def run_lean(self, horizon: float) -> None:
        """The event loop and ``settle`` in one, for a program that
        ``lean`` accepts and a run without limits or progress: the same
        steps as ``run``'s loop, less what cannot apply."""
        heap = self.heap
        heappop = heapq.heappop
        ready = self.ready
        make_ready = self.make_ready
        finish = self.finish
        live_avg = self.live_avg
        touched = self.touched
        recorders = self.recorders
        events: int = self.events
        t: float
        s: Session
        try:
            while heap:
                if OBJECTS:
                    e: Event = heap[0]
                    t = e.t
                    if t > horizon:
                        break
                    pop_event(heap)
                    fn = e.fn
                    arg = e.arg
                else:
                    t = heap[0][0]
                    if t > horizon:
                        break
                    _, _, fn, arg = heappop(heap)
                self.now = t
                events += 1
                fn(arg)
                if self.stop_requested:  # Ctrl-C (Clock.interrupts): the event is done
                    self.settle()
                    break
                while ready:  # settle (see there)
                    s = ready.popleft()
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
                    ticks = append(ticks, t)
                    self.ticks = ticks
                    if len(ticks) > self.ticks_kept:
                        self.compact_ticks(t)
                if touched:
                    if TOUCHED_LIST:
                        touched.record_all(t)
                    else:
                        record_set(touched, t)
                if recorders:  # (a lean run has no shared stage: only RECORD_ALL)
                    for r in recorders:
                        r.record(t)
        finally:
            self.events = events
