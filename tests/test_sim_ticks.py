"""The time averages that add their pieces late (``sim.ticks``, ``catch_up``)
give the same bits as a piece at every event, whenever the simulator
catches up: a run with the catch-up forced every few events reports the
same bytes as one with the default, and as the reference (the conformance
tests cover the default)."""
from pathlib import Path

import pytest

from serq.compiler import compile_program
from serq.report.jsonfmt import report_json
from serq.runner import run_program
from serq.sim import engine, timeavg

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted((ROOT / "tests" / "programs" / "pools").glob("*.sq"))[:12] + \
    sorted((ROOT / "tests" / "programs" / "steps").glob("*.sq"))[:12] + \
    [ROOT / "bench" / "programs" / "router16.sq"]


def _report(path, kept, monkeypatch):
    # (read by the simulator as it starts: the settle's and the folded
    # events' catch-ups follow it)
    monkeypatch.setattr(timeavg, "TICKS_KEPT", kept)
    kw = {"horizon": 60.0} if path.parent.name == "programs" and \
        path.parent.parent.name == "bench" else {}
    return report_json(run_program(compile_program(str(path), **kw)))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_catch_up_anywhere_same_bytes(path, monkeypatch):
    default = _report(path, timeavg.TICKS_KEPT, monkeypatch)
    for kept in (1, 2, 7):
        assert _report(path, kept, monkeypatch) == default, kept


# ------------------------------------------------------- mates together
# A step stage, its memory and the pools admitted via it catch up together
# (recorded.py catch_up_together) where they share at least SHARED_MIN
# events: at 1 nearly every catch-up is shared, past any run's length none
# is; the bytes are the same either way (and the reference's, by the
# conformance tests of the default).

TOGETHER = [ROOT / "bench" / "programs" / "router16.sq",
            ROOT / "bench" / "programs" / "pd_split.sq"] + \
    sorted((ROOT / "tests" / "programs" / "steps").glob("*.sq"))[:6]


@pytest.mark.parametrize("path", TOGETHER, ids=lambda p: p.stem)
def test_catching_up_together_gives_the_same_bytes(path, monkeypatch):
    kw = {"horizon": 20.0, "warmup": 2.0} if path.parent.name == "programs" and \
        path.parent.parent.name == "bench" else {}
    prog = compile_program(str(path), **kw)
    monkeypatch.setattr(timeavg, "SHARED_MIN", 10 ** 9)
    alone = report_json(run_program(prog))
    for shared in (1, 2, 5):
        monkeypatch.setattr(timeavg, "SHARED_MIN", shared)
        for kept in (timeavg.TICKS_KEPT, 7):
            monkeypatch.setattr(timeavg, "TICKS_KEPT", kept)
            assert report_json(run_program(prog)) == alone, (shared, kept)


def test_who_catches_up_together():
    """Each replica's step stage with its memory pool and the pools admitted
    via it, two replicas' together (MATES_MAX); a pool two step stages
    share joins their groups into one."""
    from serq.api import compile as api_compile
    from serq.runner import simulate
    sim = simulate(compile_program(str(ROOT / "bench" / "programs" / "router16.sq"),
                                   horizon=2.0, warmup=1.0))
    e3 = sim.stages[3]
    # (the pools slots[0..15] then kv[0..15]: slots[3] and kv[3]; replicas
    # 2 and 3 joined, as 0 and 1 and so on; a group's order does not matter)
    both = [sim.stages[2], sim.pools[2], sim.pools[16 + 2], e3, sim.pools[3], sim.pools[16 + 3]]
    assert sorted(map(id, e3.mates)) == sorted(map(id, both))
    assert all(m.mates is e3.mates for m in e3.mates)
    assert sorted(map(id, sim.stages[15].mates)) == sorted(
        map(id, [sim.stages[14], sim.pools[14], sim.pools[30], sim.stages[15], sim.pools[15], sim.pools[31]]))
    src = """
pool kv { cap 4096; block 16; }
pool lone { cap 4; }
stage a : step { budget 512; cost 0.01; memory kv; }
stage b : step { budget 512; cost 0.01; memory kv; }
stage c : step { budget 512; cost 0.01; }
workload { arrive poisson(5); }
session { hold kv (32) { run a prefill (32); run b decode (4); } }
run { horizon 5; }
"""
    sim = simulate(api_compile(source=src).ir)
    names = {s.name: sorted(m.name for m in s.mates) for s in sim.stages}
    assert names == {"a": ["a", "b", "kv"], "b": ["a", "b", "kv"], "c": []}
    assert [p.mates for p in sim.pools if p.name == "lone"] == [[]]


def test_values_that_change_are_recorded():
    """A pool used for 3 s of a 10 s run, then idle for the rest: the mean
    use and holder count take the late pieces (none stale, none lost)."""
    import json
    from serq.api import compile as api_compile, run as api_run
    src = """
pool p { cap 4; }
stage s : delay;
workload { arrive batch(1); }
session { hold p (2) { run s (3); } run s (1); }
run { horizon 10; }
"""
    rep = json.loads(api_run(api_compile(source=src)).json())
    assert rep["end"] == 10
    pool = rep["pools"][0]
    assert pool["mean_used"] == 2 * 3 / 10
    assert pool["mean_holders"] == 1 * 3 / 10
    assert rep["stages"][0]["mean_number"] == 4 / 10


# -------------------------------------------------------------- touched
# A stage or pool records at the end of an event only if it added itself to
# ``sim.touched`` where it changed.  ``check_touched`` makes every settle
# check the others did not change: over the corpus and random programs, no
# change goes unrecorded.

def _corpus():
    from corpus import PROGRAMS as CORPUS
    return [p for kind in ("pools", "steps", "sim", "valid") for p in sorted((CORPUS / kind).glob("*.sq"))]


def _run_checked(prog, monkeypatch):
    monkeypatch.setattr(engine.Simulator, "check_touched", True)
    return run_program(prog)


def test_no_change_goes_unrecorded_in_the_corpus(monkeypatch):
    from corpus import header_kwargs, in_dir
    from serq.errors import SerqError
    ran = 0
    for path in _corpus():
        with in_dir(path.parent):
            try:
                prog = compile_program(path.name, **header_kwargs(path.read_text()))
                _run_checked(prog, monkeypatch)
            except SerqError:
                continue  # (a program that is an error case)
            ran += 1
    assert ran > 300


@pytest.mark.parametrize("gen", ["step_programs", "pool_programs"])
def test_no_change_goes_unrecorded_in_random_programs(gen, monkeypatch, tmp_path):
    import importlib
    from serq.errors import SerqError
    mod = importlib.import_module(gen)
    ran = 0
    for seed in range(150):
        path = tmp_path / ("p%d.sq" % seed)
        path.write_text(mod.program(seed))
        try:
            _run_checked(compile_program(str(path)), monkeypatch)
        except SerqError:
            continue
        ran += 1
    assert ran > 100


def test_the_check_sees_an_unrecorded_change(monkeypatch):
    src = ROOT / "tests" / "programs" / "pools"
    path = sorted(src.glob("*.sq"))[0]
    from corpus import header_kwargs, in_dir
    monkeypatch.setattr(engine.Simulator, "check_touched", True)
    with in_dir(path.parent):
        sim = engine.Simulator(compile_program(path.name, **header_kwargs(path.read_text())))
        sim.run()
    sim.pools[0].used += 1.0  # a change no one added to `touched`
    with pytest.raises(AssertionError, match="changed untouched"):
        sim.check_untouched()


def test_the_check_sees_a_shared_stage_utilisation_left_unrecorded(monkeypatch):
    # a shared stage records only when its flows touch it (stages.py
    # ``Flows``): the check compares its utilisation with the one recorded
    path = ROOT / "tests" / "programs" / "valid" / "stmt_run_multistage_maxmin.sq"
    from corpus import header_kwargs, in_dir
    monkeypatch.setattr(engine.Simulator, "check_touched", True)
    with in_dir(path.parent):
        sim = engine.Simulator(compile_program(path.name, **header_kwargs(path.read_text())))
        sim.run()
    shared = [st for st in sim.stages if st.kind == "shared"]
    assert shared
    sim.check_untouched()  # (as the run left it: recorded)
    shared[0].last_util += 0.25  # a utilisation no record set
    with pytest.raises(AssertionError, match="utilisation"):
        sim.check_untouched()
