"""serq.sim.rng and serq.sim.dist are bit-identical to pyserq 0.1.3.

Two sources of truth: ``pyserq`` itself when installed (the ``live`` tests),
and tests/fixtures/rng_oracle.json, recorded from it by
tests/fixtures/make_rng_oracle.py, so the same checks run under PyPy.
"""
import json
import math

import pytest

from serq.sim import dist
from serq.sim import rng as R
from serq.sim import rng_chacha as C
from serq.sim import rng_seed as K

from fixtures import make_rng_oracle as oracle

M64 = (1 << 64) - 1
IMPLEMENTATIONS = ["rows", "scalar", "native"]


@pytest.fixture(params=IMPLEMENTATIONS)
def implementation(request):
    previous = R.use_implementation(request.param)
    yield request.param
    R.use_implementation(previous)


@pytest.fixture(scope="module")
def fixture():
    with open(oracle.FIXTURE) as f:
        return json.load(f)


# ---------------------------------------------------------------------------
# Recorded oracle (runs everywhere)


def test_fixture_covers_enough(fixture):
    assert sum(case["n"] for case in fixture["ops"]) >= 99000
    seeds = {case["seed"] for case in fixture["ops"]}
    assert {0, 1, 2 ** 53, M64} <= seeds
    assert set(fixture["probes"]) == set(oracle.PROBES)


def test_ops_match_fixture(fixture, implementation):
    for case in fixture["ops"]:
        ops = oracle.ops_script(case["script"], case["n"])
        values = oracle.run_ops(R.Rng(case["seed"]), ops)
        assert oracle.head(values) == case["head"], case["seed"]
        assert oracle.digest(values) == case["sha256"], case["seed"]


@pytest.mark.parametrize("name", sorted(oracle.PROBES))
def test_probe_models_match_fixture(fixture, name):
    model = oracle.probe_digest(oracle.PROBES[name][2]())
    assert model == fixture["probes"][name]


# ---------------------------------------------------------------------------
# Live comparison with pyserq


def _first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if not (x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))):
            return i, x, y
    return None if len(a) == len(b) else (min(len(a), len(b)), "length", "length")


def test_live_ops(implementation):
    pyserq = pytest.importorskip("pyserq")
    for seed, number, n in oracle.OPS_CASES:
        ops = oracle.ops_script(number, n)
        ours = oracle.run_ops(R.Rng(seed), ops)
        theirs = oracle.run_ops(pyserq.Rng(seed), ops)
        assert _first_difference(ours, theirs) is None, (seed, number)


def test_live_fresh_scripts():
    """Scripts not in the fixture, on seeds not in it."""
    pyserq = pytest.importorskip("pyserq")
    g = oracle._SplitMix(2024)
    for k in range(20):
        seed = g.u64()
        ops = oracle.ops_script(5000 + k, 1000)
        assert _first_difference(oracle.run_ops(R.Rng(seed), ops),
                                 oracle.run_ops(pyserq.Rng(seed), ops)) is None, seed


def test_live_long_stream():
    """Far into a stream (many four-block refills), in f64 and mixed strides."""
    pyserq = pytest.importorskip("pyserq")
    ours, theirs = R.Rng(2 ** 53 + 7), pyserq.Rng(2 ** 53 + 7)
    assert [ours.random_f64() for _ in range(20000)] == [theirs.random_f64() for _ in range(20000)]
    ours.next_u32()
    theirs.next_u32()  # odd alignment: every refill is now straddled
    assert [ours.next_u64() for _ in range(5000)] == [theirs.next_u64() for _ in range(5000)]


@pytest.mark.parametrize("name", sorted(oracle.PROBES))
def test_live_probes(name):
    pyserq = pytest.importorskip("pyserq")
    observed = oracle.observe_probe(pyserq, name)
    model = oracle.PROBES[name][2]()
    assert sorted(observed) == sorted(model)
    for key in observed:
        assert _first_difference(model[key], observed[key]) is None, key


def test_live_errors():
    pyserq = pytest.importorskip("pyserq")
    cases = [
        ("range_u32", (2, 1)), ("range_u32", (0, 2 ** 32)), ("range_u32", (-1, 3)),
        ("range_u64", (5, 4)), ("range_u64", (0, 2 ** 64)),
        ("range_f64", (1.0, 0.0)), ("range_f64", (-1e308, 1e308)),
        ("range_f64", (float("nan"), 1.0)), ("range_f64", (0.0, float("inf"))),
    ]
    for name, args in cases:
        with pytest.raises(Exception) as theirs:
            getattr(pyserq.Rng(3), name)(*args)
        with pytest.raises(type(theirs.value)) as ours:
            getattr(R.Rng(3), name)(*args)
        if isinstance(theirs.value, ValueError):
            assert str(ours.value) == str(theirs.value)
    for bad in (-1, 2 ** 64):
        with pytest.raises(OverflowError):
            pyserq.Rng(bad)
        with pytest.raises(OverflowError):
            R.Rng(bad)
    with pytest.raises(TypeError):
        R.Rng(1.5)


# ---------------------------------------------------------------------------
# Internal consistency


def test_block_implementations_agree():
    key = K.seed_key(0xDEADBEEF)
    for counter in (0, 1, 7, 2 ** 32 - 2, 2 ** 32 - 1, 2 ** 32, M64 - 1):
        expected = C._blocks_scalar(key, counter, 4)
        assert list(C._four_row_blocks(key, counter)) == expected
        assert C._one_row_block(key, counter) == expected[:16]
        assert C.chacha12_block(key, counter) == expected[:16]
    # the 64-bit counter wraps
    assert C._blocks_scalar(key, M64, 2)[16:] == C.chacha12_block(key, 0)


def test_seed_key_versions_agree():
    g = oracle._SplitMix(5)
    for seed in [0, 1, M64] + [g.u64() for _ in range(100)]:
        assert K._seed_key_fast(seed) == K.seed_key(seed)


def test_first_block_on_machine_integers_agrees():
    # native_first_block keeps each u64 as two 32-bit halves (mypyc's i64);
    # edge values exercise every carry and the rotation by 0
    g = oracle._SplitMix(11)
    edges = [0, 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1, 2 ** 63, M64 - 1, M64]
    cases = [(s, a, b, c) for s in edges[::2] for a in edges[1::2] for b in (0, M64)
             for c in (0, 2, M64)]
    cases += [(g.u64(), g.u64() >> (g.u64() % 64), g.u64() % 5, g.u64() % 4)
              for _ in range(400)]
    for seed, a, b, c in cases:
        want = C.chacha12_block(K.seed_key(K.substream_seed(seed, a, b, c)), 0)
        assert K.native_first_block(seed, a, b, c).to_list() == want, (seed, a, b, c)


def test_first_block_unboxed_reads_as_its_list():
    # a session stream's first block is kept as a Words16 (its words as
    # attributes); as a sequence it is the block's list
    words = C.chacha12_block(K.seed_key(12345), 0)
    w = C.chacha12_words(*K.seed_key(12345), 0, 0)
    assert len(w) == 16 and list(w) == words and w.to_list() == words
    assert [w[i] for i in range(-16, 16)] == words + words
    assert w[3:] == words[3:] and w[::5] == words[::5] and tuple(w) == tuple(words)
    assert [w.u64(i) for i in range(15)] == [(words[i + 1] << 32) | words[i] for i in range(15)]
    with pytest.raises(IndexError):
        w[16]
    assert w == C.chacha12_words(*K.seed_key(12345), 0, 0) and w != words


@pytest.mark.parametrize("start", [0, 1, 13, 14, 15])
def test_draws_from_an_unboxed_first_block_match(start):
    # every kind of draw, from each offset, across the end of the first
    # block into the refill: the same numbers as a stream whose block is a list
    from serq.sim import rng_batch as B
    boxed = R.Rng(R.substream_seed(5, 9, 0, 2))
    streams = B.StatementStreams(5)
    streams._one = K.native_first_block
    unboxed = streams.get(9)
    assert type(unboxed._buf) is C.Words16
    for r in (boxed, unboxed):
        for _ in range(start):
            r.next_u32()
    draws = []
    for r in (boxed, unboxed):
        draws.append([(r.next_u32(), r.next_u64(), r.random_f64(), r.next_u32(),
                       r.range_f64(0.5, 2.0), r.range_u64(0, 10))
                      for _ in range(6)])
    assert draws[0] == draws[1]


@pytest.mark.parametrize("implementation", ["rows", "native", "scalar"])
def test_streams_are_the_same_whichever_first_block(implementation):
    # the compiled core sets up session streams one by one on machine
    # integers ("native": Substreams.get and the deferred first draw); the
    # batched and deferred set-ups draw the same numbers
    from serq.sim import rng_batch as B
    serials = list(range(0, 600, 13)) + [2 ** 40]
    plain = [R.Rng(R.substream_seed(77, a, 0, 2)) for a in serials]
    reference = [[r.next_u64() for _ in range(70)] for r in plain]
    previous = R.use_implementation(implementation)
    try:
        one_by_one = B.StatementStreams(77)
        batched = B.StatementStreams(77)
        one_by_one._one = K.native_first_block
        batched._one = None
        for n, a in enumerate(serials):
            x, y, z = one_by_one.get(a), batched.get(a), R.statement_stream(77, a)
            for r in (x, y, z):
                assert [r.next_u64() for _ in range(70)] == reference[n]
            assert x.seed == y.seed == z.seed
    finally:
        R.use_implementation(previous)


def test_stream_seeds():
    s = 0x0123456789ABCDEF
    assert R.arrival_stream(s).seed == s
    assert R.machine_stream(s).seed == s ^ 0x5851F42D4C957F2D
    assert R.evict_stream(s).seed == s ^ 0x2545F4914F6CDD1D
    assert R.trace_stream(s).seed == s ^ 0x6A09E667F3BCC908
    assert R.workload_stream(s, 4, 2).seed == R.substream_seed(s, 4, 2, 1)
    assert R.statement_stream(s, 4).seed == R.substream_seed(s, 4, 0, 2)
    assert R.leg_stream(s, 4, 3).seed == R.substream_seed(s, 4, 3, 3)
    # substream is additive in (seed, serial): feature-map surprise 14
    assert R.substream_seed(s + 1, 4, 0, 2) == R.substream_seed(s, 5, 0, 2)
    deferred = R.substream(s, 9, 1, 2)
    assert deferred.random_f64() == R.Rng(R.substream_seed(s, 9, 1, 2)).random_f64()


def test_draw_counts():
    """Each law consumes the documented number of U's."""
    nan = float("nan")
    cases = [
        ("exp", (1.0,), 1), ("det", (3.0,), 0), ("uniform", (0.0, 1.0), 1),
        ("erlang", (3.9, 1.0), 3), ("erlang", (0.5, 1.0), 1), ("erlang", (nan, 1.0), 1),
        ("h2", (1.0, 0.2), 2), ("h2", (1.0, nan), 2), ("bernoulli", (0.5,), 1),
    ]
    for law, args, used in cases:
        a, b = R.Rng(99), R.Rng(99)
        dist.draw(a, law, args)
        for _ in range(used):
            b.random_f64()
        assert a.next_u64() == b.next_u64(), (law, args)
