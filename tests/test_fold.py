"""Exact decode folding (src/serq/sim/fold.py): a stretch of decode-only
iterations run from the event loop gives the same report bytes as the
general path, and as pyserq 0.1.3, and it does fold."""
from pathlib import Path

import pytest

from serq.compiler import compile_program
from serq.report.jsonfmt import report_json
from serq.runner import run_program, simulate
from serq.sim import fold

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "data" / "fold"
PROGRAMS = sorted(HERE.glob("*.sq")) + [ROOT / "bench" / "programs" / (name + ".sq")
                                         for name in ("chat_cache", "pd_split")]


def _run(path, enabled, **kw):
    saved = fold.ENABLED[0]
    fold.ENABLED[0] = enabled
    try:
        return run_program(compile_program(str(path), **kw))
    finally:
        fold.ENABLED[0] = saved


def _sim(path, **kw):
    return simulate(compile_program(str(path), **kw))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_folded_report_is_the_general_paths(path):
    assert report_json(_run(path, True)) == report_json(_run(path, False))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_folded_report_is_the_references(path):
    pyserq = pytest.importorskip("pyserq")
    assert report_json(_run(path, True)) == pyserq.run(pyserq.compile(path=str(path))).json()


def test_long_decodes_fold_almost_every_iteration():
    st = _sim(HERE / "long_decode.sq").steps[0]
    assert st.iterations > 10000
    assert st.folded > 0.95 * st.iterations


def test_a_tight_pool_folds_between_preemptions():
    # growths stop fitting (preemption), the cost draws a random number per
    # iteration and a gauge reads the pool at every event: the stretches
    # stop and start again, and the report is still the reference's (above)
    sim = _sim(HERE / "tight_kv.sq")
    st = sim.steps[0]
    assert sim.pools[0].stats.preemptions > 0
    assert 0.2 * st.iterations < st.folded < st.iterations


def test_replicas_fold_side_by_side():
    # each engine keeps its stretch across the other's iterations (before
    # side-by-side folding, 10-14 % of iterations folded here)
    sim = _sim(HERE / "replicas.sq")
    assert all(st.folded > 0.8 * st.iterations for st in sim.steps)


def test_stretches_that_would_share_a_pool_take_turns():
    sim = _sim(HERE / "shared_kv.sq")
    assert all(0.2 * st.iterations < st.folded < 0.9 * st.iterations for st in sim.steps)


def test_engines_fold_beside_ps_stages_and_shared_links():
    # ps jobs start and finish, and transfers share the NICs' links (flows),
    # between the folded iterations; the reports are the general path's and
    # the reference's (the tests above)
    sim = _sim(HERE / "ps_beside.sq")
    assert sim.steps_and_ps and sim.steps[0].folded > 0.8 * sim.steps[0].iterations
    sim = _sim(ROOT / "bench" / "programs" / "pd_split.sq")
    assert sim.flows is not None
    decode = [st for st in sim.steps if st.name == "D"]
    assert len(decode) == 3 and all(st.folded > 0.7 * st.iterations for st in decode)


def test_reads_of_a_folding_engine_and_preemptions_write_its_stretch_back():
    # the router reads work() and budget_left() of every engine at each
    # request, and the small caches preempt: the stretches are written back
    # there (fold.sync, fold.sync_pool) and start again; the report is the
    # general path's and the reference's (the tests above)
    sim = _sim(HERE / "router_work.sq")
    assert sum(p.stats.preemptions for p in sim.pools) > 1000
    assert all(0 < st.folded < 0.5 * st.iterations for st in sim.steps)


def test_an_event_limit_inside_a_stretch_stops_where_the_general_path_does():
    path = HERE / "long_decode.sq"
    for limit in (1000, 4096, 12345):
        a = _run_limited(path, True, limit)
        b = _run_limited(path, False, limit)
        assert a == b


def _run_limited(path, enabled, max_events):
    saved = fold.ENABLED[0]
    fold.ENABLED[0] = enabled
    try:
        sim = simulate(compile_program(str(path)), max_events=max_events)
    finally:
        fold.ENABLED[0] = saved
    return sim.events, sim.now, sim.partial, sim.steps[0].iterations


def test_no_folding_under_the_iteration_trace():
    # the trace reports each iteration's plan: folding is off there
    sim_steps = []

    def trace(stage, plan, assigned, cost):
        sim_steps.append(cost)
    prog = compile_program(str(HERE / "long_decode.sq"), horizon=150.0)
    from serq.sim.engine import Simulator
    sim = Simulator(prog)
    sim.trace_iterations = trace
    sim.run()
    assert sim.steps[0].folded == 0 and len(sim_steps) == sim.steps[0].iterations


def test_whole_numbers_are_told_from_fractions_and_the_out_of_range():
    limit = fold.WHOLE_LIMIT
    xs = [0.0, -0.0, 1.0, -1.0, 3.0, 2.5, -2.5, 0.5, -0.5, 1e-300, -1e-300, 5e-324,
          limit - 1.0, -(limit - 1.0), limit - 0.5, limit, -limit, 1e300,
          float("inf"), float("-inf"), float("nan"), 4096.0 + 2.0 ** -40]
    for x in xs:
        expect = -limit < x < limit and x.is_integer()
        assert fold._whole(x) is expect, x


def test_an_iteration_that_ends_a_decode_starts_folded():
    # 81 iterations: the prefill of both, then 80 of decodes.  Only three
    # start in the general path: the prefill, the first decodes (whose end
    # starts the stretch) and the one after the shorter session leaves (its
    # end was the general one).  Each resident's last iteration starts
    # folded; its end, where the resident leaves, is the general path's.
    st = _sim(HERE / "two_lengths.sq").steps[0]
    assert st.iterations == 81
    assert st.folded == st.iterations - 3
