"""The six draw laws of serQ 0.1.3, bit-identical to the reference.

Each ``U`` is one ``random_f64()`` of the stream given; the number of ``U``
consumed is part of the contract (it decides every later draw of the
stream).  The float expressions are written in the reference's order; each
was checked against samples observed in pyserq runs (tests/test_rng.py):

============  =======================================================  ====
law           value                                                    U's
============  =======================================================  ====
exp(m)        ``-m * log(1 - U)``  (``log``, not ``log1p``)             1
det(x)        ``x``                                                    0
uniform(a,b)  ``a + (b - a) * U``  (``a > b`` is not rejected)          1
erlang(k,m)   k' = max(1, trunc(k)) exponentials of mean ``m / k'``,    k'
              added in order to ``0.0``
h2(m,v)       v' = max(v, 1), p = ``0.5 * (1 + sqrt((v'-1)/(v'+1)))``;  2
              one U picks mean ``m / (2p)`` if ``U < p`` else
              ``m / (2(1-p))``; then one exponential of that mean
bernoulli(p)  ``1.0`` if ``U < p`` else ``0.0``                         1
============  =======================================================  ====

``max`` follows Rust's ``f64::max``: a NaN argument yields the other one, so
``h2(m, NaN)`` uses v' = 1 and ``erlang(NaN, m)`` draws one exponential.
Parameters are not validated here; the consumer of a draw checks it.
"""
from math import log, sqrt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .rng import Rng

__all__ = ["exp", "det", "uniform", "erlang", "h2", "bernoulli", "poisson_gap", "LAWS", "ARITY", "draw"]


def exp(rng: "Rng", mean: float) -> float:
    """Exponential with mean ``mean``: ``-mean * ln(1 - U)``.  (Typed:
    compiled, the draw is a native call and the arithmetic on machine
    floats; the generated session code calls this where the core is
    compiled, and writes it out where it is not.)"""
    return -mean * log(1.0 - rng.random_f64())


def det(rng, x):
    """The constant ``x``; draws nothing."""
    return x


def uniform(rng, lo, hi):
    """``lo + (hi - lo) * U``."""
    return lo + (hi - lo) * rng.random_f64()


#: The most phases an Erlang draw takes: each is a draw of its own, and the
#: reference, past this, draws for hours (for ever at k = inf).
MAX_ERLANG_PHASES = 1e9


def erlang_phases(k):
    """k' = max(1, trunc(k)) with Rust's float-to-integer cast (NaN gives 1).

    A ``k`` past ``MAX_ERLANG_PHASES`` (inf included) is a ``RunError``
    (the reference would draw for hours, or for ever)."""
    if k >= 2.0:
        if k > MAX_ERLANG_PHASES:
            from ..errors import RunError
            raise RunError("`~erlang(k, mean)`: k is %s phases, more than the %d one draw takes "
                           "at most (each phase is a draw of its own)"
                           % (k if k == float("inf") else "%.17g" % k, MAX_ERLANG_PHASES),
                           help="k is the shape: cv2 = 1/k; a k near 1e9 is a constant "
                                "already (write the mean itself)")
        return int(k)
    return 1


def erlang(rng, k, mean):
    """Sum of k' exponentials of mean ``mean / k'``, added in draw order."""
    n = erlang_phases(k)
    phase = mean / n
    f = rng.random_f64
    total = 0.0
    for _i in range(n):
        total += -phase * log(1.0 - f())
    return total


def h2_branch(cv2):
    """The probability ``p`` of the first phase for a given ``cv2``."""
    v = cv2 if cv2 > 1.0 else 1.0  # Rust max: NaN -> 1
    return 0.5 * (1.0 + sqrt((v - 1.0) / (v + 1.0)))


def h2(rng, mean, cv2):
    """Balanced-means hyperexponential with mean ``mean`` and squared
    coefficient of variation ``max(cv2, 1)``; always two ``U``."""
    p = h2_branch(cv2)
    if rng.random_f64() < p:
        phase = mean / (2.0 * p)
    else:
        phase = mean / (2.0 * (1.0 - p))
    return -phase * log(1.0 - rng.random_f64())


def bernoulli(rng, p):
    """``1.0`` with probability ``p`` (``U < p``), else ``0.0``."""
    return 1.0 if rng.random_f64() < p else 0.0


def poisson_gap(rng, rate):
    """Gap of ``arrive poisson(rate)``: ``-ln(1 - U) / rate`` (a division by
    the rate, not ``exp(1 / rate)``; the first arrival is at t = 0)."""
    return -log(1.0 - rng.random_f64()) / rate


#: Law name (as written after ``~``) -> sampling function ``f(rng, *args)``.
LAWS = {
    "exp": exp,
    "det": det,
    "uniform": uniform,
    "erlang": erlang,
    "h2": h2,
    "bernoulli": bernoulli,
}

#: Law name -> number of arguments.
ARITY = {"exp": 1, "det": 1, "uniform": 2, "erlang": 2, "h2": 2, "bernoulli": 1}


def draw(rng, law, args):
    """Sample ``~law(*args)`` from ``rng`` (arguments already evaluated)."""
    return LAWS[law](rng, *args)
