"""``serq sweep``: run a program over a grid of constants and seeds.

Every point of the grid (``grid.py``) is compiled once, here, so that a bad
value is refused with its error before anything runs; then each (point,
seed) is one task: the point's IR with the seed set, simulated and reduced
to its scalars (``metrics.py``).  Tasks run in this process (``jobs=1``), in
a pool of processes (``concurrent.futures``), or on a Ray cluster
(``ray_backend.py``); the table (``table.py``) is built from the results in
grid and seed order, so it is the same bytes whatever ran them.

Seeds: ``seeds`` runs of each point, with seeds ``first, first+1, ...,
first+seeds-1`` (``first`` is 1 unless ``--seed`` says otherwise); the
program's own ``run { seed … }`` is not used.
"""
import copy
import os
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import RunError, SerqError, UsageError
from .grid import Axis, check_axes, points
from .table import COLUMNS, Table, aggregate


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

    def seed_list(self) -> List[int]:
        return list(range(self.first_seed, self.first_seed + self.seeds))


def _describe(axes: Sequence[Axis], point: Tuple) -> str:
    from .table import cell
    return " ".join("%s=%s" % (ax.name, cell(v)) for ax, v in zip(axes, point)) or "the program"


def compile_points(sweep: Sweep) -> List:
    """One IR program per grid point (a located error names the point)."""
    from ..compiler import compile_program, read_source
    from ..ir.json import loads
    check_axes(sweep.axes, COLUMNS)
    if sweep.seeds < 1:
        raise UsageError("--seeds is at least 1")
    if sweep.first_seed + sweep.seeds - 1 >= 2 ** 64:
        raise UsageError("the seeds run past 2^64 - 1: lower --seed")
    text = read_source(sweep.file)
    settings = dict(horizon=sweep.horizon, warmup=sweep.warmup, arrivals=sweep.arrivals,
                    trace=sweep.trace)
    progs = []
    if text.lstrip().startswith("{"):
        if sweep.axes or sweep.defs:
            raise UsageError("a `let` or `def` override applies to program text, not to IR: "
                             "sweep the program file")
        prog = loads(text)
        for key, v in settings.items():
            if v is not None:
                setattr(prog, key, v)
        progs.append(prog)
    else:
        for point in points(sweep.axes):
            sets = {ax.name: v for ax, v in zip(sweep.axes, point)}
            try:
                prog = compile_program(sweep.file, sets=sets, defs=sweep.defs,
                                       seed=sweep.first_seed, **settings)
            except SerqError as e:
                if len(sweep.axes) and any(len(ax.values) > 1 for ax in sweep.axes):
                    e.notes.append("at the point %s" % _describe(sweep.axes, point))
                raise
            progs.append(prog)
    for prog in progs:
        # Workers may run elsewhere (Ray): the trace is read from an absolute path.
        if prog.trace is not None:
            from ..compiler import trace_path
            prog.trace = os.path.abspath(trace_path(prog))
            prog.trace_dir = None
    return progs


# ------------------------------------------------------------------ tasks

Task = Tuple[int, int, object]  # (point index, seed, IR program)
Result = Tuple[int, int, object]  # (point index, seed, metrics list or error text)


def run_task(task: Task) -> Result:
    """Simulate one point at one seed (in whichever process runs it)."""
    from ..report.build import build_report
    from ..runner import simulate
    from .metrics import run_metrics
    i, seed, prog = task
    prog = copy.copy(prog)
    prog.seed = seed
    try:
        sim = simulate(prog)
        return i, seed, run_metrics(sim, build_report(sim))
    except SerqError as e:
        return i, seed, e.render()


def _ignore_sigint() -> None:
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_local(tasks: Sequence[Task], jobs: int, advance: Callable[[], None]) -> List[Result]:
    """Run the tasks here (``jobs == 1``) or in ``jobs`` processes."""
    if jobs == 1 or len(tasks) == 1:
        out = []
        for t in tasks:
            out.append(run_task(t))
            advance()
        return out
    import multiprocessing
    # Not fork: the progress bar's thread is running (forking a process with
    # threads can deadlock the child); a fork server starts clean.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    ex = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx,
                             initializer=_ignore_sigint)
    out = []
    try:
        pending = {ex.submit(run_task, t) for t in tasks}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                out.append(f.result())
                advance()
    except BaseException:
        # Ctrl-C (or a bug): stop the workers now rather than after their runs.
        workers = list((getattr(ex, "_processes", None) or {}).values())
        ex.shutdown(wait=False, cancel_futures=True)
        for w in workers:
            w.terminate()
        raise
    ex.shutdown()
    return out


class Progress(object):
    """A bar of finished runs on stderr (rich), or nothing."""

    def __init__(self, total: int, show: bool):
        self.bar = None
        if show:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar,
                                       TextColumn, TimeElapsedColumn, TimeRemainingColumn)
            self.bar = Bar(TextColumn("sweeping"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), TimeRemainingColumn(),
                           console=Console(file=sys.stderr), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("runs", total=total)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def run_sweep(sweep: Sweep, jobs: Optional[int] = None, backend: str = "local",
              address: Optional[str] = None, show_progress: bool = False) -> Table:
    """Compile the grid, run every (point, seed) and build the table."""
    progs = compile_points(sweep)
    seeds = sweep.seed_list()
    tasks = [(i, s, p) for i, p in enumerate(progs) for s in seeds]
    bar = Progress(len(tasks), show_progress)
    try:
        if backend == "ray":
            from .ray_backend import run_ray
            results = run_ray(tasks, address, bar.advance, run_task)
        elif backend == "local":
            results = run_local(tasks, jobs or os.cpu_count() or 1, bar.advance)
        else:
            raise UsageError("unknown backend `%s`: local or ray" % backend)
    finally:
        bar.close()
    by_key = {}
    pts = points(sweep.axes)  # [()] without axes
    for i, seed, value in sorted(results, key=lambda r: (r[0], r[1])):
        if isinstance(value, str):
            raise RunError("the run at %s, seed %d, failed:\n%s"
                           % (_describe(sweep.axes, pts[i]), seed, value))
        by_key[(i, seed)] = value
    return aggregate([ax.name for ax in sweep.axes], pts, by_key, seeds)
