"""The Python API mirrors pyserq's names: ``import serq as pyserq`` works for
the documented calls, and gives the same report."""
from pathlib import Path

import pytest

import serq
from serq.errors import SerqError

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = str(ROOT / "tests" / "programs" / "sim" / "choose_route.sq")


def test_compile_run_and_read_the_report():
    report = serq.run(serq.compile(PROGRAM, seed=5))
    assert report.seed == 5 and report.serq_version == "0.1.3"
    resp = report.observe("resp")
    assert resp.count == len(resp.samples) == len(resp.times) == len(resp.sessions) > 100
    assert min(resp.times) >= report.warmup
    assert abs(sum(resp.samples) / resp.count - resp.mean) < 1e-9 * resp.mean
    assert report.observe("nothing") is None
    assert [s.index for s in report.stages_named("rep")] == [0, 1, 2]
    assert report.stage("rep").index == 0
    g = report.gauge("total")
    assert g.times[0] == 0.0 and len(g.times) == len(g.values)


def test_same_report_as_pyserq():
    pyserq = pytest.importorskip("pyserq")
    ours = serq.run(serq.compile(PROGRAM, seed=9))
    theirs = pyserq.run(pyserq.compile(PROGRAM, seed=9))
    assert ours.json() == theirs.json()
    assert ours.observe("resp").samples == list(theirs.observe("resp").samples)
    assert ours.gauge("total").values == list(theirs.gauge("total").values)


def test_program_json_round_trip_and_source():
    p = serq.compile(source="stage s : fifo; workload { arrive batch(3); } "
                            "session { run s (1); observe t = now; } run { horizon 10; }")
    again = serq.Program.from_json(p.to_json())
    assert again.to_json() == p.to_json()
    assert serq.run(again).json() == serq.run(p).json()


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        serq.compile(source="session { run nowhere (1); } run { horizon 1; }")
    with pytest.raises(SerqError):
        serq.compile(PROGRAM, source="run { horizon 1; }")
    with pytest.raises(OverflowError):
        serq.compile(PROGRAM, seed=-1)


def test_rng_is_the_reference_generator():
    r = serq.Rng(9)
    assert r.next_u32() == 2541201799
    assert serq.Rng(9).range_u32(0, 9) == 5
