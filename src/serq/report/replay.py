"""Late pieces of time averages added in bulk, bit for bit.

An average that no event touched since its last record owes one piece per
event since then: ``area += value * (t[k] - t[k - 1])`` for each event time
``t[k]``, in order (stats.py, :class:`TimeAverage`).  The functions here
add a stretch of such pieces, given the shared event times ``ticks`` and
their differences ``gaps``, with exactly the float operations and the order
that one ``set`` per event would use, so the report's bits do not change:

* ``replay_pieces`` / ``pass_one``: one average, a pass over the gaps;
* ``pass_pair``, ``replay_triple``, ``replay_four``: two to four averages in
  one pass, their sums independent of each other, so the processor adds
  them side by side;
* ``replay_exact``: a stretch in a dozen operations where every addition
  of the pass would be exact (an integer value, event times within a
  factor 2, each partial sum a float);
* ``replay_all`` / ``replay_distinct``: a group of averages, the exact ones
  first, then the others in passes; of averages that agree bit for bit
  (``twins``) one is replayed and the others copy it.

tests/test_replay_pair.py and tests/test_replay_exact.py compare each of
them with one ``set`` per event.
"""
import math
from typing import TYPE_CHECKING, Final, List, Optional

from ..floatvec import vec
from .stats import TimeAverage

if TYPE_CHECKING:
    # (in annotations of local variables only: a machine integer where
    # mypyc compiles this module, an int elsewhere)
    from mypy_extensions import i64


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
