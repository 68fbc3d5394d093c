"""The Python API in a notebook: ``serq.run`` takes ``serq run``'s options,
``Report.text()`` and ``json()`` are the command's bytes, percentiles and
frames, reprs and HTML, and ``serq.sweep`` gives the command's table as a
DataFrame."""
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest

import serq
from serq.errors import OutputError, SerqError, UsageError

ROOT = Path(__file__).resolve().parent.parent
VLLM = str(ROOT / "examples" / "vllm_single_turn.sq")

MM1 = """let load = 0.5;
stage s : fifo;
workload { arrive poisson(load); }
session { set t0 = now; run s (~exp(1)); observe w = now - t0; observe n = 1; }
gauge q = queue(s);
run { horizon 2000; warmup 200; seed 3; }
"""

DEADLOCK = """pool kv { cap 10; }
stage gpu : fifo;
workload { arrive poisson(4); }
session { hold kv (4) { run gpu (0.2); grow kv (4); run gpu (0.2); } }
run { horizon 20; seed 3; }
"""


@pytest.fixture(scope="module")
def mm1(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "mm1.sq"
    path.write_text(MM1)
    return str(path)


def _have(module):
    import importlib.util
    return importlib.util.find_spec(module) is not None


def cli(*argv):
    """``serq ARGV`` in this process: (status, stdout)."""
    from serq.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(list(argv))
    return status, out.getvalue()


# ------------------------------------------------------------------ text and JSON

# (serq run's options, serq.run's keyword arguments, what the API prints)
CASES = [
    ([], {}, "text"),
    (["--admission"], {}, "admission"),
    (["--no-samples"], {"no_samples": True}, "text"),
    (["--max-events", "700"], {"max_events": 700}, "text"),
    (["--slo", "w <= 2", "--slo-per", "session"], {"slo": "w <= 2", "slo_per": "session"},
     "text"),
    (["--seed", "9", "--horizon", "900", "--warmup", "50"],
     {"seed": 9, "horizon": 900, "warmup": 50}, "text"),
    (["--json"], {}, "json"),
    (["--json", "--max-events", "700"], {"max_events": 700}, "json"),
    (["--json", "--extended", "--slo", "w <= 2"], {"slo": ["w <= 2"], "extended": True}, "json"),
]


@pytest.mark.parametrize("argv,kw,what", CASES)
def test_text_and_json_are_what_serq_run_prints(mm1, argv, kw, what):
    status, out = cli("run", mm1, "--quiet", *argv)
    report = serq.run(serq.compile(mm1), **kw)
    api = report.json() + "\n" if what == "json" else report.text(admission=what == "admission")
    assert api == out
    assert status == 0


def test_text_and_extended_json_of_a_step_engine():
    status, out = cli("run", VLLM, "--quiet", "--horizon", "3", "--warmup", "1", "--json",
                      "--extended")
    report = serq.run(serq.compile(VLLM, horizon=3, warmup=1))
    assert report.json(extended=True) + "\n" == out
    assert json.loads(out)["extended"]["stages"][0]["decode_tokens"] > 0
    # extended=True on the run is the default of json()
    assert serq.run(serq.compile(VLLM, horizon=3, warmup=1), extended=True).json() == \
        report.json(extended=True)
    status, out = cli("run", VLLM, "--quiet", "--horizon", "3", "--warmup", "1")
    assert report.text() == out and "step" in out


def test_a_whole_run_s_json_is_still_pyserq_s(mm1):
    pyserq = pytest.importorskip("pyserq")
    ours = serq.run(serq.compile(mm1, seed=4))
    assert ours.json() == pyserq.run(pyserq.compile(mm1, seed=4)).json()
    assert '"extended"' not in ours.json()


# ------------------------------------------------------------------ options

def test_max_events_gives_a_partial_report(mm1):
    r = serq.run(serq.compile(mm1), max_events=500)
    assert r.partial == "--max-events 500" and r.events == 500 and r.end < r.horizon
    assert r.text().startswith("partial: the run stopped at t = ")
    assert json.loads(r.json())["extended"]["partial"] == {"reason": "--max-events 500",
                                                           "at": r.end, "events": 500}
    assert "partial='--max-events 500'" in repr(r)
    assert "partial" in r._repr_html_()
    whole = serq.run(serq.compile(mm1))
    assert whole.partial is None and whole.events > 500 and whole.end == whole.horizon


def test_max_wall_stops_a_long_run():
    import time
    p = serq.compile(source=MM1, horizon=1e9)
    start = time.monotonic()
    r = serq.run(p, max_wall=0.3)
    assert time.monotonic() - start < 10
    assert r.partial == "--max-wall 0.3" and r.end < 1e9


def test_no_samples_keeps_running_statistics(mm1):
    p = serq.compile(mm1)
    full, lean = serq.run(p), serq.run(p, no_samples=True)
    fw, lw = full.observe("w"), lean.observe("w")
    assert len(fw.samples) == fw.count > 500 and len(lw.samples) == 0
    assert lw.count == fw.count and abs(lw.mean - fw.mean) <= 1e-12 * fw.mean
    # the percentiles from 1 % log buckets: within 0.5 % (serq run --help)
    for q in ("p50", "p90", "p99", "p999"):
        assert abs(getattr(lw, q) - getattr(fw, q)) <= 0.005 * getattr(fw, q), q
    assert "note: --no-samples" in lean.text() and "note: --no-samples" not in full.text()
    assert len(lean.to_dataframe()) == 0 if _have("pandas") else True
    with pytest.raises(UsageError, match="dump writes every sample"):
        lean.dump("nowhere")


def test_slo_gives_the_attainment(mm1):
    r = serq.run(serq.compile(mm1), slo=["w <= 2"])
    # P(W <= 2) for the M/M/1 queue at load 0.5 is 1 - exp(-(1 - 0.5) * 2)
    share = r.slo.all
    assert abs(share.attainment - (1 - math.exp(-1))) < share.ci
    assert "goodput:" in r.text() and "slo" in r._repr_html_()
    assert serq.run(serq.compile(mm1)).slo is None
    with pytest.raises(UsageError, match=r"serq.run\(slo=...\): `x <= 1`: the program has no "
                                         r"observation `x`"):
        serq.run(serq.compile(mm1), slo="x <= 1")
    with pytest.raises(UsageError, match="no_samples=True does not keep"):
        serq.run(serq.compile(mm1), slo="w <= 1", no_samples=True)


def test_run_settings_override_a_copy_of_the_program(mm1):
    p = serq.compile(mm1)
    r = serq.run(p, seed=8, horizon=300, warmup=30)
    assert r.json() == serq.run(serq.compile(mm1, seed=8, horizon=300, warmup=30)).json()
    assert (p.ir.seed, p.ir.horizon, p.ir.warmup) == (3, 2000, 200)  # unchanged
    assert serq.run(p, arrivals=40, warmup=0).arrivals == 40
    with pytest.raises(UsageError, match="the warm-up 5000 is not below the horizon 2000"):
        serq.run(p, warmup=5000)
    with pytest.raises(UsageError, match=r"serq.run\(horizon=-1\)"):
        serq.run(p, horizon=-1)
    with pytest.raises(UsageError, match=r"serq.run\(arrivals=0\)"):
        serq.run(p, arrivals=0)
    with pytest.raises(OverflowError):
        serq.run(p, seed=-1)
    with pytest.raises(TypeError, match="argument 'seed'"):
        serq.run(p, seed="1")


@pytest.mark.parametrize("kw", [
    dict(max_events=0), dict(max_events=2.5), dict(max_events=True), dict(max_wall=0),
    dict(max_wall="1"), dict(max_wall=math.inf), dict(no_samples=1), dict(check_invariants="y"),
    dict(progress="yes"), dict(slo=3), dict(slo=[]), dict(slo_per="turn"),
    dict(slo_per="session"), dict(trace_iterations=3), dict(trace_iterations=""),
    dict(extended=1)])
def test_a_wrong_option_is_a_usage_error_naming_it(mm1, kw):
    name = next(iter(kw))
    with pytest.raises(UsageError, match=r"serq.run\(%s=" % name) as e:
        serq.run(serq.compile(mm1), **kw)
    assert isinstance(e.value, ValueError)


def test_run_takes_a_program():
    with pytest.raises(TypeError, match="serq.run takes a compiled program"):
        serq.run("examples/chat.sq")


def test_trace_iterations_to_a_file_a_stream_or_a_function(tmp_path):
    p = serq.compile(VLLM, horizon=2, warmup=0.5)
    cli("run", VLLM, "--quiet", "--horizon", "2", "--warmup", "0.5",
        "--trace-iterations", str(tmp_path / "cli.txt"))
    expected = (tmp_path / "cli.txt").read_text()
    assert expected.count("\n") > 50
    serq.run(p, trace_iterations=str(tmp_path / "api.txt"))
    assert (tmp_path / "api.txt").read_text() == expected
    serq.run(p, trace_iterations=tmp_path / "path.txt")  # a PathLike too
    assert (tmp_path / "path.txt").read_text() == expected
    stream = io.StringIO()
    serq.run(p, trace_iterations=stream)
    assert stream.getvalue() == expected
    lines = []
    serq.run(p, trace_iterations=lines.append)
    assert "".join(x + "\n" for x in lines) == expected
    with pytest.raises(OutputError, match="cannot write"):  # refused before the run
        serq.run(p, trace_iterations=str(tmp_path / "no" / "such" / "folder" / "t.txt"))
    if os.path.exists("/dev/full"):  # a write that fails during the run
        with pytest.raises(OutputError, match="/dev/full") as e:
            serq.run(p, trace_iterations="/dev/full")
        assert e.value.report.end == 2  # the report is not lost


def test_check_invariants_checks_every_event(mm1, monkeypatch):
    if serq.core() != "interpreted":
        pytest.skip("counts the checks by patching the interpreted simulator")
    from serq.sim.engine import Simulator
    calls = []
    real = Simulator.check_pools
    monkeypatch.setattr(Simulator, "check_pools", lambda self: calls.append(1) or real(self))
    p = serq.compile(source=DEADLOCK.replace("horizon 20", "horizon 5"))
    serq.run(p)
    assert calls == []
    r = serq.run(p, check_invariants=True)
    assert len(calls) >= r.events > 0


def test_progress_is_a_function_or_a_bar(mm1, monkeypatch):
    seen = []
    r = serq.run(serq.compile(source=MM1, horizon=40000),
                 progress=lambda now, h: seen.append((now, h)))
    assert len(seen) >= 5 and all(h == 40000 for _, h in seen)
    assert [t for t, _ in seen] == sorted(t for t, _ in seen) and seen[-1][0] <= r.end
    # progress=True draws rich's bar (here at once, not after a second)
    import rich.progress
    from serq import progressbar
    drawn = []

    class Bar(object):
        def __init__(self, **kw):
            drawn.append("made")

        def start(self):
            drawn.append("start")

        def add_task(self, name, total):
            drawn.append(("total", total))
            return 0

        def update(self, task, completed):
            drawn.append("update")

        def stop(self):
            drawn.append("stop")
    monkeypatch.setattr(rich.progress, "Progress", Bar)
    monkeypatch.setattr(progressbar.RunProgress.__init__, "__defaults__", (0.0,))
    serq.run(serq.compile(source=MM1, horizon=40000), progress=True)
    assert drawn[:3] == ["made", "start", ("total", 40000)] and drawn[-1] == "stop"
    assert "update" in drawn


def test_dump_writes_the_series_as_serq_run_dump(mm1, tmp_path):
    r = serq.run(serq.compile(mm1))
    cli("run", mm1, "--quiet", "--dump", str(tmp_path / "cli"))
    written = r.dump(str(tmp_path / "api"))
    assert sorted(os.path.relpath(f, str(tmp_path / "api")) for f in written) == \
        ["gauge/q.csv", "n.csv", "w.csv"]
    for name in ("w.csv", "gauge/q.csv"):
        assert (tmp_path / "api" / name).read_text() == (tmp_path / "cli" / name).read_text()


# ------------------------------------------------------------------ percentiles, frames

def test_observe_percentiles_are_nearest_rank(mm1):
    o = serq.run(serq.compile(mm1)).observe("w")
    xs = sorted(o.samples.tolist())
    n = len(xs)
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)):
        assert getattr(o, name) == xs[min(max(math.ceil(q * n), 1), n) - 1], name
    assert o.p999 == o.p99_9 and o.p50 < o.p90 < o.p99 <= o.p999


def test_observes_frame_has_the_text_report_s_columns(mm1):
    pd = pytest.importorskip("pandas")
    r = serq.run(serq.compile(mm1))
    f = r.to_dataframe("observes").set_index("observe")
    assert list(f.columns) == ["unit", "count", "mean", "ci", "cv2", "p50", "p90", "p99", "p999"]
    w = r.observe("w")
    assert (f.loc["w", "unit"], f.loc["w", "count"], f.loc["w", "p90"], f.loc["w", "p999"]) == \
        ("s", w.count, w.p90, w.p999)
    assert pd.isna(f.loc["n", "unit"]) and (f.loc["n", "mean"], f.loc["n", "cv2"]) == (1, 0)


# ------------------------------------------------------------------ reprs and HTML

class Checker(HTMLParser):
    """Tags balanced (void tags aside), and the text between them."""
    VOID = {"br", "hr", "img", "meta", "link", "input", "col"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.tags, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack)
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(html):
    c = Checker()
    c.feed(html)
    c.close()
    assert c.stack == []
    return c


def test_program_repr_and_html(tmp_path):
    p = serq.compile(str(ROOT / "examples" / "replica_routing.sq"))
    text = repr(p)
    for fact in ("replica_routing.sq", "seqs[4]", "kv[4]", "gpu[4]: step", "user: delay",
                 "horizon=400", "warmup=40", "poisson(4)"):
        assert fact in text, fact
    c = parse(p._repr_html_())
    body = " ".join(c.text)
    assert c.tags.count("table") == 2 and "replica_routing.sq" in body and "gpu" in body
    # a file name that looks like markup is escaped, not read as a tag
    odd = tmp_path / "a<b>&c.sq"
    odd.write_text(MM1)
    q = serq.compile(str(odd))
    c = parse(q._repr_html_())
    assert c.tags.count("b") == 1 and str(odd) in " ".join(c.text)  # (<b>serq program</b>)
    assert repr(serq.compile(source=MM1)).startswith("Program('<text>', pools=[], stages=[s: fifo]")
    assert repr(serq.Program.from_json(q.to_json())).startswith("Program('<IR>'")


def test_report_repr_and_html(mm1):
    r = serq.run(serq.compile(mm1))
    w = r.observe("w")
    text = repr(r)
    for fact in ("horizon=2000", "end=2000", "seed=3", "w: n=%d" % w.count, "p99=%.4g" % w.p99,
                 " s"):
        assert fact in text, fact
    assert "partial" not in text and text.index("w:") < text.index("n:")  # times first
    assert repr(w) == ("Observe('w', count=%d, mean=%.4g, ci=%.4g, p50=%.4g, p90=%.4g, "
                       "p99=%.4g, p999=%.4g, unit='s')" % (w.count, w.mean, w.ci, w.p50, w.p90,
                                                           w.p99, w.p999))
    assert repr(r.gauge("q")).startswith("Gauge('q', mean=")
    assert repr(r.stage("s")).startswith("StageRow(name='s', mean_number=") and \
        repr(r.stage("s")).endswith(", ...)")
    c = parse(r._repr_html_())
    body = " ".join(c.text)
    assert c.tags.count("table") == 3  # observes, stages, gauges
    assert "%.4g" % w.p99 in body and "%.4g" % r.stage("s").utilization in body
    found = serq.run(serq.compile(source=DEADLOCK))
    assert "1 finding" in repr(found)
    c = parse(found._repr_html_())
    assert "warning: pool kv:" in " ".join(c.text) and "remedy:" in " ".join(c.text)


def test_pool_rows_show_their_main_fields():
    r = serq.run(serq.compile(source=DEADLOCK))
    text = repr(r.pool("kv"))
    assert text.startswith("PoolRow(name='kv', mean_used=") and "admissions=" in text


# ------------------------------------------------------------------ sweep

def test_sweep_is_the_cli_table_as_a_frame(mm1, tmp_path):
    pd = pytest.importorskip("pandas")
    out = str(tmp_path / "t.csv")
    status, _ = cli("sweep", mm1, "--set", "load=0.3,0.6", "--seeds", "3", "--seed", "5",
                    "--horizon", "600", "--warmup", "60", "--jobs", "1", "--quiet", "-o", out)
    assert status == 0
    table = pd.read_csv(out)
    frame = serq.sweep(mm1, {"load": [0.3, 0.6]}, seeds=3, seed=5, horizon=600, warmup=60,
                       jobs=2)
    assert frame.shape == table.shape and list(frame.columns) == list(table.columns)
    pd.testing.assert_frame_equal(frame, table, check_dtype=False)
    assert str(frame["mean"].dtype) == "float64" and str(frame["n_seeds"].dtype) == "int64"
    # wide: a row per point, a column per metric holding its mean
    wide = serq.sweep(mm1, {"load": "0.3,0.6"}, seeds=3, seed=5, horizon=600, warmup=60,
                      jobs=1, wide=True)
    metrics = list(dict.fromkeys(table["metric"]))
    assert wide.shape == (2, 1 + len(metrics)) and list(wide.columns) == ["load"] + metrics
    for i, load in enumerate((0.3, 0.6)):
        rows = table[table["load"] == load].set_index("metric")["mean"]
        assert wide.loc[i, "load"] == load
        assert wide.loc[i, metrics].tolist() == pytest.approx(rows[metrics].tolist(), nan_ok=True,
                                                              rel=0, abs=0)


def test_sweep_a_program_keeps_its_sets_and_settings(mm1):
    pytest.importorskip("pandas")
    p = serq.compile(source=MM1, sets={"load": 0.4}, horizon=500, warmup=50)
    seeds = serq.sweep(p, seeds=2, jobs=1)  # no axes: one point, no constant column
    assert list(seeds.columns) == ["metric", "mean", "ci_low", "ci_high", "n_seeds"]
    end = seeds.set_index("metric").loc["run.end"]
    assert (end["mean"], end["n_seeds"]) == (500, 2)
    by_file = serq.sweep(mm1, {"load": [0.4]}, seeds=2, horizon=500, warmup=50, jobs=1)
    assert seeds["mean"].tolist() == pytest.approx(by_file["mean"].tolist(), nan_ok=True,
                                                   rel=0, abs=0)
    # an IR program sweeps its seeds, not constants
    ir = serq.Program.from_json(p.to_json())
    same = serq.sweep(ir, seeds=2, jobs=1)
    assert same["mean"].tolist() == pytest.approx(seeds["mean"].tolist(), nan_ok=True,
                                                  rel=0, abs=0)
    with pytest.raises(UsageError, match="this program is IR"):
        serq.sweep(ir, {"load": [1]})


@pytest.mark.parametrize("kw,message", [
    (dict(sets={"load": []}), r"sets\['load'\] is empty"),
    (dict(sets={"load": "1:2"}), r"sets\['load'\] = '1:2': a range is written A:B:N"),
    (dict(sets={"load": [None]}), r"sets\['load'\] holds None"),
    (dict(sets=[1]), r"give a dict"),
    (dict(seeds=0), r"serq.sweep\(seeds=0\)"),
    (dict(jobs=0), r"serq.sweep\(jobs=0\)"),
    (dict(sets={"load": "1:2:100"}, seeds=200, max_runs=1000), r"more than --max-runs 1000"),
    (dict(output="-"), r"serq.sweep\(output='-'\)"),
    (dict(address="x:1"), r"names a Ray cluster"),
])
def test_sweep_refuses_wrong_arguments(mm1, kw, message):
    with pytest.raises(UsageError, match=message):
        serq.sweep(mm1, **kw)


def test_sweep_compile_errors_name_the_constant(mm1):
    with pytest.raises(SerqError, match="unknown constant `nope`"):
        serq.sweep(mm1, {"nope": [1, 2]}, jobs=1)


def test_the_package_serq_sweep_is_the_function():
    import inspect

    import serq.sweep.grid  # importing a module of the package keeps serq.sweep callable
    assert callable(serq.sweep) and serq.sweep.grid is serq.sweep.grid
    assert list(inspect.signature(serq.sweep).parameters)[:3] == ["program", "sets", "seeds"]


def test_ctrl_c_stops_a_sweep_with_its_finished_rows(tmp_path):
    pytest.importorskip("pandas")
    (tmp_path / "p.sq").write_text(MM1.replace("horizon 2000", "horizon h").replace(
        "let load = 0.5;", "let load = 0.5; let h = 100;"))
    code = textwrap.dedent("""
        import json, os, signal, threading
        import serq
        threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            serq.sweep("p.sq", {"h": [300, 1e9]}, jobs=1)
            print("returned")
        except serq.Interrupted as e:
            f = e.frame
            print(json.dumps({"points": sorted(set(f["h"])), "rows": len(f),
                              "incomplete": f.attrs.get("incomplete", ""),
                              "end": float(f[f.metric == "run.end"]["mean"].iloc[0])}))
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=env, text=True,
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["points"] == [300] and d["rows"] > 10 and d["end"] == 300
    assert d["incomplete"].startswith("incomplete: 1 of 2 points")
