"""serq.report.stats is bit-identical to pyserq 0.1.3's report statistics.

Sources of truth: tests/fixtures/report_oracle.json (recorded by
tests/fixtures/make_report_oracle.py, runs everywhere) and, when installed,
pyserq itself on fresh programs (the ``live`` tests).
"""

import pytest

from report_oracle import bits, bits_hex, fixture, oracle
from serq.report import stats as S


def _hexes(xs):
    return [float.fromhex(x) for x in xs]


# ---------------------------------------------------------------------------
# Unit behaviour

def test_welford_small():
    w = S.Welford()
    assert w.variance() is None
    for x in (1.0, 2.0, 4.0):
        w.add(x)
    assert w.n == 3 and w.mean == 7 / 3
    assert abs(w.variance() - 7 / 3) < 1e-15


def test_summarize_empty_and_small():
    assert S.summarize_samples([]) == (0, None, None, None, None)
    assert S.summarize_samples([5.0]) == (1, 5.0, None, None, 5.0)
    n, mean, ci, cv2, p99 = S.summarize_samples([0.0, 0.0])
    assert (n, mean, ci, cv2, p99) == (2, 0.0, None, None, 0.0)  # cv2 null at mean 0
    assert S.summarize_samples([float(i) for i in range(39)])[2] is None
    assert S.summarize_samples([float(i) for i in range(40)])[2] is not None


def test_nearest_rank():
    xs = [float(i) for i in range(1, 101)]
    assert S.nearest_rank(xs, 0.99) == 99.0
    assert S.nearest_rank(xs[:1], 0.99) == 1.0
    assert S.nearest_rank(xs[:150 - 50], 0.5) == 50.0
    assert S.nearest_rank([], 0.5) is None


def test_batch_means_ignores_the_tail():
    base = [float(i % 7) for i in range(40)]
    # 41 samples: 20 batches of 2, the 41st sample is ignored.
    assert S.batch_means_ci(base + [1e9]) == S.batch_means_ci(base)


def test_time_average():
    ta = S.TimeAverage()
    ta.set(0.0, 2.0)
    ta.set(1.0, 4.0)
    assert ta.mean(2.0) == 3.0
    ta.restart(2.0)
    ta.set(3.0, 0.0)
    assert ta.mean(6.0) == 1.0
    assert S.TimeAverage().mean(0.0) == 0.0


def test_gauge_edge_cases():
    assert S.summarize_gauge([], [], 0.0, 10.0) == (0.0, 0.0, 0.0, 0.0)
    mean, ci, lo, hi = S.summarize_gauge([0.0, 5.0, 10.0], [1.0, 3.0, 99.0], 0.0, 10.0)
    assert (mean, ci, lo, hi) == (2.0, S.ci_of_means([1.0] * 10 + [3.0] * 10), 1.0, 3.0)
    # warm-up: the value held at the warm-up end counts, earlier ones not
    assert S.summarize_gauge([0.0, 5.0], [7.0, 3.0], 6.0, 10.0)[2:] == (3.0, 3.0)


def test_itl_histogram_units():
    h = S.ItlHistogram()
    assert h.mean() is None and h.quantile(0.5) is None
    for x in (0.0, 0.0, 1.0):
        h.add(x)
    assert h.quantile(0.5) == 0.0
    assert h.quantile(0.99) == 1.0  # one value in its bucket: clamped to it
    assert h.mean() == 1 / 3


# ---------------------------------------------------------------------------
# Recorded oracle (no pyserq needed)

def test_observes_fixture():
    for case in fixture()["observes"]:
        got = S.summarize_samples(_hexes(case["samples"]))
        exp = case["expect"]
        assert got[0] == exp[0]
        assert [bits(v) for v in got[1:]] == [bits_hex(v) for v in exp[1:]]


def test_gauges_fixture():
    for case in fixture()["gauges"]:
        times, values = _hexes(case["times"]), _hexes(case["values"])
        w, e = float.fromhex(case["warmup"]), float.fromhex(case["end"])
        got = S.summarize_gauge(times, values, w, e)
        assert [bits(v) for v in got] == [bits_hex(v) for v in case["expect"]]
        assert bits(_replay(times, values, w).mean(e)) == bits_hex(case["expect"][0])


def test_itl_fixture():
    for case in fixture()["itl"]:
        h = S.ItlHistogram()
        for g in oracle.itl_gaps(case["n"]):
            h.add(g)
        got = (h.mean(), h.quantile(0.5), h.quantile(0.99))
        assert [bits(v) for v in got] == [bits_hex(v) for v in case["expect"]], case["n"]


def _replay(times, values, warmup):
    """A TimeAverage fed with a gauge's change points, restarted at warm-up."""
    ta = S.TimeAverage(values[0], times[0])
    restarted = warmup <= times[0]
    for t, v in zip(times[1:], values[1:]):
        if not restarted and t > warmup:
            ta.restart(warmup)
            restarted = True
        ta.set(t, v)
    if not restarted:
        ta.restart(warmup)
    return ta


# ---------------------------------------------------------------------------
# Live against pyserq

@pytest.fixture(scope="module")
def pyserq():
    return pytest.importorskip("pyserq")


def test_observes_live(pyserq):
    for src, seed in oracle.observe_programs(6, 4242):
        r = pyserq.run(pyserq.compile(source=src, seed=seed))
        for name, o in r.observes.items():
            got = S.summarize_samples(o.samples)
            assert got[0] == o.count
            assert [bits(v) for v in got[1:]] == [bits(v) for v in (o.mean, o.ci, o.cv2, o.p99)], name


def test_gauges_live(pyserq):
    for src, seed in oracle.gauge_programs(12, 99):
        r = pyserq.run(pyserq.compile(source=src, seed=seed))
        for name, g in r.gauges.items():
            got = S.summarize_gauge(g.times, g.values, r.warmup, r.end)
            assert [bits(v) for v in got] == [bits(v) for v in (g.mean, g.ci, g.min, g.max)], name
            ta = _replay(g.times, g.values, r.warmup)
            assert bits(ta.mean(r.end)) == bits(g.mean)


def test_itl_live(pyserq):
    n = 5000
    s = pyserq.run(pyserq.compile(source=oracle.itl_source(n))).stages[0]
    h = S.ItlHistogram()
    for g in oracle.itl_gaps(n):
        h.add(g)
    got = (h.mean(), h.quantile(0.5), h.quantile(0.99))
    assert [bits(v) for v in got] == [bits(v) for v in (s.mean_itl, s.itl_p50, s.itl_p99)]


# Two stages; every event (arrival, completion at a, completion at b) is seen
# by an observation, so the whole event sequence is known.
LIVE_SOURCE = """
stage a : fifo(3);
stage b : fifo(2);
workload { arrive poisson(2); }
session { observe s = now; run a (~exp(0.7)); observe m = now; run b (~exp(0.6)); observe e = now; }
run { horizon %s; }
"""


def test_time_average_every_event_live(pyserq):
    """mean_live and mean_number: TimeAverage set at every event (not only
    at changes) gives pyserq's bits."""
    for horizon, seed in ((57.3, 1), (200, 2), (500, 3)):
        r = pyserq.run(pyserq.compile(source=LIVE_SOURCE % horizon, seed=seed))
        s, m, e = (r.observe(n).samples for n in ("s", "m", "e"))
        events = sorted(set(s) | set(m) | set(e))

        def average(ins, outs):
            delta = {}
            for t in ins:
                delta[t] = delta.get(t, 0) + 1
            for t in outs:
                delta[t] = delta.get(t, 0) - 1
            ta, n = S.TimeAverage(), 0
            for t in events:
                n += delta.get(t, 0)
                ta.set(t, float(n))
            return ta.mean(r.end)

        assert bits(average(s, e)) == bits(r.mean_live)
        assert bits(average(s, m)) == bits(r.stages[0].mean_number)
        assert bits(average(m, e)) == bits(r.stages[1].mean_number)
