"""The parameters of serq's extension distributions (``ExtSample``): what
each takes and which values it refuses.

One set of rules for the three places that check them: the linker (a
constant argument, refused before the run), the IR validator (a constant in
IR given to ``serq run``) and the simulator (a value of the run, such as an
attribute: sim/xdist.py raises ``RunError``).  Surface names are lower case
(``lognormal``); the IR's are capitalised (``Lognormal``).
"""
import math
from typing import Dict, Optional, Sequence

#: Each law as it is written, for messages.
SIGNATURE: Dict[str, str] = {
    "lognormal": "~lognormal(mean, cv2)",
    "gamma": "~gamma(k, mean)",
    "pareto": "~pareto(mean, alpha)",
    "empirical": '~empirical("FILE.csv"[, "COLUMN"])',
}

#: Number of expression arguments (``empirical`` takes strings only).
ARITY: Dict[str, int] = {"lognormal": 2, "gamma": 2, "pareto": 2, "empirical": 0}

#: How to mend each law's bad parameters.
HELP: Dict[str, str] = {
    "lognormal": "~lognormal(mean, cv2) with cv2 = (sd / mean)^2; cv2 = 0 is the constant mean",
    "gamma": "~gamma(k, mean): k = 1 / cv2 is the shape (k = 1 an exponential), "
             "the scale is mean / k",
    "pareto": "~pareto(mean, alpha): alpha > 2 for a finite variance; the smallest value "
              "is mean * (alpha - 1) / alpha",
}

#: The most distinct values an empirical table holds (its rows may repeat
#: them without bound, within the file's size).
MAX_DISTINCT = 1000000


def fmt(v: float) -> str:
    """A parameter as a message shows it."""
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e16:
        return "%d" % int(v)
    return "%.17g" % v


def problem(law: str, index: int, v: float) -> Optional[str]:
    """Why argument ``index`` (0 or 1) of ``~law`` cannot be ``v``, or None."""
    ok = 0.0 <= v < math.inf
    what = "the mean"
    if law == "lognormal" and index == 1:
        what = "cv2 (the squared coefficient of variation)"
    elif law == "gamma" and index == 0:
        if 0.0 < v < math.inf:
            return None
        return "the shape k is %s; it must be positive and finite" % fmt(v)
    elif law == "pareto" and index == 1:
        if 1.0 < v < math.inf:
            return None
        return ("the tail index alpha is %s; it must be more than 1 (at 1 or less the mean "
                "is infinite) and finite" % fmt(v))
    if ok:
        return None
    return "%s is %s; it must be 0 or more and finite" % (what, fmt(v))


def problems(law: str, args: Sequence[float]) -> Optional[str]:
    """The first problem of ``~law(*args)``, or None."""
    for i, v in enumerate(args):
        p = problem(law, i, v)
        if p is not None:
            return p
    return None


def table_problem(values: Sequence[float], counts: Sequence[int]) -> Optional[str]:
    """Why ``values``/``counts`` is not an empirical table, or None."""
    if len(values) != len(counts):
        return "%d values but %d counts" % (len(values), len(counts))
    if not values:
        return "an empirical table without values"
    if len(values) > MAX_DISTINCT:
        return "%d distinct values, more than the %d a table holds" % (len(values), MAX_DISTINCT)
    last = -math.inf
    for i, (v, c) in enumerate(zip(values, counts)):
        if not math.isfinite(v):
            return "value %d is %s; the values are finite" % (i, fmt(v))
        if not v > last:
            return "value %d (%s) does not follow %s: the values ascend" % (i, fmt(v), fmt(last))
        if c < 1:
            return "count %d is %d; each value has at least one row" % (i, c)
        last = v
    return None
