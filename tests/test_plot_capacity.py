"""`serq plot` of a capacity search (its --json object, its -o FILE.json or
its probes' CSV) and the tornado chart's error bars: the figures' numbers
are the results' intervals, in both backends, the PNG and the page drawn
(the page in headless Chromium when it is installed), and a wrong file is
a clear error."""
import json
import re

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("plotly")

import serq  # noqa: E402
from serq.cli import main  # noqa: E402
from serq.plot.capfigs import COLORS, capacity_figures  # noqa: E402
from serq.plot.capread import read_csv, read_json  # noqa: E402
from test_plot import (CATCH, PROBE, _chromium, assert_not_blank, decode_png,  # noqa: E402
                       serq_cli)
from test_capacity import MM1  # noqa: E402  (the M/M/1 program the searches use)

SLOS = ["mean(sojourn) <= 2", "p99(sojourn) <= 10"]


@pytest.fixture(scope="module")
def search(tmp_path_factory):
    """A real search (some 50 runs of M/M/1, a second or two), its JSON
    and its CSV as `serq capacity` writes them."""
    d = tmp_path_factory.mktemp("cap")
    (d / "mm1.sq").write_text(MM1)
    code = main(["capacity", str(d / "mm1.sq"), "--over", "lam=0.2:0.8", "--resolution", "0.1",
                 "--max-seeds", "8", "-j", "1", "--quiet", "-o", str(d / "cap.json")] +
                sum((["--slo", s] for s in SLOS), []))
    assert code == 0
    code = main(["capacity", str(d / "mm1.sq"), "--over", "lam=0.2:0.8", "--resolution", "0.1",
                 "--max-seeds", "8", "-j", "1", "--quiet", "-o", str(d / "cap.csv")] +
                sum((["--slo", s] for s in SLOS), []))
    assert code == 0
    return d


def plot(capsys, *args):
    code = main(["plot"] + [str(a) for a in args])
    return code, capsys.readouterr().err


def test_the_json_has_each_slos_unit_and_o_json_is_the_json_object(search, capsys):
    d = json.loads((search / "cap.json").read_text())
    assert [s["unit"] for s in d["slos"]] == ["s", "s"]
    r = serq.capacity(str(search / "mm1.sq"), over="lam=0.2:0.8", resolution="0.1",
                      max_seeds=8, slo=SLOS)
    assert json.loads(r.json()) == d  # the same seeds, the same search
    assert (d["low"], d["high"]) == (r.low, r.high)
    lines = (search / "cap.csv").read_text().splitlines()
    assert lines[0] == ("lam,order,slo,mean,ci_low,ci_high,n_seeds,slo_verdict,verdict,unit,"
                        "goal,confidence")
    assert all(line.endswith(",s,over,0.95") for line in lines[1:])


def _points(panel):
    """(x, mean, low, high, colour) of every probe drawn in a panel."""
    out = []
    for t in panel.traces:
        if t.shape == "points":
            out += list(zip(t.xs, t.ys, t.lo, t.hi, [t.color] * len(t.xs)))
    return sorted(out)


def test_the_figure_is_the_jsons_probes_intervals_bound_and_bracket(search):
    d = json.loads((search / "cap.json").read_text())
    [section], [table], notes = capacity_figures(read_json(str(search / "cap.json")))
    assert "95% confidence" in section.title and section.title.startswith("The largest lam")
    assert len(section.panels) == 2 and len(table[2]) == len(d["probes"])
    for j, (panel, slo) in enumerate(zip(section.panels, d["slos"])):
        unit = re.search(r"\((ms|s)\)$", panel.ylabel).group(1)
        k = 1000.0 if unit == "ms" else 1.0
        assert panel.ylabel == "%s(sojourn) (%s)" % (slo["statistic"], unit)
        assert panel.xlabel.startswith("lam (")
        want = sorted((p["value"], p["stats"][j]["mean"] * k, p["stats"][j]["low"] * k,
                       p["stats"][j]["high"] * k, COLORS[p["stats"][j]["verdict"]])
                      for p in d["probes"])
        assert _points(panel) == want
        [bound] = [m for m in panel.marks if m.axis == "y"]
        assert bound.at == slo["bound"] * k
        assert panel.band[:2] == (d["low"], d["high"]) and "95 %" in panel.band[2]
    # the search decided both ends here: a pass and a fail are drawn
    colours = {c for p in section.panels for *_x, c in _points(p)}
    assert {COLORS["pass"], COLORS["fail"]} <= colours


def test_the_csv_draws_the_same_figure(search):
    a = capacity_figures(read_json(str(search / "cap.json")))[0][0]
    b = capacity_figures(read_csv(str(search / "cap.csv")))[0][0]
    assert [_points(p) for p in a.panels] == [_points(p) for p in b.panels]
    assert [p.band for p in a.panels] == [p.band for p in b.panels]
    assert a.title == b.title


def test_png_is_drawn_with_verdict_colours(search, tmp_path):
    out = tmp_path / "cap.png"
    r = serq_cli("plot", search / "cap.json", "-o", out)
    assert r.returncode == 0, r.stderr
    n = len(json.loads((search / "cap.json").read_text())["probes"])
    assert r.stderr == "wrote %s: 1 figure from %d probes of %s\n" % (out, n, search / "cap.json")
    pixels = decode_png(out.read_bytes())
    assert pixels.shape[1] > pixels.shape[0] > 200  # two panels side by side
    assert_not_blank(pixels)
    rgb = (pixels[..., :3] * 255).round()

    def share(hex_colour):
        want = [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]
        return (abs(rgb - want).max(axis=2) < 12).mean()
    assert share(COLORS["pass"]) > 1e-4 and share(COLORS["fail"]) > 1e-4


def _spec(text):
    m = re.search(r"Plotly.newPlot\(\s*\"serq-figure-1\",\s*(\[.*?\])\s*,\s*(\{.*?\})\s*,"
                  r"\s*\{\"displaylogo\"", text, re.S)
    return json.loads(m.group(1)), json.loads(m.group(2))


def test_html_error_bars_are_the_jsons_intervals(search, tmp_path):
    out = tmp_path / "cap.html"
    r = serq_cli("plot", search / "cap.json", "-o", out)
    assert r.returncode == 0, r.stderr
    d = json.loads((search / "cap.json").read_text())
    data, layout = _spec(out.read_text())
    got = {}
    for t in data:
        if "error_y" in t:
            axis = t.get("yaxis", "y")
            for x, y, up, down in zip(t["x"], t["y"], t["error_y"]["array"],
                                      t["error_y"]["arrayminus"]):
                got[(axis, x)] = (y, y - down, y + up, t["name"])
    assert len(got) == 2 * len(d["probes"])
    for j, axis in enumerate(("y", "y2")):
        unit = re.search(r"\((ms|s)\)$", layout["yaxis" + axis[1:]]["title"]["text"]).group(1)
        k = 1000.0 if unit == "ms" else 1.0
        for p in d["probes"]:
            st = p["stats"][j]
            y, lo, hi, name = got[(axis, p["value"])]
            assert name == st["verdict"]
            assert y == pytest.approx(st["mean"] * k, rel=1e-12)
            assert lo == pytest.approx(st["low"] * k, rel=1e-9)
            assert hi == pytest.approx(st["high"] * k, rel=1e-9)
    bands = [s for s in layout["shapes"] if s.get("type") == "rect"]
    assert len(bands) == 2 and all((s["x0"], s["x1"]) == (d["low"], d["high"]) for s in bands)
    bounds = sorted(s["y0"] for s in layout["shapes"] if s.get("type") == "line")
    assert len(bounds) == 2


# The error bars plotly drew (one `g.errorbar` a point, its path vertical
# or horizontal).
BARS = """<script>
window.addEventListener("load", function () { setTimeout(function () {
  var pre = document.createElement("pre");
  pre.id = "bars";
  pre.textContent = JSON.stringify({
    y: document.querySelectorAll("g.errorbar path.yerror").length,
    x: document.querySelectorAll("g.errorbar path.xerror").length});
  document.body.appendChild(pre);
}, 300); });
</script>"""


def _flags(tmp_path):
    return [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--hide-scrollbars", "--user-data-dir=%s" % (tmp_path / "profile"),
            "--virtual-time-budget=15000", "--host-resolver-rules=MAP * ~NOTFOUND"]


def _render(page, tmp_path):
    """What headless Chromium drew of a page: test_plot's probe, and the
    error bars."""
    import html
    import subprocess
    probed = tmp_path / ("probed-" + page.name)
    probed.write_text(page.read_text().replace("<head>", "<head>" + CATCH, 1)
                      .replace("</body>", PROBE + BARS + "</body>"))
    dom = subprocess.run(_flags(tmp_path) + ["--dump-dom", probed.as_uri()],
                         capture_output=True, text=True, timeout=90)
    got = {}
    for name in ("probe", "bars"):
        m = re.search(r'<pre id="%s">([^<]*)</pre>' % name, dom.stdout)
        assert m, "no %s in the DOM:\n%s%s" % (name, dom.stdout[-2000:], dom.stderr[-2000:])
        got.update(json.loads(html.unescape(m.group(1))))
    return got


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed "
                    "(apt-get install chromium)")
def test_capacity_page_renders_in_headless_chromium(search, tmp_path):
    import subprocess
    out = tmp_path / "cap.html"
    r = serq_cli("plot", search / "cap.csv", "-o", out)
    assert r.returncode == 0, r.stderr
    got = _render(out, tmp_path)
    assert got["errors"] == [] and got["plotly"] == "object"
    assert got["graphs"] == 1 and got["svgs"] >= 1 and got["tables"] == 1
    n = len(json.loads((search / "cap.json").read_text())["probes"])
    assert (got["y"], got["x"]) == (2 * n, 0)  # a vertical error bar a probe and SLO
    flags = _flags(tmp_path)
    for t in got["titles"]:
        assert re.search(r"\(.+\)$", t), t  # every axis says its unit
    assert any(n.startswith("answer [") for n in got["notes"])
    shot = tmp_path / "shot.png"
    subprocess.run(flags + ["--window-size=1200,900", "--screenshot=%s" % shot, out.as_uri()],
                   capture_output=True, timeout=90)
    rgb = decode_png(shot.read_bytes())[..., :3]
    green = ((rgb[..., 1] - rgb[..., 0]) > 0.25).mean()  # the passing probes
    red = ((rgb[..., 0] - rgb[..., 1]) > 0.35).mean()  # the failing ones
    assert green > 1e-4 and red > 1e-4, (green, red)


def test_wrong_files_are_clear_errors(search, tmp_path, capsys):
    png = tmp_path / "x.png"
    cases = []
    f = tmp_path / "broken.json"
    f.write_text('{"parameter": "lam", ')
    cases.append((f, "is not JSON"))
    f = tmp_path / "report.json"
    f.write_text(json.dumps({"observes": {}, "stages": []}))
    cases.append((f, "not a `serq capacity` result: its object has no `parameter`"))
    f = tmp_path / "list.json"
    f.write_text("[1, 2]")
    cases.append((f, "it is a JSON list, not an object"))
    d = json.loads((search / "cap.json").read_text())
    d["probes"][0]["stats"] = d["probes"][0]["stats"][:1]
    f = tmp_path / "short.json"
    f.write_text(json.dumps(d))
    cases.append((f, "probes[0] has 1 stats for 2 SLOs"))
    d = json.loads((search / "cap.json").read_text())
    d["probes"][1]["stats"][0]["low"] = "x"
    f = tmp_path / "text.json"
    f.write_text(json.dumps(d))
    cases.append((f, 'probes[1].stats[0].low is "x", not a number'))
    old = "\n".join(",".join(line.split(",")[:9])
                    for line in (search / "cap.csv").read_text().splitlines()) + "\n"
    f = tmp_path / "old.csv"
    f.write_text(old)
    cases.append((f, "it has no unit, goal, confidence columns"))
    f = tmp_path / "empty.csv"
    f.write_text((search / "cap.csv").read_text().splitlines()[0] + "\n")
    cases.append((f, "it has no probe"))
    cases.append((tmp_path / "missing.json", "cannot read"))
    for path, words in cases:
        code, err = plot(capsys, path, "-o", png)
        assert code == 2 and words in err and "Traceback" not in err, (path, err)
        assert "write one with `serq capacity" in err or "cannot read" in err
    code, err = plot(capsys, search / "cap.json", "--metric", "observe.*", "-o", png)
    assert code == 2 and "--metric does not apply to a capacity result" in err
    code, err = plot(capsys, search / "cap.json", "-o", tmp_path / "x.svg")
    assert code == 2 and "OUT.png" in err
    assert not png.exists()


def test_one_valued_and_one_sided_answers_are_lines(search):
    from serq.plot.capread import Capacity
    c = read_json(str(search / "cap.json"))
    for low, high, words in ((0.5, 0.5, "answer 0.5 at 95 %"), (0.8, None, "answer ≥ 0.8"),
                             (None, 0.2, "answer ≤ 0.2")):
        c2 = Capacity(**dict(vars(c), low=low, high=high))
        [section], _t, _n = capacity_figures(c2)
        for panel in section.panels:
            assert panel.band is None
            [mark] = [m for m in panel.marks if m.axis == "x"]
            assert mark.at == (low if low is not None else high) and \
                mark.label.startswith(words)


# ------------------------------------------------------- the tornado chart

SENS = """
let lambda = 0.5;
let mu = 1.0;
stage server : fifo;
workload { arrive poisson(lambda); }
session { set t0 = now; run server (~exp(1/mu)); observe sojourn = now - t0; }
run { horizon 600; warmup 50; seed 1; }
"""


@pytest.fixture(scope="module")
def tornado(tmp_path_factory):
    d = tmp_path_factory.mktemp("tornado")
    (d / "q.sq").write_text(SENS)
    r = serq_cli("sensitivity", d / "q.sq", "--vary", "lambda=10%", "--vary", "mu=5%",
                 "--seeds", "4", "--jobs", "1", "--quiet", "--json",
                 "-o", d / "t.html", "-o", d / "t.png")
    assert r.returncode == 0, r.stderr
    return d, json.loads(r.stdout)


def _cis(effects):
    """{(lane prefix, low/high): (change, ci low, ci high)} in percent."""
    out = {}
    for e in effects:
        for side in ("low", "high"):
            out[(e["metric"], e["constant"], side)] = tuple(
                100 * e[side + "_change" + s] for s in ("", "_ci_low", "_ci_high"))
    return out


def test_tornado_bars_carry_the_changes_intervals(tornado):
    from serq.compare.paired import Effect
    from serq.compare.tornado import HIGH_COLOR, tornado_figure
    d, out = tornado
    want = _cis(out["effects"])
    effects = [Effect(e["constant"], e["metric"], e["n_seeds"], e["base_mean"],
                      e["low_change"], e["low_change"] - e["low_change_ci_low"],
                      e["high_change"], e["high_change"] - e["high_change_ci_low"],
                      e["elasticity"], e["elasticity"] - e["elasticity_ci_low"])
               for e in out["effects"]]

    class V:  # the constants' ranges, as the figure reads them
        def __init__(self, c):
            self.name, self.low, self.high = c["name"], c["low"], c["high"]
    section = tornado_figure(effects, [V(c) for c in out["constants"]], 0.95, 4)
    got = {}
    for panel in section.panels:
        metric = panel.title.split(" (base")[0]
        for b in panel.bars:
            side = "high" if b.color == HIGH_COLOR else "low"
            got[(metric, b.lane.split(" ")[0], side)] = b.ci
        for lane in panel.lanes:
            assert "(elasticity " in lane
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12), key


def flat(rows):
    return [x for r in rows for x in r]


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed "
                    "(apt-get install chromium)")
def test_tornado_page_draws_its_error_bars_in_headless_chromium(tornado, tmp_path):
    d, out = tornado
    got = _render(d / "t.html", tmp_path)
    assert got["errors"] == [] and got["graphs"] == 1
    assert (got["x"], got["y"]) == (2 * len(out["effects"]), 0)  # one a bar


def test_tornado_png_and_html_draw_the_error_bars(tornado):
    d, out = tornado
    want = _cis(out["effects"])
    data, layout = _spec((d / "t.html").read_text())
    errs = [t for t in data if "error_x" in t]
    assert len(errs) == 3 and all(t["name"] == "confidence interval" for t in errs[:1])
    drawn = sorted((round(x - m, 9), round(x, 9), round(x + p, 9))
                   for t in errs for x, p, m in zip(t["x"], t["error_x"]["array"],
                                                    t["error_x"]["arrayminus"]))
    expect = sorted((round(v[1], 9), round(v[0], 9), round(v[2], 9)) for v in want.values())
    assert len(drawn) == len(expect)
    assert flat(drawn) == pytest.approx(flat(expect), abs=1e-7)
    # the PNG: the same sections through matplotlib, whose error bars are
    # line segments from each interval's low to its high end
    from serq.compare.paired import Effect
    from serq.compare.tornado import tornado_figure
    from serq.plot.mpl import draw, pyplot
    from matplotlib.collections import LineCollection
    effects = [Effect(e["constant"], e["metric"], e["n_seeds"], e["base_mean"],
                      e["low_change"], e["low_change"] - e["low_change_ci_low"],
                      e["high_change"], e["high_change"] - e["high_change_ci_low"],
                      e["elasticity"], None) for e in out["effects"]]

    class V:
        def __init__(self, c):
            self.name, self.low, self.high = c["name"], c["low"], c["high"]
    plt = pyplot()
    fig = draw(plt, tornado_figure(effects, [V(c) for c in out["constants"]], 0.95, 4))
    segs = []
    for ax in fig.axes:
        for coll in ax.collections:
            if isinstance(coll, LineCollection):
                segs += [(round(s[0][0], 9), round(s[1][0], 9)) for s in coll.get_segments()]
    plt.close(fig)
    expect = sorted((round(v[1], 9), round(v[2], 9)) for v in want.values())
    assert len(segs) == len(expect)
    assert flat(sorted(segs)) == pytest.approx(flat(expect), abs=1e-7)
    pixels = decode_png((d / "t.png").read_bytes())
    assert_not_blank(pixels)
