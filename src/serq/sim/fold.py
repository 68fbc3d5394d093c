"""Exact decode folding (issue 15, item 3).

A loaded engine spends most iterations with every resident decoding one
token and nothing else due.  Through the heap and the general settle each
such iteration walks every resident three times (planning, the start, the
end's inter-token bookkeeping).  ``fold`` runs a stretch of them from the
event loop instead: the iteration's end, the settle and the next
iteration's start, doing per iteration only what the report reads, in the
same order and with the same float operations:

* the stage's budget, chunk and cost expressions, evaluated as ``attempt``
  evaluates them (with the same random draws, if they draw);
* the growth of the residents whose next token crosses their allocation
  (``try_grow``, evictions included), in serving order;
* ``launch`` (the cost, the iteration statistics, the end event), the end's
  mix averages (``account``) and one ``add_repeat`` of the inter-token gap,
  which is the same for every resident;
* the settle's tail: the live average, the event times, the records of
  what the event touched, the recorders and the gauges.

What each resident would have changed per iteration (its tokens left, its
position, its last token) is kept as a count of folded iterations and
written back whenever the stretch stops (``Folding.write_back``), before
any other code can read it.  Tokens and positions are then whole numbers
(checked when a stretch starts), so ``r - k`` is what ``k`` subtractions
of 1.0 give.

A stretch starts at the end of an iteration that decoded every resident
(``Step.decode_launch``) and goes on while, at each of its iteration ends:
no other event is due at the same instant, within the horizon and the event
limit; no session is ready, no pool has work for the pass, no other step
stage would plan, no ps stage waits to reschedule and no flow started or
ended (ps stages and shared links then serve on between the folded
iterations, as their own events); no resident decoded its last token in
the iteration ending (that iteration starts folded, and ends in the
general path); the budget covers a token for every resident; no admission
is waiting; every growth fits without preemption.  Where a condition
fails, the general path takes over at that point, and the reports are the
same bytes (tests/test_fold.py, the conformance suite, the iteration
trace, which turns folding off).

Replicas fold side by side: each step stage has a stretch of its own
(``sim.folds``, by stage index; two stretches never share a pool), and a
stretch outlives the events between its iterations (arrivals, another
stage's general iteration).  Its residents' tokens left, positions and last
tokens are then stale, so whatever reads or changes them first writes the
stretch back and ends it (``sync``): a ``work``/``budget_left`` query of the
stage, a resident joining or leaving it (``Step.submit_step``,
``Step.withdraw``), a preemption in its pool (``sync_pool``), the general
loop about to take one of its iteration ends (``sync_top``) and the run's
end (``stop_all``).
"""
from heapq import heappop, heappush  # (module globals: no attribute read per call)
import time
from typing import TYPE_CHECKING, Any, Dict, Final, List, Optional, Tuple

from ..floatvec import COMPILED, append, vec
from ..ir import nodes as ir
from ..report.stats import TimeAverage
from .events import OBJECTS, Event, pop_event
from .holds import HoldRun, try_grow
from .pools import EPS, Pool, round_up
from .recorded import TOUCHED_LIST, Recorded, record_set
from .step import Step
from .step_plan import Assignment, StepJob

if TYPE_CHECKING:
    from .engine import Simulator

#: Stage queries that read residents' tokens left (lazy during a stretch).
LAZY_QUERIES = ("Work", "BudgetLeft")

#: Past this, float positions and token counts are no longer exact integers.
WHOLE_LIMIT: Final = 1125899906842624.0  # 2**50

#: Whether this module runs compiled: its growth heap then uses the typed
#: ``_push_int`` and ``_pop_int`` (interpreted, the C heapq is faster).
NATIVE: Final = COMPILED

#: ``serq run --no-fold`` and tests turn folding off (the general path only).
ENABLED = [True]


def _reads_lazy(exprs: List[Any]) -> bool:
    for x in ir.walk(exprs):
        if type(x) is ir.Call and x.fun in LAZY_QUERIES:
            return True
        if type(x) is ir.Attr:
            return True
    return False


def prepare(sim: "Simulator") -> None:
    """At the start of a run: which step stages may fold (``Step.fold_ok``)."""
    prog = sim.prog
    general = (ENABLED[0] and sim.trace_iterations is None and not sim.claims
               and not sim.check_invariants and not sim.check_touched
               and not _reads_lazy([g.expr for g in prog.gauges]))
    for st in sim.steps:
        spec = prog.stages[st.index].kind
        st.fold_ok = (general and st.fast and not st.budget_totals
                      and not _reads_lazy([spec.budget, spec.chunk, spec.cost]))


def _whole(x: float) -> bool:
    # (``float(int(x)) == x`` rather than ``x.is_integer()`` or ``x % 1.0``:
    # compiled, a conversion each way, not a method call or ``fmod``; exact
    # inside the range, whose test keeps out inf and nan first)
    return -WHOLE_LIMIT < x < WHOLE_LIMIT and float(int(x)) == x


def _push_int(heap: List[int], x: int) -> None:
    """heapq's ``heappush`` on a heap of ints, written out: compiled, the
    comparisons are native (the C heapq, called through the generic call,
    compares boxed ints).  The growths' keys are distinct, so any heap of them pops in the
    same order."""
    heap.append(x)
    pos = len(heap) - 1
    while pos > 0:
        parent = (pos - 1) >> 1
        p = heap[parent]
        if x < p:
            heap[pos] = p
            pos = parent
        else:
            break
    heap[pos] = x


def _pop_int(heap: List[int]) -> int:
    """heapq's ``heappop`` on a heap of ints (see ``_push_int``)."""
    last = heap.pop()
    n = len(heap)
    if n == 0:
        return last
    first = heap[0]
    pos = 0
    child = 1
    while child < n:
        c = heap[child]
        right = child + 1
        if right < n:
            r = heap[right]
            if r < c:
                child = right
                c = r
        if c < last:
            heap[pos] = c
            pos = child
            child = 2 * pos + 1
        else:
            break
    heap[pos] = last
    return first


def _second_time(heap: List[Any]) -> float:
    """The time of the event after the heap's first (inf if none)."""
    n = len(heap)
    if n < 2:
        return float("inf")
    a: float
    b: float  # (typed: the comparison is native)
    if OBJECTS:
        e: Event = heap[1]
        a = e.t
        if n == 2:
            return a
        e = heap[2]
        b = e.t
    else:
        a = heap[1][0]
        if n == 2:
            return a
        b = heap[2][0]
    return a if a < b else b


class Folding(object):
    """A stretch in progress: the residents as the stretch found them and
    the number of folded iteration starts and ends since."""

    def __init__(self, st: Step, sim: "Simulator") -> None:
        # (empty until ``setup`` accepts the stage's residents: a stretch
        # that cannot start costs its checks only, not its lists)
        self.st = st
        self.sim = sim
        self.jobs: List[StepJob] = []
        self.assigned: Assignment = []
        self.n: int = 0
        self.rem0: List[float] = []
        self.rmin: float = 0.0
        self.pos0: List[float] = []
        # each resident's memory read (``memory_of``): unboxed, compiled
        self.mem: vec[float] = vec[float]()
        # (launch index of the next growth, resident index), as one int:
        # ``launch * n + resident`` orders as the pair does (0 <= resident
        # < n), and an int compares and sifts cheaper than a tuple
        self.grows: List[int] = []
        self.starts: int = 0  # folded iteration starts (positions moved on)
        self.ends: int = 0  # folded iteration ends (tokens left counted down)
        self.last_end: float = sim.now
        self.pool: Optional[Pool] = None
        # the indices of the pools the stretch's growths and memory are
        # (``_apart``, ``sync_pool``), set once ``setup`` accepts it
        self.uses: List[int] = []

    def setup(self) -> bool:
        """Whether the stretch can start now (the residents' state); if so,
        the residents as it found them."""
        st = self.st
        now = self.sim.now
        slot = self.sim.turn_slot
        residents = st.residents
        if not residents:
            return False
        pool: Optional[Pool] = None
        for j in residents:
            if not j.decode or j.stalled or j.gone or not _whole(j.remaining):
                return False
            s = j.session
            # every resident's last token ended with the iteration just ended
            # (a session with none has the turn nan: unequal to any)
            if s.itl_at != now or s.itl_turn != s.a[slot] or s.itl_preempted:
                return False
            g = j.grow
            if g is None:
                continue
            run, i = g
            p = run.pools[i]
            if pool is None:
                pool = p
            elif p is not pool:
                return False
            if not (_whole(run.pos[i]) and _whole(run.alloc[i])):
                return False
        if pool is not None and (pool.spill is not None or pool.trace_evict is not None
                                 or not _whole(pool.block)):
            return False
        # accepted: the residents, their tokens left and positions
        jobs = self.jobs
        assigned = self.assigned
        rem0 = self.rem0
        pos0 = self.pos0
        rmin = residents[0].remaining
        for j in residents:
            jobs.append(j)
            assigned.append((j, 1.0))
            r = j.remaining
            rem0.append(r)
            if r < rmin:  # (min's own comparison: compiled, the builtin is a call)
                rmin = r
            g = j.grow
            if g is None:
                pos0.append(0.0)
            else:
                run, i = g
                pos0.append(run.pos[i])
        self.rmin = rmin
        n = len(jobs)
        self.n = n
        if pool is not None:
            self.pool = pool
            grows = self.grows
            for k in range(n):
                g = jobs[k].grow
                if g is not None:
                    run, i = g
                    grows.append(int(run.alloc[i] - pos0[k]) * n + k)
            # (sorted, which is a heap, not a push each: the items are
            # distinct, so the heap pops them in the same order whatever its
            # layout; compiled, the sort is native where heapify is a call)
            grows.sort()
        if st.cost_totals:
            mem = self.mem
            for j in jobs:
                mem = append(mem, st.memory_of(j.session))
            self.mem = mem
        if pool is not None:
            self.uses.append(pool.index)
        memory = st.memory
        if memory is not None and (pool is None or pool.index != memory):
            self.uses.append(memory)
        return True

    def finishing(self) -> bool:
        """Whether a resident decodes its last token in the iteration in
        progress (then its end is the general one: the resident leaves, its
        session goes on).  Tokens are whole: the fewest left is 1."""
        return self.rmin - float(self.ends) - 1.0 <= 1e-9

    def can_start(self) -> bool:
        """Whether the next iteration can be a folded one: no admission is
        waiting (the budget is checked once read).  An iteration in which a
        resident decodes its last token is one too: it gives every resident
        its token as the general plan would; its end is not folded."""
        for p in self.st.admits:
            if p.queue:
                return False
        return True

    def grow_now(self) -> Optional[List[Tuple[int, HoldRun, int, float]]]:
        """The growths of the iteration starting now, in serving order, or
        None if one of them would not fit (the general path decides).  The
        entries due are taken off ``grows`` as they are read: a heap of
        ``launch * n + resident`` pops the ones of launch ``k`` in resident
        order, so no sort is needed; on None the stretch ends (``start``
        fails, ``_end``) and its heap is dropped with it."""
        grows = self.grows
        k = self.starts
        n = self.n
        lo = k * n  # (the entries due now: launch k, any resident)
        hi = lo + n
        if not grows or grows[0] >= hi:
            return []
        pool = self.pool
        assert pool is not None  # (a growing resident set the stretch's pool)
        due: List[Tuple[int, HoldRun, int, float]] = []
        used = pool.used
        reserved = pool.reserved
        while grows and grows[0] < hi:
            x: int
            if NATIVE:
                x = _pop_int(grows)
            else:
                x = heappop(grows)
            if x < lo:
                continue  # (none: start took every earlier launch's entries)
            idx = x - lo
            g = self.jobs[idx].grow
            assert g is not None  # (only growing residents are in grows)
            run, i = g
            alloc = run.alloc[i]
            extra = (self.pos0[idx] + float(k)) + 1.0 - alloc
            need = round_up(alloc + extra, pool.block) - alloc
            if not (extra > EPS and need > EPS):
                return None  # (whole numbers: a due growth always needs units)
            reserve = run.reserve[i]
            if used + (reserved - reserve) + need > pool.cap + EPS:
                return None
            used += need
            if reserve > 0.0:
                reserved -= min(reserve, need)
            due.append((idx, run, i, need))
        return due

    def start(self, B: float, C: float) -> bool:
        """A folded iteration start (``plan_decodes`` and ``start_decodes``
        of every resident's token), if the budget ``B`` covers it."""
        # (a token each: the general plan takes 1 from the budget per
        # resident while 1 is left, and B - k is exact for B >= 1, so all n
        # fit exactly where B >= n; a NaN budget fits none)
        if self.n > 0 and not B >= float(self.n):
            return False
        due = self.grow_now()
        if due is None:
            return False
        st = self.st
        grows = self.grows  # (grow_now took the entries due off it)
        nj = self.n
        for idx, run, i, need in due:
            try_grow(run, i, need)
            if NATIVE:
                _push_int(grows, int(run.alloc[i] - self.pos0[idx]) * nj + idx)
            else:
                heappush(grows, int(run.alloc[i] - self.pos0[idx]) * nj + idx)
            if st.cost_totals:
                self.mem[idx] = st.memory_of(self.jobs[idx].session)
        self.starts += 1
        st.folded += 1
        ctx = st.ctx
        n = float(self.n)
        ctx.ntok = n
        ctx.npre = 0.0
        ctx.attn = 0.0
        ctx.nres = float(len(st.residents))
        ctx.ndec = n
        if st.cost_totals:
            kvb = 0.0
            if st.memory is not None:
                for m in self.mem:
                    kvb += m
            ctx.kvb = kvb
            ctx.kvp = 0.0
        st.idle_with_work = False
        st.launch(C, self.assigned, None, n, n, 0.0)
        return True

    def end(self, now: float) -> None:
        """A folded iteration end (``iteration_end`` with no one done)."""
        st = self.st
        st.account(now)
        st.running = None  # (not yet in ``may_plan``: fold adds it where the general plan follows)
        if self.sim.warm:  # (read now: the warm-up may end between a stretch's iterations)
            st.itl.add_repeat(now - self.last_end, self.n)
        self.last_end = now
        self.ends += 1

    def write_back(self) -> None:
        """Each resident's tokens left, position and last token, as the
        folded iterations would have left them."""
        sim = self.sim
        slot = sim.turn_slot
        ends = float(self.ends)
        starts = float(self.starts)
        for k in range(self.n):
            j = self.jobs[k]
            if self.ends:
                j.remaining = self.rem0[k] - ends
                s = j.session
                s.itl_turn = s.a[slot]
                s.itl_at = self.last_end
                s.itl_dec = True
                s.itl_preempted = False
            g = j.grow
            if g is not None and self.starts:
                run, i = g
                run.pos[i] = self.pos0[k] + starts
        self.starts = 0  # (written back: the counts start again)
        self.ends = 0


def settle_tail(sim: "Simulator", now: float) -> None:
    """The end of every settle (``Settle.settle``, and a folded event's):
    the live average's piece, the event's time in ``ticks``, and the records
    of what the event touched.  Every stage's and pool's time averages need
    a piece at every event, as the reference's float bits do; a stage or pool
    whose values did not change adds its pieces later from ``ticks``
    (``catch_up``)."""
    a: TimeAverage = sim.live_avg
    a.area += a.value * (now - a.last)
    a.last = now
    a.value = float(sim.live)
    ticks: vec[float] = sim.ticks
    if ticks[-1] != now:
        ticks = append(ticks, now)
        sim.ticks = ticks
        if len(ticks) > sim.ticks_kept:
            sim.compact_ticks(now)
    touched = sim.touched
    if touched:
        if TOUCHED_LIST:
            touched.record_all(now)
        else:
            record_set(touched, now)
    r: Recorded
    for r in sim.recorders:
        r.record(now)


def _general_due(sim: "Simulator", st: Step) -> bool:
    """Whether this settle has more to do than stage ``st``'s plan: a
    session ready, a pool with work for the pass, a ps stage to reschedule,
    a flow started or ended, or another step stage that would plan."""
    return bool(sim.ready or sim.changed or sim.pool_watch or sim.flows_dirty
                or not _quiet_others(sim, st))


def _quiet_others(sim: "Simulator", st: Step) -> bool:
    """No other step stage would plan at this settle (each that would is in
    ``may_plan``)."""
    may_plan = sim.may_plan
    if not may_plan:
        return True  # (a set's table does not shrink: iterating an empty one walks it)
    for other in may_plan:
        if other is not st and other.running is None and other.pending():
            return False
    return True


def _stage_of(entry: Any) -> Optional[Step]:
    """The step stage whose iteration end the heap entry is, or None."""
    st: Any  # (an iteration end's argument is its stage: Step.launch)
    if OBJECTS:
        e: Event = entry
        st = e.arg
    else:
        st = entry[3]
    if isinstance(st, Step) and st.end_entry is entry:
        return st
    return None


def _apart(g: Folding, uses: Dict[int, int]) -> bool:
    """Whether stretch ``g`` shares no pool with the stretches in progress
    (each stretch's growths, evictions and memory reads are then its own):
    ``uses`` counts, by pool index, the stretches whose growths or memory
    are that pool (``_begin``, ``_end``), so this reads two entries, not
    every stretch."""
    for i in g.uses:
        if i in uses:
            return False
    return True


def _begin(sim: "Simulator", st: Any, g: Folding) -> None:
    """Stretch ``g`` of stage ``st`` in progress."""
    sim.folds[st.index] = g
    uses: Dict[int, int] = sim.fold_uses
    for i in g.uses:
        uses[i] = uses.get(i, 0) + 1


def _end(sim: "Simulator", k: int) -> None:
    """The stretch of stage ``k``, if one is in progress, written back and
    no longer in progress."""
    folds: Dict[int, Folding] = sim.folds
    f = folds.get(k)  # (get and del: compiled, a dict's pop with a default is a call by name)
    if f is not None:
        del folds[k]
        uses: Dict[int, int] = sim.fold_uses
        for i in f.uses:
            c = uses[i] - 1
            if c:
                uses[i] = c
            else:
                del uses[i]
        f.write_back()


def sync(sim: "Simulator", st: Recorded) -> None:
    """Stage ``st``'s stretch, if one is in progress, written back and
    ended: before code outside the stretch reads or changes its residents
    (a query of its work or budget, a resident joining or leaving it)."""
    _end(sim, st.index)


def sync_pool(sim: "Simulator", p: Any) -> None:
    """The stretches whose growths or memory are pool ``p``, written back
    and ended (before a preemption there reads its candidates)."""
    folds: Dict[int, Folding] = sim.folds
    i = p.index
    for k in [k for k, f in folds.items() if i in f.uses]:
        _end(sim, k)


def sync_top(sim: "Simulator") -> None:
    """Before the general loop takes the heap's first event: if it ends an
    iteration of a stage in a stretch, that stretch is written back."""
    heap: List[Any] = sim.heap
    if heap:
        st = _stage_of(heap[0])
        if st is not None:
            sync(sim, st)


def stop_all(sim: "Simulator") -> None:
    """Every stretch in progress written back and ended (the run's end)."""
    folds: Dict[int, Folding] = sim.folds
    for f in folds.values():
        f.write_back()
    folds.clear()
    sim.fold_uses.clear()


def fold(sim: "Simulator", st0: Any, horizon: float, max_events: Optional[int], checks: bool) -> None:
    """Run step stages' iterations from the event loop while they fold (see
    the module's text), side by side: while the heap's first event ends an
    iteration that decodes every resident of its stage, that end and the
    next start are folded, in a stretch of the stage's own (``sim.folds``:
    stretches share no pool).  A stretch outlives the events between its
    iterations (arrivals, other stages' general iterations): what reads or
    changes its residents ends it first (``sync``, ``sync_pool``), and so
    does the general loop before it takes one of its iteration ends
    (``sync_top``).  Leaves the simulator as the general loop would have
    after the same events, with the next one not yet run."""
    heap: List[Any] = sim.heap
    gauges: List[Any] = sim.gauges
    deadline: Optional[float] = sim.deadline  # (--max-wall: checked at every event)
    folds: Dict[int, Folding] = sim.folds
    while True:
        if not heap:
            break
        entry = heap[0]
        st = _stage_of(entry)
        if st is None:
            break
        f = folds.get(st.index)
        if f is None and not (st.fold_ok and st.decode_launch and st.residents):
            break
        t: float
        if OBJECTS:
            e: Event = entry
            t = e.t
        else:
            t = entry[0]
        if t > horizon or not _second_time(heap) > t or sim.stop_requested or (
                max_events is not None and sim.events >= max_events):
            break
        if gauges and t > sim.now:
            sim.read_gauges()
        if OBJECTS:
            pop_event(heap)
            st.entry_free = True  # (off the heap: launch may push it again)
        else:
            heappop(heap)
        sim.now = t
        sim.events += 1
        if f is not None and (f.finishing() or _general_due(sim, st)):
            # A resident ends here, or something else is to run at this
            # settle: the general end and settle.
            _end(sim, st.index)
            f = None
            st.iteration_end(None)
            sim.settle()
            return
        fresh = f is None  # (a first end: iteration_end puts st in ``may_plan``)
        if f is None:
            st.iteration_end(None)
            if _general_due(sim, st):
                sim.settle()
                return
            g = Folding(st, sim)
            if g.setup() and _apart(g, sim.fold_uses):
                f = g
                _begin(sim, st, g)
        else:
            f.end(t)
        # the settle: only this stage plans (see _quiet_others)
        folded = False
        if f is not None and f.can_start():
            ctx = st.ctx
            ctx.a = None
            ctx.rng = sim.machine_rng
            B = st.read_budget(ctx)
            C = st.read_chunk(ctx)
            if C != C:  # (as attempt reads it)
                C = 0.0
            st.preempted_now = False
            st.preempt_count = 0
            folded = f.start(B, C)
            if folded:
                # running again, and not in ``may_plan``, as the general
                # plan's walk would leave it (``_quiet_others`` then walks
                # only the stages that may plan, not every folding one)
                if fresh:
                    sim.may_plan.discard(st)
                sim.fold_stage = None  # (this loop goes on with it)
            else:
                # the budget or a growth: the general plan, from the budget
                # and chunk already read
                sim.may_plan.add(st)  # (as iteration_end)
                _end(sim, st.index)
                st.attempt_read(B, C)
        else:
            if f is not None:
                sim.may_plan.add(st)  # (as iteration_end)
                _end(sim, st.index)
            if st.running is None and st.pending():
                st.attempt()
        settle_tail(sim, t)
        if not folded or (checks and not sim.events & 4095):
            break
        if deadline is not None and time.monotonic() > deadline:
            break
