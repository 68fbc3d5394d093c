"""Helpers for sugar expansion: definitions, the reserved words, constant
folding of array sizes, and substitution of ``at admission`` bindings."""
from __future__ import annotations

import copy
import math
from typing import Dict, List, Optional, Set as PySet

from .._dataclass import dataclass
from . import ast
from .constmath import MATH_ARITY, MATH_FUNS, binop, min_max
from .lexer import Token


@dataclass
class DefInfo:
    name: str
    params: List[str]
    body: List[Token]
    is_block: bool
    tok: Token


_GRAMMAR = """
let def use pool stage queue share workload session server gauge claim run
cap block evict lru by preempt none lifo requeue tail head fifo admit via spill when
reserve held ps delay step budget cost chunk granule serve admission decode first
exclusive prefill only memory state iteration arrive poisson renewal closed batch
trace ordered init turn hidden set observe end join hold reuse at cache lease grow
load drop release branch with else loop choose in fork mark tool transfer on growing
from to while request nic pull push latency maxmin bottleneck every some of given
horizon warmup seed arrivals link
"""
_FUNCS = """
min max abs floor ceil sqrt exp ln pow queue busy work used free cachedin holders
queued price budget_left est_lambda est_rho est_wait blocksize total count largest
smallest prefix_total sum det uniform erlang h2 bernoulli
"""
LANGUAGE_WORDS = frozenset((_GRAMMAR + _FUNCS).split())

# serq's extension distributions (not serQ 0.1.3; docs/distributions.md).
# Not words of the language: after `~` they name a law, elsewhere nothing,
# so a 0.1.3 program that calls a definition `gamma` still compiles.
EXT_DISTS = frozenset(("lognormal", "gamma", "pareto", "empirical"))

RETIRED = {
    "admit": "`admit if … fit where x = e { … } keep (ℓ)` is now `hold … at admission (x = e) { … } "
             "cache (ℓ)` (the pool option `admit via` is unchanged)",
    "enter": "`enter` is now `hold`: `hold P (u) … at admission (x = e) { … } cache (ℓ);`",
    "keep": "`keep` is now `cache`",
    "fit": "`fit` is retired: a hold is admitted when its units fit",
    "fits": "`fits` is now `reserve`",
    "where": "`where` is now `at admission (x = e)`",
}

# functions whose value is live deployment state
STATE_FUNCS = frozenset("""queue busy work used free cachedin holders queued price
budget_left est_lambda est_rho est_wait""".split())

#: The terms one constant fold of the parser's may write out (the
#: reference's bound: an array size of ``sum i in 4097 (0) + 1`` is not a
#: constant to it, and ``sum i in 2 (sum j in 2048 (1))``, which writes
#: 2 + 2 x 2048 terms, is not either).
MAX_FOLD_TERMS = 4096


def fold_const(e: ast.Expr, lets: Dict[str, Optional[float]], deps: List[str]) -> Optional[float]:
    """Fold a constant expression over earlier ``let``s; None if not constant.
    Appends each ``let`` read to ``deps``."""
    try:
        return _fold(e, lets, deps, {}, [0])
    except (ValueError, OverflowError, ZeroDivisionError, TypeError, RecursionError):
        return None


def _fold(e, lets, deps, bound: Dict[str, float], terms: List[int]) -> Optional[float]:
    if isinstance(e, ast.Num):
        return e.value
    if isinstance(e, ast.Name):
        if e.index is not None:
            return None
        if e.name in bound:
            return bound[e.name]
        if e.name == "inf":
            return math.inf
        if e.name in lets:
            deps.append(e.name)
            return lets[e.name]
        return None
    if isinstance(e, ast.Unary):
        v = _fold(e.operand, lets, deps, bound, terms)
        if v is None:
            return None
        return -v if e.op == "-" else (1.0 if v == 0 else 0.0)
    if isinstance(e, ast.Binary):
        # both sides must be constant, `&&` and `||` included, as in 0.1.3
        a = _fold(e.left, lets, deps, bound, terms)
        b = _fold(e.right, lets, deps, bound, terms)
        if a is None or b is None:
            return None
        if e.op == "&&":
            return 1.0 if a != 0 and b != 0 else 0.0
        if e.op == "||":
            return 1.0 if a != 0 or b != 0 else 0.0
        return binop(e.op, a, b)
    if isinstance(e, ast.Cond):
        c = _fold(e.test, lets, deps, bound, terms)
        if c is None:
            return None
        return _fold(e.then if c != 0 else e.other, lets, deps, bound, terms)
    if isinstance(e, ast.Call):
        fn = MATH_FUNS.get(e.func)
        if fn is None or len(e.args) != MATH_ARITY[e.func]:
            return None
        vals = [_fold(a, lets, deps, bound, terms) for a in e.args]
        if any(v is None for v in vals):
            return None
        return float(fn(*vals))
    if isinstance(e, ast.Agg):
        n = _fold(e.count, lets, deps, bound, terms)
        if n is None or not (n >= 1 and not math.isinf(n) and float(n).is_integer()):
            return None
        terms[0] += int(n)
        if terms[0] > MAX_FOLD_TERMS:
            return None
        inner = dict(bound)
        acc: Optional[float] = None
        for j in range(int(n)):
            inner[e.var] = float(j)
            v = _fold(e.body, lets, deps, inner, terms)
            if v is None:
                return None
            acc = v if acc is None else min_max(e.kind, acc, v)
        return acc
    return None


def subst_expr(e, env: Dict[str, ast.Expr]):
    """A copy of ``e`` with each unindexed ``Name`` in ``env`` replaced."""
    if not env:
        return e
    if isinstance(e, ast.Name):
        if e.index is None and e.name in env:
            return copy.deepcopy(env[e.name])
        if e.index is not None:
            return ast.Name(e.name, e.span, subst_expr(e.index, env))
        return e
    if isinstance(e, ast.Unary):
        return ast.Unary(e.op, subst_expr(e.operand, env), e.span)
    if isinstance(e, ast.Binary):
        return ast.Binary(e.op, subst_expr(e.left, env), subst_expr(e.right, env), e.span)
    if isinstance(e, ast.Cond):
        return ast.Cond(subst_expr(e.test, env), subst_expr(e.then, env), subst_expr(e.other, env), e.span)
    if isinstance(e, ast.Call):
        return ast.Call(e.func, [subst_expr(a, env) for a in e.args], e.span)
    if isinstance(e, ast.Draw):
        return ast.Draw(e.dist, [subst_expr(a, env) for a in e.args], e.span, e.strings)
    if isinstance(e, ast.Agg):
        inner = {k: v for k, v in env.items() if k != e.var}
        return ast.Agg(e.kind, e.var, subst_expr(e.count, env), subst_expr(e.body, inner), e.span)
    return e


def subst_stmts(stmts, env):
    return [_subst_stmt(s, env) for s in stmts]


def _subst_stmt(s, env):
    s = copy.copy(s)
    for f in ("value", "units", "reserve", "amount", "work", "count", "test", "reuse", "cache", "time"):
        if hasattr(s, f) and getattr(s, f) is not None and not isinstance(getattr(s, f), list):
            setattr(s, f, subst_expr(getattr(s, f), env))
    if hasattr(s, "keys"):
        s.keys = [subst_expr(k, env) for k in s.keys]
    for f in ("body", "then", "other"):
        if hasattr(s, f):
            setattr(s, f, subst_stmts(getattr(s, f), env))
    return s


def _expr_names(e, out: PySet[str]) -> None:
    stack = [e]
    while stack:
        x = stack.pop()
        if x is None:
            continue
        if isinstance(x, ast.Name):
            out.add(x.name)
            stack.append(x.index)
        elif isinstance(x, ast.Unary):
            stack.append(x.operand)
        elif isinstance(x, ast.Binary):
            stack.extend((x.left, x.right))
        elif isinstance(x, ast.Cond):
            stack.extend((x.test, x.then, x.other))
        elif isinstance(x, (ast.Call, ast.Draw)):
            stack.extend(x.args)
        elif isinstance(x, ast.Agg):
            stack.extend((x.count, x.body))


def names_read(s, out: PySet[str]) -> None:
    """Collect every name a statement (and its nested blocks) reads."""
    for f in ("value", "amount", "work", "count", "test", "reuse", "cache", "ref", "growing"):
        v = getattr(s, f, None)
        if v is not None and not isinstance(v, list):
            _expr_names(v, out)
    if isinstance(s, ast.Run):
        for st in s.stages:
            _expr_names(st, out)
    call_exprs = getattr(s, "call_exprs", None)  # an entry call, expanded after the parse
    if call_exprs is not None:
        for e in call_exprs():
            _expr_names(e, out)
    if isinstance(s, ast.Choose):
        for k in s.keys:
            _expr_names(k, out)
    if isinstance(s, ast.Hold):
        for hp in s.pools:
            _expr_names(hp.ref, out)
            _expr_names(hp.units, out)
            _expr_names(hp.reserve, out)
        if s.lease is not None:
            _expr_names(s.lease.ref, out)
            _expr_names(s.lease.time, out)
    bound = getattr(s, "bound_names", None)
    for f in ("body", "then", "other"):
        inner: PySet[str] = set()
        for sub in getattr(s, f, None) or []:
            names_read(sub, inner)
        if bound:
            inner -= set(bound)
        out |= inner
