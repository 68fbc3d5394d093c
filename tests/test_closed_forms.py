"""The simulator against queueing theory.

Each model is a small serQ program whose answer is known in closed form
(M/M/1, M/D/1, M/H2/1, M/M/3, M/M/1-PS, M/M/inf, and a closed M/M/1//N
solved by exact MVA).  It is run at K seeds far apart (surprise 14: a
session's streams are seeded with ``seed + serial``, so seeds must differ by
more than the number of sessions of a run; ours are multiples of 10^7, with
a different block of seeds per model so that no two models share an arrival
stream).

Measured: response times (``set t0 = now; run ...; observe r = now - t0``,
per-sample batch means) and time averages (gauges of ``queue``, ``busy`` and
``min(queue, 1)``, batch means over 20 time windows).  Two checks per
quantity:

* **Coverage.**  The reported 95 % batch-means half-width ``ci`` must cover
  the closed-form value at the rate a 95 % interval allows: the number of
  seeds whose ``mean +- ci`` misses the value must not be significantly above
  5 % (exact binomial tail P(X >= misses | K, 0.05) > 0.001; with K = 20 that
  fails from 6 misses on).
* **Bias.**  The K replication means are independent, so their grand mean
  must agree with the value under a one-sample t-test at the same strict
  level (|t| < t_{0.9995, K-1}).  This is the more sensitive test of a
  wrong mean; coverage also tests the width of ``ci``.

Every run also checks exact bookkeeping that needs no statistics: the
stage's completions are the observation's samples, wait + service is the
response, the gauges equal the stage's own time averages (``mean_number``;
``utilization`` is P(n >= 1), surprise 15).

Horizons.  A batch-means interval with 20 batches is exact only when the
batch means are independent and normal; neighbouring batches are
correlated over roughly the relaxation time of the queue, which for a
single-server queue at load rho and mean service s is about
s / (1 - sqrt(rho))^2 (M/M/1 at rho = 0.6: ~20), and a batch mean of a
skewed response time needs many samples to look normal.  Every horizon
below makes one batch (horizon / 20 of time) at least ~50 relaxation times
and more than 500 samples long, so the lag-one correlation of batch means
is of order 1/50 and its effect on coverage is far below what K = 20 seeds
can see.  Loads are moderate (rho <= 0.6) for the same reason: at
rho = 0.9 the relaxation time is ~360 and the horizons would not fit the
time budget.  The warm-up (>= 20 relaxation times) removes the empty-start
bias.  A 60-seed trial at these horizons (not part of the test) missed
3/60 (M/M/1) and 5/60 (M/H2/1, the most skewed) intervals.  The file takes
about 60 s of CPU (one core).

Never loosen a tolerance here to make a test pass: a failure is a wrong
formula, a horizon that is too short, or a simulator bug.
"""
import dataclasses
import json
import math
import os
import subprocess
import sys

import pytest
from scipy import stats

from serq.compiler import compile_program
from serq.runner import run_program

K = 20                 # seeds per model
LEVEL = 0.001          # strict significance level of both checks
T_CRIT = float(stats.t.ppf(1 - LEVEL / 2, K - 1))   # two-sided t critical value (3.883)
SEED_STEP = 10 ** 7    # far apart: more than the sessions of any run here


def seeds(model_no):
    """K seeds for model ``model_no``: multiples of 10^7, one block of 100
    multiples per model."""
    return [(100 * model_no + i + 1) * SEED_STEP for i in range(K)]


def binom_tail(k, n, p):
    """P(X >= k) for X ~ Binomial(n, p)."""
    return float(stats.binom.sf(k - 1, n, p))


def run(source, seed, horizon, warmup, sets=None):
    return run_program(compile_program(source=source, seed=seed, horizon=horizon,
                                       warmup=warmup, sets=sets))


def replicate(source, model_no, horizon, warmup, measure, sets=None):
    """Run the model at each of its seeds.  ``measure(report)`` gives
    {quantity: (mean, ci)}; the result is {quantity: [(seed, mean, ci), ...]}."""
    out = {}
    for s in seeds(model_no):
        rep = run(source, s, horizon, warmup, sets)
        for q, (mean, ci) in measure(rep).items():
            assert ci is not None and math.isfinite(ci) and ci > 0, (q, s, mean, ci)
            out.setdefault(q, []).append((s, mean, ci))
    return out


def judge(name, theory, results):
    """Coverage and bias checks of K (seed, mean, ci) against ``theory``:
    a list of failure messages (empty when both pass)."""
    misses = [(s, m, ci) for s, m, ci in results if abs(m - theory) > ci]
    p_cover = binom_tail(len(misses), len(results), 0.05)
    means = [m for _, m, _ in results]
    grand = sum(means) / len(means)
    sd = math.sqrt(sum((m - grand) ** 2 for m in means) / (len(means) - 1))
    t = (grand - theory) / (sd / math.sqrt(len(means)))
    mean_ci = sum(ci for _, _, ci in results) / len(results)
    print("\n%s: theory %.5f, grand mean %.5f (t = %+.2f), mean ci %.4f, misses %d/%d "
          "(P(X >= misses) = %.3g)" % (name, theory, grand, t, mean_ci, len(misses),
                                       len(results), p_cover))
    failures = []
    if p_cover <= LEVEL:
        failures.append("%s: %d of %d intervals miss %.6g (%s)" % (
            name, len(misses), len(results), theory,
            "; ".join("seed %d: %.5f +- %.5f" % miss for miss in misses)))
    if abs(t) >= T_CRIT:
        failures.append("%s: grand mean %.6g vs theory %.6g, t = %.2f" % (
            name, grand, theory, t))
    return failures


def check_all(model, theories, results):
    """Judge every quantity, then fail with every failure at once."""
    failures = []
    for q, theory in theories.items():
        failures += judge("%s, %s" % (model, q), theory, results[q])
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------
# Closed forms

def pk_response(lam, es, es2):
    """M/G/1 FCFS mean response time: Pollaczek-Khinchine wait + service."""
    rho = lam * es
    return lam * es2 / (2 * (1 - rho)) + es


def erlang_c_response(c, lam, mu):
    """M/M/c FCFS mean response time: Erlang C wait + service."""
    a = lam / mu
    top = a ** c / math.factorial(c) * c / (c - a)
    p_wait = top / (sum(a ** k / math.factorial(k) for k in range(c)) + top)
    return p_wait / (c * mu - lam) + 1 / mu


def mva(n, think, service):
    """Exact MVA for one FCFS exponential server and a delay (think) station
    with population n: (the server's mean response time, the throughput)."""
    q = 0.0
    r = x = 0.0
    for k in range(1, n + 1):
        r = service * (1 + q)
        x = k / (think + r)
        q = x * r
    return r, x


def test_closed_forms_themselves():
    # Sanity of the formulas on textbook values.
    assert abs(pk_response(0.6, 1.0, 2.0) - 2.5) < 1e-12            # M/M/1 = 1/(mu-lam)
    assert abs(erlang_c_response(1, 0.6, 1.0) - 2.5) < 1e-12        # c = 1 is M/M/1
    # M/M/2, lam = 1, mu = 1: P(wait) = 1/3, Wq = 1/3.
    assert abs(erlang_c_response(2, 1.0, 1.0) - 4 / 3) < 1e-12
    # MVA with n = 1: no queueing; n -> large: throughput -> 1/service.
    assert mva(1, 5.0, 1.0) == (1.0, 1 / 6)
    r, x = mva(200, 5.0, 1.0)
    assert abs(x - 1.0) < 1e-9 and abs(200 / (5 + r) - x) < 1e-12


# ---------------------------------------------------------------------------
# Open single-station models.  Measured: the response time (`observe r = now
# - t0` around the one `run`), and three gauges, time averages with a
# batch-means CI over 20 time windows: the number present (Little: lam * R),
# the busy servers (fifo: lam * E[S]) and P(n >= 1) (M/G/1: rho; M/M/c:
# 1 - P0).

OPEN = """
let LAM = 0.6;
stage srv : %(kind)s;
gauge n = queue(srv);
gauge nbusy = busy(srv);
gauge anyjob = min(queue(srv), 1);
workload {
  arrive poisson(LAM);
  session { request; end; }
}
server {
  set t0 = now;
  run srv (%(draw)s);
  observe r = now - t0;
}
run { horizon 1000; warmup 100; seed 1; }
"""


def open_model(kind, draw):
    return OPEN % {"kind": kind, "draw": draw}


def mmc_p0(c, a):
    """P(no job) in M/M/c at offered load a = lam / mu."""
    return 1 / (sum(a ** k / math.factorial(k) for k in range(c))
                + a ** c / math.factorial(c) * c / (c - a))


def open_theories(kind, lam, es, response):
    th = {"response r": response, "number present": lam * response}
    if kind == "ps(1)":
        th["P(n >= 1)"] = lam * es            # busy(ps) is the number present
    elif kind == "fifo(3)":
        th["busy servers"] = lam * es
        th["P(n >= 1)"] = 1 - mmc_p0(3, lam * es)
    else:
        th["busy servers"] = lam * es
        th["P(n >= 1)"] = lam * es
    return th


def open_measure(kind):
    def measure(rep):
        st = rep.stages[0]
        r = rep.observes["r"]
        g = rep.gauges
        # Exact bookkeeping: the same jobs, the same time averages.
        assert st.completed == r.count
        assert st.mean_wait + st.mean_service == pytest.approx(r.mean, rel=1e-9)
        assert g["n"].mean == pytest.approx(st.mean_number, rel=1e-9)
        assert g["anyjob"].mean == pytest.approx(st.utilization, rel=1e-9)  # surprise 15
        if kind == "ps(1)":
            assert st.mean_wait == 0.0
        return {"response r": (r.mean, r.ci), "number present": (g["n"].mean, g["n"].ci),
                "busy servers": (g["nbusy"].mean, g["nbusy"].ci),
                "P(n >= 1)": (g["anyjob"].mean, g["anyjob"].ci)}
    return measure


# (model no, name, stage kind, service draw, lambda, E[S], response time,
#  horizon, warm-up)
#
# Relaxation times (s / (1 - sqrt(rho))^2, s the mean service, divided by c
# for M/M/c): M/M/1, M/D/1, PS at rho 0.6: ~20; M/H2/1 at rho 0.5 with cv2 4:
# ~12 for the M/M/1 part times ~(1 + cv2)/2 for the service variability,
# ~30; M/M/3 at rho 0.6: ~7.  Batches: 1200, 1200, 2000, 400, 1200.
OPEN_CASES = [
    (1, "M/M/1 rho=0.6", "fifo", "~exp(1)", 0.6, 1.0,
     pk_response(0.6, 1.0, 2.0), 24000.0, 500.0),
    (2, "M/D/1 rho=0.6", "fifo", "~det(1)", 0.6, 1.0,
     pk_response(0.6, 1.0, 1.0), 24000.0, 500.0),
    (3, "M/H2/1 rho=0.5 cv2=4", "fifo", "~h2(1, 4)", 0.5, 1.0,
     pk_response(0.5, 1.0, (1 + 4) * 1.0 ** 2), 40000.0, 1000.0),
    (4, "M/M/3 rho=0.6", "fifo(3)", "~exp(1)", 1.8, 1.0,
     erlang_c_response(3, 1.8, 1.0), 8000.0, 200.0),
    (5, "M/M/1-PS rho=0.6", "ps(1)", "~exp(1)", 0.6, 1.0,
     1 / (1.0 - 0.6), 24000.0, 500.0),
]


@pytest.mark.parametrize("case", OPEN_CASES, ids=[c[1] for c in OPEN_CASES])
def test_open_station(case):
    no, name, kind, draw, lam, es, response, horizon, warmup = case
    results = replicate(open_model(kind, draw), no, horizon, warmup, open_measure(kind),
                        sets={"LAM": lam})
    check_all(name, open_theories(kind, lam, es, response), results)


# ---------------------------------------------------------------------------
# M/M/inf: a delay stage; the number present is Poisson(lam * E[S]): its
# time average is lam * E[S] and P(n >= 1) = 1 - exp(-lam * E[S]) (gauges,
# batch means over 20 time windows); the response time is E[S].  The number
# present decorrelates over E[S] = 1, so windows of 200 are long.

MMINF = """
stage inf : delay;
gauge n = queue(inf);
gauge anyjob = min(queue(inf), 1);
workload {
  arrive poisson(3);
  session { request; end; }
}
server {
  set t0 = now;
  run inf (~exp(1));
  observe r = now - t0;
}
run { horizon 1000; warmup 20; seed 1; }
"""


def test_mminf_mean_number():
    name = "M/M/inf lam=3 E[S]=1"

    def measure(rep):
        g, a, r = rep.gauges["n"], rep.gauges["anyjob"], rep.observes["r"]
        st = rep.stages[0]
        # The gauges and the stage's own time averages are the same signals
        # (surprise 15: a delay stage's utilization is P(n >= 1)).
        assert g.mean == pytest.approx(st.mean_number, rel=1e-9)
        assert a.mean == pytest.approx(st.utilization, rel=1e-9)
        assert st.mean_wait == 0.0 and st.completed == r.count
        return {"number present": (g.mean, g.ci), "P(n >= 1)": (a.mean, a.ci),
                "response r": (r.mean, r.ci)}

    results = replicate(MMINF, 6, 4000.0, 20.0, measure)
    check_all(name, {"number present": 3.0 * 1.0, "P(n >= 1)": 1 - math.exp(-3.0),
                     "response r": 1.0}, results)


# ---------------------------------------------------------------------------
# Closed M/M/1//N: N sessions think ~exp(Z) on a delay stage, then are served
# ~exp(S) at a fifo server, then end (a replacement starts at once).  Exact
# MVA gives the server's mean response time R and the throughput X, hence
# the server's busy fraction X * S and the mean number thinking X * Z
# (gauges).  The chain has N + 1
# states (customers at the server), so it mixes within a few tens of service
# times; batches of 1000 time units are long.

CLOSED = """
let N = 5;
stage think : delay;
stage srv : fifo;
gauge thinking = queue(think);
gauge nbusy = busy(srv);
workload {
  arrive closed(N);
  session {
    run think (~exp(4));
    request;
    end;
  }
}
server {
  set t0 = now;
  run srv (~exp(1));
  observe r = now - t0;
}
run { horizon 1000; warmup 100; seed 1; }
"""


def test_closed_mm1_mva():
    name = "M/M/1//5 Z=4 S=1"

    def measure(rep):
        r, th, b = rep.observes["r"], rep.gauges["thinking"], rep.gauges["nbusy"]
        assert th.mean == pytest.approx(rep.stages[0].mean_number, rel=1e-9)
        assert b.mean == pytest.approx(rep.stages[1].utilization, rel=1e-9)
        # Every session lives for one think and one service: N live at all times.
        assert rep.mean_live == pytest.approx(5.0, rel=1e-12)
        return {"response r": (r.mean, r.ci), "number thinking": (th.mean, th.ci),
                "server busy": (b.mean, b.ci)}

    results = replicate(CLOSED, 7, 20000.0, 200.0, measure)
    resp, thru = mva(5, 4.0, 1.0)
    check_all(name, {"response r": resp, "number thinking": thru * 4.0,
                     "server busy": thru * 1.0}, results)


# ---------------------------------------------------------------------------
# Determinism: the same program and seed give the same report, field by
# field, twice in one process and in fresh processes with different hash
# seeds (set iteration orders change between them).

DET_PROGRAM = """
stage a : fifo(2);
stage b : ps(1);
stage d : delay;
gauge qa = queue(a);
workload {
  arrive poisson(1.2);
  session { request; end; }
}
server {
  set t0 = now;
  run a (~erlang(2, 1));
  branch with (0.5) { run b (~exp(0.5)); }
  run d (~h2(1, 3));
  observe r = now - t0;
}
run { horizon 3000; warmup 100; seed 1; }
"""
DET_SEED = 30000000


def report_fields(rep):
    """The report as JSON-able plain data (floats stay exact through JSON:
    Python writes the shortest repr that reads back to the same float)."""
    return json.loads(json.dumps(dataclasses.asdict(rep)))


def same(a, b, path="report"):
    """First differing field between two plain-data reports, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return "%s: keys %s vs %s" % (path, list(a), list(b))
        for k in a:
            d = same(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return "%s: length %d vs %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = same(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    if type(a) is not type(b) or a != b:
        return "%s: %r vs %r" % (path, a, b)
    return None


def test_same_seed_same_report():
    first = report_fields(run(DET_PROGRAM, DET_SEED, 3000.0, 100.0))
    assert first["observes"]["r"]["count"] > 1000
    assert len(first["stages"]) == 3
    second = report_fields(run(DET_PROGRAM, DET_SEED, 3000.0, 100.0))
    assert same(first, second) is None, same(first, second)

    code = (
        "import dataclasses, json, sys\n"
        "from serq.compiler import compile_program\n"
        "from serq.runner import run_program\n"
        "src = sys.stdin.read()\n"
        "rep = run_program(compile_program(source=src, seed=%d, horizon=3000.0, warmup=100.0))\n"
        "sys.stdout.write(json.dumps(dataclasses.asdict(rep)))\n" % DET_SEED)
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run([sys.executable, "-c", code], input=DET_PROGRAM, env=env,
                             capture_output=True, text=True, check=True, timeout=120)
        other = json.loads(out.stdout)
        assert same(first, other) is None, "PYTHONHASHSEED=%s: %s" % (
            hash_seed, same(first, other))

    # A different seed does change the report (the seed is used at all).
    third = report_fields(run(DET_PROGRAM, DET_SEED + SEED_STEP, 3000.0, 100.0))
    assert third["observes"]["r"]["mean"] != first["observes"]["r"]["mean"]
