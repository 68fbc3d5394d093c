"""A first-in, first-out queue: the settle's sessions ready to run and a
fifo stage's waiting jobs.

Compiled, a ``collections.deque``'s ``append`` and ``popleft`` are method
calls looked up by name (about 200 instructions each; a session is made
ready and taken twice in its life at least, and a job waits once in each
busy fifo stage); ``FifoQueue``'s are native calls.  It keeps its items in
a list between ``head`` and ``tail``: a taken slot is cleared at once (the
queue holds nothing that has left it) and the list is kept for the next
items when the queue empties, so appends and takes allocate nothing once
it has grown.

Interpreted (PyPy, or CPython without the compiled core) the deque is
faster than this Python code and is used instead (``new_fifo``): both have
``append``, ``popleft``, ``remove``, ``in``, ``len``, iteration and truth,
with the same order and the same comparisons (sessions and jobs compare
equal only to themselves).
"""
from collections import deque
from typing import Any, Iterator, List, cast

from ..floatvec import COMPILED


class FifoQueue(object):
    """Items in the order they were appended (see the module's text)."""

    __slots__ = ("items", "head", "tail")

    def __init__(self) -> None:
        self.items: List[Any] = []
        self.head: int = 0  # the first item in the queue
        self.tail: int = 0  # one past the last (items[tail:] are None)

    def __bool__(self) -> bool:
        return self.head < self.tail

    def __len__(self) -> int:
        return self.tail - self.head

    def append(self, s: Any) -> None:
        items = self.items
        t = self.tail
        if t < len(items):
            items[t] = s
        else:
            items.append(s)
        self.tail = t + 1

    def popleft(self) -> Any:
        h = self.head
        if h >= self.tail:
            raise IndexError("pop from an empty queue")
        items = self.items
        s = items[h]
        items[h] = None
        h += 1
        if h == self.tail:
            self.head = 0
            self.tail = 0
        else:
            self.head = h
        return s

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items[self.head:self.tail])

    def __contains__(self, s: Any) -> bool:
        items = self.items
        for k in range(self.head, self.tail):
            if items[k] is s:
                return True
        return False

    def remove(self, s: Any) -> None:
        """The first item that is ``s`` leaves the queue (ValueError if
        none is, as a deque's ``remove``)."""
        items = self.items
        for k in range(self.head, self.tail):
            if items[k] is s:
                del items[k]
                self.tail -= 1
                if self.head == self.tail:
                    self.head = 0
                    self.tail = 0
                return
        raise ValueError("the item is not in the queue")


def new_fifo() -> FifoQueue:
    """A new queue: a ``FifoQueue`` where the core is compiled, a deque
    where it is interpreted (see the module's text)."""
    if COMPILED:
        return FifoQueue()
    return cast(FifoQueue, deque())
