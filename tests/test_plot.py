"""`serq plot`: a sweep's curves, one run's report (PNG through matplotlib
and a self-contained interactive plotly page, rendered in headless Chromium
when it is installed)."""
import html
import io
import json
import math
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("plotly")
from matplotlib import image  # noqa: E402

from serq.plot.gantt import default_window, in_window, lifetimes  # noqa: E402
from serq.plot.rundata import RunData, read_iterations, run_and_dump  # noqa: E402
from serq.plot.runfigs import cdf_section, run_figures  # noqa: E402

# A step engine with a KV pool, two observations and a gauge.
STEP_PROGRAM = """
let rate = 6;
pool kv { cap 8192; block 16; preempt lifo; }
stage gpu : step { budget 256; chunk 128; cost 0.005 + 0.00002 * tokens; memory kv; }
workload {
  arrive poisson(rate);
  init { set prompt = floor(~uniform(50, 400)); set answer = floor(~uniform(10, 80)); }
  session { turn; set t0 = now; request; observe response = now - t0; }
}
server {
  hold kv (prompt) {
    run gpu prefill (prompt) growing kv;
    observe ttft = now - t0;
    run gpu decode (answer) growing kv;
  }
}
gauge kv_used = used(kv);
run { horizon 30; warmup 5; seed 3; }
"""

FIFO_PROGRAM = """
let lam = 0.5;
pool seats { cap 2; }
stage srv : fifo;
workload { arrive poisson(lam); }
session { set t0 = now; hold seats (1) { run srv (~exp(1)); } observe resp = now - t0; }
run { horizon 100; warmup 10; }
"""

# Multi-turn conversations whose KV prefix stays cached between turns: the
# cache fills the pool (used is small, cached near the cap).
CACHE_PROGRAM = """
pool kv { cap 4096; block 16; preempt lifo; }
stage gpu : step { budget 512; chunk 256; cost 0.005 + 0.00002 * tokens; memory kv; }
stage user : delay;
workload { arrive poisson(2); }
session {
  set history = 0;
  loop {
    set prompt = history + 20 + floor(~exp(100));
    hold kv (prompt) reuse (history) {
      run gpu prefill (prompt - cached) growing kv;
      run gpu decode (32) growing kv;
    } cache (prompt + 32);
    set history = prompt + 32;
    branch with (0.3) { end; }
    run user (2);
  }
}
run { horizon 40; warmup 5; seed 2; }
"""


def serq_cli(*args):
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True)


class Page(HTMLParser):
    """The script sources, img, h2 titles, tables and pre blocks of a page."""

    def __init__(self):
        super().__init__()
        self.imgs, self.h2, self.pre, self.notes, self.scripts = [], [], [], [], []
        self.tables, self.graphs = 0, 0
        self._in = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        elif tag == "script":
            self.scripts.append(a.get("src"))
        elif tag == "table":
            self.tables += 1
        elif tag == "div" and (a.get("id") or "").startswith("serq-figure-"):
            self.graphs += 1
        elif tag in ("h2", "pre") or (tag == "p" and a.get("class") == "note"):
            self._in = tag
            getattr(self, "notes" if tag == "p" else tag).append("")

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in is not None:
            lst = getattr(self, "notes" if self._in == "p" else self._in)
            lst[-1] += data


def decode_png(data: bytes):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return image.imread(io.BytesIO(data), format="png")


def assert_not_blank(pixels, min_ink=0.02):
    rgb = pixels[..., :3]
    ink = (rgb.min(axis=2) < 0.9).mean()  # share of pixels that are not near white
    assert ink > min_ink, "the image is (nearly) blank: %.4f of it drawn" % ink


@pytest.fixture
def step_program(tmp_path):
    f = tmp_path / "engine.sq"
    f.write_text(STEP_PROGRAM)
    return f


def test_sweep_table_to_png(tmp_path):
    prog = tmp_path / "q.sq"
    prog.write_text(FIFO_PROGRAM)
    table = tmp_path / "t.csv"
    r = serq_cli("sweep", prog, "--set", "lam=0.3:0.9:4", "--seeds", "3", "--horizon", "60",
                 "-j", "1", "-o", table)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "curves.png"
    assert r.stderr.splitlines()[-1].startswith("wrote %s: " % table)
    rows = table.read_text().count("\n") - 1
    r = serq_cli("plot", table, "--metric", "observe.resp.mean", "--metric", "pool.*.mean_queue",
                 "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "wrote %s: 1 figure from %d rows of %s\n" % (out, rows, table)  # 2 panels
    pixels = decode_png(out.read_bytes())
    assert pixels.shape[1] > pixels.shape[0] > 200  # two panels side by side
    assert_not_blank(pixels)


def test_sweep_plot_errors(tmp_path, capsys):
    from serq.cli import main

    def plot(*args):
        code = main(["plot"] + [str(a) for a in args])
        return code, capsys.readouterr().err

    table = tmp_path / "t.csv"
    table.write_text("lam,metric,mean,ci_low,ci_high,n_seeds\n"
                     "0.5,observe.resp.mean,1.5,1,2,3\n0.7,observe.resp.mean,2.5,2,3,3\n")
    code, err = plot(table, "--metric", "observe.rsp.mean", "-o", tmp_path / "x.png")
    assert code == 2 and "did you mean observe.resp.mean" in err
    code, err = plot(table, "--x", "cap", "-o", tmp_path / "x.png")
    assert code == 2 and "swept constants are lam" in err
    code, err = plot(table, "-o", tmp_path / "x.pdf")
    assert code == 2 and "OUT.png" in err
    code, err = plot(table, "--run", "x.sq", "-o", tmp_path / "x.png")
    assert code == 2 and "exactly one" in err
    code, err = plot(table, "--seed", "3", "-o", tmp_path / "x.png")
    assert code == 2 and "--seed applies to a run" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    code, err = plot(bad, "-o", tmp_path / "x.png")
    assert code == 2 and "not a sweep table" in err
    code, err = plot(table, "-o", tmp_path / "ok.png")
    assert code == 0, err
    assert decode_png((tmp_path / "ok.png").read_bytes()).shape[0] > 100


def _page(path):
    page = Page()
    page.feed(path.read_text())
    return page


def test_sweep_html_is_plotly_with_ci_bands(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("lam,metric,mean,ci_low,ci_high,n_seeds\n"
                     "0.5,observe.resp.mean,1.5,1,2,3\n0.7,observe.resp.mean,2.5,2,3,3\n"
                     "0.9,observe.resp.mean,4.5,3,6,3\n")
    out = tmp_path / "s.html"
    r = serq_cli("plot", table, "-o", out)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    page = _page(out)
    assert page.graphs == 1 and page.tables == 1 and page.scripts == [None, None]
    # the band: a filled polygon through the ci_high then the ci_low values
    spec = json.loads(re.search(r"Plotly.newPlot\(\s*\"serq-figure-1\",\s*(\[.*?\])\s*,\s*\{",
                                text, re.S).group(1))
    band = [t for t in spec if t.get("fill") == "toself"]
    assert len(band) == 1 and band[0]["y"] == [2, 3, 6, 3, 2, 1]


def test_run_report_html_is_self_contained(step_program, tmp_path):
    out = tmp_path / "report.html"
    r = serq_cli("plot", "--run", step_program, "--seed", "5", "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "wrote %s: 4 figures from one run of %s\n" % (out, step_program)
    text = out.read_text()
    page = _page(out)
    assert page.h2[:3] == ["Distributions", "Inter-token latency", "Over time"]
    assert page.h2[3].startswith("Step iterations from t = 5 s to ")
    assert page.h2[4:] == ["Numbers", "Report"]
    assert page.graphs == 4 and page.imgs == []
    assert page.tables == 5  # observations, stages, step stages, pools, gauges
    # plotly.js is inlined: no script has a src, nothing is fetched from elsewhere
    assert set(page.scripts) == {None} and "Plotly.newPlot" in text
    assert not re.search(r"""<script[^>]*\ssrc=""", text)
    markup = re.sub(r"(?s)<script[^>]*>.*?</script>", "", text)
    assert not re.search(r"""(src|href)=["'](?!data:|#)""", markup)
    # The gauges the plot adds only read the state: the run is `serq run`'s.
    run = serq_cli("run", step_program, "--seed", "5")
    assert run.returncode == 0, run.stderr
    assert html.unescape(page.pre[0]).strip() == run.stdout.strip()


def _time_average(ts, vs, t0, t1):
    """The mean over [t0, t1] of the step function (ts, vs)."""
    total = 0.0
    for i, (t, v) in enumerate(zip(ts, vs)):
        a = max(t, t0)
        b = min(ts[i + 1] if i + 1 < len(ts) else t1, t1)
        if b > a:
            total += v * (b - a)
    return total / (t1 - t0)


def test_pool_occupancy_stacks_cached_units_under_the_cap(tmp_path):
    prog = tmp_path / "cache.sq"
    prog.write_text(CACHE_PROGRAM)
    data = run_and_dump(str(prog), str(tmp_path / "dump"), {}, {})
    pool = data.report.pools[0]
    assert pool.mean_cached > 0.5 * 4096 > pool.mean_used  # a full prefix cache
    # the series are the report's: their time averages after warm-up are its means
    for what, mean in (("used", pool.mean_used), ("cached", pool.mean_cached)):
        ts, vs = data.gauges["serq.%s.kv" % what]
        assert _time_average(ts, vs, data.warmup, data.end) == pytest.approx(mean, rel=1e-9)
    sections, _ = run_figures(data, [], None)
    panel = next(p for s in sections for p in s.panels if p.title.startswith("Pool kv"))
    assert [(t.name, t.shape) for t in panel.traces] == [("used", "stack"), ("cached", "stack")]
    assert [(m.axis, m.at) for m in panel.marks] == [("y", 4096.0)]
    assert max(panel.traces[1].ys) > 0.9 * 4096
    # used + cached never exceeds the cap
    from serq.plot.figure import stacked
    _, (used, cached) = stacked(panel.traces)
    assert max(u + c for u, c in zip(used, cached)) <= 4096 + 1e-9
    # read back from the kept dump: the same cap, units and ITL
    from serq.plot.rundata import load_dump
    again = load_dump(str(tmp_path / "dump"))
    assert again.caps == {"kv": 4096.0} and again.itl == data.itl and again.warmup == 5


def test_itl_distribution_is_the_reports(step_program, tmp_path):
    data = run_and_dump(str(step_program), str(tmp_path / "d"), {}, {})
    stage = next(s for s in data.report.stages if s.name == "gpu")
    sections, _ = run_figures(data, [], None)
    itl = next(s for s in sections if s.title == "Inter-token latency")
    (panel,) = itl.panels
    n, mean, buckets = data.itl["gpu"]
    assert n == sum(c for _, c in buckets) > 1000 and mean == stage.mean_itl
    assert panel.xlabel == "itl gpu (ms)"  # every gap below a second
    marks = {m.label.split()[0]: m.at for m in panel.marks}
    assert marks["p50"] == pytest.approx(1000 * stage.itl_p50, rel=1e-12)
    assert marks["p99"] == pytest.approx(1000 * stage.itl_p99, rel=1e-12)
    assert marks["mean"] == pytest.approx(1000 * stage.mean_itl, rel=1e-12)
    ys = panel.traces[0].ys
    assert ys == sorted(ys) and ys[-1] == pytest.approx(1.0)


def test_every_axis_has_a_unit_and_the_warmup_is_labelled(step_program, tmp_path):
    data = run_and_dump(str(step_program), str(tmp_path / "d"), {}, {})
    sections, _ = run_figures(data, [], None)
    panels = [p for s in sections for p in s.panels]
    assert len(panels) >= 7
    for p in panels:
        for label in (p.xlabel, p.ylabel):
            assert re.search(r"\((s|ms|units|program's units|count|share of \w+)(,.*)?\)$",
                             label) or (p.lanes and label in ("stage", "session:turn")), label
    over_time = next(s for s in sections if s.title == "Over time")
    assert all(p.band == (0.0, 5.0, "warm-up (not measured)") for p in over_time.panels)
    assert all(p.xlabel == "time (s)" for p in over_time.panels)


def test_cdf_scale_rule_is_two_decades():
    def panel(xs, unit="s"):
        data = RunData(observes={"x": xs}, units={"x": unit})
        return cdf_section(data, ["x"]).panels[0]

    wide = panel([0.001 * 1.1 ** i for i in range(60)])  # 0.001 .. 0.28: > 2 decades
    assert wide.xlog and wide.xlabel == "x (ms, log scale)"
    narrow = panel([0.6 + i for i in range(60)])  # 0.6 .. 59.6: a span of 99.3
    assert not narrow.xlog and narrow.xlabel == "x (s)"
    zero = panel([0.0] + [10.0 ** i for i in range(5)])  # a zero: linear
    assert not zero.xlog
    other = panel([1.0, 2.0, 3.0], unit=None)
    assert other.xlabel == "x (program's units)"
    assert wide.traces[0].xs[0] == pytest.approx(1.0)  # in ms


def test_run_png_stacks_the_figures(step_program, tmp_path):
    out = tmp_path / "report.png"
    r = serq_cli("plot", "--run", step_program, "--observe", "ttft", "-o", out)
    assert r.returncode == 0, r.stderr
    pixels = decode_png(out.read_bytes())
    assert pixels.shape[0] > 1.2 * pixels.shape[1]  # four figures one above the other
    assert_not_blank(pixels)
    r = serq_cli("plot", "--run", step_program, "--observe", "tfft", "-o", out)
    assert r.returncode == 2 and "no such observation" in r.stderr


def test_dump_directory_and_iteration_trace(step_program, tmp_path):
    dump, trace = tmp_path / "dump", tmp_path / "iters.txt"
    r = serq_cli("run", step_program, "--dump", dump, "--trace-iterations", trace)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "dump.html"
    r = serq_cli("plot", "--dump", dump, "--iterations", trace, "--window", "10:12", "-o", out)
    assert r.returncode == 0, r.stderr
    page = _page(out)
    assert page.h2 == ["Distributions", "Over time", "Step iterations from t = 10 s to 12 s",
                       "Numbers"]
    assert page.tables == 1  # the observations, from the samples
    iters = read_iterations(str(trace))
    n = sum(1 for it in iters if 10 <= it.start < 12)
    assert "%d iterations from t = 10 to 12 s (--window)" % n in out.read_text()
    for bad, why in (("12:10", "START must be before END"), ("10", "not START:END"),
                     ("40:50", "no iteration starts in it")):
        r = serq_cli("plot", "--dump", dump, "--iterations", trace, "--window", bad, "-o", out)
        assert r.returncode == 2 and why in r.stderr, r.stderr
    r = serq_cli("plot", "--dump", tmp_path / "nowhere", "-o", out)
    assert r.returncode == 2 and "no such directory" in r.stderr


def test_gantt_default_window_is_after_the_warmup_and_long_enough(step_program, tmp_path):
    trace = tmp_path / "iters.txt"
    assert serq_cli("run", step_program, "--trace-iterations", trace).returncode == 0
    iters = read_iterations(str(trace))
    assert len(iters) == len(trace.read_text().splitlines()) > 1000
    t0, t1 = default_window(iters, 5.0, 30.0)
    shown = in_window(iters, t0, t1)
    assert t0 == 5.0 and [it.start for it in shown] == sorted(
        it.start for it in iters if t0 <= it.start < t1)
    after = sorted(lifetimes([it for it in iters if it.start >= 5.0]))
    median = after[(len(after) - 1) // 2] if len(after) % 2 else \
        (after[len(after) // 2 - 1] + after[len(after) // 2]) / 2
    assert t1 - t0 >= 10 * median - 1e-9 and len(shown) >= 300
    for it in shown:
        assert it.prefill_jobs == sum(1 for j in it.jobs if j[2] == "p")
        assert it.decode_jobs == sum(1 for j in it.jobs if j[2] == "d")
    # a short run: the window is its measured part
    short = [it for it in iters if it.start < 6.0]
    assert default_window(short, 5.0, 6.0)[0] == 5.0
    assert default_window(short, 5.0, 6.0)[1] <= 6.0 + max(it.cost for it in short)


def test_program_without_step_engine_says_so(tmp_path):
    prog = tmp_path / "q.sq"
    prog.write_text(FIFO_PROGRAM)
    out = tmp_path / "q.html"
    r = serq_cli("plot", "--run", prog, "-o", out)
    assert r.returncode == 0, r.stderr
    page = _page(out)
    assert page.h2 == ["Distributions", "Over time", "Numbers", "Report"]
    assert any("no step engine" in n for n in page.notes)


# Caught before the page's scripts run: errors and console.error calls.
CATCH = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
(function () { var f = console.error; console.error = function () {
  window.__errors.push(Array.prototype.join.call(arguments, " ")); f.apply(console, arguments); };
})();
</script>"""

PROBE = """<script>
window.addEventListener("load", function () { setTimeout(function () {
  var graphs = document.querySelectorAll(".plotly-graph-div"), titles = [], notes = [];
  graphs.forEach(function (gd) {
    Object.keys(gd.layout || {}).forEach(function (k) {
      if (/^[xy]axis[0-9]*$/.test(k) && gd.layout[k].title) titles.push(gd.layout[k].title.text);
    });
    (gd.layout.annotations || []).forEach(function (a) { notes.push(a.text); });
  });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify({errors: window.__errors, graphs: graphs.length,
    svgs: document.querySelectorAll(".plotly-graph-div .main-svg").length,
    tables: document.querySelectorAll("table.serq-numbers").length, titles: titles,
    notes: notes, plotly: typeof Plotly});
  document.body.appendChild(pre);
}, 300); });
</script>"""


def _chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed "
                    "(apt-get install chromium)")
def test_html_report_renders_in_headless_chromium(step_program, tmp_path):
    out = tmp_path / "report.html"
    r = serq_cli("plot", "--run", step_program, "-o", out)
    assert r.returncode == 0, r.stderr
    probed = tmp_path / "probed.html"
    text = out.read_text()
    probed.write_text(text.replace("<head>", "<head>" + CATCH, 1)
                      .replace("</body>", PROBE + "</body>"))
    flags = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", "--user-data-dir=%s" % (tmp_path / "profile"),
             "--virtual-time-budget=15000", "--host-resolver-rules=MAP * ~NOTFOUND"]
    dom = subprocess.run(flags + ["--dump-dom", probed.as_uri()], capture_output=True,
                         text=True, timeout=90)
    m = re.search(r'<pre id="probe">([^<]*)</pre>', dom.stdout)
    assert m, "no probe in the DOM:\n" + dom.stdout[-2000:] + dom.stderr[-2000:]
    got = json.loads(html.unescape(m.group(1)))
    assert got["errors"] == [] and got["plotly"] == "object"
    assert got["graphs"] == 4 and got["svgs"] >= 4 and got["tables"] == 5
    # every axis says its unit (or, on a Gantt chart, what its rows are)
    assert len(got["titles"]) >= 14
    for t in got["titles"]:
        assert re.search(r"\(.+\)$", t) or t in ("stage", "session:turn"), t
    assert "warm-up (not measured)" in got["notes"]
    assert any(n.startswith("p99 ") and n.endswith(" ms") for n in got["notes"])
    shot = tmp_path / "shot.png"
    subprocess.run(flags + ["--window-size=1200,1400", "--screenshot=%s" % shot, out.as_uri()],
                   capture_output=True, timeout=90)
    pixels = decode_png(shot.read_bytes())
    assert pixels.shape[:2] == (1400, 1200)
    assert_not_blank(pixels, 0.02)
    # the graphs are drawn: blue CDF lines and the orange/blue bars are there
    rgb = pixels[..., :3]
    blue = ((rgb[..., 2] - rgb[..., 0]) > 0.25).mean()
    assert blue > 0.002, blue


def test_a_long_series_is_thinned_keeping_every_peak():
    from serq.plot.runfigs import SERIES_BINS, thin
    n = 20 * SERIES_BINS
    ts = [i * 0.01 for i in range(n)]
    vs = [float((i * 7919) % 1000) for i in range(n)]
    vs[12345] = 5000.0  # one spike
    keep = thin(ts, vs)
    assert keep == sorted(set(keep)) and keep[0] == 0 and keep[-1] == n - 1
    assert len(keep) <= 4 * SERIES_BINS + 4 < n
    assert 12345 in keep
    # each bin's extremes are kept: the thinned series' max and min over any bin are the full one's
    width = (ts[-1] - ts[0]) / SERIES_BINS
    for b in (0, 17, SERIES_BINS // 2, SERIES_BINS - 1):
        full = [v for t, v in zip(ts, vs) if int((t - ts[0]) / width) == b]
        kept = [vs[i] for i in keep if int((ts[i] - ts[0]) / width) == b]
        assert max(kept) == max(full) and min(kept) == min(full)
    short = list(range(10))
    assert thin([float(t) for t in short], [0.0] * 10) == short
