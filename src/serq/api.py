"""The Python API, mirroring pyserq 0.1.3's names so that ``import serq as
pyserq`` works for the documented calls::

    import serq
    program = serq.compile("examples/chat.sq", sets={"rate": 3}, seed=7)
    report = serq.run(program)
    report.json()                     # the reference's JSON, byte for byte
    report.observe("ttft").samples    # every sample after warm-up (a numpy array)
    report.stage("gpu").mean_itl

Differences from pyserq: errors are ``serq.errors.SerqError`` (a
``ValueError``, as pyserq raises), and a report row's absent value is
``None`` rather than ``nan``; sample series are numpy arrays, not lists.
"""
import math
from typing import Dict, List, Optional, Sequence

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
from .report.findings import Finding, report_findings
from .report.jsonfmt import report_json
from .runner import simulate
from .sim.rng import Rng
from .interrupt import Interrupted

__all__ = ["compile", "run", "Program", "Report", "Observe", "Gauge", "Rng", "read_trace",
           "Interrupted"]


class Program(object):
    """A compiled program: its IR."""

    def __init__(self, ir_program: ir.Program):
        self.ir = ir_program

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
    return Program(compile_program(path, source=source, sets=sets, defs=defs, seed=seed,
                                   horizon=horizon, warmup=warmup, arrivals=arrivals,
                                   trace=trace))


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

    serq's own (not pyserq's): ``p50``, ``p90`` and ``p99_9``, nearest-rank
    percentiles as ``p99`` is (``None`` without samples), and ``unit``:
    ``"s"`` for an observation of times, ``None`` for the program's units
    (docs/cli.md, "Percentiles, units and rates")."""

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
        self._series = series

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
        return "Observe(%r, count=%d, mean=%r)" % (self.name, self.count, self.mean)


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
        return "Gauge(%r, mean=%r)" % (self.name, self.mean)


FRAMES = ("samples", "gauges", "observes", "stages", "pools")


class Report(object):
    """The result of a run: the fields of the JSON report as attributes, and
    the reference's accessors.  ``observes`` and ``gauges`` are dicts by
    name in the program's order (a new dict on each access), ``stages`` and
    ``pools`` lists of rows, one per member."""

    def __init__(self, report, sim):
        self._report = report
        for key in report.SCALAR_FIELDS:
            setattr(self, key, getattr(report, key))
        #: serq's own: None for a run that went to its end, else why it
        #: stopped early ("interrupted": Ctrl-C); the report then covers the
        #: run up to ``end``.
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

    @property
    def observes(self) -> Dict[str, Observe]:
        return {o.name: o for o in self._observes}

    @property
    def gauges(self) -> Dict[str, Gauge]:
        return {g.name: g for g in self._gauges}

    def json(self) -> str:
        """The report as pyserq 0.1.3's ``Report.json()`` prints it."""
        return report_json(self._report)

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
        * ``"observes"``: one row per observation, the summary columns
          ``observe``, ``count``, ``mean``, ``ci``, ``cv2``, ``p99``;
        * ``"stages"``, ``"pools"``: one row per member, the columns of the
          JSON report's rows (``name``, ``index``, ...).

        Absent values (JSON ``null``) are NaN.
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Report.to_dataframe needs pandas: pip install 'serq[frames]'") \
                from None
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
            rows = [(o.name, o.count, o.mean, o.ci, o.cv2, o.p99) for o in self._observes]
            frame = pd.DataFrame(rows, columns=["observe", "count", "mean", "ci", "cv2", "p99"])
            return frame.astype({"count": "int64", "mean": "float64", "ci": "float64",
                                 "cv2": "float64", "p99": "float64"})
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
        extra = "" if self.partial is None else ", partial=%r" % self.partial
        return "Report(seed=%d, end=%r, arrivals=%d%s)" % (self.seed, self.end, self.arrivals,
                                                           extra)


def _frame_cell(v):
    if v is None:
        return math.nan
    if isinstance(v, tuple):  # a pool's over_cap: (queue, need)
        return "%s:%s" % v
    return v


def run(program: Program, *, slo: Optional[Sequence[str]] = None,
        slo_per: str = "request") -> Report:
    """Simulate a compiled program.  Ctrl-C stops the run at the next event
    and raises ``serq.Interrupted`` (a ``KeyboardInterrupt``) whose
    ``report`` is the partial report: ``report.partial`` is
    ``"interrupted"`` and ``report.end`` the time it stopped at.

    serq's own: ``slo``, SLO texts as ``serq run --slo`` takes them
    (``["ttft <= 0.5", "tpot <= 50ms"]``), and ``slo_per`` (``"request"``
    or ``"session"``) give the report's ``slo``: the goodput and each SLO's
    attainment (``serq.report.slo.SloResult``).  A malformed SLO or an
    unknown observation raises ``serq.errors.UsageError`` before the run."""
    slos = None
    if slo is not None:
        from .report.slo import parse_slos
        if isinstance(slo, str):
            slo = [slo]
        slos = parse_slos(list(slo), program.ir, slo_per)
    sim = simulate(program.ir, track_requests=slos is not None)
    built = build_report(sim)
    if slos is not None:
        from .report.slo import evaluate
        built.slo = evaluate(sim, slos, slo_per)
    report = Report(built, sim)
    if sim.partial == "interrupted":
        from .interrupt import Interrupted
        raise Interrupted("serq.run: interrupted at t = %r of a horizon of %r: the partial "
                          "report is the exception's `report`" % (report.end, report.horizon),
                          report)
    return report


def read_trace(path: str):
    """A trace file's corpus: a list of sessions, each a list of
    ``(new, out, think, forced)`` tuples."""
    from .tracefile import read_trace as read
    return read(path)
