"""A ``choose``'s keys as typed trees, and the native loop over its members.

The trees are etree.py's (its text says what a key's tree may read);
``build_keys`` builds them for a ``choose`` statement, and a ``Chooser``
reads them for every member (``choose_least``), where the core is
compiled.  Where the one key reads only constants, operations and the
pools and stages of the chosen member (``_alike``), each node reads every
member before the next node (``Node.each``): the same floats, side by
side.
"""
from typing import TYPE_CHECKING, Any, Final, List, Optional, cast

from ..floatvec import vec
from .codegen import NATIVE_CORE
from .etree import (And, Arith, Attr, Choice, Const, Keys, Math1, Math2, MemberRead, Neg, Node,
                    Not, Now, Or, room, tree_of)
from .pools import Pool, keys_less, total_less
from .stages import Stage
from .step_plan import StepContext

if TYPE_CHECKING:
    # (in annotations only: a machine integer where mypyc compiles this
    # module, an int elsewhere)
    from mypy_extensions import i64

    from .clock import Clock


def build_keys(keys: List[Any], sim: "Clock", compiler: Any, pools: List[Pool],
               stages: List[Stage], chosen: int = -1) -> "Optional[Chooser]":
    """The trees of a ``choose``'s keys, or None where one has a node no
    tree says (or the core is interpreted).  ``chosen`` is the slot of the
    choose's variable: a member it indexes reads it as an integer."""
    if not NATIVE_CORE:
        return None
    k = Keys(pools, stages, compiler, chosen)
    out: List[Node] = []
    for e in keys:
        t = tree_of(e, sim, compiler, k)
        if t is None:
            return None
        out.append(t)
    return Chooser(out, k.reads or chosen < 0)


class Chooser(object):
    """A ``choose``'s keys as trees (``build_keys``), read for every member
    by ``choose_least``.  ``sets``: the session's attribute of the choose's
    variable must hold each member while its keys are read, because a tree
    reads that attribute (not as the index of a member: that is
    ``x.chosen``) or calls the simulator with the session.  Where not, the
    caller sets it once, to the choice: no tree can tell.  ``alike``: up
    to how many members the one key is read node by node (``_alike``);
    -1: never."""

    def __init__(self, trees: List[Node], sets: bool) -> None:
        self.trees = trees
        self.sets = sets
        self.x = StepContext(None)
        self.alike = _alike(trees[0]) if len(trees) == 1 and not sets else -1
        self.values = vec[float]()  # (the key of each member, where read alike)

    def least(self, s: Any, a: List[float], slot: int, n: int) -> float:
        if n <= self.alike:
            self.values = room(self.values, n)
        return choose_least(self.trees, self.x, s, a, slot, n, self.sets, self.alike,
                            self.values)


def choose_least(trees: List[Node], x: StepContext, s: Any, a: List[float], slot: int,
                 n: int, sets: bool = True, alike: int = -1,
                 values: vec[float] = vec[float]()) -> float:
    """The member ``j`` in ``0 .. n - 1`` (``a[slot]`` set to each as its
    keys are read, where ``sets``) of least keys, as
    session.Interpreter.choose finds it: one key compared as floats in
    Rust's ``total_cmp`` order (NaN after every number, -0 before +0), ties
    to the first; several as lists of ``total_key``.  The queries read
    session ``s``.  Where ``n`` is at most ``alike`` (Chooser), the key's
    tree reads every member node by node (``Node.each``) into ``values``,
    which the caller gives ``n`` items at least (Chooser.least)."""
    x.a = a
    x.session = s
    j: "i64"
    stop: "i64" = n
    if len(trees) > 1:
        best: List[float] = []
        best_j = 0.0
        for j in range(stop):
            if sets:
                a[slot] = float(j)
            x.chosen = j
            key = [t.ev(x) for t in trees]
            if j == 0 or keys_less(key, best):
                best = key
                best_j = float(j)
        return best_j
    f = trees[0]
    best_j = 0.0
    bv = 0.0
    fj = 0.0  # (j as a float, counted: exact, and no conversion per member)
    batch = stop <= alike
    if batch:
        f.each(x, stop, values)
    for j in range(stop):
        if batch:
            v = values[j]
        else:
            if sets:
                a[slot] = fj
            x.chosen = j
            v = f.ev(x)
        if j == 0:
            bv = v
        elif v < bv or not v > bv and (v != bv or v == 0.0) and total_less(v, bv):
            # (a larger one, or an equal one other than a zero, comes after: no call)
            bv = v
            best_j = fj
        fj += 1.0
    return best_j


#: ``_alike``'s bound where no member is the choose's: any number of members
_ANY: Final = 1 << 62


def _alike(t: Node) -> "i64":
    """Up to how many members of a choose tree ``t`` can be read node by
    node (``Node.each``), or -1: where it has only constants, the clock,
    attributes other than the choose's variable, operations, and readings
    of pools and stages that are fixed members or the chosen one (for no
    more members than the array has: past its end the member-by-member
    reading raises the error); nothing that can fail or change anything."""
    tt = type(t)
    if tt is Const or tt is Now or tt is Attr:
        return _ANY
    if tt is Arith or tt is And or tt is Or or tt is Math2:
        ab = cast(Any, t)
        return min(_alike(ab.a), _alike(ab.b))
    if tt is Neg or tt is Not or tt is Math1:
        return _alike(cast(Any, t).a)
    if tt is Choice:
        c = cast(Choice, t)
        return min(_alike(c.test), _alike(c.then), _alike(c.other))
    if isinstance(t, MemberRead):
        m = t.m
        if m.chosen:
            return m.count
        return _ANY if m.index is None else -1
    return -1
