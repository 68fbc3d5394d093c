"""Student's t quantile for whole degrees of freedom, standard library only.

For a whole number of degrees of freedom the t distribution's CDF is a
finite sum of powers of ``cos θ`` with ``θ = atan(t / sqrt(ν))``
(Abramowitz and Stegun 26.7.3 and 26.7.4); ``t_quantile`` inverts it by
bisection to the last bit.  No table, no scipy: the sweep's confidence
intervals are the same on every machine and with or without scipy
installed (tests/test_sweep.py compares it with ``scipy.stats.t.ppf``).
"""
import math


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with ``df`` (a whole number >= 1) degrees
    of freedom."""
    if df < 1:
        raise ValueError("degrees of freedom must be at least 1")
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    if df % 2 == 1:
        total = 0.0
        term = c  # cos θ, then (2/3) cos^3 θ, (2·4)/(3·5) cos^5 θ, ...
        for k in range(1, (df - 1) // 2 + 1):
            total += term
            term *= c2 * (2 * k) / (2 * k + 1)
        a = (theta + s * total) * 2.0 / math.pi if df > 1 else theta * 2.0 / math.pi
    else:
        total = 0.0
        term = 1.0  # 1, (1/2) cos^2 θ, (1·3)/(2·4) cos^4 θ, ...
        for k in range(1, df // 2 + 1):
            total += term
            term *= c2 * (2 * k - 1) / (2 * k)
        a = s * total
    # a = P(|T| <= |t|) with the sign of t
    return 0.5 + 0.5 * a


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (0.5 <= p < 1) of Student's t with ``df`` degrees
    of freedom."""
    if not 0.5 <= p < 1.0:
        raise ValueError("p must be in [0.5, 1)")
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return hi
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
