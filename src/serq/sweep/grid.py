"""The points of a sweep: ``--set NAME=SPEC`` values and their product.

A SPEC is one of

* ``a:b:n`` -- n >= 2 evenly spaced values from a to b, both included
  (``0.5:1.5:11`` is 0.5, 0.6, ..., 1.5).  The values are computed exactly
  (as fractions of the decimal text) and rounded once, so ``0.5:1.5:11``
  gives 0.7, not 0.7000000000000001;
* ``a,b,c`` -- a list of numbers;
* anything else -- one value, passed to the program as ``serq run --set``
  would (a number or a constant expression such as ``2*rate``).

The grid is the Cartesian product in the order the ``--set`` options are
written, the last one varying fastest.
"""
import itertools
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import List, Optional, Sequence, Tuple, Union

from ..errors import UsageError

Value = Union[float, str]

_NUMBER = re.compile(r"^\s*[-+]?(\d[\d_]*(\.[\d_]*)?|\.\d[\d_]*)([eE][-+]?\d+)?\s*$")
_INT = re.compile(r"^\s*\d+\s*$")


@dataclass
class Axis:
    """One ``--set``: a constant's name and its values (floats, or one
    expression text)."""
    name: str
    values: List[Value]


def _is_number(text: str) -> bool:
    return bool(_NUMBER.match(text)) or text.strip() in ("inf", "+inf", "-inf")


def _fraction(text: str) -> Fraction:
    return Fraction(text.strip().replace("_", ""))


def _number(text: str) -> float:
    return float(text.strip().replace("_", ""))


def linspace(a: str, b: str, n: int) -> List[float]:
    """n values from a to b, both included, each the correctly rounded
    value of ``a + (b - a) * i / (n - 1)`` computed exactly."""
    fa, fb = _fraction(a), _fraction(b)
    return [float(fa + (fb - fa) * i / (n - 1)) for i in range(n)]


def parse_axis(text: str, max_points: Optional[int] = None) -> Axis:
    """``NAME=SPEC`` -> an :class:`Axis`; a malformed spec is a usage error
    saying how to write one.  A range of more than ``max_points`` points
    (``--max-runs``) is refused before its values are made."""
    name, eq, spec = text.partition("=")
    name = name.strip()
    if not eq or not name:
        raise UsageError("--set %s: write --set NAME=VALUE, NAME=A:B:N (N values from A to B) "
                         "or NAME=A,B,C" % text)
    if not spec.strip():
        raise UsageError("--set %s: no value after `=`" % text)
    parts = spec.split(":")
    if len(parts) == 3 and all(_is_number(p) for p in parts[:2]):
        a, b, n = parts
        if not _INT.match(n):
            raise UsageError("--set %s: the number of points `%s` is not a whole number"
                             % (text, n.strip()))
        count = int(n)
        if count < 2:
            raise UsageError("--set %s: a range has at least 2 points; for one value write "
                             "--set %s=%s" % (text, name, a.strip()))
        if any(p.strip().lstrip("+-") == "inf" for p in (a, b)):
            raise UsageError("--set %s: a range runs between finite numbers" % text)
        if max_points is not None and count > max_points:
            raise UsageError("--set %s: %d points, more runs than --max-runs %d allows"
                             % (text, count, max_points),
                             help="sweep fewer points, or raise --max-runs if the sweep is "
                                  "meant to be this large")
        return Axis(name, linspace(a, b, count))
    if ":" in spec and all(_is_number(p) for p in parts if p.strip()):
        raise UsageError("--set %s: a range is written A:B:N (from A to B, N points)" % text)
    if "," in spec:
        items = spec.split(",")
        if all(_is_number(p) for p in items):
            values = [_number(p) for p in items]
            return Axis(name, values)
        if any(_is_number(p) for p in items):
            bad = next(p for p in items if not _is_number(p))
            raise UsageError("--set %s: `%s` is not a number; a list is written A,B,C with "
                             "numbers" % (text, bad.strip()))
    if _is_number(spec):
        return Axis(name, [_number(spec)])
    return Axis(name, [spec])


def check_axes(axes: Sequence[Axis], reserved: Sequence[str]) -> None:
    seen = set()
    for ax in axes:
        if ax.name in seen:
            raise UsageError("--set %s is given twice: write all of its values in one --set "
                             "(A,B,C or A:B:N)" % ax.name)
        if ax.name in reserved:
            raise UsageError("a swept constant named `%s` would share its name with a column "
                             "of the table (%s)" % (ax.name, ", ".join(reserved)))
        seen.add(ax.name)


def points(axes: Sequence[Axis]) -> List[Tuple[Value, ...]]:
    """Every combination of the axes' values, the last axis fastest."""
    return list(itertools.product(*[ax.values for ax in axes]))
