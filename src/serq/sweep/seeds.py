"""The seeds of a sweep's (and every other repeated command's) replications.

In serQ 0.1.3 a session's streams are seeded from ``seed + serial``
(docs/divergences.md, the feature map's surprise 14): session ``i`` at seed
``s + 1`` draws what session ``i + 1`` draws at seed ``s``, so runs at
consecutive seeds share almost every random draw and are far from
independent.  Confidence intervals over such "replications" are too narrow
(M/M/1 at load 0.5: ten runs at seeds 1..10 spread by 0.07 around 1.89,
ten at seeds 10^6..10^6+9 by 0.16 around 2.09, theory 2).  Replication
``k`` therefore runs at ``first + k * STRIDE``: no run has 2^32 sessions,
so no two replications share a stream.  Each is still an ordinary run:
``serq run --seed`` with the same value gives the same report bytes.
"""
from typing import List

from ..errors import UsageError

#: The distance between the seeds of two replications.
STRIDE = 2 ** 32

#: Seeds are 64-bit.
SEED_LIMIT = 2 ** 64


def replication_seeds(first: int, n: int) -> List[int]:
    """The seeds of ``n`` replications starting at ``first``."""
    if n < 1:
        raise UsageError("--seeds is at least 1")
    last = first + (n - 1) * STRIDE
    if first < 0 or last >= SEED_LIMIT:
        raise UsageError("the seeds of %d replications from %d run past 2^64 - 1 (each is "
                         "2^32 past the one before, so that no two share a session's random "
                         "draws): lower --seed or --seeds" % (n, first))
    return [first + k * STRIDE for k in range(n)]
