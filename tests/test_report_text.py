"""The text report in serq's first layout (``serq run --format ref``,
report/text_ref.py) and the --dump CSV files; the readable layout, colour
and ``--format ref``'s bytes are in tests/test_report_readable.py."""
import csv
import os

from report_oracle import fixture
from serq.report.dump import GaugeSeries, ObserveSeries, write_dump
from serq.report.model import (ClaimRow, GaugeRow, ObserveRow, PoolRow, Report,
                               StageRow, from_pyserq_json)
from serq.report.text_ref import num, report_text_ref as report_text, table


def _stage(name, index=None, iterations=0, idle=False):
    return StageRow(name, index, 1.25, 0.5, 10, 1.0, 0.25, 0.5, iterations,
                    0.1, 0.2, 0.0, 0.3, 1.5 if iterations else None, None,
                    0.01 if iterations else None, 0.009 if iterations else None,
                    0.02 if iterations else None, idle)


def _report():
    r = Report(horizon=100.0, end=100.0, warmup=10.0, seed=1, events=210,
               arrivals=103, ended=101, turns=4, mean_live=1.2)
    r.observes["lat"] = ObserveRow("lat", 101, 1.0271618, 0.17640001, 0.93811, 4.39027)
    r.observes["few"] = ObserveRow("few", 3, 2.0, None, 0.5, 3.0)
    r.observes["hit"] = ObserveRow("hit", 40, 0.0, 0.0, None, 0.0, is_test=True)
    r.observes["low"] = ObserveRow("low", 39, 0.0, None, None, 0.0, is_test=True)
    r.observes["zero"] = ObserveRow("zero", 500, 0.0, 0.0, None, 0.0)
    r.gauges["kv_util"] = GaugeRow("kv_util", 0.5, 0.01, 0.0, 1.0)
    r.claims = [ClaimRow("fits", "every_iteration", "holds", 16, 0, None, None),
                ClaimRow("done", "at_end", "not_evaluated", 0, 0, None, "1 session live at the end")]
    r.stages = [_stage("gpu"), _stage("eng", iterations=55, idle=True), _stage("tp", 1)]
    r.pools = [PoolRow("kv", None, 40.0, 2.0, 0.5, 1.0, 0.1, 90, 3, 48.0, 1, 0, 2, 0, ("kv", 200.0)),
               PoolRow("Q.p", 0, 0.0, 0.0, 0.0, 0.0, None, 0, 0, 0.0, 0, 0, 0, 1, None)]
    return r


def test_layout():
    text = report_text(_report())
    lines = text.split("\n")
    assert text.endswith("\n") and not any(l != l.rstrip() for l in lines)
    assert lines[0] == ("run: horizon 100 end 100 warmup 10 seed 1 events 210 arrivals 103 "
                        "ended 101 turns 4 mean live 1.2")
    blocks = text.strip("\n").split("\n\n")
    heads = [b.split()[0] for b in blocks]
    assert heads == ["run:", "observe", "stage", "step", "pool", "gauge", "claim", "note:",
                     "warning:"]
    observe = blocks[1].split("\n")
    assert observe[0].split() == ["observe", "unit", "count", "mean", "95%", "CI", "cv2",
                                  "p50", "p90", "p99", "p99.9"]
    # a report without serq's percentiles (made by hand, or read back from
    # pyserq's JSON) has its p99 alone, and no unit
    assert observe[1].split() == ["lat", "-", "101", "1.02716", "\u00b10.1764", "0.93811",
                                  "-", "-", "4.39027", "-"]
    assert observe[2].split()[4] == "NaN"  # CI below 40 samples
    # right-aligned numeric columns: all lines of a table end at the same column
    for block in blocks[1:7]:
        rows = block.split("\n")
        assert len({len(r) for r in rows}) == 1, block
    assert "tp[1]" in blocks[2] and "Q.p[0]" in blocks[4]
    assert blocks[3].count("\n") == 1 and "eng" in blocks[3]  # only stages that iterated


def test_findings():
    # A report without the simulator's findings (read back from JSON, or made
    # by hand) gets those its rows tell: pools first, then stages.
    blocks = report_text(_report()).strip("\n").split("\n\n")
    assert blocks[-2].split("\n") == [
        "note: claim done: 1 session live at the end",
        "note: observe hit is constant 0 over 40 samples",
    ]
    warnings = [l for l in blocks[-1].split("\n") if l.startswith("warning:")]
    assert warnings == [
        "warning: pool kv: the head of queue kv asks for 200 units, more than the cap: it "
        "can never be admitted",
        "warning: pool Q.p[0]: 1 session stuck: preempted again before it made progress "
        "(0 preemptions)",
        "warning: stage eng: ended with work it could not start",
    ]
    lines = blocks[-1].split("\n")
    assert len(lines) == 9 and [l.split(":")[0] for l in lines[1:3]] == ["  cause", "  remedy"]
    # findings computed by the run replace those of the rows
    r = _report()
    r.findings = []
    assert "warning:" not in report_text(r)


def test_minimal_report():
    r = Report(horizon=5.0, end=5.0, warmup=0.0, seed=9, events=1, arrivals=0,
               ended=0, turns=0, mean_live=0.0)
    assert report_text(r) == ("run: horizon 5 end 5 warmup 0 seed 9 events 1 arrivals 0 "
                              "ended 0 turns 0 mean live 0\n")


def test_helpers():
    assert [num(x) for x in (None, 0.0, -0.0, 3, 1e20, 1 / 3, float("nan"), True)] == \
        ["-", "0", "0", "3", "1e+20", "0.333333", "NaN", "yes"]
    assert table(("a", "bb"), [("xyz", "1"), ("q", "22")]) == ["a    bb", "xyz   1", "q    22"]
    assert table(("a", "b"), [("x", "yy")], align="ll") == ["a  b", "x  yy"]


def test_fixture_reports_render():
    for name, js in fixture()["json"].items():
        r = from_pyserq_json(js)
        text = report_text(r)
        for s in r.stages:
            assert s.name in text, name
        for o in r.observes:
            assert o in text, name


def test_dump(tmp_path):
    obs = {"lat": ObserveSeries(), "Q.x": ObserveSeries()}
    obs["lat"].add(0.1, 1, 0, 1 / 3)
    obs["lat"].add(2.0, 2, 1, 5.0)
    gauges = {"g": GaugeSeries([0.0, 1.5], [3.0, 0.1 + 0.2])}
    paths = write_dump(str(tmp_path / "out"), obs, gauges)
    assert sorted(os.path.relpath(p, str(tmp_path / "out")) for p in paths) == \
        sorted(["lat.csv", "Q.x.csv", os.path.join("gauge", "g.csv")])
    with open(str(tmp_path / "out" / "lat.csv")) as f:
        rows = list(csv.reader(f))
    assert rows == [["time", "session", "turn", "value"],
                    ["0.1", "1", "0", "0.3333333333333333"], ["2.0", "2", "1", "5.0"]]
    assert float(rows[1][3]) == 1 / 3
    with open(str(tmp_path / "out" / "Q.x.csv")) as f:
        assert f.read() == "time,session,turn,value\n"
    with open(str(tmp_path / "out" / "gauge" / "g.csv")) as f:
        assert f.read() == "time,value\n0.0,3.0\n1.5,0.30000000000000004\n"
    # no gauges: no gauge directory
    write_dump(str(tmp_path / "plain"), {}, {})
    assert os.listdir(str(tmp_path / "plain")) == []
