"""Pools: units held by sessions, a per-session prefix cache, an admission
queue, stalled growers and the holder list.

The invariant ``used + cached <= cap`` holds at every settled state (the
seed's pool page): cached units never block an admission, they are evicted
to make room, one block (or, without ``block``, one whole entry) at a time
from the entry with the smallest key.

Amounts are floats compared with a tolerance of 1e-9, as in the reference.
"""
from heapq import heapify, heappop, heappush  # (module globals: no attribute read per call)
import math
from typing import TYPE_CHECKING, Any, Dict, Final, List, Optional, Tuple

from ..floatvec import COMPILED, vec
from ..report.replay import replay_all
from ..report.stats import TimeAverage, Welford
from .recorded import Recorded, Touched, catch_up_together

if TYPE_CHECKING:
    from .session import Session  # (typed: compiled, its fields are read natively)

EPS: Final = 1e-9


def round_up(x: float, block: Optional[float]) -> float:
    if not block:
        return x
    q = x / block
    if q - q != 0.0:  # inf or NaN: its own ceiling, as in IEEE (1e300 in
        return q * block  # blocks of 1e-300 is inf, as in 0.1.3)
    # (a finite float's ceiling is a float exactly: the product is the same
    # as of the integer)
    return float(math.ceil(q)) * block


def round_down(x: float, block: Optional[float]) -> float:
    if not block:
        return x
    q = x / block
    if q - q != 0.0:
        return q * block
    return float(math.floor(q)) * block


class CacheEntry(object):
    """A session's cached prefix in one pool (``dead`` once it is no
    session's any more: what ``reuse`` left behind)."""
    __slots__ = ("serial", "units", "released", "seq", "snapshot", "session", "dead", "member")

    def __init__(self, serial: int, units: float, released: float, seq: int, snapshot: Any,
                 session: Any, dead: bool = False) -> None:
        self.serial = serial
        self.units = units
        self.released = released
        self.seq = seq
        self.snapshot = snapshot
        self.session = session
        self.dead = dead
        self.member = False  # in its pool's entries or dead (Pool.lru)


def names(session: Any, pool: "Pool") -> None:
    """``pool`` has an entry that names ``session`` (Session.cached_in;
    not typed: a pool's tests give it sessions of their own)."""
    kept = session.cached_in
    if not kept:
        session.cached_in = [pool]
    elif pool not in kept:
        kept.append(pool)


def let_go(session: "Session") -> None:
    """An ended session's entries stop naming it: what they read of it
    from now on is their snapshot, as for any entry of an ended session
    (``live`` is false either way)."""
    serial = session.serial
    pool: Pool
    for pool in session.cached_in:
        e = pool.entries.get(serial)
        if e is not None and e.session is session:
            e.session = None
    session.cached_in = ()


class Waiting(object):
    """A hold waiting in a pool's queue."""
    __slots__ = ("run", "since", "seq", "resumed", "waited")

    def __init__(self, run, since, seq, resumed):
        self.run = run
        self.since = since
        self.seq = seq
        self.resumed = resumed
        self.waited = 0.0


class EvictContext(object):
    """What an eviction key or spill clause reads."""
    __slots__ = ("a", "rng", "size", "age", "last", "queued")

    def __init__(self, rng):
        self.a = None
        self.rng = rng
        self.size = self.age = self.last = self.queued = 0.0


class PoolStats(object):
    __slots__ = ("used", "cached", "queue", "holders", "wait", "admissions", "evicted_entries",
                 "evicted_units", "preemptions", "spills", "rejected", "stuck")

    def __init__(self) -> None:
        self.used = TimeAverage()
        self.cached = TimeAverage()
        self.queue = TimeAverage()
        self.holders = TimeAverage()
        self.wait = Welford()
        self.admissions = 0
        self.evicted_entries = 0
        self.evicted_units = 0.0
        self.preemptions = 0
        self.spills = 0
        self.rejected = 0
        self.stuck = 0


class AdmissionStats(object):
    """What the admission-control chapter says an operator must see (beyond
    the reference's report): head-of-line blocking, the reserve held, and
    when preemptions happen.  Recorded after warm-up like the rest.

    * ``blocked_attempts``: admission attempts whose selected hold did not fit
      while a hold waiting behind it would have;
    * ``blocking``: time average of "the head holds back a hold that fits";
    * ``reserved``: time average of units reserved but not yet allocated
      (``reserve held``);
    * ``preemption_times``: the instant of every preemption.
    """
    __slots__ = ("blocked_attempts", "blocking", "reserved", "preemption_times")

    def __init__(self):
        self.blocked_attempts = 0
        self.blocking = TimeAverage()
        self.reserved = TimeAverage()
        self.preemption_times = []


def _piece(a: TimeAverage, v: float, now: float) -> None:
    """``a.set(now, v)``, unless the signal was 0 and stays 0 (see
    ``Pool.record``)."""
    if v != 0.0 or a.value != 0.0:
        a.area += a.value * (now - a.last)
        a.last = now
        a.value = v


class FamilyCounts(object):
    """The holders and the queued of a pool family's members as their last
    ``record`` set them, member ``k`` at index ``k``, side by side in
    vectors of machine doubles: a router's choose reads every member's at
    every arrival (etree.py ``PoolRead.each``), and 256 pools' lists are
    768 places in memory where these are 4 KB.  A member the current event
    changed and has not recorded yet is in ``sim.touched``: the reader
    takes its live count instead."""

    def __init__(self, n: int) -> None:
        self.holders: vec[float] = vec[float]([0.0] * n)
        self.queued: vec[float] = vec[float]([0.0] * n)


def join_families(pools: List["Pool"]) -> None:
    """A ``FamilyCounts`` for each pool family whose members ``0..n-1`` lie
    in ``pools`` side by side in order (as the linker lists them); other
    pools keep none, and so do all where the core is interpreted (no tree
    reads the counts there)."""
    if not COMPILED:
        return
    i = 0
    while i < len(pools):
        p = pools[i]
        if p.member != 0:
            i += 1
            continue
        n = 1
        while i + n < len(pools) and pools[i + n].name == p.name and pools[i + n].member == n:
            n += 1
        f = FamilyCounts(n)
        for k in range(n):
            q = pools[i + k]
            q.family = f
            q.fam_at = k
        i += n


class Pool(Recorded):
    # Typed for the compiled core (what the eviction loop reads natively).
    used: float
    cached: float
    cap: float
    block: float
    reserved: float
    entries: Dict[int, CacheEntry]
    dead: List[CacheEntry]
    lru: List[Tuple[int, CacheEntry]]
    stats: PoolStats
    admission: AdmissionStats
    queue: List[Any]
    holders: List[Any]
    blocked: bool
    sim: Any
    touched: Touched
    # the six values the time averages were last set from (``record``):
    # declared, as ``__init__`` is not annotated and would leave them boxed
    sig_used: float
    sig_cached: float
    sig_queued: int
    sig_holders: int
    sig_reserved: float
    sig_blocked: bool
    growers: List[Any]
    pass_admits: bool
    qver: int
    evict_keys: Any
    spill: Any
    averages: List[TimeAverage]
    family: Optional[FamilyCounts]
    fam_at: int

    def __init__(self, sim, index, decl, compiler):
        self.sim = sim
        # the simulator's set of what changed in this event (the same set
        # all run long: read once, not through the untyped ``sim``)
        self.touched = sim.touched
        # called with (pool, entry, piece) at each eviction: a hook for tests
        self.trace_evict: Any = None
        self.index = index
        self.name = decl.name
        self.member = decl.index
        self.cap = decl.cap
        self.block = decl.block or 0.0
        self.decl = decl
        self.used = 0.0
        self.cached = 0.0
        self.entries = {}  # serial -> live CacheEntry
        self.dead = []  # dead CacheEntry
        # (seq, entry) of every entry as it joined or was last re-sequenced:
        # the least seq that is still a member's own is the LRU victim
        # (``lru_victim``), found without a scan; stale items are skipped.
        self.lru = []
        self.queue = []  # Waiting, in order (resumed holds at the front)
        self.growers = []  # stalled grows, in stall order
        # whether the pool pass admits its queue (else a step stage does:
        # ``admit_via``), read as a field
        self.pass_admits = decl.admit_via is None
        # For the findings at the end (report/findings.py), set only on the
        # rare paths: when a grow last stalled here, and when a session was
        # first counted stuck here.
        self.last_stall = None
        self.stuck_since = None
        self.holders = []  # holder list (sessions), the 0.1.3 quirk
        self.reserved = 0.0  # outstanding reservations (reserve held)
        self.spilled_dead = {}  # a dead entry elsewhere -> its pieces here
        self.stats = PoolStats()
        self.admission = AdmissionStats()
        st, ad = self.stats, self.admission
        # The six time averages, in the order of ``sig`` (record)
        self.averages = [st.used, st.cached, st.queue, st.holders, ad.reserved, ad.blocking]
        self.mates = []
        self.blocked = False  # the head holds back a hold that fits (last attempt)
        self.blocked_key = None  # what the pool looked like at the last scan
        # The six values the time averages were last set from, and the index
        # in ``sim.ticks`` up to which their pieces are added (``record``).
        self.sig_used = 0.0
        self.sig_cached = 0.0
        self.sig_queued = 0
        self.sig_holders = 0
        self.sig_reserved = 0.0
        self.sig_blocked = False
        self.synced = -1
        self.family = None  # (join_families)
        self.fam_at = 0
        # serq's extensions: the units an admission leaves free, and
        # first-fit admission (``ff_key``: the state of the last scan that
        # admitted nothing; ``qver`` counts the queue's changes)
        self.watermark = decl.watermark
        self.first_fit = decl.first_fit
        self.ff_key = None
        self.qver = 0
        c = compiler
        self.evict_keys = None if decl.evict is None else [c.expr(k) for k in decl.evict]
        self.queue_keys = None if decl.queue is None else [c.expr(k) for k in decl.queue]
        self.preempt_keys = None if decl.preempt is None else [c.expr(k) for k in decl.preempt]
        self.ectx = EvictContext(sim.evict_rng)
        self.spill = None
        if decl.spill is not None:
            self.spill = (decl.spill.to, decl.spill.via, c.expr(decl.spill.work),
                          c.expr(decl.spill.when))

    # ----------------------------------------------------------- statistics

    def record(self, now: float) -> None:
        # ``TimeAverage.set(now, v)`` of the six signals, inlined (the same
        # float operations).  This runs for every pool an event touched;
        # while none of the six values changes, the pieces wait in
        # ``sim.ticks`` and ``catch_up`` adds them, in order, when one does
        # (or at the end).  A signal that was 0 and stays 0 is left alone: its
        # piece would add 0 * (now - last) = +0 to an area that is never -0,
        # and ``last`` matters only while the value is not 0.
        used = self.used
        cached = self.cached
        queued = len(self.queue)
        holders = len(self.holders)
        reserved = self.reserved
        blocked = self.blocked
        if used == self.sig_used and cached == self.sig_cached and \
                queued == self.sig_queued and holders == self.sig_holders and \
                reserved == self.sig_reserved and blocked == self.sig_blocked:
            return
        self.sig_used = used
        self.sig_cached = cached
        self.sig_queued = queued
        self.sig_holders = holders
        self.sig_reserved = reserved
        self.sig_blocked = blocked
        f = self.family
        if f is not None:
            f.holders[self.fam_at] = float(holders)
            f.queued[self.fam_at] = float(queued)
        # the pieces left for later, up to the current event (Stage.set_values)
        ticks: vec[float] = self.clock.ticks
        k = len(ticks) - 1
        if self.synced < k - 1:
            # (catch_up_to, written out: a call less per catch-up interpreted)
            if self.mates and k - self.synced > self.clock.shared_min:
                catch_up_together(self, ticks, k)
            else:
                self.catch_up(ticks, k)
        self.synced = k
        st = self.stats
        ad = self.admission
        _piece(st.used, used, now)
        _piece(st.cached, cached, now)
        _piece(st.queue, float(queued), now)
        _piece(st.holders, float(holders), now)
        _piece(ad.reserved, reserved, now)
        _piece(ad.blocking, 1.0 if blocked else 0.0, now)

    def recorded(self) -> Tuple[float, float, int, int, float, bool]:
        """The six values the time averages were last set from."""
        return (self.sig_used, self.sig_cached, self.sig_queued, self.sig_holders,
                self.sig_reserved, self.sig_blocked)

    def catch_up(self, ticks: vec[float], end: int) -> None:
        """Add the pieces of the events ``ticks[synced + 1:end]`` (values
        unchanged since the last ``record`` that set them)."""
        lo = self.synced + 1
        if lo < end:
            replay_all(self.averages, ticks, self.clock.gaps_to(end), lo, end)
        self.synced = end - 1

    def restart(self, now):
        for a in self.averages:
            a.restart(now)
        self.synced = len(self.clock.ticks) - 1  # (pieces before now are dropped)

    # ----------------------------------------------------------------- cache

    def take_entry(self, serial, reuse):
        """Admission of a hold with `cache`: consume the session's own entry
        (at most ``round_down(reuse)``; the rest stays as a dead entry)."""
        e = self.entries.pop(serial, None)
        if e is None:
            return 0.0
        units = e.units
        if reuse is not None:
            limit = round_down(reuse, self.block)
            if units > limit:  # (exact, as in 0.1.3)
                e.units = units - limit
                if e.session is not None:
                    # the dead rest's keys read the attributes as they are
                    # now, when it becomes no session's (0.1.3), not as they
                    # were when the entry was cached
                    e.snapshot = list(e.session.a)
                e.dead = True
                e.session = None
                self.dead.append(e)
                self.cached -= limit
                self.touched.add(self)
                return limit
        e.member = False
        e.session = None  # (out of the pool: it names no session, see let_go)
        self.cached -= units
        self.touched.add(self)
        return units

    def keep(self, session, units):
        """Cache ``units`` as the session's entry (replacing its old one)."""
        if units <= 0.0:
            return  # keeps nothing, and leaves any entry there (e.g. a spill's)
        old = self.entries.pop(session.serial, None)
        if old is not None:
            old.member = False
            old.session = None
            self.cached -= old.units
            self.touched.add(self)
        if self.used + self.cached + units > self.cap + EPS:
            # The pool invariant (used + cached <= cap, the seed's pool page)
            # before what 0.1.3 does: a hold that consumed a cached prefix
            # without allocating it, then preempted, would cache its whole
            # position and pass the cap.  Older entries make room, in
            # eviction order; what still does not fit is not kept
            # (docs/divergences.md).
            self.make_room(units)
            room = self.cap - self.used - self.cached
            if units > room + EPS:
                units = round_down(max(0.0, room), self.block)
                if units <= EPS:
                    return
        sim = self.sim
        sim.release_seq += 1
        e = CacheEntry(session.serial, units, sim.now, sim.release_seq, list(session.a), session)
        self.entries[session.serial] = e
        names(session, self)
        self.join_lru(e)
        self.cached += units
        self.touched.add(self)

    def drop(self, serial):
        e = self.entries.pop(serial, None)
        if e is not None:
            e.member = False
            e.session = None
            self.cached -= e.units
            self.touched.add(self)

    def own(self, serial):
        e = self.entries.get(serial)
        return e.units if e is not None else 0.0

    def make_room(self, need: float) -> None:
        """Evict until ``used + cached + need <= cap``."""
        # Under lru with no spill, nothing but this loop changes the entries:
        # an entry partly evicted keeps the smallest key and stays the victim.
        lru = self.evict_keys is None and self.spill is None
        e: Optional[CacheEntry] = None
        while self.used + self.cached + need > self.cap + EPS and (self.entries or self.dead):
            if e is None or not lru or e.units <= EPS:
                e = self.victim_entry()
            piece = min(self.block, e.units) if self.block else e.units
            self.evict(e, piece)

    def join_lru(self, e: CacheEntry) -> None:
        """``e`` is a member with a new seq: its item in the LRU heap."""
        e.member = True
        lru = self.lru
        heappush(lru, (e.seq, e))  # (seqs are unique: entries never compare)
        if len(lru) > 64 + 2 * (len(self.entries) + len(self.dead)):
            lru[:] = [(m.seq, m) for m in list(self.entries.values()) + self.dead]
            heapify(lru)

    def victim_entry(self) -> CacheEntry:
        if self.evict_keys is None:
            # The key (released, seq) orders as seq alone: both are set
            # together, seq increasing and the release time not decreasing.
            # The least seq of a member (as ``min`` over the members by seq).
            lru = self.lru
            while lru:
                seq, e = lru[0]
                if e.member and e.seq == seq:
                    return e
                heappop(lru)
            raise AssertionError("a pool with cached entries has no LRU victim")
        entries = list(self.entries.values()) + self.dead
        best: Any = None
        best_key: Any = None
        now = self.sim.now
        ctx = self.ectx
        for e in entries:
            ctx.size = e.units
            ctx.last = e.released
            ctx.age = now - e.released
            live = e.session is not None and e.session.alive and not e.dead
            ctx.a = e.session.a if live else e.snapshot
            ctx.queued = 1.0 if live and self.sim.is_waiting(e.session) else 0.0
            key = tuple(total_key(f(ctx)) for f in self.evict_keys) + (e.seq,)
            if best is None or key < best_key:
                best, best_key = e, key
        return best

    def evict(self, e: CacheEntry, piece: float) -> None:
        st = self.stats
        e.units -= piece
        self.cached -= piece
        self.touched.add(self)
        st.evicted_units += piece
        if self.trace_evict is not None:
            self.trace_evict(self, e, piece)
        if e.units <= EPS:
            st.evicted_entries += 1
            e.member = False
            if e.dead:
                self.dead.remove(e)
            else:
                del self.entries[e.serial]
        if self.spill is not None:
            self.spill_piece(e, piece)
        if not e.member:
            e.session = None  # (evicted whole, and spilled: see let_go)

    def spill_piece(self, e, piece):
        to, via, work_f, when_f = self.spill
        ctx = self.ectx
        ctx.size = piece
        ctx.last = e.released
        ctx.age = self.sim.now - e.released
        live = e.session is not None and e.session.alive and not e.dead
        ctx.a = e.session.a if live else e.snapshot
        ctx.queued = 1.0 if live and self.sim.is_waiting(e.session) else 0.0
        if when_f(ctx) == 0.0:
            return
        work = max(0.0, work_f(ctx))
        self.stats.spills += 1
        self.sim.spill_job(via, work)
        self.sim.pools[to].receive_spill(e, piece)

    def receive_spill(self, e, piece):
        """A spilled piece joins the same session's entry in this tier.  The
        tier makes room for it first, so it keeps ``used + cached <= cap``
        (0.1.3 makes room before adding and can go over: docs/divergences.md)."""
        self.make_room(piece)
        room = self.cap - self.used - self.cached
        if room < piece - EPS:
            piece = max(0.0, room)
            if piece <= EPS:
                return
        sim = self.sim
        sim.release_seq += 1
        if e.dead:
            # A dead entry's pieces stay no session's in the tier: they gather
            # in one dead entry there (0.1.3: `cachedin` of the tier reads 0).
            mine = self.spilled_dead.get(e)
            if mine is None or mine not in self.dead:
                mine = CacheEntry(e.serial, 0.0, sim.now, sim.release_seq, e.snapshot, None,
                                  dead=True)
                self.dead.append(mine)
                self.spilled_dead[e] = mine
        else:
            mine = self.entries.get(e.serial)
            if mine is None:
                mine = CacheEntry(e.serial, 0.0, sim.now, sim.release_seq, e.snapshot,
                                  e.session)
                self.entries[e.serial] = mine
                if e.session is not None:
                    names(e.session, self)
        mine.units += piece
        mine.released = sim.now
        mine.seq = sim.release_seq
        self.join_lru(mine)
        self.cached += piece
        self.touched.add(self)

    # ------------------------------------------------------------- holders

    def remove_holder(self, session: Any) -> None:
        holders = self.holders
        # (found by identity, as ``in`` would for sessions, without a
        # comparison call per holder)
        for x in holders:
            if x is session:
                self.holders = [h for h in holders if h is not session]
                self.touched.add(self)
                return


def total_less(v: float, best: float) -> bool:
    """``v`` comes before ``best`` in Rust's ``total_cmp`` order (NaN after
    every number, -0 before +0), compared as floats."""
    if v < best:
        return True
    if v != v or best == best and v != best:
        return False  # (NaN is last; a larger number loses)
    return best != best or (v == 0.0 and math.copysign(1.0, v) < math.copysign(1.0, best))


def keys_less(a: List[float], b: List[float]) -> bool:
    """``[total_key(x) for x in a] < [total_key(y) for y in b]`` (keys of
    one length), read off the floats: the first key where either comes
    before the other in ``total_less``'s order decides (two keys are equal
    in that order where neither comes first, NaN with NaN)."""
    for i in range(len(a)):
        x = a[i]
        y = b[i]
        if total_less(x, y):
            return True
        if total_less(y, x):
            return False
    return False


def total_key(v: float) -> Tuple[int, float, int]:
    """Rust's ``total_cmp`` order: NaN after +inf, -0 before +0."""
    if v != v:
        return (2, 0.0, 0)
    # (the sign read only off a zero: below and above it, the comparison)
    return (1, v, 0 if v < 0.0 or (v == 0.0 and math.copysign(1.0, v) < 0.0) else 1)
