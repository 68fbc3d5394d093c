"""The stages a session runs work on: ``fifo(c)``, ``ps(φ)``, ``delay``.

Each stage keeps its jobs and its statistics (time-average number present
and utilization, completions, waits and service times after warm-up).  A
job is a ``Job`` (session, work, arrived, started); when it finishes the stage
hands the session back to the simulator (``sim.resume``).

Policies follow the feature map §5.1–5.3: ``fifo`` serves in arrival order
on ``c`` servers; ``ps`` shares a capacity φ(n), re-read only when the job
set changes, through a virtual time and finish tags (equal tags finish in
start order, one per event); ``delay`` finishes every job ``work`` after it
starts.
"""
from heapq import heapify, heappop, heappush  # (module globals: no attribute read per call)
from typing import TYPE_CHECKING, Any, Callable, Dict, Final, List, Optional, Set, Tuple

from ..floatvec import vec
from ..report.replay import replay_pair
from ..report.stats import TimeAverage, Welford
from .events import OBJECTS, Event, push_event
from .fifoq import FifoQueue, new_fifo
from .recorded import Recorded, catch_up_together

if TYPE_CHECKING:
    from .engine import Simulator
    from .session import Session  # (session -> codegen -> this module)

EPS: Final = 1e-9


class Job(object):
    """A job on a stage: its session (None for a spilled prefix's write),
    its work, and when it arrived and started service."""

    __slots__ = ("session", "work", "arrived", "started", "live")

    def __init__(self, session: "Optional[Session]", work: float, now: float) -> None:
        self.session = session
        self.work: float = work
        self.arrived: float = now
        self.started: float = now
        self.live: bool = False  # in service at a fifo stage (Fifo.in_service)


#: A ``ps`` job's entry: (finish tag, start sequence, job).
PsEntry = Tuple[float, int, Job]


class StageStats(object):
    __slots__ = ("number", "util", "completed", "wait", "service", "prefill_only",
                 "decode_only", "mixed", "decodes", "decode_batch", "decode_step", "itl")

    def __init__(self, now: float) -> None:
        self.number = TimeAverage(now)
        self.util = TimeAverage(now)
        self.completed = 0
        self.wait = Welford()
        self.service = Welford()
        # step stages only (sim/step.py): IntervalAverage, Welford and
        # ItlHistogram there, None elsewhere
        self.prefill_only: Any = None
        self.decode_only: Any = None
        self.mixed: Any = None
        self.decodes: Any = None
        self.decode_batch: Any = None
        self.decode_step: Any = None
        self.itl: Any = None


class Stage(Recorded):
    """What every stage has: a name, its statistics and the simulator."""

    kind = ""

    def __init__(self, sim: "Simulator", index: int, name: str, member: Optional[int]) -> None:
        self.sim = sim
        self.index = index
        self.name = name
        self.member = member
        self.stats = StageStats(0.0)
        self.averages = [self.stats.number, self.stats.util]
        self.mates = []
        self.est = Estimator()

    def present(self) -> int:
        raise NotImplementedError

    #: What the stage's time averages were last set from (``present()``);
    #: ``Recorded.synced`` says up to which tick their pieces are added.
    last_n = 0

    def record(self, now: float) -> None:
        # The time averages take a piece at every event (see TimeAverage);
        # while the number present stays the same the pieces wait in
        # ``sim.ticks`` and are added, in order, by ``catch_up``.
        n = self.present()
        if n != self.last_n:
            self.set_values(n, 1.0 if n > 0 else 0.0, now)  # (busy while any is)

    def set_values(self, n: int, util: float, now: float) -> None:
        """The number present and the utilisation changed: the pieces left
        for later, then ``TimeAverage.set`` of both averages, inlined (the
        same float operations)."""
        self.last_n = n
        # the pieces left for later, up to the current event (the last
        # tick, whose piece is added below as the new values are set)
        ticks = self.clock.ticks
        k = len(ticks) - 1
        if self.synced < k - 1:
            # (catch_up_to, written out: a call less per catch-up interpreted)
            if self.mates and k - self.synced > self.clock.shared_min:
                catch_up_together(self, ticks, k)
            else:
                self.catch_up(ticks, k)
        self.synced = k
        st = self.stats
        a = st.number
        a.area += a.value * (now - a.last)
        a.last = now
        a.value = float(n)
        a = st.util
        a.area += a.value * (now - a.last)
        a.last = now
        a.value = util

    def catch_up(self, ticks: vec[float], end: int) -> None:
        """Add the pieces of the events ``ticks[synced + 1:end]``, where the
        values did not change (the same operations as a ``set`` at each)."""
        lo = self.synced + 1
        if lo < end:
            st = self.stats
            gaps = self.clock.gaps_to(end)
            replay_pair(st.number, st.util, ticks, gaps, lo, end)
        self.synced = end - 1

    def restart(self, now: float) -> None:
        st = self.stats
        st.number.restart(now)
        st.util.restart(now)
        self.synced = len(self.clock.ticks) - 1  # (pieces before now are dropped)

    def done(self, job: Job, now: float) -> None:
        """Book-keeping of a finished job, then the session goes on."""
        self.done_flow(job, now)
        if job.session is not None:
            job.session.cancel = None
            self.sim.resume(job.session)

    def done_flow(self, job: Job, now: float) -> None:
        """Book-keeping of a finished job (for a flow: on each of its stages)."""
        if self.sim.estimates:
            self.est.observe(job.started, job.started - job.arrived, now - job.started)
        if self.sim.warm:
            st = self.stats
            st.completed += 1
            # Welford.add twice, inlined (the same float operations)
            w = st.wait
            x = job.started - job.arrived
            w.n += 1
            d = x - w.mean
            w.mean += d / w.n
            w.m2 += d * (x - w.mean)
            w = st.service
            x = now - job.started
            w.n += 1
            d = x - w.mean
            w.mean += d / w.n
            w.m2 += d * (x - w.mean)

    def busy(self) -> float:
        return float(self.present())

    def work_left(self, now: float) -> float:
        raise NotImplementedError

    def budget_left(self) -> float:
        """``budget_left(S)``: a step stage's (the link refuses it of any other)."""
        raise NotImplementedError


class Fifo(Stage):
    kind = "fifo"

    def __init__(self, sim: Any, index: int, name: str, member: Optional[int],
                 servers: Any) -> None:
        Stage.__init__(self, sim, index, name, member)
        self.servers: float = float(servers)  # (typed: compared at every submit)
        self.serving = 0
        self.waiting: FifoQueue = new_fifo()
        # the jobs that started service, in that order: those still in
        # service have ``live`` set, the others are dropped now and then
        # (``_prune``), so a finish is a flag, not a lookup
        self.in_service: List[Job] = []
        # ``self.finish`` made once (not a bound method per job)
        self.on_finish: Callable[[Job], None] = self.finish

    def present(self) -> int:
        return self.serving + len(self.waiting)

    def busy(self) -> float:
        return float(self.serving)

    def submit(self, session: "Optional[Session]", work: float) -> None:
        sim = self.sim
        now = sim.now
        job = Job(session, work, now)
        sim.touched.add(self)
        if self.serving < self.servers:
            self._start(job, now)
        else:
            self.waiting.append(job)
        if session is not None and sim.pools:  # (only a pool preempts or refuses)
            self._cancel_by(session, job)

    def _cancel_by(self, session: "Session", job: Job) -> None:
        """``session.cancel`` withdraws ``job`` (its own method: a closure
        in ``submit`` would cost every submit its environment)."""
        session.cancel = lambda: self.withdraw(job)

    def withdraw(self, job: Job) -> None:
        """A preempted session's job leaves the stage."""
        self.sim.touched.add(self)
        if job in self.waiting:
            self.waiting.remove(job)
        elif job.live:
            job.live = False
            self.serving -= 1
            if len(self.in_service) > 2 * self.serving + 16:
                self._prune()
            if self.waiting:
                self._start(self.waiting.popleft(), self.sim.now)

    def _start(self, job: Job, now: float) -> None:
        self.serving += 1
        job.started = now
        t = now + job.work
        job.live = True
        self.in_service.append(job)
        sim = self.sim
        sim.seq += 1  # sim.schedule(t, self.finish, job), inlined
        if OBJECTS:
            push_event(sim.heap, Event(t, sim.seq, self.on_finish, job))
        else:
            heappush(sim.heap, (t, sim.seq, self.on_finish, job))

    def finish(self, job: Job) -> None:
        sim = self.sim
        now = sim.now
        if not job.live:
            return  # withdrawn
        job.live = False
        self.serving -= 1
        if len(self.in_service) > 2 * self.serving + 16:
            self._prune()
        sim.touched.add(self)
        if self.waiting:
            self._start(self.waiting.popleft(), now)
        # self.done(job, now), inlined
        self.done_flow(job, now)
        s = job.session
        if s is not None:
            s.cancel = None
            sim.make_ready(s)

    def _prune(self) -> None:
        """``in_service`` without the jobs that left it (in order)."""
        self.in_service = [j for j in self.in_service if j.live]

    def record(self, now: float) -> None:
        # Stage.record with present() inlined
        n = self.serving + len(self.waiting)
        if n != self.last_n:
            self.set_values(n, 1.0 if n > 0 else 0.0, now)  # (busy while any is)

    def work_left(self, now: float) -> float:
        # What is left of a job in service is its work less the time served
        # (not its finish time less now: the two differ in the last bits).
        total = -0.0  # 0.1.3's sums start at -0: an idle stage reads -0
        for job in self.in_service:
            if job.live:
                total += job.work - (now - job.started)
        for job in self.waiting:
            total += job.work
        return total


class Delay(Stage):
    kind = "delay"

    def __init__(self, sim: Any, index: int, name: str, member: Optional[int]) -> None:
        Stage.__init__(self, sim, index, name, member)
        self.jobs: Dict[Job, Tuple[Job, float]] = {}  # (by identity, as Fifo's)

    def present(self) -> int:
        return len(self.jobs)

    def submit(self, session: Any, work: float) -> None:
        now = self.sim.now
        job = Job(session, work, now)
        self.jobs[job] = (job, now + work)
        sim = self.sim
        sim.touched.add(self)
        sim.schedule(now + work, self.finish, job)
        if session is not None:
            session.cancel = lambda: self.withdraw(job)

    def withdraw(self, job: Job) -> None:
        self.sim.touched.add(self)
        jobs = self.jobs
        if job in jobs:
            del jobs[job]

    def finish(self, job: Job) -> None:
        jobs = self.jobs
        if job not in jobs:
            return  # withdrawn
        del jobs[job]
        self.sim.touched.add(self)
        self.done(job, self.sim.now)

    def work_left(self, now: float) -> float:
        total = -0.0  # 0.1.3's sums start at -0: an idle stage reads -0
        for job, end in self.jobs.values():
            total += job.work - (now - job.started)
        return total


class Ps(Stage):
    """Egalitarian processor sharing with a virtual time ``v``: every job
    present advances by ``φ(n) / n`` per unit of time, so a job that arrives
    at virtual time ``v`` with work ``w`` finishes when ``v`` reaches its tag
    ``v + w``."""
    kind = "ps"

    def __init__(self, sim: Any, index: int, name: str, member: Optional[int],
                 capacity: Callable[[Any], Any]) -> None:
        Stage.__init__(self, sim, index, name, member)
        self.capacity = capacity  # compiled φ, read at the Ps moment
        self.tags: List[PsEntry] = []  # heap of (tag, start sequence, job)
        self.seq = 0
        self.v = 0.0
        self.v_time = 0.0
        self.rate = 0.0  # virtual-time speed φ(n)/n
        self.epoch = 0
        self.next: Optional[PsEntry] = None  # the entry whose finish is scheduled
        self.changed = False
        self.ctx = PsContext(sim)

    def present(self) -> int:
        return len(self.tags)

    def _advance(self, now: float) -> None:
        if self.rate > 0.0 and now > self.v_time:
            self.v += (now - self.v_time) * self.rate
        self.v_time = now

    def submit(self, session: Any, work: float) -> None:
        now = self.sim.now
        self._advance(now)
        job = Job(session, work, now)
        self.seq += 1
        entry = (self.v + work, self.seq, job)
        heappush(self.tags, entry)
        self.changed = True
        self.sim.mark_changed(self)
        if session is not None:
            session.cancel = lambda: self.withdraw(entry)

    def withdraw(self, entry: PsEntry) -> None:
        if entry in self.tags:
            self._advance(self.sim.now)
            self.tags.remove(entry)
            heapify(self.tags)
            self.changed = True
            self.sim.mark_changed(self)

    def reschedule(self) -> None:
        """After a settle in which the job set changed: re-read φ and
        schedule the next finish (older finish events become stale)."""
        now = self.sim.now
        self._advance(now)
        self.changed = False
        self.epoch += 1
        n = len(self.tags)
        if n == 0:
            self.rate = 0.0
            return
        self.ctx.present = float(n)
        phi = self.capacity(self.ctx)
        self.rate = phi / n if phi == phi and phi > 0.0 else 0.0
        if self.rate <= 0.0:
            return
        nxt = self.next = self.tags[0]
        tag = nxt[0]
        self.sim.schedule(now + max(0.0, tag - self.v) / self.rate, self.finish, self.epoch)

    def finish(self, epoch: int) -> None:
        if epoch != self.epoch:
            return  # stale: the job set changed since this was scheduled
        now = self.sim.now
        self._advance(now)
        # The job this finish was scheduled for, as 0.1.3 does: a job that
        # came in since without a reschedule (a ps stage declared before a
        # step stage whose admission started it) may have a smaller tag by
        # now; it finishes after, in its own event.
        tags = self.tags
        entry = self.next
        if tags[0] is entry:
            heappop(tags)
        elif entry is not None and entry in tags:
            tags.remove(entry)
            heapify(tags)
        else:
            entry = heappop(tags)
        tag, _, job = entry
        self.v = max(self.v, tag)
        self.changed = True
        self.sim.mark_changed(self)
        self.done(job, now)

    def work_left(self, now: float) -> float:
        v = self.v + ((now - self.v_time) * self.rate if self.rate > 0.0 else 0.0)
        total = -0.0  # 0.1.3's sums start at -0: an idle stage reads -0
        for tag, _, job in sorted(self.tags):
            total += tag - v
        return total


class PsContext(object):
    """The evaluation context of a ``ps`` capacity: no session, the machine
    stream, ``present``."""
    __slots__ = ("a", "rng", "present")

    def __init__(self, sim: Any) -> None:
        self.a: Any = None
        self.rng: Any = sim.machine_rng
        self.present = 0.0


class Estimator(object):
    """Online estimates behind ``est_lambda``, ``est_rho``, ``est_wait`` and
    ``price``: exponentially weighted (α = 0.01, the first observation
    initialises) mean gap between service starts, mean service and mean wait,
    each updated as ``(1 - α) x + α v`` (the reference's float order)."""
    __slots__ = ("last_start", "starts", "gap", "service", "wait")

    ALPHA = 0.01

    def __init__(self) -> None:
        self.last_start = 0.0  # (read from the second observation on)
        self.starts = 0
        self.gap = 0.0
        self.service = 0.0
        self.wait = 0.0

    def observe(self, start: float, wait: float, service: float) -> None:
        a = self.ALPHA
        if self.starts == 0:
            self.service = service
            self.wait = wait
        else:
            b = 1.0 - a
            self.service = b * self.service + a * service
            self.wait = b * self.wait + a * wait
            gap = start - self.last_start
            self.gap = gap if self.starts == 1 else b * self.gap + a * gap
        self.last_start = start
        self.starts += 1

    def lam(self) -> float:
        return 1.0 / self.gap if self.starts >= 2 and self.gap > 0.0 else 0.0

    def rho(self) -> float:
        return min(self.lam() * self.service, 0.99) if self.starts >= 2 else 0.0

    def w(self) -> float:
        return self.wait if self.starts >= 2 else 0.0


class SharedStage(Stage):
    """A ``ps`` stage that some run holds together with another stage: its
    jobs are flows of the program's ``Flows`` (``share maxmin|bottleneck``)."""
    kind = "shared"

    def __init__(self, sim: Any, index: int, name: str, member: Optional[int],
                 cap: float) -> None:
        Stage.__init__(self, sim, index, name, member)
        self.cap = cap  # (a number of the IR: a float)
        self.flows: Dict[int, Flow] = {}  # flow id -> flow, in start order
        # the max-min fill's capacity left and flows not yet frozen here
        # (``Flows._maxmin``: fields, not dictionaries keyed by stage)
        self.mm_left: float = 0.0
        self.mm_unfrozen: int = 0

    def present(self) -> int:
        return len(self.flows)

    #: the utilisation its time average was last set to (``last_n`` is
    #: the number of flows)
    last_util = 0.0

    def load(self) -> float:
        """Its utilisation now: the sum of its flows' rates over its cap."""
        load = 0.0
        for f in self.flows.values():
            load += f.rate
        return load / self.cap

    def record(self, now: float) -> None:
        # Its values change only where a flow starts or ends (its number)
        # or the rates are worked out again (its utilisation): each of those
        # touches it (``Flows``).  While they stay put the pieces wait in
        # ``sim.ticks`` (``Stage.catch_up``), as a fifo stage's do.
        n = len(self.flows)
        util = self.load()
        if n != self.last_n or not util == self.last_util:  # (nan: always set)
            self.last_util = util
            self.set_values(n, util, now)

    def work_left(self, now: float) -> float:
        total = -0.0  # 0.1.3's sums start at -0: an idle stage reads -0
        for f in self.flows.values():
            total += f.remaining - f.rate * (now - f.since)
        return total


class Flow(object):
    __slots__ = ("id", "session", "stages", "remaining", "rate", "since", "start", "job",
                 "mm_frozen")

    def __init__(self, fid: int, session: Any, stages: List[SharedStage], work: float,
                 now: float) -> None:
        self.id = fid
        self.session: Any = session
        self.stages = stages
        self.remaining = work
        self.rate = 0.0
        self.since = now
        self.start = now
        self.job: Job = Job(session, work, now)
        self.mm_frozen = False  # (its rate fixed in this max-min fill: Flows._maxmin)


class Flows(object):
    """Every flow of the program over its shared stages.  After a settle in
    which a flow started or ended, every flow's remaining work is advanced to
    now (all of them, as 0.1.3 does, not only those whose rate may change:
    a flow's finish is the sum of its pieces); rates are recomputed over the
    stages that change touched (and every stage their flows connect them
    to); then the earliest finish is scheduled and older ones go stale."""

    def __init__(self, sim: Any, policy: str) -> None:
        self.sim: Any = sim
        self.maxmin = policy == "MaxMin"
        self.next_id = 0
        self.flows: Dict[int, Flow] = {}
        self.touched: Set[SharedStage] = set()
        self.epoch = 0

    def start(self, session: Any, stages: List[SharedStage], work: float) -> None:
        now = self.sim.now
        f = Flow(self.next_id, session, stages, work, now)
        self.next_id += 1
        self.flows[f.id] = f
        for st in stages:
            st.flows[f.id] = f
            self.touched.add(st)
        self.sim.flows_dirty = True
        if session is not None:  # (a spilled piece's write has none)
            session.cancel = lambda: self.withdraw(f)

    def withdraw(self, f: Flow) -> None:
        if self.flows.pop(f.id, None) is None:
            return
        for st in f.stages:
            del st.flows[f.id]
            self.touched.add(st)
        self.sim.flows_dirty = True

    def component(self) -> Tuple[List[SharedStage], List[Flow]]:
        stages = set(self.touched)
        todo = list(stages)
        flows: Dict[int, Flow] = {}
        while todo:
            st = todo.pop()
            for f in st.flows.values():
                if f.id not in flows:
                    flows[f.id] = f
                    for other in f.stages:
                        if other not in stages:
                            stages.add(other)
                            todo.append(other)
        # (in index order: the indices sorted as ints, not the stages by a
        # key function called for each)
        by_index: Dict[int, SharedStage] = {}
        for st in stages:
            by_index[st.index] = st
        return [by_index[i] for i in sorted(by_index)], [flows[k] for k in sorted(flows)]

    def recompute(self) -> None:
        now = self.sim.now
        stages, flows = self.component()
        self.touched = set()
        # (their numbers of flows or rates may have changed: each records;
        # every stage a flow started or ended on is in the component)
        touched = self.sim.touched
        for st in stages:
            touched.add(st)
        for f in self.flows.values():
            if now > f.since:
                f.remaining -= f.rate * (now - f.since)
            f.since = now
        if self.maxmin:
            self._maxmin(stages, flows)
        else:
            for f in flows:
                f.rate = min(st.cap / len(st.flows) for st in f.stages)
        self.epoch += 1
        best: Optional[Tuple[float, int]] = None
        for f in self.flows.values():
            if f.rate > 0.0:
                t = f.since + max(0.0, f.remaining) / f.rate
                if best is None or t < best[0]:
                    best = (t, f.id)
        if best is not None:
            self.sim.schedule(best[0], self.finish, (self.epoch, best[1]))

    def _maxmin(self, stages: List[SharedStage], flows: List[Flow]) -> None:
        """Progressive filling: the stage of least fair share (capacity left
        over flows not yet frozen; the first such in index order) fixes its
        flows' rates at that share, which each takes from every stage it
        crosses; again until every flow of the component is frozen.  The
        component is closed (``component``): every flow of its stages is
        one of ``flows``, every stage of those flows one of ``stages``."""
        for st in stages:
            st.mm_left = st.cap
            st.mm_unfrozen = len(st.flows)
        for f in flows:
            f.mm_frozen = False
        frozen = 0
        while frozen < len(flows):
            pick: Optional[SharedStage] = None
            best = 0.0
            for st in stages:
                if st.mm_unfrozen > 0:
                    share = st.mm_left / st.mm_unfrozen
                    if pick is None or share < best:
                        pick = st
                        best = share
            if pick is None:
                break
            for f in pick.flows.values():
                if f.mm_frozen:
                    continue
                f.mm_frozen = True
                frozen += 1
                f.rate = best
                for other in f.stages:
                    other.mm_left -= best
                    other.mm_unfrozen -= 1

    def finish(self, arg: Tuple[int, int]) -> None:
        epoch, fid = arg
        if epoch != self.epoch:
            return
        now = self.sim.now
        f = self.flows.pop(fid)
        for st in f.stages:
            del st.flows[fid]
            self.touched.add(st)
        self.sim.flows_dirty = True
        f.job.started = f.start
        for st in f.stages:
            st.done_flow(f.job, now)
        if f.session is not None:
            f.session.cancel = None
            self.sim.resume(f.session)
