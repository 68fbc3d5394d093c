"""The reference's arithmetic on constants: IEEE doubles as Rust computes
them (``ln(0)`` is ``-inf``, ``sqrt(-1)`` and ``0/0`` NaN, an overflowing
``exp`` or ``^`` infinite, ``min``/``max`` letting a number win over NaN),
comparisons and logic giving 0 or 1.

Both constant folders use it: the parser's, for array sizes and the
``let``s they read, and the linker's, for every other constant position.
"""
import math
from typing import Callable, Dict


def _pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except OverflowError:
        return math.inf if a > 0 or float(b).is_integer() and b % 2 == 0 else -math.inf
    except ValueError:
        return math.nan


def _div(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _mul(a: float, b: float) -> float:
    return a * b


def _ln(x: float) -> float:
    if x == 0.0:
        return -math.inf
    if x < 0 or math.isnan(x):
        return math.nan
    return math.log(x)


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _floor(x: float) -> float:
    return x if math.isinf(x) or math.isnan(x) else float(math.floor(x))


def _ceil(x: float) -> float:
    return x if math.isinf(x) or math.isnan(x) else float(math.ceil(x))


def _min(a: float, b: float) -> float:
    # Rust's f64::min: NaN loses to a number.
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a <= b else b


def _max(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a >= b else b


MATH_FUNS: Dict[str, Callable] = {
    "min": _min, "max": _max, "abs": abs, "floor": _floor, "ceil": _ceil,
    "sqrt": _sqrt, "exp": _exp, "ln": _ln, "pow": _pow,
}
MATH_ARITY = {"min": 2, "max": 2, "abs": 1, "floor": 1, "ceil": 1, "sqrt": 1,
              "exp": 1, "ln": 1, "pow": 2}


def binop(op: str, a: float, b: float) -> float:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return _mul(a, b)
    if op == "/":
        return _div(a, b)
    if op == "^":
        return _pow(a, b)
    if op == "<":
        return 1.0 if a < b else 0.0
    if op == "<=":
        return 1.0 if a <= b else 0.0
    if op == ">":
        return 1.0 if a > b else 0.0
    if op == ">=":
        return 1.0 if a >= b else 0.0
    if op == "==":
        return 1.0 if a == b else 0.0
    if op == "!=":
        return 1.0 if a != b else 0.0
    raise ValueError(op)


def min_max(kind: str, a: float, b: float) -> float:
    """One step of ``max``/``min``/``sum … in``'s left fold."""
    if kind == "max":
        return _max(a, b)
    if kind == "min":
        return _min(a, b)
    return a + b
