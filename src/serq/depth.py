"""How deep an expression may be, and the recursion that reading it takes.

Every pass over an expression (folding, linking, checking, compiling it to
closures, evaluating them, writing IR) recurses once a level, and a chain
``1 + 1 + … + 1`` is as deep as it is long.  serQ 0.1.3 reads a chain of
about 14,800 terms in a ``let`` (folded to a number) and 9,300 in a
session expression, and crashes beyond.  serq reads as much, and refuses a
longer chain with a located error when it is parsed:

* ``MAX_LET_CHAIN``: a ``let``'s expression (folded; it never reaches IR);
* ``MAX_CHAIN``: any other expression (it reaches IR, which pickling, a copy
  or a comparison walks in C, on the C stack: about 12,000 levels fit).

``deep_recursion()`` lifts Python's recursion limit for the passes, where
that is safe: CPython 3.11 and later run Python-to-Python calls without
growing the C stack.  Elsewhere the limit stays, and a chain too deep for
it is the located error "the program nests too deeply".
"""
import sys
from contextlib import contextmanager
from typing import Iterator

MAX_CHAIN = 10000
MAX_LET_CHAIN = 16000
#: the recursion limit while a program is compiled or run (about six frames a
#: level at the deepest pass, with room to spare)
DEEP_LIMIT = 6 * MAX_LET_CHAIN + 10000


def lifts_limit() -> bool:
    return sys.version_info >= (3, 11) and sys.implementation.name == "cpython"


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Python's recursion limit at least ``DEEP_LIMIT`` inside (CPython 3.11+)."""
    old = sys.getrecursionlimit()
    if lifts_limit() and old < DEEP_LIMIT:
        sys.setrecursionlimit(DEEP_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
