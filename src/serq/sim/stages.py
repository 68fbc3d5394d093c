"""The stages a session runs work on: ``fifo(c)``, ``ps(φ)``, ``delay``.

Each stage keeps its jobs and its statistics (time-average number present
and utilization, completions, waits and service times after warm-up).  A
job is ``[session, work, arrived, started]``; when it finishes the stage
hands the session back to the simulator (``sim.resume``).

Policies follow the feature map §5.1–5.3: ``fifo`` serves in arrival order
on ``c`` servers; ``ps`` shares a capacity φ(n), re-read only when the job
set changes, through a virtual time and finish tags (equal tags finish in
start order, one per event); ``delay`` finishes every job ``work`` after it
starts.
"""
import heapq
from collections import deque

from ..report.stats import TimeAverage, Welford

EPS = 1e-9


class StageStats(object):
    __slots__ = ("number", "util", "completed", "wait", "service")

    def __init__(self, now):
        self.number = TimeAverage(now)
        self.util = TimeAverage(now)
        self.completed = 0
        self.wait = Welford()
        self.service = Welford()


class Stage(object):
    """What every stage has: a name, its statistics and the simulator."""

    kind = ""

    def __init__(self, sim, index, name, member):
        self.sim = sim
        self.index = index
        self.name = name
        self.member = member
        self.stats = StageStats(0.0)
        self.est = Estimator()

    def present(self):
        raise NotImplementedError

    def record(self, now):
        n = self.present()
        self.stats.number.set(now, float(n))
        self.stats.util.set(now, 1.0 if n > 0 else 0.0)

    def restart(self, now):
        st = self.stats
        st.number.restart(now)
        st.util.restart(now)

    def done(self, job, now):
        """Book-keeping of a finished job, then the session goes on."""
        self.est.observe(job[3], job[3] - job[2], now - job[3])
        if self.sim.warm:
            st = self.stats
            st.completed += 1
            st.wait.add(job[3] - job[2])
            st.service.add(now - job[3])
        self.sim.resume(job[0])

    def busy(self):
        return float(self.present())

    def work_left(self, now):
        raise NotImplementedError


class Fifo(Stage):
    kind = "fifo"

    def __init__(self, sim, index, name, member, servers):
        Stage.__init__(self, sim, index, name, member)
        self.servers = servers
        self.serving = 0
        self.waiting = deque()
        self.in_service = {}  # job id -> (job, finish time)

    def present(self):
        return self.serving + len(self.waiting)

    def busy(self):
        return float(self.serving)

    def submit(self, session, work):
        now = self.sim.now
        job = [session, work, now, now]
        if self.serving < self.servers:
            self._start(job, now)
        else:
            self.waiting.append(job)

    def _start(self, job, now):
        self.serving += 1
        job[3] = now
        self.in_service[id(job)] = (job, now + job[1])
        self.sim.schedule(now + job[1], self.finish, job)

    def finish(self, job):
        now = self.sim.now
        self.serving -= 1
        del self.in_service[id(job)]
        if self.waiting:
            self._start(self.waiting.popleft(), now)
        self.done(job, now)

    def work_left(self, now):
        total = 0.0
        for job, end in self.in_service.values():
            total += end - now
        for job in self.waiting:
            total += job[1]
        return total


class Delay(Stage):
    kind = "delay"

    def __init__(self, sim, index, name, member):
        Stage.__init__(self, sim, index, name, member)
        self.jobs = {}

    def present(self):
        return len(self.jobs)

    def submit(self, session, work):
        now = self.sim.now
        job = [session, work, now, now]
        self.jobs[id(job)] = (job, now + work)
        self.sim.schedule(now + work, self.finish, job)

    def finish(self, job):
        del self.jobs[id(job)]
        self.done(job, self.sim.now)

    def work_left(self, now):
        total = 0.0
        for job, end in self.jobs.values():
            total += end - now
        return total


class Ps(Stage):
    """Egalitarian processor sharing with a virtual time ``v``: every job
    present advances by ``φ(n) / n`` per unit of time, so a job that arrives
    at virtual time ``v`` with work ``w`` finishes when ``v`` reaches its tag
    ``v + w``."""
    kind = "ps"

    def __init__(self, sim, index, name, member, capacity):
        Stage.__init__(self, sim, index, name, member)
        self.capacity = capacity  # compiled φ, read at the Ps moment
        self.tags = []  # heap of (tag, start sequence, job)
        self.seq = 0
        self.v = 0.0
        self.v_time = 0.0
        self.rate = 0.0  # virtual-time speed φ(n)/n
        self.epoch = 0
        self.changed = False
        self.ctx = PsContext(sim)

    def present(self):
        return len(self.tags)

    def _advance(self, now):
        if self.rate > 0.0 and now > self.v_time:
            self.v += (now - self.v_time) * self.rate
        self.v_time = now

    def submit(self, session, work):
        now = self.sim.now
        self._advance(now)
        job = [session, work, now, now]
        self.seq += 1
        heapq.heappush(self.tags, (self.v + work, self.seq, job))
        self.changed = True
        self.sim.mark_changed(self)

    def reschedule(self):
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
        tag = self.tags[0][0]
        self.sim.schedule(now + max(0.0, tag - self.v) / self.rate, self.finish, self.epoch)

    def finish(self, epoch):
        if epoch != self.epoch:
            return  # stale: the job set changed since this was scheduled
        now = self.sim.now
        self._advance(now)
        tag, _, job = heapq.heappop(self.tags)
        self.v = max(self.v, tag)
        self.changed = True
        self.sim.mark_changed(self)
        self.done(job, now)

    def work_left(self, now):
        v = self.v + ((now - self.v_time) * self.rate if self.rate > 0.0 else 0.0)
        total = 0.0
        for tag, _, job in sorted(self.tags):
            total += tag - v
        return total


class PsContext(object):
    """The evaluation context of a ``ps`` capacity: no session, the machine
    stream, ``present``."""
    __slots__ = ("a", "rng", "present")

    def __init__(self, sim):
        self.a = None
        self.rng = sim.machine_rng
        self.present = 0.0


class Estimator(object):
    """Online estimates behind ``est_lambda``, ``est_rho``, ``est_wait`` and
    ``price``: exponentially weighted (α = 0.01, the first observation
    initialises) mean gap between service starts, mean service and mean wait."""
    __slots__ = ("last_start", "starts", "gap", "service", "wait")

    ALPHA = 0.01

    def __init__(self):
        self.last_start = None
        self.starts = 0
        self.gap = 0.0
        self.service = 0.0
        self.wait = 0.0

    def observe(self, start, wait, service):
        a = self.ALPHA
        if self.starts == 0:
            self.service = service
            self.wait = wait
        else:
            self.service += a * (service - self.service)
            self.wait += a * (wait - self.wait)
            gap = start - self.last_start
            self.gap = gap if self.starts == 1 else self.gap + a * (gap - self.gap)
        self.last_start = start
        self.starts += 1

    def lam(self):
        return 1.0 / self.gap if self.starts >= 2 and self.gap > 0.0 else 0.0

    def rho(self):
        return min(self.lam() * self.service, 0.99) if self.starts >= 2 else 0.0

    def w(self):
        return self.wait if self.starts >= 2 else 0.0
