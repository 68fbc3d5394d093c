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
    assert ours.observe("resp").samples.tolist() == list(theirs.observe("resp").samples)
    assert ours.gauge("total").values.tolist() == list(theirs.gauge("total").values)
    # The same shapes: observes and gauges by name, stages and pools as rows.
    assert list(ours.observes) == list(theirs.observes)
    assert list(ours.gauges) == list(theirs.gauges)
    assert ours.observes["resp"].sessions.tolist() == list(theirs.observes["resp"].sessions)
    assert ours.observes["resp"].turns.tolist() == list(theirs.observes["resp"].turns)
    assert ours.gauges["total"].times.tolist() == list(theirs.gauges["total"].times)
    assert [(s.name, s.index, s.completed) for s in ours.stages] == \
        [(s.name, s.index, s.completed) for s in theirs.stages]
    for name in ("resp", "picked"):
        a, b = ours.observe(name), theirs.observe(name)
        assert (a.count, a.mean, a.p99) == (b.count, b.mean, b.p99)


def test_series_are_fresh_numpy_arrays():
    np = pytest.importorskip("numpy")
    report = serq.run(serq.compile(PROGRAM, seed=5))
    resp = report.observes["resp"]
    samples = resp.samples
    assert isinstance(samples, np.ndarray) and samples.dtype == np.float64
    assert resp.times.dtype == np.float64
    assert resp.sessions.dtype == np.int64 and resp.turns.dtype == np.int64
    assert len(samples) == resp.count > 0
    samples[:] = -1.0  # a fresh array each access: the report is untouched
    assert (resp.samples >= 0).all()
    assert abs(resp.samples.mean() - resp.mean) < 1e-9 * resp.mean
    assert report.gauge("total").values.dtype == np.float64
    assert report.observes is not report.observes


def test_to_dataframe_tidy_frames():
    pd = pytest.importorskip("pandas")
    report = serq.run(serq.compile(PROGRAM, seed=5))
    samples = report.to_dataframe()
    assert list(samples.columns) == ["observe", "time", "session", "turn", "value"]
    assert str(samples["session"].dtype) == "int64" and str(samples["value"].dtype) == "float64"
    for name, o in report.observes.items():
        rows = samples[samples["observe"] == name]
        assert list(rows["value"]) == o.samples.tolist()
        assert list(rows["time"]) == o.times.tolist() and list(rows["session"]) == o.sessions.tolist()
    assert len(samples) == sum(o.count for o in report.observes.values())
    gauges = report.to_dataframe("gauges")
    assert list(gauges.columns) == ["gauge", "time", "value"]
    assert list(gauges[gauges["gauge"] == "total"]["value"]) == report.gauge("total").values.tolist()
    summary = report.to_dataframe("observes").set_index("observe")
    assert summary.loc["resp", "count"] == report.observe("resp").count
    assert summary.loc["resp", "mean"] == report.observe("resp").mean
    stages = report.to_dataframe("stages")
    assert list(stages["index"]) == [s.index for s in report.stages]
    assert list(stages["completed"]) == [s.completed for s in report.stages]
    # A grouped mean over the samples is the report's mean.
    means = samples.groupby("observe")["value"].mean()
    assert abs(means["resp"] - report.observe("resp").mean) < 1e-9 * report.observe("resp").mean
    with pytest.raises(ValueError, match="one of samples"):
        report.to_dataframe("nothing")


def test_to_dataframe_absent_values_are_nan():
    pytest.importorskip("pandas")
    report = serq.run(serq.compile(source="stage s : fifo; pool p { cap 2; } workload { "
                                   "arrive batch(3); } session { hold p (1) { run s (1); } "
                                   "observe t = now; } run { horizon 10; }"))
    pools = report.to_dataframe("pools")
    assert list(pools.columns)[:3] == ["name", "index", "mean_used"]
    assert pools["index"].isna().all()
    assert pools.loc[0, "admissions"] == report.pool("p").admissions == 3


def test_program_json_round_trip_and_source():
    p = serq.compile(source="stage s : fifo; workload { arrive batch(3); } "
                            "session { run s (1); observe t = now; } run { horizon 10; }")
    again = serq.Program.from_json(p.to_json())
    assert again.to_json() == p.to_json()
    assert serq.run(again).json() == serq.run(p).json()


def test_from_json_validates():
    p = serq.compile(source="stage s : fifo; workload { arrive batch(3); } "
                            "session { run s (1); observe t = now; } run { horizon 10; }")
    bad = p.to_json().replace('"base": 0', '"base": 3')
    with pytest.raises(SerqError, match=r"stage reference 3\.\.4 out of range .* "
                       r"at blocks\[2\]\[0\]"):
        serq.Program.from_json(bad)


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        serq.compile(source="session { run nowhere (1); } run { horizon 1; }")
    with pytest.raises(SerqError):
        serq.compile(PROGRAM, source="run { horizon 1; }")
    with pytest.raises(OverflowError):
        serq.compile(PROGRAM, seed=-1)
    src = "let x = 1; stage s : fifo; session { run s (x); } run { horizon 5; }"
    for kw in (dict(sets={"x": None}), dict(seed="3"), dict(horizon="x"), dict(defs={"x": 3}),
               dict(arrivals=1.5), dict(trace=3)):
        with pytest.raises(TypeError, match="argument '%s'" % next(iter(kw))):
            serq.compile(source=src, **kw)
    with pytest.raises(OverflowError):
        serq.compile(source=src, seed=2 ** 64)
    assert serq.compile(source=src, sets={"x": "2 * 3"}, horizon=3).ir.horizon == 3


def test_rng_is_the_reference_generator():
    r = serq.Rng(9)
    assert r.next_u32() == 2541201799
    assert serq.Rng(9).range_u32(0, 9) == 5
