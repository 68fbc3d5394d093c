"""Constant folding: the value of an expression that reads only numbers,
``inf``, folded ``let``s and the arithmetic functions.

Used for ``let`` values and for every constant position of the language
(``cap``, ``block``, ``fifo`` servers, ``granule``, arrival arguments, run
settings, register initial values, aggregate counts).  The arithmetic is the
reference's: IEEE doubles, comparisons and logic giving 0 or 1.

``fold_at`` folds the constant at one such position, with an error that
names the position; ``fmt`` prints a folded number in the linker's messages.
"""
import math
from typing import Dict, Optional

from ..errors import LinkError
from ..syntax import ast
from ..syntax.constmath import MATH_ARITY, MATH_FUNS, binop, min_max
from .scope import Scope


class NotConstant(Exception):
    """Raised with the offending node when an expression is not constant."""

    def __init__(self, node, reason: str):
        super().__init__(reason)
        self.node = node
        self.reason = reason


#: serQ 0.1.3's bound on the terms a program's aggregates write out, all
#: ``max``/``min``/``sum … in N`` of the program together (a nested one
#: counts at every term of the one around it): ``sum i in 3000 (sum j in
#: 3000 (j))`` would be nine million terms.
MAX_TERMS = 4096

# The terms written out so far by the program being linked (``reset_terms``
# at the start of each link; sweeps and Ray workers link in processes of
# their own, one program at a time).
_terms = [0]


def reset_terms() -> None:
    _terms[0] = 0


def write_out(e: ast.Agg, n: float) -> int:
    """An aggregate's count, checked as 0.1.3 checks it (a positive whole
    number; the program's terms so far plus it at most ``MAX_TERMS``),
    before any term is written out."""
    if not (n >= 1 and float(n).is_integer() and not math.isinf(n)):
        raise LinkError("`%s %s in`'s count must be a positive integer, found %s"
                        % (e.kind, e.var, _fmt(n)), e.span)
    _terms[0] += int(n)
    if _terms[0] > MAX_TERMS:
        raise LinkError("`%s %s in`: the program's aggregates write out %d terms, at most %d"
                        % (e.kind, e.var, _terms[0], MAX_TERMS), e.span,
                        help="an aggregate is written out term by term: keep the program's "
                             "aggregates to %d terms in all (a nested one counts once for "
                             "each term of the one around it)" % MAX_TERMS)
    return int(n)


def _fmt(v: float) -> str:
    if math.isinf(v) or math.isnan(v):
        return str(v)
    return str(int(v)) if float(v).is_integer() else repr(v)


def fold(e: ast.Expr, lets: Dict[str, float], extra: Optional[Dict[str, float]] = None) -> float:
    """The value of a constant expression; raises ``NotConstant`` naming the
    first node that is not constant.  ``extra`` binds aggregate variables."""
    t = type(e)
    if t is ast.Num:
        return e.value
    if t is ast.Name:
        if e.index is None:
            if extra and e.name in extra:
                return extra[e.name]
            if e.name in lets:
                return lets[e.name]
            if e.name == "inf":
                return math.inf
        raise NotConstant(e, "`%s` is not a constant" % e.name)
    if t is ast.Unary:
        v = fold(e.operand, lets, extra)
        return -v if e.op == "-" else (1.0 if v == 0.0 else 0.0)
    if t is ast.Binary:
        if e.op == "&&":
            a = fold(e.left, lets, extra)
            return 0.0 if a == 0.0 else (1.0 if fold(e.right, lets, extra) != 0.0 else 0.0)
        if e.op == "||":
            a = fold(e.left, lets, extra)
            return 1.0 if a != 0.0 else (1.0 if fold(e.right, lets, extra) != 0.0 else 0.0)
        return binop(e.op, fold(e.left, lets, extra), fold(e.right, lets, extra))
    if t is ast.Cond:
        c = fold(e.test, lets, extra)
        return fold(e.then, lets, extra) if c != 0.0 else fold(e.other, lets, extra)
    if t is ast.Call:
        fn = MATH_FUNS.get(e.func)
        if fn is None:
            raise NotConstant(e, "`%s(…)` is not a constant" % e.func)
        if len(e.args) != MATH_ARITY[e.func]:
            raise LinkError("`%s` takes %d argument(s), got %d"
                            % (e.func, MATH_ARITY[e.func], len(e.args)), e.span)
        return fn(*[fold(a, lets, extra) for a in e.args])
    if t is ast.Draw:
        raise NotConstant(e, "a constant cannot sample")
    if t is ast.Agg:
        n = write_out(e, fold(e.count, lets, extra))
        terms = []
        for j in range(n):
            inner = dict(extra or {})
            inner[e.var] = float(j)
            terms.append(fold(e.body, lets, inner))
        acc = terms[0]
        for v in terms[1:]:
            acc = min_max(e.kind, acc, v)
        return acc
    raise NotConstant(e, "not a constant")


def fold_at(e: ast.Expr, scope: Scope, what: str) -> float:
    """The value of the constant at a position ``what`` names (``"pool `P`:
    cap"``, a message's prefix): ``fold`` over the scope's ``let``s, with a
    ``LinkError`` naming the position for an expression that is not
    constant or a value that is NaN."""
    try:
        v = fold(e, scope.lets)
    except NotConstant as nc:
        raise LinkError("%s: %s" % (what, nc.reason) if what else nc.reason, nc.node.span,
                        help="a constant reads numbers, `inf`, `let`s and arithmetic") from None
    if v != v:
        raise LinkError("%s is NaN" % what, e.span,
                        help="a constant is a number or `inf`; `0/0` and `inf - inf` are not")
    return v


def fmt(v: float) -> str:
    """A number as the linker's declarations print it in a message: a whole
    float without its ``.0``, anything else as ``str`` prints it."""
    if isinstance(v, float) and v.is_integer() and not math.isinf(v):
        return str(int(v))
    return str(v)
