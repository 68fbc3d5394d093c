"""The event heap's entries and its two operations.

The simulator's heap (clock.py) orders events by (time, insertion sequence).
Where the core is compiled, and on PyPy, an entry is an ``Event`` and the
heap is kept by ``push_event`` and ``pop_event`` below: compiled, their
comparisons read two machine doubles (and two integers on a tie) where a
tuple's comparison goes through Python's generic one; PyPy's JIT runs them
faster than its heapq on tuples.  Interpreted CPython keeps tuples
``(time, seq, fn, arg)`` and the C heapq, which is faster there
(``OBJECTS`` says which; each call site has both).

Both keep the layout heapq would: the same sift steps, so the same entry at
every index (tests/test_events.py), and the same order of events.
"""
import sys
from typing import Any, Final, List

from ..floatvec import COMPILED

#: Whether the heap's entries are ``Event``s (compiled core, PyPy) rather
#: than tuples (interpreted CPython).
OBJECTS: Final = COMPILED or sys.implementation.name == "pypy"


class Event(object):
    """One scheduled event: ``fn(arg)`` at time ``t``, the ``seq``-th
    scheduled (ties at one time run in that order)."""

    __slots__ = ("t", "seq", "fn", "arg")

    def __init__(self, t: float, seq: int, fn: Any, arg: Any) -> None:
        self.t = t
        self.seq = seq
        self.fn = fn
        self.arg = arg


def _sift_down(heap: List[Event], start: int, pos: int) -> None:
    """heapq's ``_siftdown``: the entry at ``pos`` moves up towards
    ``start`` past every parent it comes before.  (The comparisons are
    written out, here and in ``pop_event``: compiled, a call each would
    cost more than the comparison.)"""
    item = heap[pos]
    t = item.t
    while pos > start:
        parent_pos = (pos - 1) >> 1
        parent = heap[parent_pos]
        pt = parent.t
        if t < pt or (t == pt and item.seq < parent.seq):
            heap[pos] = parent
            pos = parent_pos
            continue
        break
    heap[pos] = item


def push_event(heap: List[Event], e: Event) -> None:
    """heapq's ``heappush`` of ``e``."""
    heap.append(e)
    _sift_down(heap, 0, len(heap) - 1)


def pop_event(heap: List[Event]) -> Event:
    """heapq's ``heappop``: the first event, the last entry sifted from the
    root to a leaf along the earlier children and back up (heapq's
    ``_siftup``)."""
    if len(heap) == 1:
        # (cleared, not popped: CPython's pop to empty reallocates the
        # items to 0 bytes, a block of the C allocator's that every later
        # resize of this list then reallocates there, not in Python's own)
        last = heap[0]
        heap.clear()
        return last
    last = heap.pop()
    first = heap[0]
    end = len(heap)
    pos = 0
    child = 1
    while child < end:
        right = child + 1
        c = heap[child]
        if right < end:
            r = heap[right]
            # (heapq: the right child unless the left comes before it)
            ct = c.t
            rt = r.t
            if not (ct < rt or (ct == rt and c.seq < r.seq)):
                child = right
                c = r
        heap[pos] = c
        pos = child
        child = 2 * pos + 1
    heap[pos] = last
    _sift_down(heap, 0, pos)
    return first
