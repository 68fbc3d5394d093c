"""Seeds for independent replications: ``S + k * 2^32``.

serQ 0.1.3 keys each session's streams (workload, statements, fork legs)
by ``substream_seed(seed, serial, ...)`` (sim/rng.py), whose first step
adds the seed and the session's serial.  So session ``k + 1`` of seed
``s`` draws exactly what session ``k`` of seed ``s + 1`` draws: runs at
consecutive seeds share their sessions' service times, lengths and
choices, shifted by one session, and only their arrival, machine and
eviction streams differ.  Their means vary less from seed to seed than
independent runs', and the mean over them carries the bias of one shared
sequence of draws (an M/M/1 queue at load 0.5, horizon 4000: the mean
sojourn over seeds 1..20 is 1.745 ± 0.034, over seeds ``1 + k * 2^32`` it is
2.013 ± 0.068 (95 % t intervals), the exact value being 2).

Seeds ``2^32`` apart share no session stream in a run of fewer than
``2^32`` sessions, which is every run serq can make; the other streams are
seeded by the whole seed and differ anyway.  ``serq compare`` and ``serq
sensitivity`` replicate at these seeds (``serq sweep --seeds`` keeps its
consecutive seeds, as its table always had).
"""
from typing import List

from ..errors import UsageError

STRIDE = 1 << 32
MAX_SEED = (1 << 64) - 1


def replication_seeds(first: int, n: int) -> List[int]:
    """``first + k * STRIDE`` for ``k`` in ``0..n-1``; a usage error when
    the last is past 2^64 - 1."""
    last = first + (n - 1) * STRIDE
    if last > MAX_SEED:
        raise UsageError("--seed %d with --seeds %d: the last seed, %d + %d * 2^32, is past "
                         "2^64 - 1" % (first, n, first, n - 1), help="lower --seed")
    return [first + k * STRIDE for k in range(n)]


def describe(seeds: List[int]) -> str:
    """``10 seeds S + k * 2^32 (S = 1, k = 0..9)``."""
    if len(seeds) == 1:
        return "1 seed (%d)" % seeds[0]
    first = seeds[0] % STRIDE
    ks = [(s - first) // STRIDE for s in seeds]
    if any(s % STRIDE != first for s in seeds):
        return "%d seeds" % len(seeds)
    if ks == list(range(ks[0], ks[0] + len(ks))):
        return "%d seeds S + k * 2^32 (S = %d, k = %d..%d)" % (len(seeds), first, ks[0], ks[-1])
    return "%d seeds S + k * 2^32 (S = %d, k in %s)" % (len(seeds), first,
                                                       ", ".join(str(k) for k in ks))
