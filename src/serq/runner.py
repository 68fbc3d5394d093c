"""Run a compiled program: read its trace, simulate, build the report."""
from .collector import relaxed
from .compiler import trace_path
from .depth import deep_recursion
from .errors import RunError
from .ir import nodes as ir
from .report.build import build_report
from .report.model import Report
from .sim.engine import Simulator
from .sim.postmortem import attach
from .tracefile import read_trace


#: ``max_memory``: the share of it at which a run stops (``simulate``).
MEMORY_HEADROOM = 0.75


def simulate(program: ir.Program, progress=None, check_invariants=False,
             trace_iterations=None, no_samples=False, max_events=None,
             max_wall=None, on_start=None, track_requests=False,
             max_memory=None) -> Simulator:
    """Run ``program``; ``trace_iterations(line)`` receives one line per step
    iteration (see ``iteration_line``); ``no_samples`` keeps observations as
    running statistics only (``serq run --no-samples``); ``on_start(sim)``
    is called just before the simulation starts (``interrupt.Stop.attach``);
    ``track_requests`` notes each session's turns at its end, which the SLO
    goodput needs (report/slo.py)."""
    trace = read_trace(trace_path(program)) if program.trace is not None else None
    with relaxed():  # (the collector walks the live sessions less often: collector.py)
        with deep_recursion():  # compiling the expressions recurses as deep as they are
            sim = Simulator(program, trace, check_invariants, no_samples)
        if track_requests:
            sim.track_requests()
        if max_memory is not None:
            # (stopped well below the hard bound: building the report sorts
            # every observation's samples, and the compiled core aborts where
            # an allocation fails)
            sim.memory_bound = int(max_memory * MEMORY_HEADROOM)
        if trace_iterations is not None:
            sim.trace_iterations = lambda st, plan, assigned, cost: trace_iterations(
                iteration_line(sim, st, plan, assigned, cost))
        if on_start is not None:
            on_start(sim)
        try:
            with deep_recursion():  # expressions evaluate as deep as they are (depth.py)
                return sim.run(progress, max_events, max_wall)
        except RunError as e:
            attach(sim, e)  # the time, session, statement and queues it stopped in
            raise


def iteration_line(sim, stage, plan, assigned, cost) -> str:
    """One step iteration as a line:

        <time> <stage> res=<residents> pre=<tokens>/<jobs> dec=<tokens>/<jobs>
            adm=<admitted> pmt=<preempted> cost=<cost> | <serial>:<turn>:<p|d><tokens> …

    time is when the iteration starts; res counts the residents after its
    admissions; pre and dec give the tokens and the jobs of each mode; adm the
    holds admitted while planning it, pmt the residents preempted; the list
    names each job served: its session, the session's turn, the mode and
    the tokens."""
    from .sim.exprs import fmt
    pre_t = pre_n = dec_t = dec_n = 0
    jobs = []
    slot = sim.prog.slots[2]
    for j, t in assigned:
        if j.decode:
            dec_t += t
            dec_n += 1
        else:
            pre_t += t
            pre_n += 1
        root = j.session.root()
        jobs.append("%d:%d:%s%s" % (root.serial, int(root.a[slot]), "d" if j.decode else "p",
                                     fmt(t)))
    name = stage.name if stage.member is None else "%s[%d]" % (stage.name, stage.member)
    return "%s %s res=%d pre=%s/%d dec=%s/%d adm=%d pmt=%d cost=%s | %s" % (
        fmt(sim.now), name, len(stage.residents), fmt(pre_t), pre_n, fmt(dec_t), dec_n,
        plan.admitted, stage.preempt_count, fmt(cost), " ".join(jobs))


def run_program(program: ir.Program, check_invariants=False) -> Report:
    # (relaxed until the simulator is dropped: the collector's sweep at the
    # end then finds the run's cycles already garbage and frees them, where
    # a sweep right after the run would keep them, live then, for older
    # generations to walk again later)
    with relaxed():
        return build_report(simulate(program, check_invariants=check_invariants))


def reference_iteration_line(sim, stage, assigned) -> str:
    """The line serQ 0.1.3 prints for an iteration under ``SERQ_TRACE_ITER``
    (``ITER <time> <serial>:<turn>:<p|d><tokens> … | used U cached C``, the
    stage's memory pool in blocks), for comparing schedules with it."""
    from .sim.exprs import fmt
    slot = sim.prog.slots[2]
    jobs = []
    for j, t in assigned:
        root = j.session.root()
        jobs.append("%d:%d:%s%s" % (root.serial, int(root.a[slot]), "d" if j.decode else "p",
                                     fmt(t)))
    used = cached = 0.0
    if stage.memory is not None:
        p = sim.pools[stage.memory]
        b = p.block or 1.0
        used, cached = p.used / b, p.cached / b
    return "ITER %.4f %s | used %s cached %s" % (sim.now, " ".join(jobs), fmt(used), fmt(cached))
