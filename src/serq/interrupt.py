"""Ctrl-C and SIGTERM: stopping without losing what was done.

``Interrupted`` is what the Python API raises when Ctrl-C stopped a run
(``serq.run``): a ``KeyboardInterrupt``, so code that does not expect it
stops as before, carrying the partial report (``.report``, whose
``partial`` says why it is partial).

``Stop`` is how the command line catches SIGINT and SIGTERM: the handler
records the first signal and, while a simulation runs (``attach``), asks it
to stop at the next event boundary (the run's ``stop_requested``, which its
event loops read; see sim/clock.py).  Outside a run the signal raises
``KeyboardInterrupt`` at once, or, with ``defer`` set (building and
printing a report, a sweep between runs), is only recorded for the caller
to act on.  A second signal always raises ``KeyboardInterrupt``.  A signal
whose disposition is not the default when ``Stop`` starts (SIGINT ignored
in a shell's background job) is left alone.
"""
import signal
from typing import Any, Dict, List, Optional

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum


def exit_status(signum: Optional[int]) -> int:
    """A shell's status for a process stopped by ``signum`` (130 for
    SIGINT, 143 for SIGTERM)."""
    return 128 + (signum or signal.SIGINT)


class Interrupted(KeyboardInterrupt):
    """A run stopped early by Ctrl-C (or SIGTERM, on the command line).
    ``report``: the partial report (``report.partial`` says why); ``signum``:
    the signal."""

    def __init__(self, message: str = "interrupted", report: Any = None,
                 signum: int = signal.SIGINT):
        super().__init__(message)
        self.report = report
        self.signum = signum


class WorkStopped(Exception):
    """A batch of runs (a sweep's) stopped before its last one: by a
    signal, or a worker that died (``reason``).  ``results``: the ones
    that finished."""

    def __init__(self, results: List, reason: str):
        super().__init__(reason)
        self.results = results
        self.reason = reason


def _default(signum: int, handler: Any) -> bool:
    if signum == signal.SIGINT:
        return handler is signal.default_int_handler
    return handler == signal.SIG_DFL


class Stop(object):
    """``with Stop() as stop:`` SIGINT and SIGTERM are caught (see the
    module's text); ``stop.signum`` is the first one caught, or None."""

    def __init__(self, defer: bool = False):
        self.signum: Optional[int] = None
        self.sim: Any = None
        self.defer = defer
        self.old: Dict[int, Any] = {}

    def handle(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt()  # the second signal: stop now
        self.signum = signum
        sim = self.sim
        if sim is not None:
            sim.stop_requested = True  # the run stops at its next event boundary
            return
        if not self.defer:
            raise KeyboardInterrupt()

    def attach(self, sim: Any) -> None:
        """``sim`` runs now: a signal stops it (at once if one came already)."""
        self.sim = sim
        if self.signum is not None:
            sim.stop_requested = True

    def detach(self) -> None:
        self.sim = None

    def __enter__(self) -> "Stop":
        for signum in SIGNALS:
            old = signal.getsignal(signum)
            if _default(signum, old):
                try:
                    signal.signal(signum, self.handle)
                except ValueError:  # not the main thread: its signals stay as they are
                    break
                self.old[signum] = old
        return self

    def __exit__(self, *exc: Any) -> bool:
        for signum, old in self.old.items():
            signal.signal(signum, old)
        self.old = {}
        return False
