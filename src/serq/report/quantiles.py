"""Percentiles of the report beyond 0.1.3's ``p99``, by 0.1.3's definition.

The reference's ``p99`` is the nearest-rank quantile: the ``ceil(q n)``-th
smallest of the ``n`` samples after warm-up (rank clamped to ``1..n``,
``q n`` computed in floating point).  serq's p50, p90 and p99.9 are the same
formula at ``q`` = 0.5, 0.9 and 0.999, so the four columns agree (the p99
here is the report's own ``p99``, byte for byte) and each is a sample value,
never an interpolation.

* An observation kept with ``--no-samples`` has its percentiles from the
  same 1 % log histogram as its p99 (report/stats.py), within 0.5 %
  (relative) of the exact ones.
* A step stage's inter-token latency is a histogram of 1 % log buckets in
  0.1.3 too (``ItlHistogram``): its percentiles are the bucket holding the
  nearest-rank gap, reported as the bucket's geometric middle clamped to
  the smallest and largest gap that fell in it: within 0.5 % of the exact
  gap, exact when the bucket holds one distinct value.
"""
from typing import List, Optional, Sequence, Tuple

from .stats import nearest_rank

#: (q, name) of each percentile the report gives, in column order.
QUANTILES: Tuple[Tuple[float, str], ...] = ((0.5, "p50"), (0.9, "p90"), (0.99, "p99"),
                                            (0.999, "p99.9"))


def sample_quantiles(samples: Sequence[float], is_sorted: bool = False
                     ) -> List[Optional[float]]:
    """The nearest-rank percentiles of samples (``None`` each when empty);
    ``is_sorted``: they are in increasing order already."""
    ordered = samples if is_sorted else sorted(samples)
    return [nearest_rank(ordered, q) for q, _ in QUANTILES]


def histogram_quantiles(hist) -> List[Optional[float]]:
    """The percentiles of an ``ItlHistogram`` or ``SignedLogHistogram``."""
    return [hist.quantile(q) for q, _ in QUANTILES]


def observation_quantiles(o, ordered: Optional[Sequence[float]] = None
                          ) -> List[Optional[float]]:
    """The percentiles of a simulator observation (exact from its samples,
    or from the histogram of a ``--no-samples`` one); ``ordered``: its
    samples sorted, where the caller has them."""
    if o.running:
        return histogram_quantiles(o.summary.hist)
    if ordered is not None:
        return sample_quantiles(ordered, True)
    return sample_quantiles(o.values)
