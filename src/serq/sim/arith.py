"""The arithmetic that the compiled expressions share (exprs.py's closures
and codegen.py's source): IEEE results where Python raises (a division by
zero gives an infinity or NaN, ``ln(0)`` is ``-inf``), the math functions by
name, the context variables' attribute names, and ``fmt`` for messages.
"""
import math
from typing import Final

INF: Final = math.inf
NAN: Final = math.nan


def fdiv(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0.0:
            return NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)


def fpow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except OverflowError:
        if a < 0 and float(b).is_integer() and int(b) % 2 == 1:
            return -INF
        return INF
    except ValueError:
        return NAN


def fln(x: float) -> float:
    if x > 0:
        return math.log(x)
    if x == 0:
        return -INF
    return NAN


def fsqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else NAN


def fexp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return INF


def fmin(a: float, b: float) -> float:
    if a != a:
        return b
    if b != b:
        return a
    return a if a <= b else b


def fmax(a: float, b: float) -> float:
    if a != a:
        return b
    if b != b:
        return a
    return a if a >= b else b


def ffloor(x: float) -> float:
    return float(math.floor(x)) if x == x and x not in (INF, -INF) else x


def fceil(x: float) -> float:
    return float(math.ceil(x)) if x == x and x not in (INF, -INF) else x


MATH1 = {"Abs": abs, "Floor": ffloor, "Ceil": fceil, "Sqrt": fsqrt, "Exp": fexp, "Ln": fln}
MATH2 = {"Min": fmin, "Max": fmax, "Pow": fpow}

CTX_FIELD = {"Waited": "waited", "Size": "size", "Age": "age", "Last": "last",
             "Queued": "queued", "N": "present", "Ntok": "ntok", "Ndec": "ndec",
             "Npre": "npre", "Nres": "nres", "Kvb": "kvb", "Kvp": "kvp", "Attn": "attn",
             "Decoding": "decoding", "Admission": "admission", "Remaining": "remaining",
             "Position": "position", "Admitted": "admitted", "Preempted": "preempted",
             "Demand": "demand", "Served": "served", "Arrived": "arrived"}


def fmt(v: float) -> str:
    if v == v and v not in (INF, -INF) and float(v).is_integer():
        return str(int(v))
    return repr(v)
