"""Batched stream setup (serq.sim.rng_batch.substreams, StatementStreams, ...):
every batched stream draws exactly what the one-by-one stream draws."""
import random

import pytest

from serq.sim import rng as R
from serq.sim import rng_batch as B
from serq.sim import rng_chacha as C
from serq.sim import rng_seed as K

from fixtures import make_rng_oracle as oracle

M64 = (1 << 64) - 1
_g = random.Random(0x5E51)
SEEDS = [0, 1, 2, 2 ** 32 - 1, 2 ** 63, M64 - 1, M64] + [_g.getrandbits(64) for _ in range(6)]
# (a, b, c) corners: serials near 0 and near wrap-around of the mixing sum.
FIRSTS = [0, 1, 1000, 2 ** 32 - 3, M64 - 300]


@pytest.fixture(params=["rows", "scalar", "native"])
def implementation(request):
    previous = R.use_implementation(request.param)
    yield request.param
    R.use_implementation(previous)


def _draws(rng, number, n):
    return oracle.run_ops(rng, oracle.ops_script(number, n))


def _state(rng):
    """What a fresh batched stream holds once its first block is there, and
    its second block (drawn from the key, which a stream works out again
    from its seed when it refills: Rng._next_words)."""
    rng.next_u32()
    first = rng.seed, tuple(rng._buf)
    second = [rng.next_u32() for _ in range(16)]
    return first, second


def test_wide_batch_matches_scalar_pieces():
    """Seeds, keys and first blocks lane by lane, every batch size."""
    for k in (1, 2, 3, 5, 16, 33, 64, 256):
        for seed, first, b, c in [(SEEDS[k % len(SEEDS)], FIRSTS[k % len(FIRSTS)], 0, 2),
                                  (M64, M64 - k // 2, 7, 1), (0, 0, 0, 0)]:
            seeds, keys, words = B._wide_batch(seed, first, k, b, c)
            assert len(seeds) == k and len(keys) == 8 * k and len(words) == 16 * k
            for j in range(k):
                s = R.substream_seed(seed, first + j, b, c)
                key = K.seed_key(s)
                assert seeds[j] == s, (k, j)
                assert keys[j::k] == key, (k, j)
                assert list(words[j::k]) == C.chacha12_block(key, 0), (k, j)


def test_substreams_state_matches(implementation):
    for seed in SEEDS:
        for first in FIRSTS:
            for count in (1, 3, 4, 17, 300):
                got = B.substreams(seed, first, count, 0, R.STATEMENT_KIND)
                assert len(got) == count
                for j in sorted({0, 1, count // 2, count - 1}):  # (each drawn from once)
                    if j < count:
                        ref = R.statement_stream(seed, first + j)
                        assert _state(got[j]) == _state(ref), (seed, first, count, j)


def test_statement_and_workload_streams_draw_the_same(implementation):
    """Every draw method, long mixed scripts crossing many refills."""
    for i, seed in enumerate(SEEDS):
        first = FIRSTS[i % len(FIRSTS)]
        batched = B.statement_streams(seed, first, 40)
        work = B.workload_streams(seed, first, 40)
        work2 = B.workload_streams(seed, first, 40, turns_taken=3)
        for j in range(0, 40, 7):
            n = 600 if j == 0 else 60
            number = 100 * i + j
            assert _draws(batched[j], number, n) == _draws(R.statement_stream(seed, first + j), number, n)
            assert _draws(work[j], number, n) == _draws(R.workload_stream(seed, first + j, 0), number, n)
            assert _draws(work2[j], number, n) == _draws(R.workload_stream(seed, first + j, 3), number, n)


def test_each_draw_method_from_a_fresh_batched_stream(implementation):
    """The first draw of each kind, then an odd alignment straddling the
    first block's end and the first four-block refill."""
    seed = SEEDS[9]
    streams = B.statement_streams(seed, 5, 64)
    methods = [("next_u32", ()), ("next_u64", ()), ("random_f64", ()),
               ("range_u32", (3, 1000)), ("range_u64", (0, 2 ** 64 - 2)),
               ("range_f64", (-2.5, 7.0))]
    for j, rng in enumerate(streams):
        ref = R.statement_stream(seed, 5 + j)
        name, args = methods[j % len(methods)]
        assert getattr(rng, name)(*args) == getattr(ref, name)(*args)
        rng.next_u32()
        ref.next_u32()
        assert [rng.next_u64() for _ in range(100)] == [ref.next_u64() for _ in range(100)]
        assert [rng.random_f64() for _ in range(50)] == [ref.random_f64() for _ in range(50)]
        assert rng.seed == ref.seed
        assert repr(rng) == repr(ref)


def test_statement_streams_get_in_order_and_not(implementation):
    seed = SEEDS[8]
    src = B.StatementStreams(seed)
    wsrc = B.WorkloadStreams(seed)
    serials = list(range(700)) + [3, 699, 5000, 5001, 2, 10 ** 6]
    for serial in serials:
        rng = src.get(serial)
        ref = R.statement_stream(seed, serial)
        assert [rng.random_f64() for _ in range(9)] == [ref.random_f64() for _ in range(9)], serial
        w = wsrc.get(serial)
        wref = R.workload_stream(seed, serial, 0)
        assert w.next_u64() == wref.next_u64(), serial
    # a stream asked twice is a fresh one each time
    a, b = src.get(10), src.get(10)
    assert a is not b
    assert a.random_f64() == b.random_f64()


def test_batches_grow_to_the_maximum():
    previous = R.use_implementation("rows")
    try:
        src = B.StatementStreams(1)
        sizes = []
        for serial in range(2000):
            src.get(serial)
            if src._first == serial:
                sizes.append(src._k)
        assert sizes[0] == B.BATCH_FIRST
        assert max(sizes) == B.BATCH_MAX
        assert sizes == sorted(sizes)
        assert sum(sizes) >= 2000
    finally:
        R.use_implementation(previous)


def test_live_batched_against_pyserq(implementation):
    pyserq = pytest.importorskip("pyserq")
    for seed in SEEDS[:6]:
        streams = B.statement_streams(seed, 0, 50)
        src = B.WorkloadStreams(seed)
        for j in (0, 1, 17, 49):
            ours = streams[j]
            theirs = pyserq.Rng(R.substream_seed(seed, j, 0, R.STATEMENT_KIND))
            ops = oracle.ops_script(7000 + j, 300)
            assert oracle.run_ops(ours, ops) == oracle.run_ops(theirs, ops), (seed, j)
            w = src.get(j)
            wt = pyserq.Rng(R.substream_seed(seed, j, 0, R.WORKLOAD_KIND))
            assert [w.random_f64() for _ in range(40)] == [wt.random_f64() for _ in range(40)]


def test_probes_with_batched_streams_match_fixture(monkeypatch, implementation):
    """The probes' models (serQ programs whose samples pyserq recorded in
    tests/fixtures/rng_oracle.json) with every session stream taken from
    ``StatementStreams``/``WorkloadStreams``: the same samples."""
    import json
    with open(oracle.FIXTURE) as f:
        recorded = json.load(f)["probes"]
    sources = {}

    def statement_stream(seed, serial):
        return sources.setdefault(("s", seed), B.StatementStreams(seed)).get(serial)

    def workload_stream(seed, serial, turns_taken):
        key = ("w", seed, turns_taken)
        return sources.setdefault(key, B.WorkloadStreams(seed, turns_taken)).get(serial)

    monkeypatch.setattr(R, "statement_stream", statement_stream)
    monkeypatch.setattr(R, "workload_stream", workload_stream)
    for name in sorted(oracle.PROBES):
        assert oracle.probe_digest(oracle.PROBES[name][2]()) == recorded[name], name
    assert sources, "the models did not use the batched streams"


def test_machine_integer_seeding_matches():
    """The signed 64-bit seeding used on PyPy (emulated elsewhere)."""
    for seed in SEEDS:
        assert K._seed_key_s64(seed) == K.seed_key(seed), seed
        for a, b, c in [(0, 0, 2), (1, 0, 1), (2 ** 40, 3, 1), (M64, 0, 2), (2 ** 64 + 5, 1, 3)]:
            expected = K.seed_key(R.substream_seed(seed, a, b, c))
            assert K._sub_key_s64(seed, a, b, c) == expected, (seed, a, b, c)
    for v in (0, 1, 2 ** 63 - 1, 2 ** 63, M64, -1, -(2 ** 63), 2 ** 64, 3 * 2 ** 64 + 7):
        s = K._as_s64(v)
        assert -(2 ** 63) <= s < 2 ** 63 and (s - v) % (2 ** 64) == 0, v


def test_lane_constants_are_the_sums_of_shifted_lanes():
    # _spread and the lane index are built from bytes (linear time); they
    # are the sums of shifted values they stand for.
    from serq.sim import rng_batch
    for k in (1, 3, 64):
        for width in (32, 64, 128):
            assert rng_batch._spread(1, k, width) == sum(1 << (width * j) for j in range(k))
            assert rng_batch._spread(5, k, width) == 5 * sum(1 << (width * j) for j in range(k))
        assert rng_batch._BatchShape(k).iota == sum(j << (128 * j) for j in range(k))
