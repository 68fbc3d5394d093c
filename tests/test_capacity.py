"""``serq capacity``: the search against closed forms, its coverage, its
parts, its outputs and its errors.

Closed forms (mean service 1, so mu = 1):

* M/M/1: the sojourn time is exponential with rate mu - lambda, so the
  largest arrival rate with mean sojourn <= T is mu - 1/T, and with p99
  sojourn <= T it is mu - ln(100)/T;
* M/M/2 and M/M/c: the mean sojourn from Erlang C; the largest rate
  within a bound is its root (found by bisection on the formula), and the
  fewest servers within a bound at a given rate is read off it.

Each search must bracket the true value.  The coverage claim (the bracket
holds with probability at least the confidence) is checked over repeated
searches with different first seeds: the number of brackets that miss
must not be significantly above (1 - confidence) of them (exact binomial
tail at the strict level 0.001, as tests/test_closed_forms.py).  The
searches' own tests are Bonferroni-split, so misses are far rarer than
the bound allows; the check guards against an interval or a bracket that
is wrong, not against one that is conservative.

Horizons are short (1000 to 2000 time units: a run takes some 0.02 s);
what the interval estimates is the mean over seeds of one such run's
statistic, which differs from the steady-state value by the warm-up's
leftover bias and (for p99) the nearest-rank estimator's.  Both are far
below the intervals' widths only when the warm-up spans many relaxation
times of the queue (about 1 / (mu (1 - sqrt(rho)))^2: 12 at rho = 0.5, 56
at 0.75) and so the answers here sit at rho <= 0.7 with warm-ups of 100
to 300.  (At rho = 0.75 with a warm-up of 80 the runs' mean sojourn is
well below the steady state's 4, and brackets miss: the estimand is
the run's, not the steady state's.)
"""
import json
import math
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest
from scipy import stats

import serq
from serq.capacity.search import (FAIL, PASS, UNDECIDED, Plan, judge, next_position,
                                  parse_range)
from serq.capacity.spec import parse_spec
from serq.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
LEVEL = 0.001  # strict level of the binomial coverage check

MM1 = """
let lam = 0.5;
stage server : fifo;
workload { arrive poisson(lam); }
session { set t0 = now; run server (~exp(1)); observe sojourn = now - t0; }
run { horizon 1000; warmup 100; seed 1; }
"""

MMC = """
let c = 2;
let lam = 1;
stage server : fifo(c);
workload { arrive poisson(lam); }
session { set t0 = now; run server (~exp(1)); observe sojourn = now - t0; }
run { horizon 1000; warmup 100; seed 1; }
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("capacity")
    (d / "mm1.sq").write_text(MM1)
    (d / "mmc.sq").write_text(MMC)
    return d


def erlang_c_sojourn(c, lam, mu=1.0):
    a = lam / mu
    top = a ** c / math.factorial(c) * c / (c - a)
    p_wait = top / (sum(a ** k / math.factorial(k) for k in range(c)) + top)
    return p_wait / (c * mu - lam) + 1 / mu


def largest_rate(c, t):
    """The root of erlang_c_sojourn(c, lam) = t in (0, c), by bisection."""
    lo, hi = 1e-9, c - 1e-9
    for _ in range(200):
        mid = (lo + hi) / 2
        if erlang_c_sojourn(c, mid) <= t:
            lo = mid
        else:
            hi = mid
    return lo


def contains(r, truth):
    return r.low is not None and r.high is not None and r.low <= truth <= r.high


def test_closed_forms_themselves():
    assert erlang_c_sojourn(1, 0.75) == pytest.approx(4.0)      # M/M/1: 1 / (mu - lam)
    assert largest_rate(1, 4.0) == pytest.approx(0.75)
    assert erlang_c_sojourn(2, 1.0) == pytest.approx(4 / 3)     # M/M/2, a = 1: Wq = 1/3


# ------------------------------------------------------------ closed forms

def test_mm1_mean_sojourn_bracket_holds_mu_minus_one_over_t(programs):
    t = 2.5
    r = serq.capacity(str(programs / "mm1.sq"), over="lam=0.3:0.9", resolution="0.0375",
                      slo=["mean(sojourn) <= %s" % t], max_seeds=16, horizon=2000, warmup=200)
    assert contains(r, 1 - 1 / t), r
    assert r.status in ("resolved", "undecided") and not r.partial
    # common random numbers: every probe ran the same first seeds
    assert r.runs == sum(p.seeds for p in r.probes)
    # every pass lies below every fail (the search probes inside the bracket)
    passes = [p.value for p in r.probes if p.verdict == PASS]
    fails = [p.value for p in r.probes if p.verdict == FAIL]
    assert max(passes) == r.low and min(fails) == r.high and r.low < r.high


def test_mm1_p99_sojourn_bracket_holds_mu_minus_ln100_over_t(programs):
    t = 10.0
    r = serq.capacity(str(programs / "mm1.sq"), over="lam=0.2:0.8", resolution="0.0375",
                      slo=["p99(sojourn) <= %s" % t], max_seeds=16, horizon=2000, warmup=200)
    assert contains(r, 1 - math.log(100) / t), r


def test_mm2_erlang_c_bracket_holds_the_root(programs):
    t = 2.0
    truth = largest_rate(2, t)
    assert 1.40 < truth < 1.42
    r = serq.capacity(str(programs / "mmc.sq"), over="lam=0.5:1.9", resolution="0.0875",
                      slo=["mean(sojourn) <= 2"], max_seeds=16, sets={"c": 2}, horizon=2000,
                      warmup=300)
    assert contains(r, truth), r


def test_fewest_servers_by_erlang_c(programs):
    # at lam = 2.4: 3 servers give 2.08, 4 give 1.18: the fewest within 1.6 is 4
    assert erlang_c_sojourn(3, 2.4) > 1.6 > erlang_c_sojourn(4, 2.4)
    r = serq.capacity(str(programs / "mmc.sq"), minimize="c=1:8", sets={"lam": 2.4},
                      slo=["mean(sojourn) <= 1.6"], max_seeds=16)
    assert (r.low, r.high) == (4, 4), r
    assert r.goal == "minimize" and "is 4 at 95% confidence" in r.describe()
    by_value = {p.value: p.verdict for p in r.probes}
    assert by_value[3] == FAIL and by_value[4] == PASS


def test_mm1_goodput_floor_bracket_holds(programs):
    # P(W <= 3) = 1 - exp(-3 (1 - lam)) >= 0.8 up to lam = 1 - ln(5) / 3
    r = serq.capacity(str(programs / "mm1.sq"), over="lam=0.1:0.9", resolution="0.05",
                      slo=["goodput(sojourn <= 3) >= 0.8"], max_seeds=16, horizon=2000,
                      warmup=200)
    assert contains(r, 1 - math.log(5) / 3), r


def test_answers_outside_the_range(programs):
    # 4 servers already meet the bound at lam = 2.4; the rate range lies
    # all above (or all below) the M/M/1 answer 0.5
    r = serq.capacity(str(programs / "mmc.sq"), minimize="c=4:8", sets={"lam": 2.4},
                      slo=["mean(sojourn) <= 1.6"], horizon=500)
    assert (r.low, r.high, r.status) == (None, 4, "resolved")
    assert "the SLOs hold already at c = 4" in r.describe()
    r = serq.capacity(str(programs / "mm1.sq"), over="lam=0.7:0.9", slo=["mean(sojourn) <= 2"])
    assert (r.low, r.high, len(r.probes)) == (None, 0.7, 1)
    r = serq.capacity(str(programs / "mm1.sq"), over="lam=0.1:0.3", slo=["mean(sojourn) <= 2"])
    assert (r.low, r.high, len(r.probes)) == (0.3, None, 2)


def test_coverage_over_repeated_searches(programs):
    """K searches from first seeds far apart (each search uses S, S + 2^32,
    ...): the misses against the closed form stay within the binomial
    bound of 1 - confidence."""
    confidence, k, t = 0.8, 12, 2.0
    truth = 1 - 1 / t
    misses = 0
    for i in range(k):
        r = serq.capacity(str(programs / "mm1.sq"), over="lam=0.2:0.8", resolution="0.025",
                          slo=["mean(sojourn) <= %s" % t], confidence=confidence,
                          max_seeds=8, seed=1 + 1000 * (i + 1), horizon=1000, warmup=100)
        misses += not (r.low is not None and r.high is not None and r.low <= truth <= r.high)
    p = float(stats.binom.sf(misses - 1, k, 1 - confidence))
    print("\n%d of %d brackets miss %g (P(X >= misses) = %.3g)" % (misses, k, truth, p))
    assert p > LEVEL, "%d of %d brackets miss %g" % (misses, k, truth)


# ------------------------------------------------------------- the parts

def test_bonferroni_level_and_the_probe_bound():
    plan = Plan("lam", Fraction(0), Fraction(1), "over", Fraction(1, 64), 0.95, 4, 32, 500, 1, 2)
    assert plan.steps == 64 and plan.schedule == [4, 8, 16, 32]
    assert plan.max_probes == 2 + 2 * 6
    assert plan.level == pytest.approx(1 - 0.05 / (14 * 4 * 2))
    m = Plan("n", Fraction(1), Fraction(64), "minimize", None, 0.9, 3, 10, 100, 1, 1)
    assert m.schedule == [3, 6, 10] and m.steps == 63 and m.value(0) == 1 and m.value(63) == 64
    assert m.pos(0) == 63  # --minimize searches from the top
    g = Plan("x", Fraction("0.5"), Fraction("1.5"), "over", Fraction("0.3"), 0.95, 4, 4, 10, 1, 1)
    assert [g.value(i) for i in range(g.steps + 1)] == [0.5, 0.8, 1.1, 1.4, 1.5]


@pytest.mark.parametrize("steps", [1, 2, 3, 7, 16, 64, 100])
def test_the_search_never_makes_more_probes_than_the_confidence_is_split_over(steps):
    """Any monotone truth with any band of undecided probes: the search
    ends within max_probes, with a bracket holding the threshold."""
    import random
    rng = random.Random(steps)
    plan = Plan("x", Fraction(0), Fraction(steps), "over", Fraction(1), 0.95, 4, 4, 10 ** 6, 1, 1)
    for _ in range(300):
        cut = rng.randint(-1, steps + 1)  # positions <= cut pass
        band = rng.randint(0, 4)

        def verdict(pos):
            if abs(pos - cut) <= band // 2 and rng.random() < 0.8:
                return UNDECIDED
            return PASS if pos <= cut else FAIL
        seen = {}
        while True:
            pos = next_position(plan, seen)
            if pos is None:
                break
            assert pos not in seen and 0 <= pos <= steps
            seen[pos] = verdict(pos)
            assert len(seen) <= plan.max_probes
        passes = [p for p, v in seen.items() if v == PASS]
        fails = [p for p, v in seen.items() if v == FAIL]
        assert all(p <= cut for p in passes) and all(f > cut for f in fails)
        if passes and fails and not any(v == UNDECIDED for v in seen.values()):
            assert min(fails) - max(passes) == 1


def test_judge_clears_the_bound_either_side():
    spec = type("S", (), {"op": "<=", "bound": 1.0})()
    level = 0.975
    assert judge(spec, [0.5, 0.52, 0.49, 0.51], level).verdict == PASS
    assert judge(spec, [1.5, 1.52, 1.49, 1.51], level).verdict == FAIL
    assert judge(spec, [0.9, 1.1, 0.95, 1.05], level).verdict == UNDECIDED
    st = judge(spec, [0.5, 0.52, 0.49, 0.51], level)
    half = stats.t.ppf(level, 3) * stats.tstd([0.5, 0.52, 0.49, 0.51]) / 2
    assert (st.low, st.high) == (pytest.approx(0.505 - half), pytest.approx(0.505 + half))
    # a run without a value cannot pass; none with one fails
    assert judge(spec, [0.5, None, 0.49, 0.51], level).verdict == UNDECIDED
    assert judge(spec, [None, None], level).verdict == FAIL
    floor = type("S", (), {"op": ">=", "bound": 0.9})()
    assert judge(floor, [0.95, 0.96, 0.95, 0.97], level).verdict == PASS
    assert judge(floor, [0.5, 0.52, 0.49, 0.51], level).verdict == FAIL


def test_specs_parse_statistics_units_and_goodput(programs):
    prog = serq.compile(str(programs / "mm1.sq")).ir
    s = parse_spec("p99(sojourn) <= 500ms", prog)
    assert (s.kind, s.q, s.bound, s.op, s.label()) == ("quantile", 0.99, 0.5, "<=", "p99(sojourn)")
    s = parse_spec("p99.9(sojourn)<3", prog)
    assert s.q == pytest.approx(0.999) and s.op == "<"
    s = parse_spec("mean(sojourn) <= 4", prog)
    assert s.kind == "mean" and s.bound == 4
    g = parse_spec("goodput(sojourn <= 2, sojourn <= 500ms) >= 90%", prog)
    assert g.kind == "goodput" and g.bound == 0.9 and [x.bound for x in g.slos] == [2, 0.5]
    # a step stage's inter-token gaps
    chat = serq.compile(str(ROOT / "examples" / "chat_prefix_reuse.sq")).ir
    itl = parse_spec("p99(gpu.itl) <= 50ms", chat)
    assert itl.source == ("itl", "gpu", None) and itl.bound == 0.05


@pytest.mark.parametrize("text, words", [
    ("sojourn <= 4", "name a statistic of the observation, e.g. p99(sojourn)"),
    ("p99(ttft) <= 0.5", "the program has no observation `ttft`"),
    ("max(sojourn) <= 3", "`max` is not a statistic"),
    ("p100(sojourn) <= 3", "below p100"),
    ("p99(sojourn) <= fast", "an SLO is `STAT(NAME) OP BOUND`"),
    ("goodput(sojourn <= 2) >= 1.5", "from 0 to 1"),
    ("goodput() >= 0.9", "takes SLOs separated by commas"),
    ("goodput(ttft <= 2) >= 0.9", "no observation `ttft`"),
])
def test_bad_specs_are_clear_errors(programs, text, words):
    prog = serq.compile(str(programs / "mm1.sq")).ir
    with pytest.raises(UsageError) as e:
        parse_spec(text, prog)
    assert words in e.value.message
    if "no observation" in words:
        assert "sojourn" in e.value.help


def test_ranges():
    assert parse_range("rate=1:20", "--over", False)[1:] == (1, 20)
    for text, words in (("rate=5:5", "LO must be below HI"), ("rate=9:2", "below HI"),
                        ("rate", "NAME=LO:HI"), ("rate=a:b", "are numbers"),
                        ("n=1.5:4", "whole")):
        with pytest.raises(UsageError) as e:
            parse_range(text, "--minimize" if text.startswith("n=") else "--over",
                        text.startswith("n="))
        assert words in e.value.message


def test_a_let_sizing_a_family_is_written_into_the_text(tmp_path):
    from serq.capacity.program import ProbeCompiler, rewrite_let
    src = ("let k = 2;\nlet lam = 1.5;\nstage srv[k] : fifo;\nworkload { arrive poisson(lam); }\n"
           "session { set t0 = now; choose r in k by (queue(srv[r]));\n"
           "  run srv[r] (~exp(1)); observe sojourn = now - t0; }\n"
           "run { horizon 200; warmup 20; seed 1; }\n")
    f = tmp_path / "jsq.sq"
    f.write_text(src)
    assert rewrite_let(src, str(f), "k", "5").startswith("let k = 5;\nlet lam")
    assert rewrite_let(src, str(f), "nope", "5") is None
    pc = ProbeCompiler(str(f), "k", {}, {}, {})
    assert pc.in_text
    assert len(pc.compile(3).stages) == 3 and len(pc.compile(1).stages) == 1
    r = serq.capacity(str(f), minimize="k=1:6", slo=["mean(sojourn) <= 2"], max_seeds=8)
    assert r.high is not None and r.low is not None and 2 <= r.low <= r.high <= 3


# ------------------------------------------------------- the command line

def cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "serq", "capacity"] + [str(a) for a in args],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_json_text_and_csv(programs, tmp_path):
    out = tmp_path / "probes.csv"
    args = [programs / "mmc.sq", "--minimize", "c=1:8", "--set", "lam=2.4", "--slo",
            "mean(sojourn) <= 1.6", "--slo", "p50(sojourn) <= 1.5", "--max-seeds", "8", "-j", "1"]
    r = cli(*(args + ["--json", "-o", out]))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    for key in ("parameter", "low", "high", "confidence", "probes", "status", "partial", "slos",
                "level", "runs"):
        assert key in d
    assert (d["parameter"], d["goal"], d["low"], d["high"], d["confidence"]) == \
        ("c", "minimize", 4, 4, 0.95)
    assert d["partial"] is False and len(d["slos"]) == 2
    p = d["probes"][0]
    assert set(p) == {"order", "value", "seeds", "verdict", "stats"}
    assert len(p["stats"]) == 2 and len(p["stats"][0]["values"]) == p["seeds"]
    assert [s["unit"] for s in d["slos"]] == ["s", "s"]
    assert d["runs"] == sum(p["seeds"] for p in d["probes"])
    lines = out.read_text().splitlines()
    assert lines[0] == ("c,order,slo,mean,ci_low,ci_high,n_seeds,slo_verdict,verdict,unit,goal,"
                        "confidence")
    assert all(line.endswith(",s,minimize,0.95") for line in lines[1:])  # sojourn: a time
    assert len(lines) == 1 + 2 * len(d["probes"])
    assert r.stderr.startswith("wrote %s: %d rows" % (out, 2 * len(d["probes"])))
    t = cli(*args)
    assert t.returncode == 0
    assert t.stdout.splitlines()[0] == "c: the fewest c meeting every SLO is 4 at 95% confidence"
    assert "mean(sojourn) <= 1.6" in t.stdout and "verdict" in t.stdout


@pytest.mark.parametrize("args, words", [
    (["--over", "lam=0.9:0.1", "--slo", "mean(sojourn) <= 4"], "LO must be below HI"),
    (["--over", "lam=0.1:0.9", "--slo", "mean(soj) <= 4"], "no observation `soj`"),
    (["--over", "lam=0.1:0.9", "--slo", "mean(sojourn) < = 4"], "an SLO is"),
    (["--over", "lam=0.1:0.9"], "no SLO given"),
    (["--slo", "mean(sojourn) <= 4"], "--over NAME=LO:HI"),
    (["--over", "nope=0.1:0.9", "--slo", "mean(sojourn) <= 4"], "unknown constant `nope`"),
    (["--over", "lam=0.1:0.9", "--minimize", "lam=1:2", "--slo", "mean(sojourn) <= 4"],
     "not allowed with argument"),
    (["--over", "lam=0.1:0.9", "--slo", "mean(sojourn) <= 4", "--confidence", "1.5"],
     "a confidence is at least 0.5"),
    (["--over", "lam=0.1:0.9", "--set", "lam=3", "--slo", "mean(sojourn) <= 4"],
     "fixes the constant the search varies"),
])
def test_command_errors(programs, args, words):
    r = cli(programs / "mm1.sq", *args)
    assert r.returncode in (1, 2), r.stderr
    assert words in r.stderr and "Traceback" not in r.stderr


def test_an_interrupt_keeps_the_bracket_so_far(programs):
    """A signal after the first probes: the probes decided stay, the one
    cut short is undecided, the result is marked partial."""
    from serq.capacity.run import run_capacity
    from serq.interrupt import Stop
    from serq.capacity.search import bracket
    stop = Stop(defer=True)

    def notify(event, data):
        if event == "run" and data.order == 3 and data.seeds == 2:  # in the third probe
            stop.handle(signal.SIGINT, None)
    r = run_capacity(str(programs / "mm1.sq"), over="lam=0.3:0.9", slo=["mean(sojourn) <= 4"],
                     resolution="0.0375", jobs=1, stop=stop, notify=notify)
    assert r.partial and r.status == "interrupted" and r.signum == signal.SIGINT
    assert len(r.probes) == 3 and r.probes[2].verdict == UNDECIDED and r.probes[2].seeds == 2
    assert r.probes[0].verdict == PASS  # lam = 0.3: mean sojourn 1.43
    assert (r.low, r.high) == bracket(r.plan, r.probes[:2])[:2] and r.low == 0.3
    with pytest.raises(serq.Interrupted) as e:
        from serq.capacity.api import CapacityResult
        raise serq.Interrupted("x", CapacityResult(r))
    assert e.value.report.partial


def test_ctrl_c_prints_the_partial_bracket_and_exits_130(programs):
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.Popen([sys.executable, "-m", "serq", "capacity", str(programs / "mm1.sq"),
                          "--over", "lam=0.3:0.95", "--slo", "p99(sojourn) <= 12", "-j", "1",
                          "--horizon", "20000", "--warmup", "100", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    d = json.loads(out)
    assert d["partial"] is True and d["status"] == "interrupted"
    assert "interrupted: the bracket reached so far is printed" in err


def test_a_family_s_itl_histograms_merge_as_one_histogram_of_every_gap():
    """``p99(gpu.itl)`` of a family reads its members' inter-token
    histograms merged: the same count, buckets, extremes and quantiles as
    one histogram that was given every member's gaps (the merge copies the
    first member's buckets, so the member's own are left as they were)."""
    from types import SimpleNamespace

    from serq.capacity.spec import _itl
    from serq.report.stats import ItlHistogram

    gaps = [[0.010, 0.011, 0.0101, 0.030], [0.0102, 0.05, 0.0, 0.011]]
    whole = ItlHistogram()
    members = []
    for m, part in enumerate(gaps):
        h = ItlHistogram()
        for x in part:
            h.add(x)
            whole.add(x)
        members.append(SimpleNamespace(name="gpu", kind="step", member=m, itl=h))
    first_before = {k: (b.count, b.lo, b.hi) for k, b in members[0].itl.buckets.items()}
    sim = SimpleNamespace(stages=members)
    merged = _itl(sim, "gpu", None)
    assert merged.n == whole.n == 8
    got = {k: (b.count, b.lo, b.hi) for k, b in merged.buckets.items()}
    assert got == {k: (b.count, b.lo, b.hi) for k, b in whole.buckets.items()}
    for q in (0.1, 0.5, 0.9, 0.99):
        assert merged.quantile(q) == whole.quantile(q)
    assert {k: (b.count, b.lo, b.hi) for k, b in members[0].itl.buckets.items()} == first_before
    assert _itl(sim, "gpu", 1) is members[1].itl
