"""serq's extension laws (not serQ 0.1.3): lognormal, gamma, Pareto, empirical.

Written as serQ writes its laws, by their mean first (docs/distributions.md
says why):

================  ==========================================================
law               value
================  ==========================================================
lognormal(m, v)   ``exp(mu + s * Z)``, ``s^2 = ln(1 + v)``, ``mu = ln(m) -
                  s^2 / 2``: mean ``m``, squared coefficient of variation ``v``
gamma(k, m)       shape ``k``, scale ``m / k`` (Marsaglia and Tsang's method;
                  ``k < 1`` by ``gamma(k + 1) * U^(1/k)``): mean ``m``
pareto(m, a)      ``x_m * (1 - U)^(-1/a)``, ``x_m = m (a - 1) / a``: mean
                  ``m``, tail index ``a > 1``, smallest value ``x_m``
empirical(table)  a row of the table, each row equally likely (the sorted
                  values and their counts; the ``U``-quantile of the rows)
================  ==========================================================

``Z`` is a standard normal, ``Phi^-1(U)`` (Wichura's algorithm AS 241, one
``U`` per normal, accurate to about 1e-16), and ``U`` is never 0 for it.

Each law draws from a stream of its own: the companion ``law`` of the stream
a 0.1.3 law at the same place reads (``Rng.extension``).  So a program that
uses none of these draws exactly what it draws in serQ 0.1.3, and adding one
of them to a program moves none of its 0.1.3 draws.  The number of ``U``
a gamma draw takes varies (rejection); that only moves its own stream.

Parameters are checked here (``RunError``) when they come from the run,
such as an attribute; the linker checks constant ones before the run (the
rules: ir/laws.py).
"""
from bisect import bisect_right
from math import exp, inf, log, log1p, sqrt
from typing import Any, Dict, Final, List, Sequence, Tuple

from ..ir import laws
from .rng import Rng

__all__ = ["LOGNORMAL", "GAMMA", "PARETO", "EMPIRICAL", "LAWS", "lognormal", "gamma",
           "pareto", "Empirical", "normal_quantile", "sampler"]

#: The companion stream of each law (``Rng.extension(law)``).
LOGNORMAL: Final = 0
GAMMA: Final = 1
PARETO: Final = 2
EMPIRICAL: Final = 3

#: 2**-54: what ``U = 0`` is replaced by where a law needs ``0 < U``.
_TINY_U: Final = 5.551115123125783e-17


def _open_u(r: Rng) -> float:
    """One ``U`` of ``r`` in ``(0, 1)``: 0 (one draw in 2**53) becomes 2**-54."""
    u = r.random_f64()
    return u if u > 0.0 else _TINY_U


# --------------------------------------------------------------- the normal

# Wichura (1988), Algorithm AS 241 (PPND16), Applied Statistics 37(3):
# the numerator and denominator coefficients of each of its three
# rational approximations, highest power first.
_A: Tuple[float, ...] = (2509.0809287301226727, 33430.575583588128105, 67265.770927008700853,
             45921.953931549871457, 13731.693765509461125, 1971.5909503065514427,
             133.14166789178437745, 3.387132872796366608)
_B: Tuple[float, ...] = (5226.495278852854561, 28729.085735721942674, 39307.89580009271061,
             21213.794301586595867, 5394.1960214247511077, 687.1870074920579083,
             42.313330701600911252, 1.0)
_C: Tuple[float, ...] = (7.7454501427834140764e-4, 0.0227238449892691845833, 0.24178072517745061177,
             1.27045825245236838258, 3.64784832476320460504, 5.7694972214606914055,
             4.6303378461565452959, 1.42343711074968357734)
_D: Tuple[float, ...] = (1.05075007164441684324e-9, 5.475938084995344946e-4, 0.015198666563616457197,
             0.14810397642748007459, 0.68976733498510000455, 1.6763848301838038494,
             2.05319162663775882187, 1.0)
_E: Tuple[float, ...] = (2.01033439929228813265e-7, 2.71155556874348757815e-5, 0.0012426609473880784386,
             0.026532189526576123093, 0.29656057182850489123, 1.7848265399172913358,
             5.4637849111641143699, 6.6579046435011037772)
_F: Tuple[float, ...] = (2.04426310338993978564e-15, 1.4215117583164458887e-7, 1.8463183175100546818e-5,
             7.868691311456132591e-4, 0.0148753612908506148525, 0.13692988092273580531,
             0.59983220655588793769, 1.0)


def _poly(c: Sequence[float], x: float) -> float:
    """``c[0] x^7 + c[1] x^6 + ... + c[7]`` (Horner)."""
    acc = 0.0
    for a in c:
        acc = acc * x + a
    return acc


def normal_quantile(p: float) -> float:
    """``Phi^-1(p)`` for ``0 < p < 1`` (AS 241)."""
    q = p - 0.5
    if abs(q) <= 0.425:
        r = 0.180625 - q * q
        return q * _poly(_A, r) / _poly(_B, r)
    r = p if q < 0.0 else 1.0 - p
    r = sqrt(-log(r))
    if r <= 5.0:
        r -= 1.6
        x = _poly(_C, r) / _poly(_D, r)
    else:
        r -= 5.0
        x = _poly(_E, r) / _poly(_F, r)
    return -x if q < 0.0 else x


def _normal(r: Rng) -> float:
    return normal_quantile(_open_u(r))


def _refuse(law: str, args: Sequence[float]) -> Exception:
    from ..errors import RunError
    why = laws.problems(law, args) or "bad parameters"
    return RunError("`%s`: %s" % (laws.SIGNATURE[law], why), help=laws.HELP.get(law))


# --------------------------------------------------------------------- laws


def lognormal(rng: Rng, mean: float, cv2: float) -> float:
    """Lognormal of mean ``mean`` and squared coefficient of variation ``cv2``."""
    if not (0.0 <= mean < inf and 0.0 <= cv2 < inf):
        raise _refuse("lognormal", [mean, cv2])
    z = _normal(rng.extension(LOGNORMAL))
    if mean == 0.0:
        return 0.0
    s2 = log1p(cv2)
    return exp(log(mean) - 0.5 * s2 + sqrt(s2) * z)


def _unit_gamma(r: Rng, k: float) -> float:
    """Gamma of shape ``k`` and scale 1 (Marsaglia and Tsang, 2000)."""
    boost = 1.0
    if k < 1.0:
        # gamma(k) = gamma(k + 1) * U^(1/k); U drawn first
        boost = _open_u(r) ** (1.0 / k)
        k += 1.0
    d = k - 1.0 / 3.0
    c = 1.0 / sqrt(9.0 * d)
    while True:
        z = _normal(r)
        v = 1.0 + c * z
        if v <= 0.0:
            continue
        v = v * v * v
        u = _open_u(r)
        if log(u) < 0.5 * z * z + d - d * v + d * log(v):
            return d * v * boost


def gamma(rng: Rng, k: float, mean: float) -> float:
    """Gamma of shape ``k`` and mean ``mean`` (scale ``mean / k``)."""
    if not (0.0 < k < inf and 0.0 <= mean < inf):
        raise _refuse("gamma", [k, mean])
    return _unit_gamma(rng.extension(GAMMA), k) * (mean / k)


def pareto(rng: Rng, mean: float, alpha: float) -> float:
    """Pareto (type I) of mean ``mean`` and tail index ``alpha > 1``."""
    if not (0.0 <= mean < inf and 1.0 < alpha < inf):
        raise _refuse("pareto", [mean, alpha])
    u = rng.extension(PARETO).random_f64()
    xm = mean * (alpha - 1.0) / alpha
    return xm * (1.0 - u) ** (-1.0 / alpha)


class Empirical(object):
    """``~empirical(…)``: the rows of a table, each equally likely.

    ``values`` ascending, ``counts[i]`` the rows holding ``values[i]``.  A
    draw takes one ``U`` of its stream and returns the value of row
    ``floor(U * rows)`` in sorted order (so a larger ``U`` never draws a
    smaller value)."""

    def __init__(self, values: Sequence[float], counts: Sequence[int]) -> None:
        self.values: List[float] = [float(v) for v in values]
        cum: List[int] = []
        total = 0
        for c in counts:
            total += int(c)
            cum.append(total)
        self.cum = cum
        self.rows = total

    def draw(self, rng: Rng) -> float:
        rows = self.rows
        k = int(rng.extension(EMPIRICAL).random_f64() * rows)
        if k >= rows:
            k = rows - 1
        return self.values[bisect_right(self.cum, k)]


#: Law name (as written after ``~``) -> its sampler ``f(rng, a, b)``
#: (``empirical`` is an ``Empirical`` object's ``draw``).
LAWS: Dict[str, Any] = {"lognormal": lognormal, "gamma": gamma, "pareto": pareto}

def sampler(law: str, values: Any, counts: Any) -> Any:
    """The function that draws ``~law``: ``f(rng, a, b)``, or for
    ``empirical`` ``f(rng)`` over its table."""
    if law == "empirical":
        return Empirical(values, counts).draw
    return LAWS[law]
