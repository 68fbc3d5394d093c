"""What a step stage's budget, chunk, cost and serving keys read, found on
their IR before the run (step.py): the totals over the residents that
``Step.totals`` sets only where one of them reads them, and the session
attributes a chunk reads, which read NaN there (there is no session)."""
import math
from typing import Any, Callable, List

from ..ir import nodes as ir

#: The context fields ``Step.totals`` sets.
TOTALS = ("Nres", "Ndec", "Kvb", "Kvp")


def reads_totals(*exprs: Any) -> bool:
    """Whether any of the IR expressions reads ``nres ndec kvb kvp``."""
    return any(type(x) is ir.Ctx and x.var in TOTALS for x in ir.walk(list(exprs)))


def _attr_slots(e: Any) -> List[int]:
    """The session attribute slots an IR expression reads."""
    return [x.slot for x in ir.walk(e) if type(x) is ir.Attr]


def reads_attrs(e: Any) -> bool:
    return bool(_attr_slots(e))


def nan_attrs(fn: Callable[[Any], Any], e: Any) -> Callable[[Any], Any]:
    """``fn`` (an expression read with no session) with every session
    attribute reading NaN, as in 0.1.3 (a step's chunk; NaN there is no
    limit)."""
    nan = [math.nan] * (max(_attr_slots(e)) + 1)

    def read(ctx: Any) -> Any:
        saved = ctx.a
        ctx.a = nan
        try:
            return fn(ctx)
        finally:
            ctx.a = saved
    return read
