"""What a run-time error says about the state it stopped in.

When the simulator raises a ``RunError`` the message says what went wrong;
``explain`` adds where and when: the time, the session and the statement it
was running (the statement's source position when the IR carries spans,
else its kind and its place in the block arena), the live sessions and the
head of every non-empty pool and stage queue.  It works from the error's
traceback and the simulator's state once the run has stopped, so the event
loop pays nothing for it.
"""
from typing import List, Optional, Tuple

from .exprs import fmt
from .session import Session

MAX_LISTED = 8  # pools and stages listed in full; the rest are counted


def _located(tb) -> Tuple[Optional[Session], Optional[tuple], Optional[object]]:
    """The innermost session statement (session, location) and the innermost
    stage (a frame whose ``self`` has ``residents`` or ``present``) on the
    traceback."""
    session = loc = stage = None
    while tb is not None:
        f = tb.tb_frame.f_locals
        s, op = f.get("s"), f.get("op")
        if isinstance(s, Session) and isinstance(op, tuple) and op and isinstance(op[-1], tuple):
            session, loc = s, op[-1]
        elif isinstance(s, Session) and isinstance(f.get("loc"), tuple):
            # ``sim.error(s, loc, …)`` called from a compiled statement (whose
            # own frame shows no locals)
            session, loc = s, f["loc"]
        me = f.get("self")
        if me is not None and hasattr(me, "present") and hasattr(me, "kind") \
                and hasattr(me, "member"):
            stage = me
        tb = tb.tb_next
    return session, loc, stage


def _block_role(prog, b: int) -> str:
    if b == prog.init:
        return "init"
    if b == prog.turn:
        return "turn"
    if b == prog.session:
        return "session"
    return "nested"


def statement(prog, loc) -> str:
    """A statement by its source position, or by its kind and place."""
    b, i = loc
    kind = "statement"
    if 0 <= b < len(prog.blocks) and 0 <= i < len(prog.blocks[b]):
        kind = "`%s`" % type(prog.blocks[b][i]).__name__.lower()
    span = prog.spans.get(loc) if prog.spans else None
    if span is not None:
        return "the %s statement at %s" % (kind, span)
    return "the %s statement %d of block %d (%s)" % (kind, i + 1, b, _block_role(prog, b))


def _member(x) -> str:
    return x.name if getattr(x, "member", None) is None else "%s[%d]" % (x.name, x.member)


def _first(queue):
    """The item at the head of ``queue`` (a list, a deque or a compiled
    FifoQueue, which has no indexing), or None."""
    return next(iter(queue), None) if queue else None


def _stage_head(st) -> str:
    n = st.present()
    head = None
    job = _first(getattr(st, "waiting", None))  # (a Job: sim/stages.py)
    if job is None:
        job = _first(getattr(st, "residents", None))
    if job is not None:
        head = job.session
    text = "stage `%s`: %d present" % (_member(st), n)
    if head is not None:
        text += ", head session %d" % head.root().serial
    return text


def _pool_head(p) -> str:
    text = "pool `%s`: used %s, cached %s of cap %s, %d holder(s), %d waiting" % (
        _member(p), fmt(p.used), fmt(p.cached), fmt(p.cap), len(p.holders), len(p.queue))
    wait = _first(p.queue)
    if wait is not None:
        text += ", head session %d" % wait.run.session.root().serial
    return text


def _guarded(line, x, what: str) -> str:
    """``line(x)``, or the stage's or pool's name and what failed if its
    state cannot be read: one unreadable queue does not drop the rest of
    the dump."""
    try:
        return line(x)
    except Exception as e:
        return "%s `%s` (its state could not be read: %s: %s)" % (
            what, _member(x), type(e).__name__, e)


def explain(sim, exc) -> List[str]:
    """Note lines for ``exc`` raised by ``sim``'s run.  The dump is a help:
    it never hides the error, and where the state cannot be read the lines
    made so far are kept and a last line says what failed (a silent empty
    dump once hid a broken queue read from the tests)."""
    notes: List[str] = []
    try:
        _explain(sim, exc, notes)
    except Exception as e:
        notes.append("(the rest of the run's state could not be read: %s: %s)"
                     % (type(e).__name__, e))
    return notes


def _explain(sim, exc, notes: List[str]) -> None:
    session, loc, stage = _located(exc.__traceback__)
    if stage is None:
        stage = getattr(exc, "stage", None)
    prog = sim.prog
    where = "at t = %s (event %d)" % (fmt(sim.now), sim.events)
    if session is not None:
        root = session.root()
        who = "session %d" % root.serial
        if root is not session:
            who = "a fork leg of session %d" % root.serial
        where += ", %s, in %s" % (who, statement(prog, loc))
    elif stage is not None:
        where += ", in stage `%s`" % _member(stage)
    notes.append("the run stopped " + where)
    notes.append("%d live session(s), %d arrived" % (sim.live, sim.arrived))
    busy = [_guarded(_stage_head, st, "stage") for st in sim.stages if st.present()]
    busy += [_guarded(_pool_head, p, "pool") for p in sim.pools
             if p.used or p.cached or p.queue or p.holders]
    for line in busy[:MAX_LISTED]:
        notes.append(line)
    if len(busy) > MAX_LISTED:
        notes.append("… and %d more busy pool(s) and stage(s)" % (len(busy) - MAX_LISTED))


def attach(sim, exc) -> None:
    """Add ``explain``'s lines to ``exc``'s notes (once)."""
    if getattr(exc, "explained", False):
        return
    exc.explained = True
    exc.notes.extend(explain(sim, exc))
    if exc.span is None and exc.source is None:
        session, loc, _ = _located(exc.__traceback__)
        if loc is not None and sim.prog.spans:
            exc.span = sim.prog.spans.get(loc)
            exc.source = sim.prog.source


__all__ = ["explain", "attach", "statement"]
