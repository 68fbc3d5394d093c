"""The Python API, mirroring pyserq 0.1.3's names so that ``import serq as
pyserq`` works for the documented calls::

    import serq
    program = serq.compile("examples/chat.sq", sets={"rate": 3}, seed=7)
    report = serq.run(program)
    report.json()                     # the reference's JSON, byte for byte
    report.observe("ttft").samples    # every sample after warm-up (a numpy array)
    report.stage("gpu").mean_itl
    print(report.text())              # what `serq run` prints

``serq.run`` takes the options of ``serq run`` as keyword arguments
(limits, ``no_samples``, SLOs, the iteration trace, a progress bar), and
``serq.sweep`` (serq/sweep/frame.py) runs a grid as ``serq sweep`` does and
returns a pandas DataFrame.  Programs and reports show as compact tables
in a notebook (serq/notebook.py).

Differences from pyserq: errors are ``serq.errors.SerqError`` (a
``ValueError``, as pyserq raises), and a report row's absent value is
``None`` rather than ``nan``; sample series are numpy arrays, not lists.
"""
import math
import numbers
import os
from typing import Callable, Dict, List, Optional, Sequence, Union

_NUMPY = []  # numpy once imported (or None without it): imported at first use


def _numpy():
    """numpy, imported on first use (so ``import serq`` and the CLI do not
    pay for it); None where it is missing (PyPy: the API gives lists)."""
    if not _NUMPY:
        try:
            import numpy
        except ImportError:
            numpy = None
        _NUMPY.append(numpy)
    return _NUMPY[0]

from .compiler import compile_program
from .ir import json as ir_json
from .ir import nodes as ir
from .ir.validate import validate
from .report.build import build_report
from .errors import SerqError, UsageError
from .report.findings import Finding, report_findings
from .runner import simulate
from .sim.rng import Rng
from .interrupt import Interrupted

__all__ = ["compile", "run", "Program", "Report", "Observe", "Gauge", "Rng", "read_trace",
           "Interrupted"]


class Program(object):
    """A compiled program: its IR (``ir``) and, serq's own, the ``file`` it
    was compiled from (None for program text, IR and programs built in
    Python).  Its repr and, in a notebook, its HTML table give the file,
    the pools, the stages, the arrivals and the run settings."""

    def __init__(self, ir_program: ir.Program, file: Optional[str] = None,
                 origin: Optional[Dict[str, object]] = None):
        self.ir = ir_program
        self.file = file
        # How serq.compile made it (path or source, sets, defs, settings),
        # for serq.sweep to compile its grid points; None for IR.
        self._origin = origin

    @property
    def warnings(self) -> List:
        """serq's own: the compile's warnings (``serq.errors.SerqWarning``,
        each with ``render()``), which ``serq run`` prints on stderr."""
        return list(self.ir.warnings)

    def __repr__(self) -> str:
        from .notebook import program_repr
        return program_repr(self)

    def _repr_html_(self) -> str:
        from .notebook import program_html
        return program_html(self)

    def to_json(self) -> str:
        """The IR as JSON text, as ``serq ir`` prints it."""
        return ir_json.dumps(self.ir)

    @staticmethod
    def from_json(text: str) -> "Program":
        """A program from IR JSON text, checked (``serq.ir.validate``); a
        relative trace is read from the current directory."""
        return Program(validate(ir_json.loads(text)))


def compile(path: Optional[str] = None, *, source: Optional[str] = None,
            sets: Optional[Dict[str, object]] = None, defs: Optional[Dict[str, str]] = None,
            seed: Optional[int] = None, horizon: Optional[float] = None,
            warmup: Optional[float] = None, arrivals: Optional[int] = None,
            trace: Optional[str] = None) -> Program:
    """Parse, link and check a program (exactly one of ``path`` and ``source``).
    An argument of the wrong type raises ``TypeError``, a negative or too
    large seed ``OverflowError``, as pyserq does."""
    _check_types(path, source, sets, defs, seed, horizon, warmup, arrivals, trace)
    if seed is not None and not 0 <= seed < 2 ** 64:
        raise OverflowError("the seed is a whole number from 0 to 2^64 - 1")
    origin = dict(path=path, source=source, sets=dict(sets or {}), defs=dict(defs or {}),
                  horizon=horizon, warmup=warmup, arrivals=arrivals, trace=trace)
    return Program(compile_program(path, source=source, sets=sets, defs=defs, seed=seed,
                                   horizon=horizon, warmup=warmup, arrivals=arrivals,
                                   trace=trace), path, origin)


def _check_types(path, source, sets, defs, seed, horizon, warmup, arrivals, trace) -> None:
    def need(ok, name, what, value):
        if not ok:
            raise TypeError("argument '%s': %s, not %s" % (name, what, type(value).__name__))
    for name, v in (("path", path), ("source", source), ("trace", trace)):
        need(v is None or isinstance(v, str), name, "a string", v)
    need(sets is None or isinstance(sets, dict), "sets", "a dict", sets)
    for k, v in (sets or {}).items():
        need(isinstance(k, str), "sets", "names are strings", k)
        need(isinstance(v, (int, float, str)), "sets",
             "a value is a number or an expression (a string)", v)
    need(defs is None or isinstance(defs, dict), "defs", "a dict", defs)
    for k, v in (defs or {}).items():
        need(isinstance(k, str) and isinstance(v, str), "defs",
             "names and bodies are strings", v if isinstance(k, str) else k)
    need(seed is None or isinstance(seed, int), "seed", "an integer", seed)
    need(arrivals is None or isinstance(arrivals, int), "arrivals", "an integer", arrivals)
    for name, v in (("horizon", horizon), ("warmup", warmup)):
        need(v is None or isinstance(v, (int, float)), name, "a real number", v)


def _floats(xs):
    """A new float64 array of ``xs`` (a list where numpy is missing)."""
    np = _numpy()
    if np is None:
        return list(xs)
    return np.array(xs, dtype=np.float64)


def _ints(xs):
    """A new int64 array of ``xs`` (a list where numpy is missing)."""
    np = _numpy()
    if np is None:
        return list(xs)
    return np.array(xs, dtype=np.int64)


class Observe(object):
    """One observation: its summary (``count``, ``mean``, ``ci``, ``cv2``,
    ``p99``) and every sample after warm-up, with its time, the session
    that recorded it and the session's turn.  ``samples`` and ``times`` are
    numpy float64 arrays, ``sessions`` and ``turns`` int64 arrays (pyserq
    gives lists; an array indexes, iterates and sums like one, and
    ``.tolist()`` gives the list); each access makes a new one: bind it
    once.  Without numpy (PyPy) they are lists.

    serq's own (not pyserq's): ``p50``, ``p90`` and ``p999`` (also named
    ``p99_9``, as the extended JSON does), nearest-rank percentiles as
    ``p99`` is (``None`` without samples; estimated within 0.5 % after
    ``no_samples=True``), and ``unit``: ``"s"`` for an observation of
    times, ``None`` for the program's units (docs/cli.md, "Percentiles,
    units and rates")."""

    def __init__(self, row, series):
        self.name = row.name
        self.count = row.count
        self.mean = row.mean
        self.ci = row.ci
        self.cv2 = row.cv2
        self.p99 = row.p99
        qs = row.quantiles or [None, None, row.p99, None]
        self.p50, self.p90, self.p99_9 = qs[0], qs[1], qs[3]
        self.unit: Optional[str] = row.unit
        if getattr(series, "running", False):  # no_samples=True: no series kept
            from .report.dump import ObserveSeries
            series = ObserveSeries()
        self._series = series

    @property
    def p999(self) -> Optional[float]:
        """The p99.9 (``p99_9``)."""
        return self.p99_9

    @property
    def samples(self) -> Sequence[float]:
        return _floats(self._series.values)

    @property
    def times(self) -> Sequence[float]:
        return _floats(self._series.times)

    @property
    def sessions(self) -> Sequence[int]:
        return _ints(self._series.sessions)

    @property
    def turns(self) -> Sequence[int]:
        return _ints(self._series.turns)

    def __repr__(self) -> str:
        from .notebook import observe_repr
        return observe_repr(self)


class Gauge(object):
    """One gauge: its summary (``mean``, ``ci``, ``min``, ``max``) and its
    change points ``times``, ``values`` (the whole run, warm-up included)."""

    def __init__(self, row, trace):
        self.name = row.name
        self.mean = row.mean
        self.ci = row.ci
        self.min = row.min
        self.max = row.max
        self._trace = trace

    @property
    def times(self) -> Sequence[float]:
        return _floats(self._trace.times)

    @property
    def values(self) -> Sequence[float]:
        return _floats(self._trace.values)

    def __repr__(self) -> str:
        from .notebook import gauge_repr
        return gauge_repr(self)


FRAMES = ("samples", "gauges", "observes", "stages", "pools")


def _pandas(what: str):
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("%s needs pandas: pip install 'serq[frames]'" % what) from None
    return pd


class Report(object):
    """The result of a run: the fields of the JSON report as attributes, and
    the reference's accessors.  ``observes`` and ``gauges`` are dicts by
    name in the program's order (a new dict on each access), ``stages`` and
    ``pools`` lists of rows, one per member.

    serq's own: ``text()`` and ``json(extended=...)`` give what ``serq run``
    prints, ``admission`` the admission rows, ``dump(folder)`` writes the
    series as ``--dump`` does; the repr names the run's totals and main
    observations, and a notebook shows the report as tables."""

    def __init__(self, report, sim, no_samples: bool = False, extended: bool = False):
        self._report = report
        for key in report.SCALAR_FIELDS:
            setattr(self, key, getattr(report, key))
        #: serq's own: None for a run that went to its end, else why it
        #: stopped early: "interrupted" (Ctrl-C), "--max-events N",
        #: "--max-wall T" (the limits of serq.run); the report then covers
        #: the run up to ``end``.
        self.partial: Optional[str] = sim.partial
        self._observes = [Observe(report.observes[o.name], o) for o in sim.observations]
        self._gauges = [Gauge(report.gauges[g.name], g) for g in sim.gauges]
        self.stages = list(report.stages)
        self.pools = list(report.pools)
        #: serq's own: sessions, turns, requests and generated (decode)
        #: tokens a second over [warmup, end] (``serq.report.model.Rates``).
        self.rates = report.rates
        #: serq's own: the goodput and attainment of the SLOs given to
        #: ``serq.run(..., slo=[...])`` (``serq.report.slo.SloResult``),
        #: None without SLOs.
        self.slo = report.slo
        from .report.admission import admission_rows
        self._admission = admission_rows(sim)
        #: serq's own: the run's options that change what it prints
        self.no_samples = no_samples
        self.extended = extended

    @property
    def observes(self) -> Dict[str, Observe]:
        return {o.name: o for o in self._observes}

    @property
    def gauges(self) -> Dict[str, Gauge]:
        return {g.name: g for g in self._gauges}

    def json(self, extended: Optional[bool] = None) -> str:
        """The report as ``serq run --json`` prints it (without the newline):
        for a whole run, pyserq 0.1.3's ``Report.json()`` byte for byte.
        serq's own: a partial run adds the key ``extended`` with its
        ``partial`` object, as the command does; ``extended=True`` (by
        default the ``extended`` given to ``serq.run``) is ``--json
        --extended``: the key ``extended`` with the admission rows, the
        findings, the percentiles, units and rates, and the SLOs."""
        from .report.page import run_json
        if extended is None:
            extended = self.extended
        if not isinstance(extended, bool):
            raise UsageError("json(extended=%r): extended is True or False" % (extended,))
        return run_json(self._report, self.partial, extended, self._admission)

    def text(self, admission: bool = False) -> str:
        """serq's own: the text report, as ``serq run`` prints it (the same
        bytes for the same program and options, from the ``partial:`` line
        of a stopped run to the last empty line); ``admission=True`` adds
        the admission table as ``serq run --admission`` does."""
        from .report.page import run_text
        if not isinstance(admission, bool):
            raise UsageError("text(admission=%r): admission is True or False" % (admission,))
        return run_text(self._report, self.partial, self._admission if admission else None,
                        self.no_samples)

    @property
    def admission(self) -> List:
        """serq's own: the admission rows (``serq run --admission``), one per
        pool member: ``blocked_attempts``, ``blocked_fraction``,
        ``mean_reserved``, ``preemptions``, ``storm_window``, ``storm_peak``,
        ``storm_at``, ``preemption_times`` (report/admission.py)."""
        return list(self._admission)

    def dump(self, folder: str) -> List[str]:
        """serq's own: write the samples and gauges as CSV files under
        ``folder``, as ``serq run --dump`` does; returns the paths."""
        from .report.dump import write_dump
        if self.no_samples:
            raise UsageError("dump writes every sample, which no_samples=True did not keep")
        if not isinstance(folder, (str, os.PathLike)):
            raise UsageError("dump(%r): give a folder's path" % (folder,))
        return write_dump(os.fspath(folder), {o.name: o._series for o in self._observes},
                          {g.name: g._trace for g in self._gauges})

    @property
    def findings(self) -> List[Finding]:
        """serq's own (not pyserq's): what the simulated system did that a
        reader must not miss (a deadlock, a livelock, a queue head over the
        cap, a long backlog, an idle step stage), computed at the end of the
        run; ``[]`` for a clean run.  Each is a ``Finding`` with ``kind``,
        ``subject``, ``name``, ``index``, ``sessions``, ``since``,
        ``message``, ``cause``, ``remedy`` and ``to_dict()``."""
        return list(report_findings(self._report))

    def observe(self, name: str) -> Optional[Observe]:
        return next((o for o in self._observes if o.name == name), None)

    def gauge(self, name: str) -> Optional[Gauge]:
        return next((g for g in self._gauges if g.name == name), None)

    def stage(self, name: str):
        """The first stage member of that name."""
        return next((s for s in self.stages if s.name == name), None)

    def stages_named(self, name: str) -> List:
        return [s for s in self.stages if s.name == name]

    def pool(self, name: str):
        return next((p for p in self.pools if p.name == name), None)

    def pools_named(self, name: str) -> List:
        return [p for p in self.pools if p.name == name]

    def to_dataframe(self, what: str = "samples"):
        """A tidy pandas DataFrame (needs the ``frames`` extra: pandas).

        ``what`` is one of:

        * ``"samples"``: one row per observation sample after warm-up,
          columns ``observe`` (the name), ``time``, ``session`` (the
          session's serial), ``turn`` (its turn number), ``value``;
        * ``"gauges"``: one row per gauge change point, columns ``gauge``,
          ``time``, ``value``;
        * ``"observes"``: one row per observation, the summary columns of
          the text report: ``observe``, ``unit``, ``count``, ``mean``,
          ``ci``, ``cv2``, ``p50``, ``p90``, ``p99``, ``p999``;
        * ``"stages"``, ``"pools"``: one row per member, the columns of the
          JSON report's rows (``name``, ``index``, ...).

        Absent values (JSON ``null``) are NaN.
        """
        pd = _pandas("Report.to_dataframe")
        if what == "samples":
            cols = {"observe": [], "time": [], "session": [], "turn": [], "value": []}
            for o in self._observes:
                s = o._series
                cols["observe"].extend([o.name] * len(s.values))
                cols["time"].extend(s.times)
                cols["session"].extend(s.sessions)
                cols["turn"].extend(s.turns)
                cols["value"].extend(s.values)
            return pd.DataFrame({
                "observe": pd.Series(cols["observe"], dtype=object),
                "time": pd.Series(cols["time"], dtype="float64"),
                "session": pd.Series(cols["session"], dtype="int64"),
                "turn": pd.Series(cols["turn"], dtype="int64"),
                "value": pd.Series(cols["value"], dtype="float64")})
        if what == "gauges":
            names, times, values = [], [], []
            for g in self._gauges:
                t = g._trace
                names.extend([g.name] * len(t.times))
                times.extend(t.times)
                values.extend(t.values)
            return pd.DataFrame({"gauge": pd.Series(names, dtype=object),
                                 "time": pd.Series(times, dtype="float64"),
                                 "value": pd.Series(values, dtype="float64")})
        if what == "observes":
            nums = ("mean", "ci", "cv2", "p50", "p90", "p99", "p999")
            rows = [[o.name, o.unit, o.count] + [_frame_cell(getattr(o, k)) for k in nums]
                    for o in self._observes]
            frame = pd.DataFrame(rows, columns=["observe", "unit", "count"] + list(nums))
            return frame.astype(dict([("count", "int64")] + [(k, "float64") for k in nums]))
        if what in ("stages", "pools"):
            rows = self.stages if what == "stages" else self.pools
            cls = type(rows[0]) if rows else None
            fields = list(cls.JSON_FIELDS) if cls else ["name", "index"]
            data = [[_frame_cell(getattr(r, f)) for f in fields] for r in rows]
            frame = pd.DataFrame(data, columns=fields)
            if "index" in frame:
                frame["index"] = frame["index"].astype("Int64")
            return frame
        raise ValueError("to_dataframe(%r): what is one of %s" % (what, ", ".join(FRAMES)))

    def __repr__(self) -> str:
        from .notebook import report_repr
        return report_repr(self)

    def _repr_html_(self) -> str:
        from .notebook import report_html
        return report_html(self)


def _frame_cell(v):
    if v is None:
        return math.nan
    if isinstance(v, tuple):  # a pool's over_cap: (queue, need)
        return "%s:%s" % v
    return v


# ------------------------------------------------------------------ run

def _flag(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise UsageError("serq.run(%s=%r): %s is True or False" % (name, value, name))
    return value


def _real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _overridden(program: Program, seed, horizon, warmup, arrivals, trace) -> ir.Program:
    """The program's IR with the run settings given to ``serq.run`` (a
    copy; the program itself is unchanged), checked as ``--horizon`` and
    the others are on the command line."""
    _check_types(None, None, None, None, seed, horizon, warmup, arrivals, trace)
    if seed is not None and not 0 <= seed < 2 ** 64:
        raise OverflowError("the seed is a whole number from 0 to 2^64 - 1")
    prog = program.ir
    if seed is None and horizon is None and warmup is None and arrivals is None and \
            trace is None:
        return prog
    h = prog.horizon if horizon is None else float(horizon)
    w = prog.warmup if warmup is None else float(warmup)
    if horizon is not None and not (0 < h < math.inf):
        raise UsageError("serq.run(horizon=%r): the horizon is a finite positive number of "
                         "simulated seconds" % (horizon,))
    if warmup is not None and not (0 <= w < math.inf):
        raise UsageError("serq.run(warmup=%r): the warm-up is a finite number of simulated "
                         "seconds, 0 or more" % (warmup,))
    if not w < h:
        raise UsageError("serq.run: the warm-up %s is not below the horizon %s" % (
            _g(w), _g(h)), help="lower warmup or raise horizon (the program's run { ... } "
                                "has horizon %s, warmup %s)" % (_g(prog.horizon),
                                                                _g(prog.warmup)))
    if arrivals is not None and arrivals < 1:
        raise UsageError("serq.run(arrivals=%r): the arrivals to run are at least 1"
                         % (arrivals,))
    import copy
    prog = copy.copy(prog)
    if seed is not None:
        prog.seed = seed
    prog.horizon, prog.warmup = h, w
    if arrivals is not None:
        prog.arrivals = arrivals
    if trace is not None:
        prog.trace, prog.trace_dir = trace, None  # relative to the current directory
    return validate(prog)


def _g(x: float) -> str:
    return "%g" % x


def _trace_sink(target):
    """``trace_iterations``: (the callable the simulator calls with each
    line, the ``LineSink`` to finish, or None)."""
    from .linesink import LineSink
    if isinstance(target, (str, os.PathLike)):
        path = os.fspath(target)
        if path == "-":
            import sys
            return LineSink(None, sys.stderr), True
        if not path:
            raise UsageError("serq.run(trace_iterations=''): give a file's path, a stream or "
                             "a function")
        from .atomic import AtomicFile
        return LineSink(AtomicFile(path), None), True
    if callable(getattr(target, "write", None)):
        return LineSink(None, target, "the trace_iterations stream"), True
    if callable(target):
        return target, False
    raise UsageError("serq.run(trace_iterations=%r): give a file's path, a stream (an object "
                     "with write) or a function taking each line" % (target,))


def run(program: Program, *, seed: Optional[int] = None, horizon: Optional[float] = None,
        warmup: Optional[float] = None, arrivals: Optional[int] = None,
        trace: Optional[str] = None, no_samples: bool = False,
        max_events: Optional[int] = None, max_wall: Optional[float] = None,
        check_invariants: bool = False,
        progress: Union[bool, Callable[[float, float], None]] = False,
        slo: Optional[Sequence[str]] = None, slo_per: str = "request",
        trace_iterations=None, extended: bool = False) -> Report:
    """Simulate a compiled program (pyserq's ``run(program)``), with, as
    keyword arguments, the options of ``serq run`` (serq's own):

    * ``seed``, ``horizon``, ``warmup``, ``arrivals``, ``trace``: the run
      settings, as ``serq.compile`` takes them (the program is unchanged);
    * ``no_samples``: observations kept as running statistics only
      (``--no-samples``: bounded memory, p50 ... p99.9 and, above 10240
      samples, ci estimated; ``samples`` then empty);
    * ``max_events`` (a whole number), ``max_wall`` (seconds of wall time):
      stop early with a partial report, ``partial`` saying why;
    * ``check_invariants``: check every pool invariant after every event;
    * ``progress``: True shows a progress bar (rich, in a terminal or a
      notebook) once the run has taken a second; a function
      ``progress(now, horizon)`` is called every few thousand events;
    * ``slo``, ``slo_per``: SLO texts as ``--slo`` takes them
      (``["ttft <= 0.5", "tpot <= 50ms"]``) and ``"request"`` or
      ``"session"``: the report's ``slo`` gives the goodput and each SLO's
      attainment (``serq.report.slo.SloResult``);
    * ``trace_iterations``: one line per step iteration (``serq run
      --trace-iterations``), to a file (a path, replaced whole when the run
      ends; ``"-"``: standard error), a stream (an object with ``write``)
      or a function called with each line;
    * ``extended``: ``report.json()`` is then ``--json --extended``'s.

    A wrong option raises ``serq.errors.UsageError`` (a ``ValueError``)
    saying what it takes, before the run; a wrong run setting raises as
    ``serq.compile`` does.  Ctrl-C stops the run at the next event and
    raises ``serq.Interrupted`` (a ``KeyboardInterrupt``) whose ``report``
    is the partial report: ``report.partial`` is ``"interrupted"`` and
    ``report.end`` the time it stopped at.  An iteration trace that cannot
    be written raises ``serq.errors.OutputError`` after the run, with the
    report as its ``report``."""
    if not isinstance(program, Program):
        raise TypeError("serq.run takes a compiled program (serq.compile(path) or "
                        "serq.Program.from_json(text)), not %s" % type(program).__name__)
    prog = _overridden(program, seed, horizon, warmup, arrivals, trace)
    no_samples = _flag("no_samples", no_samples)
    check_invariants = _flag("check_invariants", check_invariants)
    extended = _flag("extended", extended)
    if max_events is not None and not (isinstance(max_events, numbers.Integral) and
                                       not isinstance(max_events, bool) and max_events >= 1):
        raise UsageError("serq.run(max_events=%r): the events to stop after are a whole "
                         "number, 1 or more" % (max_events,))
    if max_wall is not None and not (_real(max_wall) and 0 < max_wall < math.inf):
        raise UsageError("serq.run(max_wall=%r): the wall time to stop after is a finite "
                         "positive number of seconds" % (max_wall,))
    if not (isinstance(progress, bool) or callable(progress)):
        raise UsageError("serq.run(progress=%r): progress is True, False or a function "
                         "progress(now, horizon)" % (progress,))
    if slo_per not in ("request", "session"):
        raise UsageError("serq.run(slo_per=%r): the SLOs judge a \"request\" or a "
                         "\"session\"" % (slo_per,))
    slos = None
    if slo is not None:
        from .report.slo import parse_slos
        if isinstance(slo, str):
            slo = [slo]
        texts = list(slo) if isinstance(slo, (list, tuple)) else None
        if not texts or not all(isinstance(t, str) for t in texts):
            raise UsageError("serq.run(slo=%r): give an SLO's text (\"ttft <= 0.5\") or a "
                             "list of them" % (slo,))
        if no_samples:
            raise UsageError("serq.run: slo joins each request's samples, which "
                             "no_samples=True does not keep")
        try:
            slos = parse_slos(texts, prog, slo_per)
        except UsageError as e:  # said as the command's --slo: say it as the argument
            if e.message.startswith("`--slo "):
                e.message = "serq.run(slo=...): `" + e.message[len("`--slo "):]
                e.args = (e.message,)
            if e.help:
                e.help = e.help.replace("add --slo-per session", "give slo_per=\"session\"")
            raise
    elif slo_per != "request":
        raise UsageError("serq.run(slo_per=%r) says what the SLOs judge: give them with slo=[...]"
                         % (slo_per,))
    sink, finish = (None, False) if trace_iterations is None else _trace_sink(trace_iterations)
    bar = None
    if progress is True:
        from .progressbar import RunProgress
        bar = RunProgress()
    elif callable(progress):
        bar = progress
    try:
        sim = simulate(prog, bar, check_invariants,
                       None if sink is None else (sink.line if finish else sink),
                       no_samples, max_events, max_wall, track_requests=slos is not None)
    except SerqError:
        if finish:
            sink.finish([])  # the iterations up to the error are what one reads to find it
        raise
    except BaseException:
        if finish:
            sink.discard()
        raise
    finally:
        if progress is True:
            bar.close()
    failures: List = []
    if finish:
        sink.finish(failures)
    built = build_report(sim)
    if slos is not None:
        from .report.slo import evaluate
        built.slo = evaluate(sim, slos, slo_per)
    report = Report(built, sim, no_samples, extended)
    if failures:
        failures[0].report = report
        raise failures[0]
    if sim.partial == "interrupted":
        raise Interrupted("serq.run: interrupted at t = %r of a horizon of %r: the partial "
                          "report is the exception's `report`" % (report.end, report.horizon),
                          report)
    return report


def read_trace(path: str):
    """A trace file's corpus: a list of sessions, each a list of
    ``(new, out, think, forced)`` tuples."""
    from .tracefile import read_trace as read
    return read(path)
