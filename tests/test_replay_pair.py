"""A time average's late pieces two, three or four at a time
(report/replay.py ``replay_pair``, ``replay_triple``, ``replay_all`` with
``replay_four``), and averages that agree replayed once
(``replay_distinct``), give the bits of one pass per average."""
import random
import struct

from serq.floatvec import vec
from serq.report.replay import (replay_all, replay_distinct, replay_pair, replay_pieces,
                                replay_triple, twin_of)
from serq.report.stats import TimeAverage


def _avg(g, v):
    a = TimeAverage(0.0)
    a.value, a.area, a.last = v, g.uniform(0, 10), g.uniform(0, 1)
    return a


def _bits(a):
    return struct.pack("<ddd", a.value, a.area, a.last)


def _stretch(g, t0):
    """Event times in ``[t0, 100]``, their gaps, and a stretch ``lo:end``
    of them (the core's vectors: librt's where it is compiled, lists
    elsewhere)."""
    times = sorted(g.uniform(t0, 100) for _ in range(g.randrange(2, 40)))
    ticks = vec[float](times)
    gaps = vec[float]([0.0] + [times[i] - times[i - 1] for i in range(1, len(times))])
    lo = g.randrange(len(ticks) - 1)
    return ticks, gaps, lo, g.randrange(lo + 1, len(ticks) + 1)


def test_pairs_and_groups_give_the_bits_of_single_passes():
    g = random.Random(11)
    for _ in range(300):
        ticks, gaps, lo, end = _stretch(g, 1)
        values = [g.choice([0.0, 1.0, 3.0, g.uniform(0, 50)]) for _ in range(g.randrange(2, 15))]
        seed = g.random()
        one = [_avg(random.Random(seed + i), v) for i, v in enumerate(values)]
        two = [_avg(random.Random(seed + i), v) for i, v in enumerate(values)]
        three = [_avg(random.Random(seed + i), v) for i, v in enumerate(values)]
        four = [_avg(random.Random(seed + i), v) for i, v in enumerate(values)]
        for a in one:
            replay_pieces(a, ticks, gaps, lo, end)
        replay_all(two, ticks, gaps, lo, end)
        replay_pair(three[0], three[1], ticks, gaps, lo, end)
        assert [_bits(a) for a in two] == [_bits(a) for a in one]
        assert [_bits(a) for a in three[:2]] == [_bits(a) for a in one[:2]]
        nonzero = [i for i, v in enumerate(values) if v != 0.0][:3]
        if len(nonzero) == 3:
            replay_triple(*[four[i] for i in nonzero], ticks, gaps, lo, end)
            assert [_bits(four[i]) for i in nonzero] == [_bits(one[i]) for i in nonzero]


def _copy(a):
    b = TimeAverage(0.0)
    b.value, b.area, b.last, b.start = a.value, a.area, a.last, a.start
    return b


def _next_up(x):
    return struct.unpack("<d", struct.pack("<q", struct.unpack("<q", struct.pack("<d", x))[0] + 1))[0]


def test_twins_replayed_once_give_the_bits_of_single_passes():
    g = random.Random(5)
    for _ in range(300):
        ticks, gaps, lo, end = _stretch(g, 0)
        base = [_avg(g, g.choice([0.0, 1.0, 3.0, g.uniform(0, 50)])) for _ in range(g.randrange(1, 6))]
        group = []
        for a in base:
            group.append(a)
            for _ in range(g.randrange(3)):  # twins, and near twins
                b = _copy(a)
                kind = g.randrange(4)
                if kind == 1:
                    b.area = _next_up(b.area)
                elif kind == 2:
                    b.last = _next_up(b.last)
                elif kind == 3:
                    b.value = _next_up(b.value)
                group.append(b)
        g.shuffle(group)
        alone = [_copy(a) for a in group]
        for a in alone:
            replay_pieces(a, ticks, gaps, lo, end)
        replay_distinct(group, ticks, gaps, lo, end)
        assert [_bits(a) for a in group] == [_bits(a) for a in alone]


def test_a_twin_agrees_bit_for_bit():
    a = TimeAverage(2.0)
    a.area, a.last = 3.5, 1.25
    b = _copy(a)
    assert twin_of([a], b) is a
    b.area = _next_up(3.5)
    assert twin_of([a], b) is None
    # zeros of the other sign are not twins (t - (-0.0) and t - 0.0 differ at t = -0.0)
    a.area, a.last = 0.0, 0.0
    c = _copy(a)
    c.last = -0.0
    assert twin_of([a], c) is None
    c.last, c.area = 0.0, -0.0
    assert twin_of([a], c) is None
    c.area = 0.0
    assert twin_of([a], c) is a
