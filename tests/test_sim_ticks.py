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
from serq.sim import engine

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted((ROOT / "tests" / "programs" / "pools").glob("*.sq"))[:12] + \
    sorted((ROOT / "tests" / "programs" / "steps").glob("*.sq"))[:12] + \
    [ROOT / "bench" / "programs" / "router16.sq"]


def _report(path, kept, monkeypatch):
    monkeypatch.setattr(engine, "TICKS_KEPT", kept)
    kw = {"horizon": 60.0} if path.parent.name == "programs" and \
        path.parent.parent.name == "bench" else {}
    return report_json(run_program(compile_program(str(path), **kw)))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_catch_up_anywhere_same_bytes(path, monkeypatch):
    default = _report(path, engine.TICKS_KEPT, monkeypatch)
    for kept in (1, 2, 7):
        assert _report(path, kept, monkeypatch) == default, kept


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
