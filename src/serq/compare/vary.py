"""``serq sensitivity --vary NAME=LOW:HIGH``: which ``let`` constant, and the
two values it takes around its base.

A range is written relative to the base value, ``-10%:+10%`` (``10%`` is
short for ``-10%:+10%``), or as the two values, ``0.8:1.2``.  The base is
the constant's value in the program (after any ``--set``); it must lie in
the range and not be 0 (an elasticity is relative to it).

A constant the program needs as a whole number (a server count, a slot
capacity) is an *integer constant*: its base is a whole number and the
program does not compile with the base plus one half.  Its low and high
values are rounded to the nearest whole number (halves away from zero), and
the output says so; a range that rounds to the base on both sides is an
error saying how wide it must be.  A constant that sizes an array is
resolved while the program is parsed and cannot be varied.
"""
import math
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import SerqError, UsageError

_NUM = r"[-+]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][-+]?\d+)?"
_PCT = re.compile(r"^\s*(%s)\s*%%\s*$" % _NUM)
_ABS = re.compile(r"^\s*(%s)\s*$" % _NUM)

HOW = "write --vary NAME=-10%:+10% (relative to the constant's value), NAME=10% (the same) " \
      "or NAME=LOW:HIGH (two values)"


@dataclass
class Range:
    """A parsed ``--vary``: relative (fractions, ``-0.1``, ``0.1``) or
    absolute (the values)."""
    text: str
    name: str
    relative: bool
    low: float
    high: float


@dataclass
class Vary:
    """A constant and the values it takes: ``low`` and ``high`` (rounded
    for an integer constant, ``asked`` keeping the values before)."""
    range: Range
    base: float
    low: float
    high: float
    integer: bool
    asked: Tuple[float, float]

    @property
    def name(self) -> str:
        return self.range.name

    def describe(self) -> str:
        """A line saying what the constant takes."""
        from ..report.text import num
        rng = self.range
        spec = ("%s%%:%s%%" % (_pct(rng.low), _pct(rng.high))) if rng.relative else \
            "%s:%s" % (num(rng.low), num(rng.high))
        line = "%s = %s: low %s, high %s (%s)" % (self.name, num(self.base), num(self.low),
                                                  num(self.high), spec)
        if self.integer:
            line += "; an integer constant (the program refuses %s), so the values asked, " \
                    "%s and %s, are rounded" % (num(self.base + 0.5), num(self.asked[0]),
                                                num(self.asked[1]))
        return line


def _pct(fraction: float) -> str:
    from ..report.text import num
    x = fraction * 100.0
    return ("+" if x > 0 else "") + num(round(x, 10))


def _number(text: str) -> float:
    return float(text.strip().replace("_", ""))


def parse_range(text: str) -> Range:
    """``NAME=SPEC`` -> a :class:`Range`; a malformed one is a usage error
    saying how to write it."""
    name, eq, spec = text.partition("=")
    name = name.strip()
    if not eq or not name:
        raise UsageError("--vary %s: %s" % (text, HOW))
    parts = spec.split(":")
    if len(parts) == 1:
        m = _PCT.match(parts[0])
        if m is None:
            raise UsageError("--vary %s: one value is a percentage (10%% for -10%%:+10%%); %s"
                             % (text, HOW))
        x = abs(_number(m.group(1))) / 100.0
        if x == 0.0:
            raise UsageError("--vary %s: a range of 0%% varies nothing" % text)
        return _checked(Range(text, name, True, -x, x))
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise UsageError("--vary %s: a range has two ends, LOW:HIGH; %s" % (text, HOW))
    pct = [_PCT.match(p) for p in parts]
    num = [_ABS.match(p) for p in parts]
    if all(pct):
        return _checked(Range(text, name, True, _number(pct[0].group(1)) / 100.0,
                              _number(pct[1].group(1)) / 100.0))
    if all(num):
        return _checked(Range(text, name, False, _number(num[0].group(1)),
                              _number(num[1].group(1))))
    if any(pct) and any(num):
        raise UsageError("--vary %s: both ends are percentages (-10%%:+10%%) or both are "
                         "values (0.8:1.2), not one of each" % text)
    bad = next(p for p, a, b in zip(parts, pct, num) if not (a or b))
    raise UsageError("--vary %s: `%s` is neither a number nor a percentage; %s"
                     % (text, bad.strip(), HOW))


def _checked(r: Range) -> Range:
    if not all(math.isfinite(x) for x in (r.low, r.high)):
        raise UsageError("--vary %s: the ends are finite numbers" % r.text)
    if not r.low < r.high:
        raise UsageError("--vary %s: the low end is not below the high end" % r.text,
                         help="write the lower value first: --vary %s=%s" % (
                             r.name, "-10%:+10%" if r.relative else "LOW:HIGH"))
    if r.relative and r.low <= -1.0:
        raise UsageError("--vary %s: %s%% would take the constant to 0 or past it"
                         % (r.text, _pct(r.low)),
                         help="a relative range stays above -100%")
    if r.relative and not (r.low <= 0.0 <= r.high):
        raise UsageError("--vary %s: the range leaves out the base value (0%%)" % r.text,
                         help="the low end is at most 0%% and the high end at least 0%%: "
                              "--vary %s=-10%%:+10%%" % r.name)
    return r


def let_values(file: str, sets: Dict[str, object], defs: Dict[str, str]
               ) -> Tuple[Dict[str, float], List[str]]:
    """The value of every ``let`` of a program (with the overrides), and the
    constants that size arrays.  Called after the program compiled, so the
    folding cannot fail."""
    from ..compiler import is_ir, parse_expression, read_source
    from ..depth import deep_recursion
    from ..link.program import Linker, Overrides
    from ..syntax.parser import parse_program
    text = read_source(file)
    if is_ir(file, text):
        raise UsageError("%s is IR, whose constants are folded in: vary the constants of the "
                         "program file" % file)
    with deep_recursion():
        prog = parse_program(text, file, defs=defs, sets=sets)
        linker = Linker(prog, Overrides(sets=sets), parse_expression)
        linker.lets()
    return dict(linker.scope.lets), list(getattr(prog, "array_lets", []) or [])


def _round(x: float) -> float:
    return float(math.floor(abs(x) + 0.5)) * (1.0 if x >= 0 else -1.0)


def resolve(ranges: Sequence[Range], lets: Dict[str, float], array_lets: Sequence[str],
            compiles: Callable[[str, float], bool]) -> List[Vary]:
    """Each range against the program's constants: the values it takes.
    ``compiles(name, value)`` says whether the program compiles with the
    constant at that value (the test of an integer constant)."""
    from ..report.text import num
    seen = set()
    out = []
    for r in ranges:
        if r.name in seen:
            raise UsageError("--vary %s is given twice: vary each constant once" % r.name)
        seen.add(r.name)
        if r.name not in lets:
            raise UsageError("--vary %s: the program has no constant `%s`" % (r.text, r.name),
                             help="its `let` constants are: %s"
                                  % (", ".join(lets) or "(none)"))
        if r.name in array_lets:
            raise UsageError("--vary %s: `%s` sizes an array, which is resolved while the "
                             "program is parsed: it cannot be varied" % (r.text, r.name),
                             help="change the `let` in the program, or compare two programs "
                                  "with `serq compare`")
        base = lets[r.name]
        if not math.isfinite(base):
            raise UsageError("--vary %s: `%s` is %s, which has no neighbourhood to vary"
                             % (r.text, r.name, num(base)))
        if base == 0.0:
            raise UsageError("--vary %s: `%s` is 0, and an elasticity is relative to the base "
                             "value" % (r.text, r.name),
                             help="give the constant a non-zero value with --set %s=VALUE"
                                  % r.name)
        if r.relative:
            lo, hi = base * (1.0 + r.low), base * (1.0 + r.high)
        else:
            lo, hi = r.low, r.high
            if not (lo <= base <= hi):
                raise UsageError("--vary %s: the range leaves out `%s`'s value %s"
                                 % (r.text, r.name, num(base)),
                                 help="a range goes from below the base value to above it")
        asked = (lo, hi)
        integer = float(base).is_integer() and not compiles(r.name, base + 0.5)
        if integer:
            lo, hi = _round(lo), _round(hi)
            if lo == hi:
                need = 0.5 / abs(base) * 100.0
                raise UsageError("--vary %s: `%s` is an integer constant (the program refuses "
                                 "%s), and %s and %s both round to %s"
                                 % (r.text, r.name, num(base + 0.5), num(asked[0]),
                                    num(asked[1]), num(base)),
                                 help="widen the range: at least ±%s%% reaches the next whole "
                                      "number" % num(math.ceil(need * 10) / 10))
        out.append(Vary(r, base, lo, hi, integer, asked))
    return out


def trial(file: str, sets: Dict[str, object], defs: Dict[str, str],
          settings: Dict[str, object]) -> Callable[[str, float], bool]:
    """``compiles(name, value)`` for :func:`resolve`."""
    from ..compiler import compile_program

    def compiles(name: str, value: float) -> bool:
        trial_sets = dict(sets)
        trial_sets[name] = value
        try:
            compile_program(file, sets=trial_sets, defs=defs, **settings)
        except SerqError:
            return False
        return True
    return compiles
