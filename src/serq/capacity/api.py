"""``serq.capacity(...)``: a capacity search from Python."""
from typing import Dict, Optional, Sequence


class CapacityResult(object):
    """A search's answer: ``parameter``, ``goal``, the bracket ``low`` and
    ``high`` (None for an end not closed) at ``confidence``, ``status``,
    ``partial``, ``runs`` and ``probes`` (each with ``value``, ``seeds``,
    ``verdict`` and ``stats``: per SLO ``mean``, ``low``, ``high``,
    ``verdict``, ``values``); ``json()`` is ``serq capacity --json``'s
    object, ``text()`` its text."""

    def __init__(self, result):
        self._result = result
        plan = result.plan
        self.parameter = plan.name
        self.goal = plan.goal
        self.low = result.low
        self.high = result.high
        self.confidence = plan.confidence
        self.status = result.status
        self.partial = result.partial
        self.runs = result.runs
        self.probes = list(result.probes)

    def describe(self) -> str:
        return self._result.describe()

    def to_dict(self) -> dict:
        from .output import result_dict
        return result_dict(self._result)

    def json(self) -> str:
        from .output import result_json
        return result_json(self._result)

    def text(self) -> str:
        from .output import result_text
        return result_text(self._result)

    def __repr__(self) -> str:
        return "CapacityResult(%r, low=%r, high=%r, confidence=%r, status=%r)" % (
            self.parameter, self.low, self.high, self.confidence, self.status)


def capacity(file: str, *, over: Optional[str] = None, minimize: Optional[str] = None,
             slo: Sequence[str] = (), confidence: float = 0.95, resolution=None,
             seeds: int = 4, max_seeds: int = 32, budget_runs: int = 500, seed: int = 1,
             sets: Optional[Dict[str, object]] = None, defs: Optional[Dict[str, str]] = None,
             horizon: Optional[float] = None, warmup: Optional[float] = None,
             arrivals: Optional[int] = None, trace: Optional[str] = None, jobs: int = 1,
             backend: str = "local", address: Optional[str] = None) -> CapacityResult:
    """``serq capacity FILE --over NAME=LO:HI --slo ...`` (or ``minimize``)
    from Python; the same arguments as the command's options, and the same
    answer (docs/capacity.md).  Runs in this process unless ``jobs`` says
    otherwise.  Ctrl-C stops the search and raises ``serq.Interrupted``
    whose ``report`` is the partial result."""
    from .run import run_capacity
    r = CapacityResult(run_capacity(
        file, over, minimize, slo, confidence, resolution, seeds, max_seeds, budget_runs, seed,
        sets, defs, horizon, warmup, arrivals, trace, jobs, backend, address))
    if r.partial:
        from ..interrupt import Interrupted
        raise Interrupted("serq.capacity: interrupted: the exception's `report` is the bracket "
                          "reached so far", r, r._result.signum or 2)
    return r
