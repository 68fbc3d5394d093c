"""``serq.sweep``: ``serq sweep`` from Python, its table as a pandas
DataFrame::

    frame = serq.sweep("examples/chat.sq", {"rate": [1, 2, 3]}, seeds=3, horizon=120)
    frame[frame.metric == "observe.ttft.p99"]

The arguments make the ``Sweep`` the command makes from its options, and
the command's runner runs it (``run.run_sweep``: in this process, in a pool
of processes, or on Ray), so the frame holds the numbers of the command's
table, row for row: the swept constants, ``metric``, ``mean``, ``ci_low``,
``ci_high``, ``n_seeds`` (``wide=True``: one row per point, one column per
metric holding its mean).  Ctrl-C stops the sweep as it stops the
command's and raises ``serq.Interrupted`` with the points whose every seed
finished as its ``frame``.
"""
import math
import numbers
import os
import sys
from typing import Dict, List, Mapping, Optional

from ..errors import UsageError
from .grid import Axis, parse_axis
from .run import DEFAULT_MAX_RUNS, Sweep, SweepInterrupted, run_sweep
from .table import COLUMNS, Table, cell


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError("serq.sweep returns a pandas DataFrame: pip install 'serq[frames]'") \
            from None
    return pandas


def _number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _axis(name, values) -> Axis:
    """One entry of ``sets``: a list of values (numbers, or expressions as
    text), one number, or a text as ``--set`` takes it (``"1:3:5"``,
    ``"1,2,4"``, ``"2 * base"``)."""
    if not isinstance(name, str) or not name.strip():
        raise UsageError("serq.sweep(sets=...): %r is not a constant's name" % (name,))
    if isinstance(values, str):
        text = "%s=%s" % (name, values)
        try:
            return parse_axis(text)
        except UsageError as e:
            prefix = "--set %s: " % text
            if e.message.startswith(prefix):
                e.message = "serq.sweep: sets[%r] = %r: %s" % (name, values,
                                                               e.message[len(prefix):])
                e.args = (e.message,)
            raise
    if _number(values):
        return Axis(name, [float(values)])
    try:
        items = list(values)
    except TypeError:
        raise UsageError("serq.sweep: sets[%r] = %r: give a list of values, a number or a "
                         "text such as \"1:3:5\"" % (name, values)) from None
    if not items:
        raise UsageError("serq.sweep: sets[%r] is empty: give it one value at least" % name)
    out: List = []
    for v in items:
        if _number(v):
            out.append(float(v))
        elif isinstance(v, str) and v.strip():
            out.append(v)
        else:
            raise UsageError("serq.sweep: sets[%r] holds %r: each value is a number or an "
                             "expression (text)" % (name, v))
    return Axis(name, out)


def _whole(name: str, v, low: int, high: Optional[int] = None) -> int:
    if not (isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= low and
            (high is None or v <= high)):
        raise UsageError("serq.sweep(%s=%r): %s is a whole number, %s" % (
            name, v, name, "%d or more" % low if high is None else "from %d to %d" % (low, high)))
    return int(v)


def _setting(name: str, v, positive: bool) -> Optional[float]:
    if v is None:
        return None
    if not (_number(v) and math.isfinite(v) and (v > 0 if positive else v >= 0)):
        raise UsageError("serq.sweep(%s=%r): a finite %s number of simulated seconds"
                         % (name, v, "positive" if positive else "non-negative"))
    return float(v)


def _program(program, sweep_kw: Dict) -> Dict:
    """The ``Sweep`` fields saying which program: a file, program text, or
    IR (``serq.Program`` made otherwise than by ``serq.compile``)."""
    from ..api import Program
    if isinstance(program, (str, os.PathLike)):
        return dict(file=os.fspath(program))
    if not isinstance(program, Program):
        raise TypeError("serq.sweep takes a program file's path or a serq.Program, not %s"
                        % type(program).__name__)
    origin = program._origin
    if origin is None:
        if sweep_kw["axes"] or sweep_kw["defs"]:
            raise UsageError("serq.sweep: sets and defs replace a program's text, and this "
                             "program is IR (read from JSON or built in Python)",
                             help="sweep its file or text (serq.compile(path) or "
                                  "serq.compile(source=...)), or sweep seeds alone")
        return dict(file="<IR>", program=program.ir)
    fields: Dict = dict(fixed=dict(origin["sets"]))
    for key in ("horizon", "warmup", "arrivals", "trace"):
        if sweep_kw[key] is None:
            fields[key] = origin[key]
    defs = dict(origin["defs"])
    defs.update(sweep_kw["defs"])
    fields["defs"] = defs
    if origin["path"] is not None:
        fields["file"] = origin["path"]
    else:
        fields.update(file="<text>", source=origin["source"])
    return fields


def sweep(program, sets: Optional[Mapping] = None, *, seeds: int = 1, seed: int = 1,
          jobs: Optional[int] = None, defs: Optional[Mapping[str, str]] = None,
          horizon: Optional[float] = None, warmup: Optional[float] = None,
          arrivals: Optional[int] = None, trace: Optional[str] = None,
          progress: bool = False, wide: bool = False, output: Optional[str] = None,
          backend: str = "local", address: Optional[str] = None,
          max_runs: Optional[int] = DEFAULT_MAX_RUNS):
    """Run ``program`` (a file's path, or a ``serq.Program``) at every point
    of the grid ``sets`` spans, ``seeds`` runs each (seeds ``seed``,
    ``seed + 1``, ...), and return the table as a pandas DataFrame, as
    ``serq sweep FILE --set ... --seeds N --seed S`` writes it.

    ``sets`` maps a ``let`` constant to its values: a list (numbers, or
    expressions as text), one number, or a text as ``--set`` takes it
    (``"0.5:1.5:11"``, ``"1,2,4"``); the grid is their product, the last
    fastest.  A program compiled with ``sets``, ``defs`` or settings keeps
    them at every point (its own ``sets`` are not columns).  ``defs``,
    ``horizon``, ``warmup``, ``arrivals``, ``trace``: as ``serq.compile``
    takes them.  ``jobs``: processes (default every core; 1 runs here);
    ``backend="ray"`` (``address``) runs on a Ray cluster.  ``progress``:
    a bar of finished runs.  ``output``: also write the table there (.csv
    or .parquet), keeping finished runs in ``output + ".runs"`` so that a
    rerun after Ctrl-C resumes.  ``max_runs``: refuse a larger grid
    before running (None: no bound).

    Returns the long table (one row per point and metric: the constants,
    ``metric``, ``mean``, ``ci_low``, ``ci_high``, ``n_seeds``; absent
    values NaN), or with ``wide=True`` one row per point: the constants,
    then one column per metric holding its mean.  A wrong argument raises
    ``serq.errors.UsageError``; a run that fails, the ``RunError`` naming
    its point and seed.  Ctrl-C raises ``serq.Interrupted`` whose ``frame``
    holds the points whose every seed finished (and ``table`` the same
    rows as the sweep module's ``Table``, marked incomplete)."""
    if sets is None:
        sets = {}
    if not isinstance(sets, Mapping):
        raise UsageError("serq.sweep(sets=%r): give a dict of a constant's name to its values, "
                         "such as {\"rate\": [1, 2, 3]}" % (sets,))
    if defs is None:
        defs = {}
    if not isinstance(defs, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in defs.items()):
        raise UsageError("serq.sweep(defs=%r): give a dict of a definition's name to its new "
                         "body (text)" % (defs,))
    for name, v in (("progress", progress), ("wide", wide)):
        if not isinstance(v, bool):
            raise UsageError("serq.sweep(%s=%r): %s is True or False" % (name, v, name))
    if backend not in ("local", "ray"):
        raise UsageError("serq.sweep(backend=%r): \"local\" (processes) or \"ray\"" % (backend,))
    if address is not None and backend != "ray":
        raise UsageError("serq.sweep(address=...) names a Ray cluster: give backend=\"ray\"")
    if jobs is not None:
        jobs = _whole("jobs", jobs, 1)
        if backend == "ray":
            raise UsageError("serq.sweep(jobs=...) sets the local processes; a Ray cluster "
                             "schedules its own")
    if max_runs is not None:
        max_runs = _whole("max_runs", max_runs, 1)
    if output is not None and (not isinstance(output, (str, os.PathLike)) or
                               os.fspath(output) in ("", "-")):
        raise UsageError("serq.sweep(output=%r): give a file's path (.csv or .parquet)"
                         % (output,))
    if trace is not None and not isinstance(trace, str):
        raise UsageError("serq.sweep(trace=%r): give a trace file's path" % (trace,))
    kw = dict(axes=[_axis(name, v) for name, v in sets.items()], defs=dict(defs),
              seeds=_whole("seeds", seeds, 1), first_seed=_whole("seed", seed, 0, 2 ** 64 - 1),
              horizon=_setting("horizon", horizon, True),
              warmup=_setting("warmup", warmup, False),
              arrivals=None if arrivals is None else _whole("arrivals", arrivals, 1),
              trace=trace, max_runs=max_runs)
    kw.update(_program(program, kw))
    plan = Sweep(**kw)

    def note(text: str) -> None:
        sys.stderr.write("serq.sweep: %s\n" % text)
    from ..depth import deep_recursion
    try:
        with deep_recursion():  # the programs are pickled to the workers (depth.py)
            table = run_sweep(plan, jobs=jobs, backend=backend, address=address,
                              show_progress=progress,
                              output=None if output is None else os.fspath(output), note=note)
    except SweepInterrupted as e:
        e.frame = table_frame(e.table, wide)
        raise
    return table_frame(table, wide)


def table_frame(table: Table, wide: bool = False):
    """A sweep's ``Table`` as a DataFrame (see ``sweep``); an incomplete
    one says so in ``frame.attrs["incomplete"]``."""
    pd = _pandas()
    data: Dict = {}
    if wide:
        points: List = []  # in grid order
        means: Dict = {}  # point -> metric -> mean
        metrics: Dict[str, None] = {}  # in order of first appearance
        for r in table.rows:
            if r.point not in means:
                means[r.point] = {}
                points.append(r.point)
            means[r.point][r.metric] = r.mean
            metrics.setdefault(r.metric, None)
        for j, name in enumerate(table.params):
            data[name] = _column(pd, [p[j] for p in points])
        for m in metrics:
            data[m] = pd.Series([_nan(means[p].get(m)) for p in points], dtype="float64")
    else:
        for j, name in enumerate(table.params):
            data[name] = _column(pd, [r.point[j] for r in table.rows])
        data["metric"] = pd.Series([r.metric for r in table.rows])  # (pandas's string type)
        for key in COLUMNS[1:4]:
            data[key] = pd.Series([_nan(getattr(r, key)) for r in table.rows], dtype="float64")
        data["n_seeds"] = pd.Series([r.n_seeds for r in table.rows], dtype="int64")
    frame = pd.DataFrame(data)
    if table.incomplete:
        frame.attrs["incomplete"] = table.incomplete
    return frame


def _nan(v) -> float:
    return math.nan if v is None else float(v)


def _column(pd, values: List):
    if all(isinstance(v, float) for v in values):
        return pd.Series(values, dtype="float64")
    return pd.Series([v if isinstance(v, str) else cell(v) for v in values])  # expressions
