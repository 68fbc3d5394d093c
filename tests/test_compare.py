"""`serq compare`: paired differences on common random numbers, their
intervals against scipy's, A against itself, what the pairing buys, the
replication seeds, the CSV and the usage errors."""
import csv
import io
import json
import math
import os
import signal

import pytest

import serq
from serq.cli import main
from serq.compare.paired import difference, ratio
from serq.sim import rng
from serq.sweep.seeds import STRIDE, replication_seeds

# M/M/1 at load 0.5, short: a few hundred sessions a run.
MM1 = """
let lambda = 0.5;
let mu = 1.0;
stage server : fifo;
workload { arrive poisson(lambda); }
session { set t0 = now; run server (~exp(1/mu)); observe sojourn = now - t0; }
run { horizon 1000; warmup 50; seed 1; }
"""


@pytest.fixture
def mm1(tmp_path):
    f = tmp_path / "mm1.sq"
    f.write_text(MM1)
    return f


def compare(capsys, *args):
    code = main(["compare"] + [str(a) for a in args] + ["--jobs", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def metrics_of(out):
    return {m["metric"]: m for m in json.loads(out)["metrics"]}


def test_a_against_itself_differs_by_exactly_zero(mm1, capsys):
    code, out, err = compare(capsys, mm1, mm1, "--seeds", "4", "--json")
    assert code == 0, err
    got = metrics_of(out)
    assert set(got) == {"observe.sojourn.mean", "observe.sojourn.p99",
                        "stage.server.throughput"}  # the default metrics it has
    for m in got.values():
        assert m["n_seeds"] == 4
        assert m["mean_a"] == m["mean_b"]
        assert m["diff"] == 0.0 and m["diff_ci_low"] == 0.0 and m["diff_ci_high"] == 0.0
        assert m["rel_diff"] == 0.0
        assert m["unpaired_ci_high"] > 0  # the seeds do vary


def test_paired_interval_is_the_t_interval_of_the_seeds_differences(mm1, capsys):
    stats = pytest.importorskip("scipy.stats")
    code, out, err = compare(capsys, mm1, "--vs", "mu=1.05", "--seeds", "6", "--json",
                             "--seed", "3", "--metric", "observe.sojourn.mean")
    assert code == 0, err
    doc = json.loads(out)
    seeds = doc["seeds"]
    assert seeds == [3 + k * 2 ** 32 for k in range(6)]
    assert doc["b"] == {"file": str(mm1), "sets": {"mu": "1.05"}}
    m = metrics_of(out)["observe.sojourn.mean"]
    a = [serq.run(serq.compile(str(mm1), seed=s)).observe("sojourn").mean for s in seeds]
    b = [serq.run(serq.compile(str(mm1), seed=s, sets={"mu": 1.05})).observe("sojourn").mean
         for s in seeds]
    d = [y - x for x, y in zip(a, b)]
    assert m["mean_a"] == math.fsum(a) / 6 and m["mean_b"] == math.fsum(b) / 6
    assert m["diff"] == math.fsum(d) / 6
    lo, hi = stats.t.interval(0.95, 5, loc=m["diff"], scale=stats.sem(d))
    assert math.isclose(m["diff_ci_low"], lo, rel_tol=1e-9)
    assert math.isclose(m["diff_ci_high"], hi, rel_tol=1e-9)
    # the unpaired interval: two-sample t, equal sizes (pooled df 10)
    t2 = stats.ttest_ind(b, a)
    half = stats.t.ppf(0.975, 10) * (m["diff"] / t2.statistic)
    assert math.isclose(m["unpaired_ci_high"] - m["diff"], half, rel_tol=1e-9)


def test_pairing_narrows_the_interval_of_a_small_service_change(mm1, capsys):
    # The same arrivals and the same service draws, each 5 % shorter: the
    # two runs of a seed move together, so var(B - A) is far below var(A) +
    # var(B), and the paired interval far narrower than the unpaired one.
    code, out, err = compare(capsys, mm1, "--vs", "mu=1.05", "--seeds", "8", "--json")
    assert code == 0, err
    for name in ("observe.sojourn.mean", "observe.sojourn.p99"):
        m = metrics_of(out)[name]
        paired = m["diff_ci_high"] - m["diff"]
        unpaired = m["unpaired_ci_high"] - m["diff"]
        assert m["narrower"] == unpaired / paired
        assert paired * 2 < unpaired, (name, paired, unpaired)
        assert m["diff_ci_high"] < 0  # shorter service, shorter sojourn
    mean = metrics_of(out)["observe.sojourn.mean"]
    assert mean["narrower"] > 3


def test_two_files_are_the_same_comparison_as_vs(mm1, tmp_path, capsys):
    other = tmp_path / "faster.sq"
    other.write_text(MM1.replace("let mu = 1.0;", "let mu = 1.05;"))
    _, by_vs, _ = compare(capsys, mm1, "--vs", "mu=1.05", "--seeds", "3", "--json")
    _, by_file, _ = compare(capsys, mm1, other, "--seeds", "3", "--json")
    assert json.loads(by_vs)["metrics"] == json.loads(by_file)["metrics"]


def test_text_table_and_csv(mm1, tmp_path, capsys):
    out_csv = tmp_path / "cmp.csv"
    code, out, err = compare(capsys, mm1, "--vs", "lambda=0.55", "--seeds", "3", "-o", out_csv,
                             "--metric", "observe.*.p9*", "--confidence", "0.9")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "A: %s" % mm1 and lines[1] == "B: %s --vs lambda=0.55" % mm1
    assert "3 seeds S + k * 2^32 (S = 1, k = 0..2)" in lines[2] and "90% confidence" in lines[2]
    assert lines[4].split()[:4] == ["metric", "A", "B", "B"]
    assert [l.split()[0] for l in lines[5:8]] == ["observe.sojourn.p90", "observe.sojourn.p99",
                                                  "observe.sojourn.p99_9"]
    assert err == "wrote %s: 3 metrics\n" % out_csv
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert [r["metric"] for r in rows] == ["observe.sojourn.p90", "observe.sojourn.p99",
                                           "observe.sojourn.p99_9"]
    r = rows[1]
    assert float(r["diff_ci_low"]) < float(r["diff"]) < float(r["diff_ci_high"])
    assert r["n_seeds"] == "3"


def test_slo_metrics_are_compared(mm1, capsys):
    code, out, err = compare(capsys, mm1, "--vs", "mu=1.05", "--seeds", "3", "--json",
                             "--slo", "sojourn <= 2")
    assert code == 0, err
    got = metrics_of(out)
    assert "slo.sojourn<=2.attainment" in got and "slo.all.goodput" in got
    assert got["slo.sojourn<=2.attainment"]["diff"] > 0  # faster service meets it more often


@pytest.mark.parametrize("args, code, words", [
    (["--vs", "mu=1.05", "--metric", "observe.sojurn.mean"], 2,
     "did you mean observe.sojourn.mean"),
    (["--vs", "mu=1.05", "--metric", "pool.*.mean_used"], 2, "matches no metric"),
    (["--vs", "nu=2"], 1, "unknown constant `nu`"),
    ([], 2, "needs two programs"),
    (["--vs", "mu=1.05", "--seeds", "1"], 2, "at least 2"),
    (["--vs", "mu=1.05", "--confidence", "95"], 2, "between 0 and 1"),
    (["--vs", "mu=1.05", "--seed", str(2 ** 64 - 2)], 2, "past 2^64 - 1"),
    (["--vs", "mu=1.05", "--address", "x:1"], 2, "--backend ray"),
])
def test_usage_errors(mm1, capsys, args, code, words):
    got, out, err = compare(capsys, mm1, *args)
    assert got == code and words in err, err
    assert "Traceback" not in err


def test_a_metric_of_one_program_only_is_refused(mm1, tmp_path, capsys):
    other = tmp_path / "other.sq"
    other.write_text(MM1.replace("sojourn", "resp"))
    code, _, err = compare(capsys, mm1, other, "--seeds", "2", "--metric", "observe.resp.mean")
    assert code == 2 and "not every program compared gives" in err


# ------------------------------------------------------------ statistics

def test_relative_difference_is_a_ratio_of_means_with_its_delta_interval():
    a = [1.0, 2.0, 3.0, 4.0]
    b = [1.1, 2.3, 3.2, 4.5]
    d = difference("x", a, b, 0.95)
    assert math.isclose(d.rel, sum(b) / sum(a) - 1, rel_tol=1e-12)
    r = sum(y - x for x, y in zip(a, b)) / sum(a)
    e = [(y - x) - r * x for x, y in zip(a, b)]
    me = sum(e) / 4
    sd = math.sqrt(sum((x - me) ** 2 for x in e) / 3)
    from serq.sweep.tdist import t_quantile
    assert math.isclose(d.rel_half, t_quantile(0.975, 3) * sd / 2 / (sum(a) / 4), rel_tol=1e-12)
    # a seed without a value on either side is left out of the pairs
    d2 = difference("x", a + [None], b + [7.0], 0.95)
    assert d2.n == 4 and d2.diff == d.diff
    assert ratio([], [], 0.95) == (None, None) and ratio([1.0], [0.0], 0.95) == (None, None)


def test_consecutive_seeds_share_session_streams_and_strided_ones_do_not():
    # substream_seed adds the seed and the serial first: session k + 1 of
    # seed s draws what session k of seed s + 1 draws.
    for k in range(5):
        assert rng.statement_stream(8, k + 1).random_f64() == \
            rng.statement_stream(9, k).random_f64()
    seeds = replication_seeds(8, 3)
    assert seeds == [8, 8 + STRIDE, 8 + 2 * STRIDE]
    first = {rng.statement_stream(s, k).random_f64() for s in seeds for k in range(200)}
    assert len(first) == 600


def test_ctrl_c_reports_the_seeds_every_program_finished(mm1):
    # Runs go seed by seed (A then B): a stop keeps whole pairs.
    from test_interrupts import finish, start
    from test_limits import _wait_for_cpu
    p = start(["compare", mm1, "--vs", "mu=1.05", "--seeds", "100000", "--horizon", "300",
               "--warmup", "10", "-j", "1", "--quiet", "--json", "--metric",
               "observe.sojourn.mean"])
    _wait_for_cpu(p.pid, 2.5)
    os.killpg(p.pid, signal.SIGINT)
    out, err = finish(p)
    assert p.returncode == 130, err
    doc = json.loads(out)
    n = len(doc["seeds"])
    assert 2 <= n < 100000
    assert doc["incomplete"] == "incomplete: the runs were interrupted; %d of 100000 seeds " \
        "finished every run" % n
    assert doc["metrics"][0]["n_seeds"] == n
    assert err == "serq compare: %s\n" % doc["incomplete"]
