"""`serq plot`: a sweep's curves, one run's report (PNG and a self-contained
HTML page, rendered in headless Chromium when it is installed)."""
import base64
import html
import io
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest

pytest.importorskip("matplotlib")
from matplotlib import image  # noqa: E402

from serq.plot.rundata import read_iterations  # noqa: E402
from serq.plot.runfigs import gantt_window  # noqa: E402

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


def serq_cli(*args):
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True)


class Page(HTMLParser):
    """The img sources, h2 titles and pre blocks of a page."""

    def __init__(self):
        super().__init__()
        self.imgs, self.h2, self.pre, self.notes = [], [], [], []
        self._in = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a.get("src", ""))
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


def test_run_report_html_is_self_contained(step_program, tmp_path):
    out = tmp_path / "report.html"
    r = serq_cli("plot", "--run", step_program, "--seed", "5", "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "wrote %s: 3 figures from one run of %s\n" % (out, step_program)
    text = out.read_text()
    page = Page()
    page.feed(text)
    assert page.h2 == ["Distributions", "Over time", "Step iterations", "Report"]
    assert len(page.imgs) == 3
    for src in page.imgs:
        assert src.startswith("data:image/png;base64,")
        assert_not_blank(decode_png(base64.b64decode(src.split(",", 1)[1])))
    # Nothing is fetched from elsewhere.
    assert not re.search(r"""(src|href)=["'](?!data:)""", text)
    # The gauges the plot adds only read the state: the run is `serq run`'s.
    run = serq_cli("run", step_program, "--seed", "5")
    assert run.returncode == 0, run.stderr
    assert html.unescape(page.pre[0]).strip() == run.stdout.strip()


def test_run_png_stacks_the_figures(step_program, tmp_path):
    out = tmp_path / "report.png"
    r = serq_cli("plot", "--run", step_program, "--observe", "ttft", "-o", out)
    assert r.returncode == 0, r.stderr
    pixels = decode_png(out.read_bytes())
    assert pixels.shape[0] > 1.2 * pixels.shape[1]  # three figures one above the other
    assert_not_blank(pixels)
    r = serq_cli("plot", "--run", step_program, "--observe", "tfft", "-o", out)
    assert r.returncode == 2 and "no such observation" in r.stderr


def test_dump_directory_and_iteration_trace(step_program, tmp_path):
    dump, trace = tmp_path / "dump", tmp_path / "iters.txt"
    r = serq_cli("run", step_program, "--dump", dump, "--trace-iterations", trace)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "dump.html"
    r = serq_cli("plot", "--dump", dump, "--iterations", trace, "--gantt-from", "10",
                 "--gantt-iterations", "25", "-o", out)
    assert r.returncode == 0, r.stderr
    page = Page()
    page.feed(out.read_text())
    assert page.h2 == ["Distributions", "Over time", "Step iterations"]
    assert "25 iterations from t = 10" in out.read_text()
    r = serq_cli("plot", "--dump", tmp_path / "nowhere", "-o", out)
    assert r.returncode == 2 and "no such directory" in r.stderr


def test_gantt_window_is_the_first_iterations_after_its_start(step_program, tmp_path):
    trace = tmp_path / "iters.txt"
    assert serq_cli("run", step_program, "--trace-iterations", trace).returncode == 0
    iters = read_iterations(str(trace))
    assert len(iters) == len(trace.read_text().splitlines()) > 100
    window = gantt_window(iters, 12.0, 40)
    assert len(window) == 40
    assert all(it.start >= 12.0 for it in window)
    later = [it.start for it in iters if it.start >= 12.0]
    assert [it.start for it in window] == sorted(later)[:40]
    for it in window:
        assert it.prefill_jobs == sum(1 for j in it.jobs if j[2] == "p")
        assert it.decode_jobs == sum(1 for j in it.jobs if j[2] == "d")


def test_program_without_step_engine_says_so(tmp_path):
    prog = tmp_path / "q.sq"
    prog.write_text(FIFO_PROGRAM)
    out = tmp_path / "q.html"
    r = serq_cli("plot", "--run", prog, "-o", out)
    assert r.returncode == 0, r.stderr
    page = Page()
    page.feed(out.read_text())
    assert page.h2 == ["Distributions", "Over time", "Report"]
    assert any("no step engine" in n for n in page.notes)


PROBE = """<script>
window.addEventListener("load", function () {
  var out = [];
  document.querySelectorAll("img").forEach(function (img) {
    out.push(img.naturalWidth + "x" + img.naturalHeight + (img.complete ? ":ok" : ":pending"));
  });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = out.join(" ");
  document.body.appendChild(pre);
});
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
    probed.write_text(out.read_text().replace("</body>", PROBE + "</body>"))
    flags = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", "--user-data-dir=%s" % (tmp_path / "profile")]
    dom = subprocess.run(flags + ["--dump-dom", probed.as_uri()], capture_output=True,
                         text=True, timeout=60)
    m = re.search(r'<pre id="probe">([^<]*)</pre>', dom.stdout)
    assert m, "no probe in the DOM:\n" + dom.stdout[-2000:] + dom.stderr[-2000:]
    sizes = m.group(1).split()
    assert len(sizes) == 3
    for s in sizes:
        w, h = s.split(":")[0].split("x")
        assert s.endswith(":ok") and int(w) > 500 and int(h) > 200, sizes
    shot = tmp_path / "shot.png"
    subprocess.run(flags + ["--window-size=1200,1400", "--screenshot=%s" % shot, out.as_uri()],
                   capture_output=True, timeout=60)
    pixels = decode_png(shot.read_bytes())
    assert pixels.shape[:2] == (1400, 1200)
    assert_not_blank(pixels, 0.05)
