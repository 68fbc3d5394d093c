"""The Python API, mirroring pyserq 0.1.3's names so that ``import serq as
pyserq`` works for the documented calls::

    import serq
    program = serq.compile("examples/chat.sq", sets={"rate": 3}, seed=7)
    report = serq.run(program)
    report.json()                     # the reference's JSON, byte for byte
    report.observe("ttft").samples    # every sample after warm-up
    report.stage("gpu").mean_itl

Differences from pyserq: errors are ``serq.errors.SerqError`` (a
``ValueError``, as pyserq raises), and a report row's absent value is
``None`` rather than ``nan``.
"""
from typing import Dict, List, Optional

from .compiler import compile_program
from .ir import json as ir_json
from .ir import nodes as ir
from .report.build import build_report
from .report.jsonfmt import report_json
from .runner import simulate
from .sim.rng import Rng

__all__ = ["compile", "run", "Program", "Report", "Observe", "Gauge", "Rng", "read_trace"]


class Program(object):
    """A compiled program: its IR."""

    def __init__(self, ir_program: ir.Program):
        self.ir = ir_program

    def to_json(self) -> str:
        """The IR as JSON text, as ``serq ir`` prints it."""
        return ir_json.dumps(self.ir)

    @staticmethod
    def from_json(text: str) -> "Program":
        """A program from IR JSON text (a relative trace is read from the
        current directory)."""
        return Program(ir_json.loads(text))


def compile(path: Optional[str] = None, *, source: Optional[str] = None,
            sets: Optional[Dict[str, object]] = None, defs: Optional[Dict[str, str]] = None,
            seed: Optional[int] = None, horizon: Optional[float] = None,
            warmup: Optional[float] = None, arrivals: Optional[int] = None,
            trace: Optional[str] = None) -> Program:
    """Parse, link and check a program (exactly one of ``path`` and ``source``)."""
    if seed is not None and (not isinstance(seed, int) or seed < 0):
        raise OverflowError("the seed is a whole number from 0 to 2^64 - 1")
    return Program(compile_program(path, source=source, sets=sets, defs=defs, seed=seed,
                                   horizon=horizon, warmup=warmup, arrivals=arrivals,
                                   trace=trace))


class Observe(object):
    """One observation: its summary and every sample after warm-up, with the
    time, the session and its turn."""

    def __init__(self, row, series):
        self.name = row.name
        self.count = row.count
        self.mean = row.mean
        self.ci = row.ci
        self.cv2 = row.cv2
        self.p99 = row.p99
        self.samples = list(series.values)
        self.times = list(series.times)
        self.sessions = list(series.sessions)
        self.turns = list(series.turns)


class Gauge(object):
    """One gauge: its summary and its change points."""

    def __init__(self, row, trace):
        self.name = row.name
        self.mean = row.mean
        self.ci = row.ci
        self.min = row.min
        self.max = row.max
        self.times = list(trace.times)
        self.values = list(trace.values)


class Report(object):
    """The result of a run: the fields of the JSON report as attributes, and
    the reference's accessors."""

    def __init__(self, report, sim):
        self._report = report
        for key in report.SCALAR_FIELDS:
            setattr(self, key, getattr(report, key))
        self.observes = [Observe(report.observes[o.name], o) for o in sim.observations]
        self.gauges = [Gauge(report.gauges[g.name], g) for g in sim.gauges]
        self.stages = list(report.stages)
        self.pools = list(report.pools)

    def json(self) -> str:
        """The report as pyserq 0.1.3's ``Report.json()`` prints it."""
        return report_json(self._report)

    def observe(self, name: str) -> Optional[Observe]:
        return next((o for o in self.observes if o.name == name), None)

    def gauge(self, name: str) -> Optional[Gauge]:
        return next((g for g in self.gauges if g.name == name), None)

    def stage(self, name: str):
        """The first stage member of that name."""
        return next((s for s in self.stages if s.name == name), None)

    def stages_named(self, name: str) -> List:
        return [s for s in self.stages if s.name == name]

    def pool(self, name: str):
        return next((p for p in self.pools if p.name == name), None)

    def pools_named(self, name: str) -> List:
        return [p for p in self.pools if p.name == name]

    def to_dataframe(self):
        """One row per observation sample (name, time, session, turn, value),
        as a pandas DataFrame (needs the ``frames`` extra: pandas)."""
        import pandas as pd
        rows = []
        for o in self.observes:
            for t, s, k, v in zip(o.times, o.sessions, o.turns, o.samples):
                rows.append((o.name, t, s, k, v))
        return pd.DataFrame(rows, columns=["observe", "time", "session", "turn", "value"])


def run(program: Program) -> Report:
    """Simulate a compiled program."""
    sim = simulate(program.ir)
    return Report(build_report(sim), sim)


def read_trace(path: str):
    """A trace file's corpus: a list of sessions, each a list of
    ``(new, out, think, forced)`` tuples."""
    from .tracefile import read_trace as read
    return read(path)
