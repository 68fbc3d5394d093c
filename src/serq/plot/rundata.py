"""The data of one run's figures, read from a ``serq run --dump`` directory
and an iteration trace (``--trace-iterations``).

``run_and_dump`` makes both for a program: it adds two gauges per pool
member, its units held (``serq.used.NAME``) and its cached units
(``serq.cached.NAME``, read from the simulator's pool: the language has no
query for them), one per pool member's admission queue
(``serq.queued.NAME``) and one per stage member (``serq.queue.NAME``, the
sessions at the stage, as ``queue(stage)`` reads), runs it once, writes
the dump with those gauges and the iteration trace, and reads them back.
A gauge only reads the state, so the run is the one ``serq run`` makes (the
same report, but for these gauges).  Beside the dump it writes
``serq-plot.json`` (``META_FILE``): the warm-up, the end, each pool's cap,
each observation's unit and each step stage's inter-token histogram, which
``load_dump`` reads back when it is there.
"""
import csv
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..errors import OutputError, UsageError

SERIES_PREFIX = "serq."
ITERATIONS_FILE = "iterations.txt"
META_FILE = "serq-plot.json"

_ITER = re.compile(r"^(\S+) (\S+) res=(\d+) pre=(\S+)/(\d+) dec=(\S+)/(\d+) adm=(\d+) "
                   r"pmt=(\d+) cost=(\S+) \|(.*)$")
_JOB = re.compile(r"^(\d+):(\d+):([pd])(\S+)$")


@dataclass
class Iteration:
    """One line of ``--trace-iterations``."""
    start: float
    stage: str
    residents: int
    prefill_tokens: float
    prefill_jobs: int
    decode_tokens: float
    decode_jobs: int
    cost: float
    jobs: List[Tuple[int, int, str, float]]  # (session, turn, "p" or "d", tokens)

    @property
    def mix(self) -> str:
        if self.prefill_jobs and self.decode_jobs:
            return "mixed"
        return "prefill" if self.prefill_jobs else "decode" if self.decode_jobs else "empty"


@dataclass
class RunData:
    observes: Dict[str, List[float]] = field(default_factory=dict)
    observe_times: Dict[str, List[float]] = field(default_factory=dict)
    gauges: Dict[str, Tuple[List[float], List[float]]] = field(default_factory=dict)
    iterations: Optional[List[Iteration]] = None
    warmup: Optional[float] = None
    end: Optional[float] = None
    report_text: Optional[str] = None
    report: Optional[object] = None  # the run's report (report.model.Report)
    units: Dict[str, Optional[str]] = field(default_factory=dict)  # "s" for a time
    caps: Dict[str, float] = field(default_factory=dict)  # pool member -> cap
    # step stage member -> (gaps, mean, [[value, count], ...] in value order)
    itl: Dict[str, Tuple[int, Optional[float], List[List[float]]]] = \
        field(default_factory=dict)


def series_gauges(prog) -> List:
    """The gauges ``run_and_dump`` adds (IR ``Gauge`` nodes)."""
    from ..ir import nodes as ir

    def families(items):
        out = {}
        for i, it in enumerate(items):
            base, count = out.get(it.name, (i, 0))
            out[it.name] = (base, count + 1)
        return out

    def ref(fams, it):
        base, count = fams[it.name]
        return ir.Ref(base, count, None if it.index is None else ir.Num(float(it.index)))

    def label(it):
        return it.name if it.index is None else "%s[%d]" % (it.name, it.index)

    out = []
    pf = families(prog.pools)
    for p in prog.pools:
        out.append(ir.Gauge(SERIES_PREFIX + "used." + label(p),
                            ir.Call("Used", [ir.ArgPool(ref(pf, p))])))
        out.append(ir.Gauge(SERIES_PREFIX + "queued." + label(p),
                            ir.Call("Queued", [ir.ArgPool(ref(pf, p))])))
    sf = families(prog.stages)
    for s in prog.stages:
        if type(s.kind) is ir.Delay:
            continue
        out.append(ir.Gauge(SERIES_PREFIX + "queue." + label(s),
                            ir.Call("Queue", [ir.ArgStage(ref(sf, s))])))
    return out


def label(name: str, member: Optional[int]) -> str:
    return name if member is None else "%s[%d]" % (name, member)


def _cached_gauges(sim) -> None:
    """``serq.cached.NAME`` for each pool, read as the gauges are (at each
    event's end): the units of the pool's cached entries."""
    from ..sim.timeavg import GaugeTrace
    for p in sim.pools:
        sim.gauges.append(GaugeTrace(SERIES_PREFIX + "cached." + label(p.name, p.member),
                                     _read_cached, p))


def _read_cached(pool) -> float:
    return pool.cached


def itl_buckets(hist) -> Tuple[int, Optional[float], List[List[float]]]:
    """An ``ItlHistogram`` as (gaps, mean, [[value, count]...]): each
    bucket's value as the report's quantiles read it (its geometric middle
    clamped to its smallest and largest gap)."""
    from ..report.stats import ItlHistogram
    out = []
    for k in sorted(hist.buckets):
        b = hist.buckets[k]
        count, lo, hi = b.count, b.lo, b.hi
        if k == ItlHistogram.bucket(0.0):
            v = lo
        else:
            v = min(max(math.exp((k + 0.5) * math.log1p(0.01)), lo), hi)
        out.append([v, count])
    return hist.n, hist.mean(), out


def run_and_dump(path: str, directory: str, sets, defs, **settings) -> RunData:
    """Run the program at ``path`` once with the series gauges, write its
    dump and iteration trace to ``directory`` and read them back."""
    from ..compiler import compile_program, is_ir, read_source
    from ..ir.json import loads
    from ..report.build import build_report
    from ..report.dump import write_dump
    from ..report.text import report_text
    from ..report.units import observation_units
    from ..runner import simulate
    if is_ir(path, read_source(path)):
        if sets or defs:
            raise UsageError("a `let` or `def` override applies to program text, not to IR")
        prog = loads(read_source(path), file=path)
        for key, v in settings.items():
            if v is not None:
                setattr(prog, key, v)
    else:
        prog = compile_program(path, sets=sets, defs=defs, **settings)
    prog.gauges = list(prog.gauges) + series_gauges(prog)
    from ..atomic import replacing
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise OutputError("cannot write the run's series to %s: %s"
                          % (directory, e.strerror or e)) from None
    trace_file = os.path.join(directory, ITERATIONS_FILE)
    with replacing(trace_file) as out:
        sim = simulate(prog, trace_iterations=lambda line: out.write(line + "\n"),
                       on_start=_cached_gauges)
        if sim.partial is not None:  # Ctrl-C stopped the run: no figures of half a run
            raise KeyboardInterrupt()
    write_dump(directory, {o.name: o for o in sim.observations},
               {g.name: g for g in sim.gauges})
    report = build_report(sim)
    # The report as `serq run` prints it: without the gauges added here.
    report.gauges = {k: v for k, v in report.gauges.items() if not k.startswith(SERIES_PREFIX)}
    meta = {"warmup": prog.warmup, "end": sim.end,
            "caps": {label(p.name, p.member): p.cap for p in sim.pools
                     if not math.isinf(p.cap)},
            "units": dict(zip(prog.observes, observation_units(prog))),
            "itl": {label(st.name, st.member): itl_buckets(st.stats.itl) for st in sim.stages
                    if st.kind == "step" and st.stats.itl is not None}}
    from ..atomic import write_text
    write_text(os.path.join(directory, META_FILE), json.dumps(meta, indent=1) + "\n")
    data = load_dump(directory, trace_file)
    data.report_text = report_text(report)
    data.report = report
    return data


def _read_csv(path: str) -> List[List[str]]:
    try:
        with open(path, newline="") as f:
            return list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise UsageError("cannot read %s: %s" % (path, getattr(e, "strerror", None) or e)) \
            from None


def _floats(path: str, rows: List[List[str]], col: int) -> List[float]:
    out = []
    for n, row in enumerate(rows, 2):
        try:
            out.append(float(row[col]))
        except (IndexError, ValueError):
            raise UsageError("%s:%d: not a number in column %d" % (path, n, col + 1)) from None
    return out


def load_dump(directory: str, iterations: Optional[str] = None) -> RunData:
    """Read a dump directory (``serq run --dump``) and, if given, an
    iteration trace."""
    if not os.path.isdir(directory):
        raise UsageError("--dump %s: no such directory (write one with `serq run FILE --dump "
                         "DIR`)" % directory)
    data = RunData()
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not name.endswith(".csv") or not os.path.isfile(path):
            continue
        rows = _read_csv(path)
        if not rows or rows[0] != ["time", "session", "turn", "value"]:
            raise UsageError("%s is not an observation's samples (header time,session,turn,"
                             "value)" % path)
        data.observes[name[:-4]] = _floats(path, rows[1:], 3)
        data.observe_times[name[:-4]] = _floats(path, rows[1:], 0)
    gdir = os.path.join(directory, "gauge")
    if os.path.isdir(gdir):
        for name in sorted(os.listdir(gdir)):
            path = os.path.join(gdir, name)
            if not name.endswith(".csv"):
                continue
            rows = _read_csv(path)
            if not rows or rows[0] != ["time", "value"]:
                raise UsageError("%s is not a gauge's series (header time,value)" % path)
            data.gauges[name[:-4]] = (_floats(path, rows[1:], 0), _floats(path, rows[1:], 1))
    if not data.observes and not data.gauges:
        raise UsageError("%s holds no observation or gauge CSV files" % directory)
    if iterations is not None:
        data.iterations = read_iterations(iterations)
    ends = [ts[-1] for ts in data.observe_times.values() if ts] + \
        [g[0][-1] for g in data.gauges.values() if g[0]]
    data.end = max(ends) if ends else None
    meta_path = os.path.join(directory, META_FILE)
    if os.path.isfile(meta_path):
        try:
            with open(meta_path) as f:
                meta = json.load(f)
            data.warmup, data.end = float(meta["warmup"]), float(meta["end"])
            data.caps = {k: float(v) for k, v in meta["caps"].items()}
            data.units = dict(meta["units"])
            data.itl = {k: (int(n), mean, [[float(v), int(c)] for v, c in b])
                        for k, (n, mean, b) in meta["itl"].items()}
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise UsageError("%s: not what `serq plot --run --dump` writes (%s)"
                             % (meta_path, e)) from None
    return data


def read_iterations(path: str) -> List[Iteration]:
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError("cannot read %s: %s" % (path, getattr(e, "strerror", None) or e)) \
            from None
    out = []
    for n, line in enumerate(lines, 1):
        m = _ITER.match(line)
        if m is None:
            raise UsageError("%s:%d: not an iteration line (write them with `serq run "
                             "--trace-iterations FILE`)" % (path, n))
        jobs = []
        for j in m.group(11).split():
            jm = _JOB.match(j)
            if jm is None:
                raise UsageError("%s:%d: `%s` is not a job (session:turn:p|d tokens)"
                                 % (path, n, j))
            jobs.append((int(jm.group(1)), int(jm.group(2)), jm.group(3), float(jm.group(4))))
        out.append(Iteration(float(m.group(1)), m.group(2), int(m.group(3)), float(m.group(4)),
                             int(m.group(5)), float(m.group(6)), int(m.group(7)),
                             float(m.group(10)), jobs))
    return out
