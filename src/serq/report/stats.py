"""Statistics behind the report, with the float operation order of pyserq 0.1.3.

Every function here was checked bit for bit against pyserq 0.1.3 (see
tests/test_report_stats.py); the order of the float operations matters, so
change nothing here without re-running those tests.

* Observations (:func:`summarize_samples`):

  - ``mean``: Welford, ``d = x - mean; mean += d / n; m2 += d * (x - mean)``;
  - ``cv2``: ``(m2 / (n - 1)) / (mean * mean)``; ``None`` for n < 2 or mean 0;
  - ``ci``: batch means for n >= 40: ``b = n // 20``; batch ``i`` mean is the
    left-to-right sum of ``samples[i*b:(i+1)*b]`` divided by ``b`` (the
    ``n - 20*b`` last samples are ignored); ``g`` = left-to-right sum of the
    20 batch means / 20; ``var = sum((m - g) * (m - g)) / 19``;
    ``ci = 2.093 * sqrt(var / 20)``;
  - ``p99``: the ``ceil(0.99 * n)``-th smallest sample (rank clamped to 1..n).

* Stage ``mean_wait``/``mean_service``: :class:`Welford` over
  ``start - arrival`` and ``finish - start`` (float differences of event
  times, not the drawn durations), added at each completion after warm-up.

* Time averages (:class:`TimeAverage`, :func:`summarize_gauge`): the integral
  is the left-to-right sum of ``value * (t_next - t)`` over the pieces, the
  first piece starting at the warm-up end and the last one stopping at the
  run end; the mean is ``integral / (end - warmup)``.  A gauge's CI uses 20
  windows ``[w + i*width, w + (i+1)*width]`` (``width = (end - w) / 20``, the
  last window ending at ``end``), each window mean being its integral (same
  summation) divided by ``width``; then as for observations
  (``g``, ``var / 19``, ``2.093 * sqrt(var / 20)``).

* Inter-token latency (:class:`ItlHistogram`): exact mean ``sum / n``
  (left-to-right sum); quantiles from log buckets
  ``k = floor(ln x / ln_1p(0.01))`` with the value
  ``exp((k + 0.5) * ln_1p(0.01))`` clamped to the bucket's observed min/max,
  at rank ``ceil(q * n)``.
"""
import math
from typing import TYPE_CHECKING, Any, Dict, Final, List, Optional, Sequence, Tuple

from ..floatvec import vec

if TYPE_CHECKING:
    # (in annotations of local variables only: a machine integer where
    # mypyc compiles this module, an int elsewhere)
    from mypy_extensions import i64

#: Student t quantile (0.975, 19 degrees of freedom) used by every CI.
T_19 = 2.093
#: Number of batches (observations) or windows (time averages) of a CI.
BATCHES: Final = 20
#: Fewest samples with a batch-means CI.
MIN_CI_SAMPLES: Final = 40


class Welford(object):
    """Running count, mean and sum of squared deviations (pyserq's order)."""

    __slots__ = ("n", "mean", "m2")

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        d = x - self.mean
        self.mean += d / self.n
        self.m2 += d * (x - self.mean)

    def variance(self) -> Optional[float]:
        """Sample variance (divisor n - 1); ``None`` below 2 samples."""
        if self.n < 2:
            return None
        return self.m2 / (self.n - 1)


def _sum(xs: Sequence[float]) -> float:
    s = 0.0
    for x in xs:
        s += x
    return s


def _div(a: float, b: float) -> float:
    """``a / b`` as IEEE 754 divides (0.1.3's f64): by a zero, ±inf, or NaN
    for 0 / 0 (a gauge's window is 0 wide when a subnormal horizon, 5e-323,
    is cut in 20)."""
    if b != 0.0:
        return a / b
    if a != a or a == 0.0:
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def ci_of_means(means: Sequence[float]) -> float:
    """95 % half-width from the 20 batch (or window) means."""
    g = _sum(means) / len(means)
    v = 0.0
    for m in means:
        v += (m - g) * (m - g)
    v /= len(means) - 1
    return T_19 * math.sqrt(v / len(means))


def batch_means_ci(samples: Sequence[float]) -> Optional[float]:
    """Batch-means CI of a sample list; ``None`` (JSON null) below 40 samples."""
    n = len(samples)
    if n < MIN_CI_SAMPLES:
        return None
    b = n // BATCHES
    means = [_sum(samples[i * b:(i + 1) * b]) / b for i in range(BATCHES)]
    return ci_of_means(means)


def nearest_rank(sorted_samples: Sequence[float], q: float) -> Optional[float]:
    """The ``ceil(q n)``-th smallest of sorted samples (rank clamped to 1..n)."""
    n = len(sorted_samples)
    if n == 0:
        return None
    k = min(max(int(math.ceil(q * n)), 1), n)
    return sorted_samples[k - 1]


def summarize_samples(samples: Sequence[float],
                      ordered: Optional[Sequence[float]] = None) -> Tuple[
        int, Optional[float], Optional[float], Optional[float], Optional[float]]:
    """``(count, mean, ci, cv2, p99)`` of an observation; ``None`` = null.
    ``ordered``: the same samples sorted, where the caller has them."""
    w = Welford()
    for x in samples:
        w.add(x)
    if w.n == 0:
        return 0, None, None, None, None
    var = w.variance()
    cv2 = None
    if var is not None and w.mean * w.mean != 0:  # (a tiny mean squares to 0: null)
        cv2 = var / (w.mean * w.mean)
    p99 = nearest_rank(sorted(samples) if ordered is None else ordered, 0.99)
    return w.n, w.mean, batch_means_ci(samples), cv2, p99


class TimeAverage(object):
    """Integral of a piecewise-constant signal from the warm-up end on.

    ``set(t, v)`` records that the signal is ``v`` from time ``t`` on (calls
    in non-decreasing ``t``; a repeated value or time is harmless);
    ``restart(t)`` drops what was integrated before ``t`` (warm-up end);
    ``mean(end)`` is the time average over ``[start, end]``.

    Accumulation, the single place to tune against the reference: at each
    ``set`` the piece just ended adds ``value * (t - last)`` to ``area``
    (left to right, one product per call).  A ``set`` at the same time
    adds ``value * 0.0`` (= 0, harmless for finite values).

    How pyserq feeds its time averages (verified bit for bit on
    ``mean_live``, stage ``mean_number`` and ``utilization``): the piece
    boundaries are **every event** popped after warm-up, whether the value
    changed or not (an event that leaves the value alone still splits the
    piece, and that changes the last bits), so call ``set(now, value)``
    after each event; at the warm-up end call ``restart(warmup)`` with the
    value then current kept.  Gauges differ: their integrals use only the
    change points (:func:`summarize_gauge`).
    """

    __slots__ = ("value", "last", "start", "area")

    def __init__(self, value: float = 0.0, t: float = 0.0) -> None:
        self.value = value
        self.last = t
        self.start = t
        self.area = 0.0

    def set(self, t: float, value: float) -> None:
        self.area += self.value * (t - self.last)
        self.last = t
        self.value = value

    def restart(self, t: float) -> None:
        self.area = 0.0
        self.last = t
        self.start = t

    def integral(self, end: float) -> float:
        return self.area + self.value * (end - self.last)

    def mean(self, end: float) -> float:
        span = end - self.start
        if span <= 0:
            return 0.0
        return self.integral(end) / span


#: The shortest stretch (in pieces) ``replay_exact`` is tried on: below it
#: the test costs about what the additions it saves do.
EXACT_MIN: Final = 16
#: 2 ** 53: an integer below it times a power of two is a float exactly.
_TWO53: Final = 9007199254740992.0
#: 2 ** 52: ``(v + 2 ** 52) - 2 ** 52`` is ``v`` rounded to an integer.
_TWO52: Final = 4503599627370496.0
#: ``u * (1 + 2 u)`` with ``u = 2 ** -53``: ``(t + PHI * t) - t`` is the
#: ulp of ``t`` (the successor of ``t`` less ``t``, Rump, Zimmermann,
#: Boldo and Melquiond 2009) for ``t`` in ``[ULP_LOW, ULP_HIGH]``.
_PHI: Final = 1.1102230246251568e-16
ULP_LOW: Final = 1e-270
ULP_HIGH: Final = 1e300


def ulp_of(t: float) -> float:
    """``math.ulp(t)`` for ``t`` in ``[ULP_LOW, ULP_HIGH]`` in three float
    operations (no call); 0 elsewhere, which no stretch passes
    ``replay_exact`` with."""
    if t >= ULP_LOW and t <= ULP_HIGH:
        return (t + _PHI * t) - t
    return 0.0


def replay_exact(a: "TimeAverage", ticks: vec[float], lo: int, end: int,
                 q: float) -> bool:
    """``replay_pieces`` of ``a`` in a dozen operations where each of its
    additions is exact, whether it was (else nothing is changed).  ``q`` is
    ``ulp_of(ticks[lo])``.

    Why the bits are those of the pass: with ``t0 = ticks[lo]`` at least
    half of ``t1 = ticks[end - 1]``, each gap is exact (Sterbenz) and a
    multiple ``m * q`` of ``q``, ``m * q <= t1 - t0``; an integer value
    ``v`` with ``v * (t1 - t0) < 2 ** 53 * q`` makes each product
    ``v * gap`` exact.  The pass's partial sums would then be
    ``a0 + v * (t - t0)`` for each event ``t`` (``a0`` the area after the
    first piece), each a multiple of ``v * q``.  Where the last one, ``f``,
    is a float exactly and ``v * q`` is a multiple of ``ulp(f)`` (the
    largest ulp among them), every partial sum is a float, each addition
    rounds nothing, and the pass ends at ``f``: the two checks on ``f``
    below say exactly that (``f - a0`` and ``(f + v * q) - f`` are exact
    differences, their operands being within a factor 2)."""
    t0 = ticks[lo]
    t1 = ticks[end - 1]
    if t1 > t0 + t0:
        return False
    v = a.value
    if not (v >= 1.0 and v < _TWO52) or (v + _TWO52) - _TWO52 != v:
        return False
    vd = v * (t1 - t0)
    if not vd < _TWO53 * q:
        return False
    a0 = a.area + v * (t0 - a.last)
    f = a0 + vd
    vq = v * q
    if f <= a0 + a0 and f - a0 == vd and vq <= f and (f + vq) - f == vq:
        a.area = f
        a.last = t1
        return True
    return False


def replay_pieces(a: "TimeAverage", ticks: vec[float], gaps: vec[float],
                  lo: int, end: int) -> None:
    """``a.set(t, a.value)`` for ``t`` in ``ticks[lo:end]``: a time average
    whose value stayed put takes its pieces late, with the same float
    operations in the same order (a value of 0 adds nothing; a long
    stretch whose additions are all exact in a few, ``replay_exact``).
    ``gaps[i]`` is ``ticks[i] - ticks[i - 1]``, the ``t - last`` of every
    piece after the first."""
    if a.value == 0.0:
        return
    if end - lo >= EXACT_MIN and replay_exact(a, ticks, lo, end, ulp_of(ticks[lo])):
        return
    pass_one(a, ticks, gaps, lo, end)


def pass_one(a: "TimeAverage", ticks: vec[float], gaps: vec[float],
             lo: int, end: int) -> None:
    """``replay_pieces`` of ``a`` (its value not 0), one addition a piece."""
    v = a.value
    area = a.area + v * (ticks[lo] - a.last)
    k: "i64" = lo + 1
    stop: "i64" = end
    while k < stop:
        area += v * gaps[k]
        k += 1
    a.area = area
    a.last = ticks[end - 1]


def replay_pair(a: "TimeAverage", b: "TimeAverage", ticks: vec[float],
                gaps: vec[float], lo: int, end: int) -> None:
    """``replay_pieces`` of ``a`` and of ``b`` over the same events (a long
    stretch: each first tries ``replay_exact``)."""
    if end - lo >= EXACT_MIN:
        q = ulp_of(ticks[lo])
        done_a = a.value == 0.0 or replay_exact(a, ticks, lo, end, q)
        done_b = b.value == 0.0 or replay_exact(b, ticks, lo, end, q)
        if done_a or done_b:
            if not done_a:
                pass_one(a, ticks, gaps, lo, end)
            if not done_b:
                pass_one(b, ticks, gaps, lo, end)
            return
    pass_pair(a, b, ticks, gaps, lo, end)


def pass_pair(a: "TimeAverage", b: "TimeAverage", ticks: vec[float],
              gaps: vec[float], lo: int, end: int) -> None:
    """``replay_pieces`` of ``a`` and of ``b`` without ``replay_exact``, in
    one pass where neither value is 0 (each gap read once): each average's
    additions are its own, in its own order, so the bits are those of two
    passes."""
    va = a.value
    vb = b.value
    if va == 0.0 or vb == 0.0:
        if va != 0.0:
            pass_one(a, ticks, gaps, lo, end)
        if vb != 0.0:
            pass_one(b, ticks, gaps, lo, end)
        return
    t = ticks[lo]
    area_a = a.area + va * (t - a.last)
    area_b = b.area + vb * (t - b.last)
    k: "i64" = lo + 1
    stop: "i64" = end
    while k < stop:
        g = gaps[k]
        area_a += va * g
        area_b += vb * g
        k += 1
    a.area = area_a
    b.area = area_b
    t = ticks[end - 1]
    a.last = t
    b.last = t


def replay_triple(a: "TimeAverage", b: "TimeAverage", c: "TimeAverage",
                  ticks: vec[float], gaps: vec[float], lo: int, end: int) -> None:
    """``pass_pair`` of three averages whose values are not 0 (a pool's
    used, cached and holders, say): one pass, each gap read once, each
    average's additions its own and in its own order."""
    va = a.value
    vb = b.value
    vc = c.value
    t = ticks[lo]
    area_a = a.area + va * (t - a.last)
    area_b = b.area + vb * (t - b.last)
    area_c = c.area + vc * (t - c.last)
    k: "i64" = lo + 1
    stop: "i64" = end
    while k < stop:
        g = gaps[k]
        area_a += va * g
        area_b += vb * g
        area_c += vc * g
        k += 1
    a.area = area_a
    b.area = area_b
    c.area = area_c
    t = ticks[end - 1]
    a.last = t
    b.last = t
    c.last = t


def replay_four(a: "TimeAverage", b: "TimeAverage", c: "TimeAverage",
                d: "TimeAverage", ticks: vec[float], gaps: vec[float], lo: int,
                end: int) -> None:
    """``replay_triple`` of four averages whose values are not 0 in one
    pass: four sums that do not wait on each other, so a processor adds
    them side by side (each average's additions its own, in its own
    order)."""
    va = a.value
    vb = b.value
    vc = c.value
    vd = d.value
    t = ticks[lo]
    area_a = a.area + va * (t - a.last)
    area_b = b.area + vb * (t - b.last)
    area_c = c.area + vc * (t - c.last)
    area_d = d.area + vd * (t - d.last)
    k: "i64" = lo + 1
    stop: "i64" = end
    last: "i64" = stop - 1
    while k < last:
        # (two pieces a turn: each average's additions still in their order)
        g = gaps[k]
        g2 = gaps[k + 1]
        area_a += va * g
        area_b += vb * g
        area_c += vc * g
        area_d += vd * g
        area_a += va * g2
        area_b += vb * g2
        area_c += vc * g2
        area_d += vd * g2
        k += 2
    if k < stop:
        g = gaps[k]
        area_a += va * g
        area_b += vb * g
        area_c += vc * g
        area_d += vd * g
    a.area = area_a
    b.area = area_b
    c.area = area_c
    d.area = area_d
    t = ticks[end - 1]
    a.last = t
    b.last = t
    c.last = t
    d.last = t


def replay_all(averages: List["TimeAverage"], ticks: vec[float], gaps: vec[float],
               lo: int, end: int) -> None:
    """``replay_pieces`` of every average of ``averages`` whose value is not
    0: on a long stretch those ``replay_exact`` can do first, then the
    others in passes (``replay_live``; three or fewer without that call
    more, the most common case; of two twins, one is replayed and the other
    copies it)."""
    live: List[TimeAverage] = []
    exact = end - lo >= EXACT_MIN
    q = ulp_of(ticks[lo]) if exact else 0.0
    for a in averages:
        if a.value != 0.0 and not (exact and replay_exact(a, ticks, lo, end, q)):
            live.append(a)
    n = len(live)
    if n > 3:
        replay_live(live, ticks, gaps, lo, end)
    elif n == 3:
        replay_triple(live[0], live[1], live[2], ticks, gaps, lo, end)
    elif n == 2:
        a = live[0]
        b = live[1]
        if twins(a, b):  # (a pool's used and holders, one unit each)
            pass_one(a, ticks, gaps, lo, end)
            b.area = a.area
            b.last = a.last
        else:
            pass_pair(a, b, ticks, gaps, lo, end)
    elif n == 1:
        pass_one(live[0], ticks, gaps, lo, end)


def replay_live(live: List["TimeAverage"], ticks: vec[float], gaps: vec[float],
                lo: int, end: int) -> None:
    """The passes of every average of ``live`` (none of value 0, none that
    ``replay_exact`` did): four in one (``replay_four``) while four are
    left, then three (``replay_triple``), two (``pass_pair``) or one."""
    n = len(live)
    i = 0
    while n - i >= 4:
        replay_four(live[i], live[i + 1], live[i + 2], live[i + 3], ticks, gaps, lo, end)
        i += 4
    if i + 2 < n:
        replay_triple(live[i], live[i + 1], live[i + 2], ticks, gaps, lo, end)
    elif i + 1 < n:
        pass_pair(live[i], live[i + 1], ticks, gaps, lo, end)
    elif i < n:
        pass_one(live[i], ticks, gaps, lo, end)


def replay_distinct(averages: List["TimeAverage"], ticks: vec[float],
                    gaps: vec[float], lo: int, end: int) -> None:
    """``replay_all`` of ``averages``, where averages that agree in value,
    area and last piece come out the same (a pool's used and holders where
    each holder holds one unit, a step stage's number and the holders of
    its slots): those ``replay_exact`` can do first, then of the others the
    first of each kind is replayed (``replay_live``) and the others take
    its area and last piece, the bits a pass of their own would give."""
    live: List[TimeAverage] = []
    copies: List[TimeAverage] = []  # (twin, the one replayed), flat
    exact = end - lo >= EXACT_MIN
    q = ulp_of(ticks[lo]) if exact else 0.0
    a: TimeAverage
    for a in averages:
        if a.value != 0.0:
            if exact and replay_exact(a, ticks, lo, end, q):
                continue
            o = twin_of(live, a)
            if o is None:
                live.append(a)
            else:
                copies.append(a)
                copies.append(o)
    if live:
        replay_live(live, ticks, gaps, lo, end)
    k = 0
    n = len(copies)
    while k < n:
        a = copies[k]
        o = copies[k + 1]
        a.area = o.area
        a.last = o.last
        k += 2


def twin_of(live: List["TimeAverage"], a: "TimeAverage") -> Optional["TimeAverage"]:
    """The first of ``live`` that is ``a``'s twin (``twins``), or ``None``."""
    o: TimeAverage
    for o in live:
        if twins(o, a):
            return o
    return None


def twins(a: "TimeAverage", b: "TimeAverage") -> bool:
    """Whether ``a`` and ``b`` agree in value, area and last piece, bit for
    bit (a 0 of either sign matches only its own sign): the same pieces
    then give them the same bits."""
    if a.value != b.value or a.area != b.area or a.last != b.last:
        return False
    if a.area == 0.0 and math.copysign(1.0, a.area) != math.copysign(1.0, b.area):
        return False
    return not (a.last == 0.0 and math.copysign(1.0, a.last) != math.copysign(1.0, b.last))


class IntervalAverage(object):
    """A time average accumulated one interval at a time (a step stage's
    iteration mix): ``add(t0, t1, v)`` adds ``v * (t1 - t0)`` for the part of
    ``[t0, t1]`` after the start (the warm-up end), in the order intervals
    end, as pyserq 0.1.3 does; ``mean(end)`` divides by ``end - start``."""

    __slots__ = ("area", "start")

    def __init__(self) -> None:
        self.area = 0.0
        self.start = 0.0

    def add(self, t0: float, t1: float, value: float) -> None:
        lo = t0 if t0 > self.start else self.start
        if t1 > lo:
            self.area += value * (t1 - lo)

    def restart(self, t: float) -> None:
        self.area = 0.0
        self.start = t

    def mean(self, end: float) -> float:
        span = end - self.start
        return self.area / span if span > 0 else 0.0


def _integral(times: Sequence[float], values: Sequence[float],
              a: float, b: float, first: int) -> Tuple[float, int]:
    """Integral over [a, b] of the step signal; ``first`` is a piece index
    whose start is <= a (or 0).  Returns (integral, index of the piece
    holding at b) so consecutive windows need one pass."""
    n = len(times)
    i = first
    while i + 1 < n and times[i + 1] <= a:
        i += 1
    s = 0.0
    j = i
    while j < n:
        lo = times[j] if times[j] > a else a
        hi = times[j + 1] if j + 1 < n else math.inf
        if hi > b:
            hi = b
        if hi > lo:
            s += values[j] * (hi - lo)
        if j + 1 >= n or times[j + 1] >= b:
            break
        j += 1
    return s, i


def summarize_gauge(times: Sequence[float], values: Sequence[float],
                    warmup: float, end: float) -> Tuple[float, float, float, float]:
    """``(mean, ci, min, max)`` of a gauge over ``[warmup, end]`` from its
    change points (``times[0]`` is the first change, normally 0; before it
    the signal counts as absent).  An empty signal gives all zeros."""
    if not times or end <= warmup:
        return 0.0, 0.0, 0.0, 0.0
    total, _ = _integral(times, values, warmup, end, 0)
    mean = total / (end - warmup)
    width = (end - warmup) / BATCHES
    means: List[float] = []
    k = 0
    for i in range(BATCHES):
        a = warmup + i * width
        b = warmup + (i + 1) * width if i + 1 < BATCHES else end
        s, k = _integral(times, values, a, b, k)
        means.append(_div(s, width))
    ci = ci_of_means(means)
    lo = hi = None
    n = len(times)
    for j in range(n):
        t0 = times[j] if times[j] > warmup else warmup
        t1 = times[j + 1] if j + 1 < n else math.inf
        if t1 > end:
            t1 = end
        if t1 > t0:
            v = values[j]
            if lo is None or v < lo:
                lo = v
            if hi is None or v > hi:
                hi = v
    if lo is None or hi is None:  # (both None or neither)
        lo = hi = 0.0
    return mean, ci, lo, hi


def _count(buckets: Dict[Any, List[Any]], key: Any, x: float, k: int) -> None:
    """``k`` values ``x`` into a log histogram's bucket ``key``."""
    _bump(_entry(buckets, key, x), x, k)


def _entry(buckets: Dict[Any, List[Any]], key: Any, x: float) -> List[Any]:
    """Bucket ``key``'s entry (``[count, smallest, largest]``), made empty
    around ``x`` if it has none: ``_bump`` then counts ``x`` in it."""
    c = buckets.get(key)
    if c is None:
        c = [0, x, x]
        buckets[key] = c
    return c


def _bump(c: List[Any], x: float, k: int) -> None:
    """``k`` values ``x`` into the bucket entry ``c``."""
    # (typed reads: compiled, the item operations are native)
    n: int = c[0]
    lo: float = c[1]
    hi: float = c[2]
    c[0] = n + k
    if x < lo:
        c[1] = x
    if x > hi:
        c[2] = x


#: Width of an ITL bucket in natural-log units (1 %).
_LOG_STEP: Final = math.log1p(0.01)
_ZERO_BUCKET: Final = -(1 << 63)


class ItlBucket(object):
    """One bucket of an :class:`ItlHistogram`: how many gaps fell in it, and
    the smallest and largest of them (typed fields: compiled, counting a gap
    reads and writes machine numbers, not the items of a list)."""

    __slots__ = ("count", "lo", "hi")

    def __init__(self, count: int, lo: float, hi: float) -> None:
        self.count = count
        self.lo = lo
        self.hi = hi

    def merge(self, other: "ItlBucket") -> None:
        """``other``'s gaps counted in this bucket too."""
        self.count += other.count
        self.lo = min(self.lo, other.lo)
        self.hi = max(self.hi, other.hi)


class ItlHistogram(object):
    """Inter-token gaps: exact mean, quantiles within 0.5 % (1 % log buckets)."""

    __slots__ = ("n", "total", "buckets", "last_key", "last")

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0
        # bucket -> its count, smallest and largest gap
        self.buckets: Dict[int, ItlBucket] = {}
        # the bucket of the last gap added, and its entry: consecutive gaps
        # mostly fall in one bucket (1 % wide), found then without a lookup
        self.last_key: int = _ZERO_BUCKET
        self.last: Optional[ItlBucket] = None

    @staticmethod
    def bucket(x: float) -> int:
        if x <= 0:
            return _ZERO_BUCKET
        return int(math.floor(math.log(x) / _LOG_STEP))

    def add(self, x: float) -> None:
        self.add_repeat(x, 1)

    def add_repeat(self, x: float, k: int) -> None:
        """``add(x)`` ``k`` times: the same count, bucket and float sum."""
        self.n += k
        total = self.total
        for _i in range(k):
            total += x
        self.total = total
        key = self.bucket(x)
        c = self.last
        if c is None or key != self.last_key:
            c = self.buckets.get(key)
            if c is None:
                c = ItlBucket(0, x, x)
                self.buckets[key] = c
            self.last_key = key
            self.last = c
        c.count += k
        if x < c.lo:
            c.lo = x
        if x > c.hi:
            c.hi = x

    def mean(self) -> Optional[float]:
        if self.n == 0:
            return None
        return self.total / self.n

    def quantile(self, q: float) -> Optional[float]:
        if self.n == 0:
            return None
        rank = min(max(int(math.ceil(q * self.n)), 1), self.n)
        seen = 0
        for k in sorted(self.buckets):
            c = self.buckets[k]
            seen += c.count
            if seen >= rank:
                if k == _ZERO_BUCKET:
                    return c.lo
                v = math.exp((k + 0.5) * _LOG_STEP)
                if v < c.lo:
                    v = c.lo
                if v > c.hi:
                    v = c.hi
                return v
        return None  # not reached


# ---------------------------------------------------------------- --no-samples
#
# ``serq run --no-samples`` keeps each observation as running statistics
# (:class:`RunningSummary`) instead of its sample list; memory per observation
# is bounded (at most ``2 * RUNNING_BLOCKS`` block sums and one histogram
# bucket per 1 % of the values' dynamic range).  Against
# :func:`summarize_samples` on the same samples:
#
# * ``count``, ``mean``, ``cv2``: exact, bit for bit (the same Welford loop);
# * ``ci``: exact, bit for bit, while ``n < 2 * RUNNING_BLOCKS``; above that
#   the samples are summed in blocks of ``B`` (a power of two, ``B <= n /
#   RUNNING_BLOCKS``) and each of the 20 batches is the run of whole blocks
#   each batch sum is taken between the reference's batch ends
#   ``i * (n // 20)``, the block holding an end counted in proportion to the
#   samples of it before the end (as if its samples were equal): only the
#   at most ``B - 1`` samples of each of the 21 boundary blocks, i.e. at most
#   ``20 / RUNNING_BLOCKS`` (0.4 %) of a batch, are apportioned rather than
#   counted, and sums are added pairwise rather than left to right.  Not a
#   bound but a measurement (tests/test_no_samples.py): on M/M/1 sojourn
#   times at load 0.8, 3e4 to 1e6 samples, within 0.35 % (relative) of the
#   exact ci; documented as within 1 %;
# * ``p99``: from a log histogram of 1 % buckets (sign-symmetric, zero in a
#   bucket of its own), the bucket of the nearest-rank sample found exactly;
#   the value reported is the bucket's geometric middle clamped to the
#   smallest and largest sample that fell in it, so it is within 0.5 %
#   (relative) of the reference's p99, and exact when that bucket holds one
#   distinct value (e.g. a 0/1 test).

#: Block sums kept by the running batch means: between this and twice this.
RUNNING_BLOCKS = 5120


class SignedLogHistogram(object):
    """Counts in 1 % log buckets over the whole real line; quantiles at the
    nearest rank within 0.5 % relative error (exact for a bucket holding a
    single distinct value)."""

    __slots__ = ("n", "buckets")

    def __init__(self) -> None:
        self.n = 0
        # (sign, k) -> [count, min, max]; keys sort in value order
        self.buckets: Dict[Tuple[int, float], List[Any]] = {}

    @staticmethod
    def key(x: float) -> Tuple[int, float]:
        if x == 0 or x != x:  # zero; NaN (never from a valid program) with it
            return (0, 0)
        if x > 0:
            if x == math.inf:
                return (1, math.inf)
            return (1, math.floor(math.log(x) / _LOG_STEP))
        if x == -math.inf:
            return (-1, -math.inf)
        return (-1, -math.floor(math.log(-x) / _LOG_STEP))

    def add(self, x: float) -> None:
        self.n += 1
        _count(self.buckets, self.key(x), x, 1)

    def quantile(self, q: float) -> Optional[float]:
        if self.n == 0:
            return None
        rank = min(max(int(math.ceil(q * self.n)), 1), self.n)
        seen = 0
        for k in sorted(self.buckets):
            c = self.buckets[k]
            seen += c[0]
            if seen >= rank:
                if c[1] == c[2] or k[0] == 0 or math.isinf(k[1]):
                    return c[1] if c[1] == c[2] else c[2]
                mid = math.exp((abs(k[1]) + 0.5) * _LOG_STEP)
                v = mid if k[0] > 0 else -mid
                if v < c[1]:
                    v = c[1]
                if v > c[2]:
                    v = c[2]
                return v
        return None  # not reached


class RunningSummary(object):
    """An observation's summary kept as it goes (``--no-samples``): Welford
    for count, mean and cv2, block sums for the batch-means CI, a
    :class:`SignedLogHistogram` for p99.  See the notes above."""

    __slots__ = ("welford", "blocks", "block", "part", "part_n", "hist")

    def __init__(self) -> None:
        self.welford = Welford()
        self.blocks: List[float] = []
        self.block = 1      # samples per block sum
        self.part = 0.0     # the block being filled
        self.part_n = 0
        self.hist = SignedLogHistogram()

    def add(self, x: float) -> None:
        self.welford.add(x)
        self.hist.add(x)
        self.part += x
        self.part_n += 1
        if self.part_n == self.block:
            blocks = self.blocks
            blocks.append(self.part)
            self.part = 0.0
            self.part_n = 0
            if len(blocks) == 2 * RUNNING_BLOCKS:
                self.blocks = [blocks[j] + blocks[j + 1] for j in range(0, len(blocks), 2)]
                self.block *= 2

    def ci(self) -> Optional[float]:
        n = self.welford.n
        if n < MIN_CI_SAMPLES:
            return None
        b = n // BATCHES
        blocks, size = self.blocks, self.block
        if size == 1:  # every sample still apart: the reference's batches
            means = [_sum(blocks[i * b:(i + 1) * b]) / b for i in range(BATCHES)]
            return ci_of_means(means)
        # S(p), the sum of the first p samples, at the reference's batch ends
        # p = i * b: whole blocks, then the share (p mod B) / B of the block
        # holding p (the last batch end is at most n, inside the partial
        # block only when that is the block being filled).
        prefix = [0.0]
        t = 0.0
        for x in blocks:
            t += x
            prefix.append(t)
        cum = []
        for i in range(BATCHES + 1):
            p = i * b
            j = p // size
            inner = blocks[j] if j < len(blocks) else self.part * size / max(self.part_n, 1)
            cum.append(prefix[j] + inner * (p - j * size) / size)
        means = [(cum[i + 1] - cum[i]) / b for i in range(BATCHES)]
        return ci_of_means(means)


def summarize_running(r: RunningSummary) -> Tuple[
        int, Optional[float], Optional[float], Optional[float], Optional[float]]:
    """``(count, mean, ci, cv2, p99)`` as :func:`summarize_samples` gives
    them, from a :class:`RunningSummary` (``ci`` and ``p99`` estimated)."""
    w = r.welford
    if w.n == 0:
        return 0, None, None, None, None
    var = w.variance()
    cv2 = None
    if var is not None and w.mean * w.mean != 0:  # (a tiny mean squares to 0: null)
        cv2 = var / (w.mean * w.mean)
    return w.n, w.mean, r.ci(), cv2, r.hist.quantile(0.99)
