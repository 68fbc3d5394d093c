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
from typing import Any, Dict, Final, List, Optional, Sequence, Tuple

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
    change points (:func:`summarize_gauge`).  The pieces an average owes
    for the events that did not touch it are added in bulk by replay.py
    (the same operations in the same order).
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
