"""A step stage's explicit ``iteration { … }`` body (feature map §5.8):
its statements read in order at each planning, in place of the default
plan (step.py ``Step.plan_default``).  ``serve`` gives residents their
share in the order of its keys, ``admit`` admits waiting holds while its
gate reads 1, a branch picks one of two bodies, ``set`` writes a register.
Each expression is compiled once per stage (``compiled``) and read
with the stage's context, its totals and the plan so far filled in.
"""
from typing import TYPE_CHECKING, Any, Callable, List, Set

from ..errors import RunError
from .exprs import fmt
from .step_plan import INF, Plan, StepContext, StepJob

if TYPE_CHECKING:
    from .step import Step  # (a type only: step.py imports this module)


def run_body(step: "Step", plan: Plan, body: List[Any]) -> None:
    """An explicit ``iteration { … }``: each statement once, in order."""
    sim = step.sim
    for st in body:
        t = type(st).__name__
        if t == "IServe":
            body_serve(step, plan, st)
        elif t == "IAdmit":
            body_admit(step, plan, st)
        elif t == "IBranch":
            g = plan_read(step, plan, st.test)
            if g == 1.0:
                run_body(step, plan, st.then)
            elif g == 0.0:
                run_body(step, plan, st.other)
            else:
                err = RunError("stage `%s`: an iteration body's test read %s; a test is 1 "
                               "or 0" % (step.name, fmt(g)))
                err.stage = step
                raise err
        else:
            v = plan_read(step, plan, st.value)
            if v != v or v in (INF, -INF):
                err = RunError("stage `%s`: `set` of a register to %s; a register is a "
                               "finite number" % (step.name, fmt(v)))
                err.stage = step
                raise err
            sim.registers[st.register] = v


def plan_ctx(step: "Step", plan: Plan) -> StepContext:
    ctx = step.ctx
    ctx.a = None
    step.totals(ctx, step.residents)
    ntok = npre = 0.0
    for j, t in plan.assigned:
        ntok += t
        if not j.decode:
            npre += t
    ctx.ntok = ntok
    ctx.npre = npre
    ctx.admitted = float(plan.admitted)
    ctx.preempted = float(plan.preempted())
    return ctx


def compiled(step: "Step", e: Any) -> Callable[[StepContext], Any]:
    """``e`` compiled for the stage's context, once per stage."""
    f = step.compiled_cache.get(id(e))
    if f is None:
        f = step.compiler.expr(e)
        step.compiled_cache[id(e)] = f
    return f


def plan_read(step: "Step", plan: Plan, f: Any) -> Any:
    return compiled(step, f)(plan_ctx(step, plan))


def excluded(step: "Step", only: Any, job: StepJob) -> bool:
    """``only (p)`` read for one resident (Serve moment)."""
    if only is None:
        return False
    ctx = step.ctx
    step.totals(ctx, step.residents)
    ctx.a = job.session.a
    ctx.decoding = 1.0 if job.decode else 0.0
    ctx.admission = float(job.session.admission)
    ctx.remaining = job.remaining
    v = compiled(step, only)(ctx)
    ctx.a = None
    return v == 0.0


def body_serve(step: "Step", plan: Plan, st: Any) -> None:
    keys = None if st.by is None else [compiled(step, k) for k in st.by]
    skipped: Set[StepJob] = set()
    while plan.left > 0:
        job = None
        for j in step.serving_order(keys):
            if j in plan.served or j in skipped:
                continue
            if excluded(step, st.only, j):
                skipped.add(j)
                continue
            job = j
            break
        if job is None:
            return
        plan.served.add(job)
        if plan.give(job, False) == "self":
            return


def body_admit(step: "Step", plan: Plan, st: Any) -> None:
    sim = step.sim
    while plan.left > 0 and not plan.refused:
        if st.gate is not None:
            g = plan_read(step, plan, st.gate)
            if g == 0.0:
                return
            if g != 1.0:
                err = RunError("stage `%s`: `admit … while (g)` read %s; a test is 1 or 0"
                               % (step.name, fmt(g)))
                err.stage = step
                raise err
        before = set(j for j in step.residents)
        step.planning_left = plan.left
        got = sim.admit_for(step)
        step.planning_left = None
        if not got:
            return
        plan.admitted += 1
        for j in list(step.residents):
            if j in before or j in plan.served:
                continue
            if excluded(step, st.only, j):
                continue
            plan.served.add(j)
            outcome = plan.give(j, False)
            if outcome == "self" or plan.refused:
                return
