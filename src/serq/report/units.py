"""Which observations are times (in seconds), read from the program.

serQ has no units: a pool counts "units of your choice", a `run` brings
units of work.  Time alone has a unit the language fixes: the clock
(`now`, the horizon, a stage's service) runs in seconds.  So an
observation is labelled ``s`` when every `observe` of it records a time,
and is otherwise in the program's own units (no label).

A time is an *instant* (a reading of the clock) or a *duration* (the
difference of two instants), found by this small inference over the IR:

* ``now`` is an instant;
* an attribute is an instant (a duration) when the program sets it, and
  every `set` of it assigns an instant (a duration): `set t0 = now;`,
  `mark first_token;`; the built-in `think` (a trace's think time) is a
  duration;
* ``i - i`` is a duration; a number added to or taken from a time is a
  duration (``t0 + 2``, ``now - 5``); ``i + d``, ``d + i``, ``i - d`` an instant;
  ``d + d``, ``d - d`` a duration; ``min``/``max`` of two of one kind,
  and ``c ? x : y`` with both branches of one kind, are of that kind;
  ``-d`` is a duration;
* anything else (a number, a product, a ratio, a drawn value) is not known
  to be a time: `observe hit = cached / prompt;` is in the program's units,
  and so is `observe wait = ~exp(1);`, although it may be meant as seconds.

The inference is repeated until no attribute changes (an attribute set
from another attribute), so the order of the `set` statements does not
matter; an attribute set from itself (`set t = t + 1;`) is not known.
"""
from typing import Dict, List, Optional, Set

from ..ir import nodes as ir

INSTANT = "instant"
DURATION = "duration"
SECONDS = "s"


def _kind(e: ir.Expr, attrs: Dict[int, Optional[str]]) -> Optional[str]:
    t = type(e)
    if t is ir.Ctx:
        return INSTANT if e.var == "Now" else None
    if t is ir.Attr:
        return attrs.get(e.slot)
    if t is ir.Binary:
        a, b = _kind(e.left, attrs), _kind(e.right, attrs)
        if e.op in ("Add", "Sub") and (a is None) != (b is None):
            # a number added to a time is a duration: `t0 + 2`, `now - 5`
            if type(e.left) is ir.Num:
                a = DURATION
            elif type(e.right) is ir.Num:
                b = DURATION
        if a is None or b is None:
            return None
        if e.op == "Sub":
            return DURATION if a == b else (INSTANT if a == INSTANT else None)
        if e.op == "Add":
            return DURATION if a == b == DURATION else (INSTANT if a != b else None)
        return None
    if t is ir.Unary:
        return DURATION if e.op == "Neg" and _kind(e.operand, attrs) == DURATION else None
    if t is ir.Cond:
        a, b = _kind(e.then, attrs), _kind(e.other, attrs)
        return a if a == b else None
    if t is ir.Call and e.fun in ("Min", "Max") and e.args:
        kinds = {_kind(x.expr, attrs) if type(x) is ir.ArgExpr else None for x in e.args}
        return kinds.pop() if len(kinds) == 1 else None
    return None


def _kind_of(e: ir.Expr, attrs: Dict[int, Optional[str]]) -> Optional[str]:
    """``_kind``, or not known for an expression nested past Python's
    recursion limit (a long flat sum the linker accepts)."""
    try:
        return _kind(e, attrs)
    except RecursionError:
        return None


def time_observations(prog: ir.Program) -> Set[int]:
    """Indices of the observations whose every `observe` records a time."""
    sets: Dict[int, List[ir.Expr]] = {}
    observes: Dict[int, List[ir.Expr]] = {}
    for block in prog.blocks:
        for st in block:
            if type(st) is ir.Set:
                sets.setdefault(st.slot, []).append(st.value)
            elif type(st) is ir.Observe:
                observes.setdefault(st.obs, []).append(st.value)
            elif type(st) is ir.Choose:
                sets.setdefault(st.var, []).append(ir.Num(0.0))  # an index, not a time
    attrs: Dict[int, Optional[str]] = {}
    if len(prog.slots) > 5:
        attrs[prog.slots[5]] = DURATION  # `think`
    # Each round labels the attributes whose every `set` is now known to be
    # of one kind; a label, once given, stays (at most one round per
    # attribute).
    for _ in range(len(sets) + 1):
        changed = False
        for slot, values in sets.items():
            if attrs.get(slot) is not None:
                continue
            kinds = {_kind_of(v, attrs) for v in values}
            if len(kinds) == 1 and None not in kinds:
                attrs[slot] = kinds.pop()
                changed = True
        if not changed:
            break
    return {i for i, values in observes.items()
            if all(_kind_of(v, attrs) is not None for v in values)}


def observation_units(prog: ir.Program) -> List[Optional[str]]:
    """One unit per observation, in the program's order: ``"s"`` for a
    time, ``None`` for the program's own units."""
    times = time_observations(prog)
    return [SECONDS if i in times else None for i in range(len(prog.observes))]
