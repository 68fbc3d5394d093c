"""A capacity search from what the user asked: the file, the parameter's
range, the SLOs, the confidence and the budget; shared by ``serq
capacity`` (command.py) and the Python API (``serq.capacity(...)``)."""
from fractions import Fraction
from typing import Callable, Dict, Optional, Sequence

from ..errors import UsageError


def _fraction(x, flag: str) -> Fraction:
    try:
        return Fraction(str(x).strip().replace("_", ""))
    except (ValueError, ZeroDivisionError):
        raise UsageError("%s %s is not a number" % (flag, x)) from None


def run_capacity(file: str, over: Optional[str] = None, minimize: Optional[str] = None,
                 slo: Sequence[str] = (), confidence: float = 0.95, resolution=None,
                 seeds: int = 4, max_seeds: int = 32, budget_runs: int = 500,
                 first_seed: int = 1, sets: Optional[Dict[str, object]] = None,
                 defs: Optional[Dict[str, str]] = None, horizon: Optional[float] = None,
                 warmup: Optional[float] = None, arrivals: Optional[int] = None,
                 trace: Optional[str] = None, jobs: Optional[int] = None,
                 backend: str = "local", address: Optional[str] = None, stop=None,
                 notify: Optional[Callable] = None):
    """Search (search.py) and return its ``Result``.  ``over`` and
    ``minimize`` (one of them) are ``"NAME=LO:HI"``; ``slo`` the SLO
    statistics (spec.py).  Ctrl-C (``stop``, an ``interrupt.Stop``; one is
    made if None) ends the search with the bracket so far (``partial``)."""
    from ..sweep.backends import Runner
    from .measure import measure_task
    from .program import ProbeCompiler
    from .search import Plan, parse_range, search
    from .spec import parse_specs
    if (over is None) == (minimize is None):
        raise UsageError("say what to search: --over NAME=LO:HI (the largest value meeting the "
                         "SLOs) or --minimize NAME=LO:HI (the smallest), one of them")
    if isinstance(slo, str):
        slo = [slo]
    if not slo:
        raise UsageError("no SLO given: write --slo 'p99(NAME) <= BOUND' (one or more)")
    goal = "over" if over is not None else "minimize"
    flag = "--over" if over is not None else "--minimize"
    name, lo, hi = parse_range(over if over is not None else minimize, flag, goal == "minimize")
    res = None if resolution is None else _fraction(resolution, "--resolution")
    compiler = ProbeCompiler(file, name, dict(sets or {}), dict(defs or {}),
                             dict(horizon=horizon, warmup=warmup, arrivals=arrivals, trace=trace))
    plan0 = Plan(name, lo, hi, goal, res, confidence, seeds, max_seeds, budget_runs,
                 first_seed, 1)
    first = compiler.compile(plan0.value(0))
    specs = parse_specs(list(slo), first)
    plan = Plan(name, lo, hi, goal, res, confidence, seeds, max_seeds, budget_runs,
                first_seed, len(specs))
    if address and backend != "ray":
        raise UsageError("`--address` names a Ray cluster: use it with `--backend ray`")
    if jobs and backend == "ray":
        raise UsageError("`--jobs` sets the local processes; a Ray cluster schedules its own")
    from ..interrupt import Stop
    own = stop is None
    if own:
        stop = Stop()
        stop.__enter__()
    defer = stop.defer
    stop.defer = True  # a signal stops the runs, not the bookkeeping
    try:
        from ..depth import deep_recursion
        with Runner(measure_task, jobs, backend, address) as runner, deep_recursion():
            return search(plan, specs, compiler.compile, runner, stop,
                          notify or (lambda event, data: None))
    finally:
        stop.defer = defer
        if own:
            stop.__exit__(None, None, None)
