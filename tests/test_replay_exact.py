"""Late pieces whose additions are all exact, added in a few operations
(report/replay.py ``replay_exact``), alone and among the passes of groups:
the bits are always those of one ``set`` per event (``TimeAverage.set``,
the definition pyserq 0.1.3 is matched on)."""
import math
import random
import struct

from serq.floatvec import vec
from serq.report.replay import (EXACT_MIN, replay_all, replay_distinct, replay_exact,
                                replay_pair, replay_pieces, ulp_of)
from serq.report.stats import TimeAverage


def _bits(a):
    return struct.pack("<ddd", a.value, a.area, a.last)


def _average(v, area, last):
    a = TimeAverage(v)
    a.area, a.last = area, last
    return a


def _by_sets(a, times, lo, end):
    """``a`` after ``set(t, a.value)`` at each event of ``times[lo:end]``."""
    b = _average(a.value, a.area, a.last)
    for t in times[lo:end]:
        b.set(t, b.value)
    return b


def _vectors(times):
    gaps = [0.0] + [times[i] - times[i - 1] for i in range(1, len(times))]
    return vec[float](times), vec[float](gaps)


def _times(g, n):
    """``n`` event times of one of the shapes a run makes: spread, bunched
    (gaps of a few ulps, ties), or across a power of two."""
    kind = g.randrange(4)
    t = g.choice([g.uniform(0.5, 4.0), g.uniform(10, 2000), 2.0 ** g.randrange(-8, 30)])
    if kind == 3:
        t = math.nextafter(2.0 ** g.randrange(-4, 20), 0.0) - g.randrange(40) * math.ulp(t)
    out = []
    for _ in range(n):
        if kind == 0:
            t += g.expovariate(1.0) * g.choice([1e-4, 1e-2, 1.0])
        elif kind == 1:
            t += g.choice([0.0, math.ulp(t), 3 * math.ulp(t), g.random() * 1e-6 * t])
        else:
            t += g.choice([0.0, math.ulp(t), g.random() * 1e-3 * t])
        out.append(t)
    return out


def _value(g):
    return g.choice([1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 16.0, 1440.0, 0.5, 2.5,
                     float(g.randrange(1, 1 << 20)), float(1 << g.randrange(60)), 1e300, math.inf])


def _area(g, v, t0):
    return g.choice([0.0, -0.0, g.random() * t0 * min(v, 1e6), g.uniform(0, 1e7),
                     math.nextafter(2.0 ** g.randrange(-10, 40), 0.0),
                     2.0 ** g.randrange(-10, 40) - g.randrange(1, 50) * math.ulp(2.0 ** g.randrange(-10, 40)),
                     math.nan])


def test_exact_replays_give_the_bits_of_one_set_per_event_or_change_nothing():
    g = random.Random(7)
    done = 0
    for _ in range(30000):
        times = _times(g, g.randrange(2, 80))
        ticks, _ = _vectors(times)
        lo = g.randrange(len(times) - 1)
        end = g.randrange(lo + 1, len(times) + 1)
        v = _value(g)
        last = times[lo] - g.choice([0.0, g.random(), g.random() * times[lo]])
        a = _average(v, _area(g, v, times[lo]), last)
        before = _bits(a)
        if replay_exact(a, ticks, lo, end, ulp_of(times[lo])):
            done += 1
            assert _bits(a) == _bits(_by_sets(_average(v, *struct.unpack("<ddd", before)[1:]), times, lo, end))
        else:
            assert _bits(a) == before
    assert done > 3000  # (the shortcut is taken on a good share of these)


def test_the_shortcut_takes_the_stretches_it_should_and_refuses_rounding_ones():
    times = [10.0 + i * 0.001 for i in range(200)]
    ticks, _ = _vectors(times)
    # one holder for 200 events, its area below the time: every addition exact
    a = _average(1.0, 0.5, 9.9)
    assert replay_exact(a, ticks, 0, 200, ulp_of(10.0))
    assert _bits(a) == _bits(_by_sets(_average(1.0, 0.5, 9.9), times, 0, 200))
    # 1440 units used, an area far above the time: the additions round, and
    # a single addition of the stretch's total would not give their bits
    b = _average(1440.0, 14400.123, 9.9)
    ref = _by_sets(_average(1440.0, 14400.123, 9.9), times, 0, 200)
    assert (14400.123 + 1440.0 * (10.0 - 9.9)) + 1440.0 * (times[-1] - times[0]) != ref.area
    assert not replay_exact(b, ticks, 0, 200, ulp_of(10.0))
    assert b.area == 14400.123 and b.last == 9.9
    # event times more than doubling over the stretch: the gaps may round
    assert not replay_exact(_average(1.0, 0.5, 0.1), vec[float]([1.0, 1.5, 2.5]), 0, 3, ulp_of(1.0))


def test_ulp_of_is_math_ulp_where_it_answers():
    g = random.Random(3)
    xs = [2.0 ** e for e in range(-890, 996, 7)]
    xs += [math.nextafter(x, 0.0) for x in xs] + [math.nextafter(x, math.inf) for x in xs]
    xs += [g.uniform(0, 1e4) for _ in range(20000)] + [g.random() * 2.0 ** g.randrange(-800, 900) for _ in range(20000)]
    for x in xs:
        if 1e-270 <= x <= 1e300:
            assert ulp_of(x) == math.ulp(x), x
    for x in (0.0, 1e-300, 1e305, math.inf, -1.0, math.nan):
        assert ulp_of(x) == 0.0  # (no stretch passes with it)


def test_long_stretches_in_groups_give_the_bits_of_one_set_per_event():
    # stretches past EXACT_MIN, averages the shortcut takes and averages it
    # does not, mixed in pools' groups, twins and pairs
    g = random.Random(13)
    assert EXACT_MIN <= 64
    for _ in range(400):
        times = _times(g, g.randrange(2, 300))
        ticks, gaps = _vectors(times)
        lo = g.randrange(len(times) - 1)
        end = g.randrange(lo + 1, len(times) + 1)
        t0 = times[lo]
        spec = []
        for _ in range(g.randrange(1, 12)):
            v = g.choice([0.0, 1.0, 2.0, 3.0, 4.0, 1440.0, g.uniform(0, 50)])
            spec.append((v, g.choice([g.random() * t0 * max(v, 1.0), g.uniform(0, 1e5)]), t0 - g.random() * 0.01))
            if g.random() < 0.3:
                spec.append(spec[-1])  # (a twin: a pool's used and holders)
        want = [_by_sets(_average(*s), times, lo, end) if s[0] != 0.0 else _average(*s) for s in spec]
        for replay in (replay_all, replay_distinct):
            got = [_average(*s) for s in spec]
            replay(got, ticks, gaps, lo, end)
            assert [_bits(a) for a in got] == [_bits(a) for a in want]
        one = [_average(*s) for s in spec]
        for a in one:
            replay_pieces(a, ticks, gaps, lo, end)
        assert [_bits(a) for a in one] == [_bits(a) for a in want]
        if len(spec) >= 2:
            two = [_average(*s) for s in spec[:2]]
            replay_pair(two[0], two[1], ticks, gaps, lo, end)
            assert [_bits(a) for a in two] == [_bits(a) for a in want[:2]]
