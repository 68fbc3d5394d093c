"""`serq sensitivity`: elasticities against M/M/1's closed form, integer
constants, the ranges and their errors, the table's order and the tornado
chart's files."""
import csv
import io
import json
import os

import pytest

from serq.cli import main
from serq.compare.vary import parse_range
from serq.errors import UsageError

MM1 = """
let lambda = 0.5;
let mu = 1.0;
stage server : fifo;
workload { arrive poisson(lambda); }
session { set t0 = now; run server (~exp(1/mu)); observe sojourn = now - t0; }
run { horizon 4000; warmup 100; seed 1; }
"""

SERVERS = """
let c = 3;
let n = 2;
stage server[n] : fifo(c);
workload { arrive poisson(2); }
session { set t0 = now; run server[0] (~exp(1)); observe sojourn = now - t0; }
run { horizon 300; warmup 10; seed 1; }
"""


@pytest.fixture
def mm1(tmp_path):
    f = tmp_path / "mm1.sq"
    f.write_text(MM1)
    return f


@pytest.fixture
def servers(tmp_path):
    f = tmp_path / "servers.sq"
    f.write_text(SERVERS)
    return f


def sensitivity(capsys, *args):
    code = main(["sensitivity"] + [str(a) for a in args] + ["--jobs", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def effects(out):
    return {(e["constant"], e["metric"]): e for e in json.loads(out)["effects"]}


def test_mm1_elasticities_match_the_closed_form(mm1, capsys):
    # Mean sojourn W = 1 / (mu - lambda).  The command measures the arc
    # elasticity [(W(hi) - W(lo)) / W(base)] / [(p_hi - p_lo) / p_base];
    # the point elasticity is lambda / (mu - lambda) = 1 to lambda and
    # -mu / (mu - lambda) = -2 to mu.  Throughput is lambda: elasticity 1
    # to lambda, 0 to mu.  Each lies within the interval the command gives.
    code, out, err = sensitivity(capsys, mm1, "--vary", "lambda=-10%:+10%", "--vary", "mu=5%",
                                 "--seeds", "16", "--json")
    assert code == 0, err
    got = effects(out)

    def w(lam, mu):
        return 1.0 / (mu - lam)

    def arc(f, lo, base, hi):
        return ((f(hi) - f(lo)) / f(base)) / ((hi - lo) / base)
    truth = {
        ("lambda", "observe.sojourn.mean"): arc(lambda x: w(x, 1.0), 0.45, 0.5, 0.55),
        ("mu", "observe.sojourn.mean"): arc(lambda x: w(0.5, x), 0.95, 1.0, 1.05),
        ("lambda", "stage.server.throughput"): 1.0,
        ("mu", "stage.server.throughput"): 0.0,
    }
    assert abs(truth[("lambda", "observe.sojourn.mean")] - 1.0) < 0.011  # arc ~ point
    assert abs(truth[("mu", "observe.sojourn.mean")] + 2.0) < 0.021
    for key, value in truth.items():
        e = got[key]
        assert e["n_seeds"] == 16
        assert e["elasticity_ci_low"] <= value <= e["elasticity_ci_high"], (key, e, value)
    # the low and high changes of W, against (W(p) - W(base)) / W(base)
    e = got[("lambda", "observe.sojourn.mean")]
    assert e["low_change_ci_low"] <= w(0.45, 1) / 2 - 1 <= e["low_change_ci_high"]
    assert e["high_change_ci_low"] <= w(0.55, 1) / 2 - 1 <= e["high_change_ci_high"]
    doc = json.loads(out)
    assert doc["constants"] == [
        {"name": "lambda", "base": 0.5, "low": 0.45, "high": 0.55, "integer": False,
         "asked": [0.45, 0.55]},
        {"name": "mu", "base": 1.0, "low": 0.95, "high": 1.05, "integer": False,
         "asked": [0.95, 1.05]}]


def test_table_is_sorted_by_the_size_of_the_elasticity(mm1, capsys):
    code, out, err = sensitivity(capsys, mm1, "--vary", "lambda=10%", "--vary", "mu=0.95:1.05",
                                 "--seeds", "3", "--horizon", "1000", "--metric",
                                 "observe.sojourn.mean")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1] == "  lambda = 0.5: low 0.45, high 0.55 (-10%:+10%)"
    assert lines[2] == "  mu = 1: low 0.95, high 1.05 (0.95:1.05)"
    rows = [l.split() for l in lines if l.startswith("observe.")]
    assert [r[1] for r in rows] == ["mu", "lambda"]  # |-2| before |1|


def test_integer_constant_is_rounded_and_said_so(servers, capsys):
    code, out, err = sensitivity(capsys, servers, "--vary", "c=-40%:+40%", "--seeds", "2",
                                 "--json")
    assert code == 0, err
    (c,) = json.loads(out)["constants"]
    assert c["integer"] is True and (c["low"], c["base"], c["high"]) == (2.0, 3.0, 4.0)
    assert [round(x, 12) for x in c["asked"]] == [1.8, 4.2]
    code, out, err = sensitivity(capsys, servers, "--vary", "c=-40%:+40%", "--seeds", "2")
    assert "an integer constant (the program refuses 3.5), so the values asked, 1.8 and 4.2, " \
           "are rounded" in out
    # the elasticity is against the values run: 2 and 4 around 3
    code, out, err = sensitivity(capsys, servers, "--vary", "c=2:4", "--seeds", "2", "--json")
    assert json.loads(out)["constants"][0]["asked"] == [2.0, 4.0]


def test_integer_constant_rounding_to_its_base_is_an_error(servers, capsys):
    code, _, err = sensitivity(capsys, servers, "--vary", "c=10%", "--seeds", "2")
    assert code == 2
    assert "`c` is an integer constant (the program refuses 3.5), and 2.7 and 3.3 both round " \
           "to 3" in err and "at least ±16.7%" in err


@pytest.mark.parametrize("spec, words", [
    ("lambda", "write --vary NAME=-10%:+10%"),
    ("=10%", "write --vary NAME"),
    ("lambda=10", "one value is a percentage"),
    ("lambda=+10%:-10%", "the low end is not below the high end"),
    ("lambda=-10%:0.6", "not one of each"),
    ("lambda=5%:10%", "leaves out the base value"),
    ("lambda=-150%:+10%", "to 0 or past it"),
    ("lambda=0%", "varies nothing"),
    ("lambda=1:2:3", "two ends"),
    ("lambda=a:b", "neither a number nor a percentage"),
])
def test_bad_ranges(spec, words):
    with pytest.raises(UsageError) as e:
        parse_range(spec)
    assert words in e.value.message


@pytest.mark.parametrize("args, words", [
    (["--vary", "rho=10%"], "the program has no constant `rho`"),
    (["--vary", "lambda=0.6:0.7"], "leaves out `lambda`'s value 0.5"),
    (["--vary", "lambda=10%", "--vary", "lambda=5%"], "given twice"),
    (["--vary", "mu=10%", "--set", "mu=0"], "`mu` is 0"),
    (["--vary", "lambda=10%", "--metric", "pool.*"], "matches no metric"),
    (["--vary", "lambda=10%", "-o", "chart.svg"], "FILE.png or FILE.html"),
    ([], "at least one --vary"),
])
def test_usage_errors(mm1, capsys, args, words):
    code, _, err = sensitivity(capsys, mm1, "--seeds", "2", "--horizon", "300", *args)
    assert code == 2 and words in err, err
    assert "Traceback" not in err


def test_an_array_size_cannot_be_varied(servers, capsys):
    code, _, err = sensitivity(capsys, servers, "--vary", "n=50%", "--seeds", "2")
    assert code == 2 and "`n` sizes an array" in err


def test_tornado_png_html_and_csv_are_written(mm1, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png, page, table = tmp_path / "t.png", tmp_path / "t.html", tmp_path / "t.csv"
    code, out, err = sensitivity(capsys, mm1, "--vary", "lambda=10%", "--vary", "mu=5%",
                                 "--seeds", "2", "--horizon", "600", "-o", png, "-o", page,
                                 "-o", table)
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = page.read_text()
    assert html.count("data:image/png;base64,") == 1 and "observe.sojourn.mean" in html
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    assert len(rows) == 2 * 3  # 2 constants x the 3 default metrics the program has
    assert list(rows[0])[:7] == ["constant", "low", "base", "high", "integer", "metric",
                                 "n_seeds"]
    assert {r["constant"] for r in rows} == {"lambda", "mu"}
    assert err.splitlines() == [
        "wrote %s: a tornado chart of 3 metrics x 2 constants" % png,
        "wrote %s: a tornado chart of 3 metrics x 2 constants" % page,
        "wrote %s: 6 rows" % table]
    # written whole (serq.atomic): nothing else left in the folder
    assert sorted(os.listdir(tmp_path)) == ["mm1.sq", "t.csv", "t.html", "t.png"]
