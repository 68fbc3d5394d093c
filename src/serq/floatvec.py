"""Growable arrays of floats for the time averages' event times and gaps
(and of floats and integers for the samples pending in an observation).

Where mypyc compiles the core, ``vec[float]`` is librt's vector (mypyc's
run-time library): its items are machine doubles that the compiled replay
loops read without a boxed float per read.  ``append(v, x)`` returns the
vector with ``x`` at its end; the caller keeps the returned one (a vector
is a value: an older copy keeps its own length).

Where the core runs interpreted (PyPy, CPython without a compiler, or
``SERQ_INTERPRETED=1``), ``vec[float]`` is ``list`` and ``append`` appends
in place and returns the list, which the interpreter reads fastest.  The
two give the same floats in the same order, so the same report bytes.

This module is not compiled itself: the compiled modules use librt's
operations directly, and only the interpreted ones (and the tests, which
build vectors to hand to the core) read the names bound here.
"""
import importlib.util
import os
from typing import TYPE_CHECKING


def compiled_core() -> bool:
    """Whether serq's compiled core loads in this process (it was built and
    ``SERQ_INTERPRETED`` is not set): then its functions take librt's
    vectors, not lists."""
    if os.environ.get("SERQ_INTERPRETED", "") not in ("", "0"):
        return False
    return importlib.util.find_spec("serq._core__mypyc") is not None


#: ``compiled_core()``, as this process found it on importing serq's core
#: (the events' and the touched set's forms follow it too).
COMPILED = compiled_core()

if TYPE_CHECKING or COMPILED:
    from librt.vecs import append, vec
    # (librt needs mypy_extensions: where the vectors are, so is ``i64``)
    from mypy_extensions import i64
else:
    i64 = int  # (``vec[i64]`` is ``list`` too)

    class _ListOf(object):
        """``vec[float]`` is ``list`` (``vec[float]()``, ``vec[float](xs)``)."""

        def __getitem__(self, item):
            return list

    vec = _ListOf()

    def append(v, x):
        """``v`` with ``x`` at its end (in place: the list is the vector)."""
        v.append(x)
        return v

__all__ = ["vec", "append", "i64", "compiled_core", "COMPILED"]
