"""The seeds of the replications of every repeated command (``serq sweep
--seeds``, ``serq compare``, ``serq sensitivity``, ``serq capacity``).

In serQ 0.1.3 a session's streams (workload, statements, fork legs) are
seeded from ``substream_seed(seed, serial, ...)`` (sim/rng_seed.py), whose first
step adds the seed and the session's serial (the feature map's surprise
14): session ``k + 1`` at seed ``s`` draws exactly what session ``k`` draws
at seed ``s + 1``, so runs at consecutive seeds share almost every
session's draws and are far from independent.  Confidence intervals over
such "replications" are too narrow and carry the bias of one shared
sequence of draws (an M/M/1 queue at load 0.5, horizon 4000: the mean
sojourn over seeds 1..20 is 1.745 ± 0.034, over seeds ``1 + k * 2^32`` it
is 2.013 ± 0.068, 95 % t intervals; the exact value is 2).

Replication ``k`` therefore runs at ``first + k * 2^32``: no run has 2^32
sessions, so no two replications share a session stream (the other
streams are seeded by the whole seed and differ anyway).  Each is still an
ordinary run: ``serq run --seed`` with the same value gives the same bytes.
"""
from typing import List

from ..errors import UsageError

#: The distance between the seeds of two replications.
STRIDE = 1 << 32

#: Seeds are 64-bit.
MAX_SEED = (1 << 64) - 1


def replication_seeds(first: int, n: int) -> List[int]:
    """``first + k * STRIDE`` for ``k`` in ``0..n-1``; a usage error when
    there are none or the last is past 2^64 - 1."""
    if n < 1:
        raise UsageError("--seeds is at least 1")
    last = first + (n - 1) * STRIDE
    if first < 0 or last > MAX_SEED:
        raise UsageError("--seed %d with --seeds %d: the last seed, %d + %d * 2^32, is past "
                         "2^64 - 1 (replications are 2^32 apart, so that no two share a "
                         "session's random draws)" % (first, n, first, n - 1),
                         help="lower --seed or --seeds")
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
