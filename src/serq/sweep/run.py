"""``serq sweep``: run a program over a grid of constants and seeds.

Every point of the grid (``grid.py``) is compiled once, here, so that a bad
value is refused with its error before anything runs; then each (point,
seed) is one task: the point's IR with the seed set, simulated and reduced
to its scalars (``metrics.py``).  Tasks run (``backends.py``) in this process (``jobs=1``), in
a pool of processes (``concurrent.futures``), or on a Ray cluster
(``ray_backend.py``); the table (``table.py``) is built from the results in
grid and seed order, so it is the same bytes whatever ran them.

Seeds: ``seeds`` runs of each point, with seeds ``first``, ``first +
2^32``, ``first + 2 * 2^32``, ... (``seeds.py``: consecutive seeds share a
session's random draws in 0.1.3); ``first`` is 1 unless ``--seed`` says
otherwise; the program's own ``run { seed … }`` is not used.

SLOs (``--slo``): each run also judges its requests against them
(report/slo.py) and gives their attainments and goodput as metrics
(``metrics.slo_metrics``), after the others.

``execute`` runs any list of programs over seeds with the same backends,
progress bar and interrupt handling; ``serq compare`` and ``serq
sensitivity`` (compare/) run their paired programs with it.
"""
import copy
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import RunError, SerqError, UsageError
from ..interrupt import Interrupted, WorkStopped as Stopped
from .backends import Result, Runner, Task
from .grid import Axis, check_axes, points
from .seeds import replication_seeds
from .table import COLUMNS, Table, aggregate, write


#: ``serq sweep --max-runs``'s default: a grid past it is most likely a typo
#: (``1:2:100000000``), and would run for days.
DEFAULT_MAX_RUNS = 10000


@dataclass
class Sweep:
    """What ``serq sweep`` was asked for."""
    file: str
    axes: List[Axis]
    defs: Dict[str, str] = field(default_factory=dict)
    seeds: int = 1
    first_seed: int = 1
    horizon: Optional[float] = None
    warmup: Optional[float] = None
    arrivals: Optional[int] = None
    trace: Optional[str] = None
    #: the most runs (points x seeds) the sweep makes; None: no bound
    max_runs: Optional[int] = DEFAULT_MAX_RUNS
    #: serq.sweep's (the Python API): the program's text instead of the file
    #: (``file`` then only names it), or its IR (an ``ir.Program``: no axes,
    #: no defs), and constants set at every point (not columns of the table)
    source: Optional[str] = None
    program: Optional[object] = None
    fixed: Dict[str, object] = field(default_factory=dict)
    #: ``--slo`` texts (report/slo.py), judged in every run
    slos: List[str] = field(default_factory=list)
    slo_per: str = "request"

    def seed_list(self) -> List[int]:
        return replication_seeds(self.first_seed, self.seeds)


def _describe(axes: Sequence[Axis], point: Tuple) -> str:
    from .table import cell
    return " ".join("%s=%s" % (ax.name, cell(v)) for ax, v in zip(axes, point)) or "the program"


def check_runs(sweep: Sweep) -> None:
    """Refuse a grid of more than ``max_runs`` runs, before any is made."""
    if sweep.max_runs is None:
        return
    n = sweep.seeds
    for ax in sweep.axes:
        n *= len(ax.values)
    if n > sweep.max_runs:
        shape = " x ".join(["%d %s" % (len(ax.values), ax.name) for ax in sweep.axes] +
                           ["%d seed%s" % (sweep.seeds, "" if sweep.seeds == 1 else "s")])
        raise UsageError("the sweep makes %d runs (%s), more than --max-runs %d"
                         % (n, shape, sweep.max_runs),
                         help="sweep fewer points or seeds, or raise --max-runs if the sweep "
                              "is meant to be this large")


def compile_points(sweep: Sweep) -> List:
    """One IR program per grid point (a located error names the point)."""
    check_axes(sweep.axes, COLUMNS)
    replication_seeds(sweep.first_seed, sweep.seeds)  # (refused past 2^64 - 1)
    check_runs(sweep)
    pts = points(sweep.axes)
    several = any(len(ax.values) > 1 for ax in sweep.axes)
    variants = []
    for point in pts:
        sets = dict(sweep.fixed)
        sets.update((ax.name, v) for ax, v in zip(sweep.axes, point))
        variants.append(sets)
    progs = compile_variants(
        sweep.file, variants, sweep.defs, sweep.first_seed, sweep.horizon, sweep.warmup,
        sweep.arrivals, sweep.trace,
        where=(lambda k: "at the point %s" % _describe(sweep.axes, pts[k])) if several
        else None, verb="sweep", source=sweep.source, program=sweep.program)
    if sweep.slos:
        check_slos(sweep.slos, sweep.slo_per, progs)
    return progs


def compile_variants(file: str, variants: Sequence[Dict[str, object]],
                     defs: Optional[Dict[str, str]] = None, first_seed: int = 1,
                     horizon: Optional[float] = None, warmup: Optional[float] = None,
                     arrivals: Optional[int] = None, trace: Optional[str] = None,
                     where: Optional[Callable[[int], str]] = None, verb: str = "run",
                     source: Optional[str] = None, program: Optional[object] = None) -> List:
    """The IR of ``file`` under each set of ``let`` overrides in
    ``variants`` (NAME -> a number or an expression's text), with the
    ``def`` overrides and run settings: what the runs of ``execute`` take.
    A located error gets the note ``where(k)`` for the ``k``-th variant.
    IR input takes no override (one variant, ``{}``).  For the Python API:
    ``source`` is the program's text (``file`` then only names it), or
    ``program`` its IR (an ``ir.Program``, taken as it is)."""
    from ..compiler import compile_program, is_ir, read_source
    from ..ir.json import loads
    settings = dict(horizon=horizon, warmup=warmup, arrivals=arrivals, trace=trace)
    progs = []
    text = source
    if program is None and text is None:
        text = read_source(file)
    if program is not None or (source is None and is_ir(file, text)):
        if any(variants) or defs:
            raise UsageError("a `let` or `def` override applies to program text, not to IR: "
                             "%s the program file" % verb)
        if program is not None:
            from ..ir.validate import validate
            prog = copy.copy(program)
            for key, v in settings.items():
                if v is not None:
                    setattr(prog, key, v)
            if trace is not None:
                prog.trace_dir = None
            validate(prog)
        else:
            prog = loads(text, file=file)
            for key, v in settings.items():
                if v is not None:
                    setattr(prog, key, v)
        progs.append(prog)
    else:
        path = None if source is not None else file
        for k, sets in enumerate(variants):
            try:
                prog = compile_program(path, source=source, sets=sets, defs=defs,
                                       seed=first_seed, **settings)
            except SerqError as e:
                if where is not None:
                    e.notes.append(where(k))
                raise
            progs.append(prog)
    for prog in progs:
        # Workers may run elsewhere (Ray): the trace is read from an absolute path.
        if prog.trace is not None:
            from ..compiler import trace_path
            prog.trace = os.path.abspath(trace_path(prog))
            prog.trace_dir = None
    return progs


def check_slos(texts: Sequence[str], per: str, progs: Sequence) -> None:
    """Refuse, before anything runs, an SLO that a program cannot judge (a
    malformed one, an unknown observation) or one given twice."""
    from ..report.slo import parse_slos
    from .metrics import slo_label
    for prog in progs:
        labels: Dict[str, str] = {}
        for slo in parse_slos(texts, prog, per):
            label = slo_label(slo)
            if label in labels:
                raise UsageError("`--slo %s` and `--slo %s` are the same SLO: give it once"
                                 % (labels[label], slo.text))
            labels[label] = slo.text


def slo_spec(sweep: Sweep) -> Optional[Tuple[Tuple[str, ...], str]]:
    """What a task needs to judge the SLOs: their texts and the unit."""
    return (tuple(sweep.slos), sweep.slo_per) if sweep.slos else None


# ------------------------------------------------------------------ tasks

def run_task(task: Task, on_start: Optional[Callable] = None) -> Result:
    """Simulate one point at one seed (in whichever process runs it).  A
    run stopped early (Ctrl-C, SIGTERM: ``on_start`` attaches it to the
    sweep's ``interrupt.Stop``) gives None: it is never tabulated."""
    from ..collector import relaxed
    with relaxed():  # (until the run's simulator is dropped: collector.py)
        return _run_task(task, on_start)


def _run_task(task: Task, on_start: Optional[Callable]) -> Result:
    from ..report.build import build_report
    from ..runner import simulate
    from .metrics import run_metrics, slo_metrics
    i, seed, prog = task[:3]
    spec = task[3] if len(task) > 3 else None
    prog = copy.copy(prog)
    prog.seed = seed
    try:
        slos = None
        if spec is not None:
            from ..report.slo import parse_slos
            slos = parse_slos(spec[0], prog, spec[1])
        sim = simulate(prog, on_start=on_start, track_requests=slos is not None)
        if sim.partial is not None:
            return i, seed, None
        metrics = run_metrics(sim, build_report(sim, extras=False))
        if slos is not None:
            from ..report.slo import evaluate
            metrics += slo_metrics(evaluate(sim, slos, spec[1]))
        return i, seed, metrics
    except SerqError as e:
        return i, seed, e.render()


def eta(elapsed: float, done: int, total: int, at_least: int) -> Optional[float]:
    """Seconds left, from the mean pace of the runs finished so far, or None
    while fewer than ``at_least`` have finished.  The first runs say little:
    the workers start together, so their results come in a burst after
    one run's time (a windowed rate then promises the whole sweep in
    seconds), and the first points of a grid are often its shortest."""
    if done < max(1, at_least) or done <= 0:
        return None
    return elapsed / done * (total - done)


def eta_floor(total: int, jobs: Optional[int]) -> int:
    """How many runs must finish before ``eta`` says anything: a round of
    the workers, and at least 5 % of the sweep."""
    workers = jobs or os.cpu_count() or 1
    return max(1, min(total, max(2, workers, -(-total // 20))))


class Progress(object):
    """A bar of finished runs on stderr (rich), or nothing; the time left is
    ``eta``'s (the sweep's mean pace, once enough runs have finished)."""

    def __init__(self, total: int, show: bool, label: str = "sweeping",
                 jobs: Optional[int] = None):
        self.bar = None
        if show:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar,
                                       ProgressColumn, TextColumn, TimeElapsedColumn)
            from rich.text import Text
            floor = eta_floor(total, jobs)

            class Left(ProgressColumn):
                def render(self, task):
                    left = eta(task.elapsed or 0.0, int(task.completed), int(task.total or 0),
                               floor)
                    if left is None:
                        return Text("estimating…", style="progress.remaining")
                    m, s = divmod(int(left + 0.5), 60)
                    h, m = divmod(m, 60)
                    return Text("%d:%02d:%02d left" % (h, m, s), style="progress.remaining")

            self.bar = Bar(TextColumn(label), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), Left(),
                           console=Console(file=sys.stderr), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("runs", total=total)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


class SweepInterrupted(Interrupted):
    """``run_sweep`` stopped by Ctrl-C or SIGTERM before its last run.
    ``table``: the points whose every seed finished (marked incomplete:
    ``table.incomplete``); ``points``, ``total_points``, ``runs``,
    ``total_runs``: what finished of what was asked; ``signum``: the
    signal; ``output``: where the table was written, or None."""

    def __init__(self, table: Table, points: int, total_points: int, runs: int,
                 total_runs: int, reason: str, signum: int, output: Optional[str]):
        super().__init__("serq sweep: %s after %d of %d points (%d of %d runs)"
                         % (reason, points, total_points, runs, total_runs), None, signum)
        self.output = output
        self.summary = ""  # what was written where, and how to resume
        self.table = table
        self.points = points
        self.total_points = total_points
        self.runs = runs
        self.total_runs = total_runs
        self.reason = reason


def run_sweep(sweep: Sweep, jobs: Optional[int] = None, backend: str = "local",
              address: Optional[str] = None, show_progress: bool = False,
              output: Optional[str] = None, stop=None, note: Callable[[str], None] = None
              ) -> Table:
    """Compile the grid, run every (point, seed) and build the table.

    With ``output`` (the table's file, or ``-`` for standard output), the
    table is written there (``table.write``).  To a file, finished runs are
    also kept in ``output + ".runs"`` as they finish, runs found there are
    not run again (``journal.py``), and the journal is removed once the
    whole table is written.

    Ctrl-C or SIGTERM (``stop``, an ``interrupt.Stop``; one is made if None)
    stops the launching and the running runs, which are dropped; the points
    whose every seed finished are written to ``output`` marked incomplete,
    and ``SweepInterrupted`` is raised.  A worker process that dies does the
    same, with a ``RunError``.  ``note(text)`` receives what the user should
    know (resuming, the journal kept)."""
    from ..interrupt import Stop
    own = stop is None
    if own:
        stop = Stop()
        stop.__enter__()
    try:
        return _run_sweep(sweep, jobs, backend, address, show_progress, output, stop,
                          note or (lambda text: None))
    finally:
        if own:
            stop.__exit__(None, None, None)


def run_tasks(todo: Sequence[Task], jobs: Optional[int], backend: str, address: Optional[str],
              stop, advance: Callable[[Result], None]) -> Optional[Stopped]:
    """Run the tasks on the backend (``local``: this process for ``jobs``
    1, else a pool of ``jobs`` processes, every core by default; ``ray``),
    calling ``advance(result)`` as each finishes.  A signal, or a worker
    that died, stops them: the ``WorkStopped`` saying why is returned (the
    finished results were given to ``advance``), else None."""
    defer = stop.defer
    stop.defer = True  # from here a signal stops the runs, not the bookkeeping
    try:
        with Runner(run_task, jobs, backend, address) as runner:
            runner.run(todo, stop, advance)
    except Stopped as e:
        return e
    finally:
        stop.defer = defer
    return None


def execute(progs: Sequence, seeds: Sequence[int], jobs: Optional[int] = None,
            backend: str = "local", address: Optional[str] = None,
            show_progress: bool = False, stop=None, label: str = "running",
            describe: Callable[[int], str] = lambda i: "program %d" % (i + 1),
            slos: Optional[Tuple[Tuple[str, ...], str]] = None
            ) -> Tuple[Dict[Tuple[int, int], List], Optional[str]]:
    """Run every program (compiled IR, as ``compile_points`` gives) at
    every seed, as the sweep runs its points: ``(results, stopped)`` with
    ``results[(program index, seed)]`` the run's metrics and ``stopped``
    None, or, when a signal stopped the runs, the finished ones and the
    reason (``interrupted``; ``stop.signum`` says which signal).  A run that
    fails is a ``RunError`` naming it (``describe(index)``) and its seed;
    a worker that died is one too."""
    from ..interrupt import Stop
    own = stop is None
    if own:
        stop = Stop()
        stop.__enter__()
    try:
        # seed by seed: a stopped comparison keeps the seeds every program ran
        tasks = [(i, s, p) if slos is None else (i, s, p, slos)
                 for s in seeds for i, p in enumerate(progs)]
        results: Dict[Tuple[int, int], object] = {}
        bar = Progress(len(tasks), show_progress, label, jobs)

        def advance(r: Result) -> None:
            results[(r[0], r[1])] = r[2]
            bar.advance()
        try:
            stopped = run_tasks(tasks, jobs, backend, address, stop, advance)
        finally:
            bar.close()
    finally:
        if own:
            stop.__exit__(None, None, None)
    for (i, seed) in sorted(results):
        value = results[(i, seed)]
        if isinstance(value, str) and stopped is None:
            raise RunError("the run of %s, seed %d, failed:\n%s" % (describe(i), seed, value))
    if stopped is not None and stopped.reason != "interrupted":
        raise RunError(stopped.reason)
    done = {k: v for k, v in results.items() if isinstance(v, list)}
    return done, None if stopped is None else stopped.reason


def _slo_key(spec) -> str:
    """The SLOs in a run's journal key ("" without SLOs: the keys stay those of a sweep
    without them)."""
    if spec is None:
        return ""
    return "slo per %s: %s" % (spec[1], " | ".join(spec[0]))


def _run_sweep(sweep, jobs, backend, address, show_progress, output, stop, note) -> Table:
    from .journal import Journal, run_keys
    progs = compile_points(sweep)
    seeds = sweep.seed_list()
    pts = points(sweep.axes)  # [()] without axes
    spec = slo_spec(sweep)
    tasks = [(i, s, p) if spec is None else (i, s, p, spec)
             for i, p in enumerate(progs) for s in seeds]
    to_file = output not in (None, "-")
    keys = run_keys(progs, seeds, _slo_key(spec)) if to_file else {}
    journal = Journal(output) if to_file else None
    by_key: Dict[Tuple[int, int], object] = {}
    if journal is not None:
        kept = journal.load()
        for i, s, *_rest in tasks:
            if keys[(i, s)] in kept:
                by_key[(i, s)] = kept[keys[(i, s)]]
        if by_key:
            note("resuming: %d of %d runs were finished before (kept in %s)"
                 % (len(by_key), len(tasks), journal.path))
        if journal.skipped:
            note("%s: %d line(s) could not be read (a run cut short by a kill): run again"
                 % (journal.path, journal.skipped))
    todo = [t for t in tasks if (t[0], t[1]) not in by_key]

    def done(r: Result) -> None:
        i, seed, value = r
        by_key[(i, seed)] = value
        if journal is not None and isinstance(value, list):
            journal.add(keys[(i, seed)], pts[i], seed, value)

    bar = Progress(len(tasks), show_progress, jobs=jobs)
    for _ in range(len(tasks) - len(todo)):
        bar.advance()

    def advance(r: Result) -> None:
        done(r)
        bar.advance()

    try:
        stopped = run_tasks(todo, jobs, backend, address, stop, advance)
    finally:
        bar.close()
        if journal is not None:
            journal.close()
    for i, seed in sorted(by_key):
        value = by_key[(i, seed)]
        if isinstance(value, str):
            if stopped is not None:
                break  # the stop is said first; the failed run is run again on resuming
            err = RunError("the run at %s, seed %d, failed:\n%s"
                           % (_describe(sweep.axes, pts[i]), seed, value))
            if journal is not None and journal.entries and journal.error is None:
                err.notes.append("the %d runs that finished are kept in %s: a rerun with the "
                                 "same output takes them" % (len(journal.entries), journal.path))
            raise err
    if stopped is not None:
        finished = [i for i in range(len(pts))
                    if all(isinstance(by_key.get((i, s)), list) for s in seeds)]
        runs = sum(1 for v in by_key.values() if isinstance(v, list))
        table = aggregate([ax.name for ax in sweep.axes], [pts[i] for i in finished],
                          {(j, s): by_key[(i, s)] for j, i in enumerate(finished)
                           for s in seeds}, seeds)
        table.incomplete = ("incomplete: %d of %d points (%d of %d runs) finished; the sweep "
                            "was %s" % (len(finished), len(pts), runs, len(tasks),
                                        stopped.reason))
        if journal is not None and journal.error is not None:
            note("the finished runs could not all be kept: %s" % journal.error.message)
        if output is not None:
            write(table, output)
        where = "" if output in (None, "-") else " in %s" % output
        resume = (" (kept in %s): run the same command again to resume"
                  % journal.path) if journal is not None else \
            " (with `-o FILE` a rerun resumes instead)"
        summary = ("%d of %d points (%d of %d runs) finished%s, marked incomplete; the other "
                   "runs were not run or were stopped%s" % (len(finished), len(pts), runs,
                                                             len(tasks), where, resume))
        if stopped.reason != "interrupted":
            raise RunError("serq sweep: %s; %s" % (stopped.reason, summary))
        err = SweepInterrupted(table, len(finished), len(pts), runs, len(tasks), stopped.reason,
                               stop.signum or signal.SIGINT, output)
        err.summary = summary
        raise err
    table = aggregate([ax.name for ax in sweep.axes], pts, by_key, seeds)
    if output is not None:
        write(table, output)
        if journal is not None:
            left = journal.finish(list(keys.values()))
            if left:
                note(left)
    return table
