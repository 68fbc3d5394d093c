"""A time average's late pieces two, three or nine at a time
(report/stats.py ``replay_pair``, ``replay_triple``, ``replay_all`` with
``replay_nine``) give the bits of one pass per average."""
import random
import struct

from serq.floatvec import vec
from serq.report.stats import TimeAverage, replay_all, replay_pair, replay_pieces, replay_triple


def _avg(g, v):
    a = TimeAverage(0.0)
    a.value, a.area, a.last = v, g.uniform(0, 10), g.uniform(0, 1)
    return a


def _bits(a):
    return struct.pack("<ddd", a.value, a.area, a.last)


def test_pairs_and_groups_give_the_bits_of_single_passes():
    g = random.Random(11)
    for _ in range(300):
        times = sorted(g.uniform(1, 100) for _ in range(g.randrange(2, 40)))
        # (the core's vectors: librt's where it is compiled, lists elsewhere)
        ticks = vec[float](times)
        gaps = vec[float]([0.0] + [times[i] - times[i - 1] for i in range(1, len(times))])
        lo = g.randrange(len(ticks) - 1)
        end = g.randrange(lo + 1, len(ticks) + 1)
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
