"""`serq sweep`: the grid, the table's statistics, the backends agreeing
byte for byte, the progress bar, Parquet and Ray."""
import csv
import io
import math
import os
import signal
import socket
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

import serq
from serq.errors import UsageError
from serq.sweep.grid import parse_axis, points
from serq.sweep.table import summarize
from serq.sweep.tdist import t_cdf, t_quantile

ROOT = Path(__file__).resolve().parent.parent

# A small program: a Poisson stream through a pool of slots and a FIFO server.
PROGRAM = """
let lam = 0.5;
let slots = 2;
pool seats { cap slots; }
stage srv : fifo;
workload { arrive poisson(lam); }
session {
  set t0 = now;
  hold seats (1) { run srv (~exp(1)); }
  observe resp = now - t0;
}
gauge busy = holders(seats);
run { horizon 200; warmup 20; seed 99; }
"""


def serq_cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True, **kw)


@pytest.fixture
def program(tmp_path):
    f = tmp_path / "queue.sq"
    f.write_text(PROGRAM)
    return f


def read_table(text):
    return list(csv.DictReader(io.StringIO(text)))


# ------------------------------------------------------------------ grid

def test_range_is_inclusive_and_exactly_rounded():
    ax = parse_axis("lam=0.5:1.5:11")
    assert ax.name == "lam"
    assert len(ax.values) == 11
    expected = [float(Fraction("0.5") + Fraction(i, 10)) for i in range(11)]
    assert ax.values == expected
    assert ax.values[0] == 0.5 and ax.values[-1] == 1.5
    # exact: 0.5 + 2/10 is the float nearest 0.7, not 0.5 + 0.1 + 0.1
    assert ax.values[2] == 0.7


def test_list_single_value_and_expression():
    assert parse_axis("cap=1000,2000").values == [1000.0, 2000.0]
    assert parse_axis("cap=1_000").values == [1000.0]
    assert parse_axis("x=2*rate").values == ["2*rate"]
    assert parse_axis("x=max(1,2)").values == ["max(1,2)"]
    axes = [parse_axis("a=1,2"), parse_axis("b=3,4,5")]
    assert points(axes) == [(1.0, 3.0), (1.0, 4.0), (1.0, 5.0), (2.0, 3.0), (2.0, 4.0),
                            (2.0, 5.0)]


@pytest.mark.parametrize("spec,words", [
    ("lam=1:2:1", "at least 2 points"),
    ("lam=1:2:x", "not a whole number"),
    ("lam=1:2", "A:B:N"),
    ("lam=1,fast", "`fast` is not a number"),
    ("lam", "NAME=VALUE"),
    ("lam=", "no value"),
])
def test_bad_specs_say_how_to_write_one(spec, words):
    with pytest.raises(UsageError) as e:
        parse_axis(spec)
    assert words in str(e.value)


def test_cli_usage_errors(program):
    r = serq_cli("sweep", program, "--set", "lam=1:2:1")
    assert r.returncode == 2 and "at least 2 points" in r.stderr
    r = serq_cli("sweep", program, "--set", "lam=1,2", "--set", "lam=3")
    assert r.returncode == 2 and "given twice" in r.stderr
    r = serq_cli("sweep", program, "--address", "127.0.0.1:1")
    assert r.returncode == 2 and "--backend ray" in r.stderr
    assert "Traceback" not in r.stderr


def test_unknown_constant_and_bad_point_are_located(program):
    r = serq_cli("sweep", program, "--set", "nope=1,2", "--horizon", "5")
    assert r.returncode == 1
    assert "unknown constant `nope`" in r.stderr
    r = serq_cli("sweep", program, "--set", "slots=1,2", "--set", "lam=0.5,-1",
                 "--horizon", "5", "--warmup", "0")
    assert r.returncode == 1, r.stderr
    assert "note: at the point slots=1 lam=-1" in r.stderr
    assert "Traceback" not in r.stderr


# ------------------------------------------------------------- statistics

def test_t_quantile_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in list(range(1, 61)) + [99, 100, 1000]:
        for p in (0.9, 0.95, 0.975, 0.995):
            assert math.isclose(t_quantile(p, df), stats.t.ppf(p, df), rel_tol=1e-12)
        for x in (-3.0, -0.4, 0.0, 1.1, 7.5):
            assert math.isclose(t_cdf(x, df), stats.t.cdf(x, df), rel_tol=1e-12, abs_tol=1e-15)


def test_summary_is_the_student_t_interval():
    stats = pytest.importorskip("scipy.stats")
    values = [1.25, 0.5, 2.0, 1.75, None, 0.75]
    mean, lo, hi, n = summarize(values)
    xs = [v for v in values if v is not None]
    assert n == 5
    assert math.isclose(mean, sum(xs) / 5, rel_tol=1e-15)
    elo, ehi = stats.t.interval(0.95, 4, loc=mean, scale=stats.sem(xs))
    assert math.isclose(lo, elo, rel_tol=1e-12) and math.isclose(hi, ehi, rel_tol=1e-12)
    assert summarize([3.0]) == (3.0, None, None, 1)
    assert summarize([None, float("nan")]) == (None, None, None, 0)


# ------------------------------------------------------------------ runs

def test_table_rows_are_the_means_over_seeds(program, tmp_path):
    stats = pytest.importorskip("scipy.stats")
    out = tmp_path / "t.csv"
    r = serq_cli("sweep", program, "--set", "lam=0.4:0.6:3", "--set", "slots=1,2",
                 "--seeds", "4", "--horizon", "60", "--warmup", "5", "-j", "2", "-o", out)
    assert r.returncode == 0, r.stderr
    rows = read_table(out.read_text())
    assert list(rows[0].keys()) == ["lam", "slots", "metric", "mean", "ci_low", "ci_high",
                                    "n_seeds"]
    metrics = list(dict.fromkeys(row["metric"] for row in rows))
    assert len(rows) == 6 * len(metrics)
    # what was written, on stderr
    assert r.stderr.splitlines()[-1] == "wrote %s: %d rows (6 points x %d metrics, each the " \
        "mean of 4 seeds)" % (out, len(rows), len(metrics))
    for m in ("run.arrivals", "observe.resp.mean", "observe.resp.p50", "observe.resp.p90",
              "observe.resp.p99", "observe.resp.rate", "gauge.busy.mean",
              "stage.srv.throughput", "pool.seats.mean_used", "pool.seats.mean_queue"):
        assert m in metrics
    # an observation's metrics, in this order (p99_9 is the p99.9)
    assert [m for m in metrics if m.startswith("observe.resp.")] == [
        "observe.resp." + f for f in ("count", "rate", "mean", "ci", "cv2", "p50", "p90", "p99",
                                      "p99_9")]
    assert not any(m.startswith("slo.") for m in metrics)  # only with --slo
    points_seen = list(dict.fromkeys((row["lam"], row["slots"]) for row in rows))
    assert points_seen == [(a, b) for a in ("0.4", "0.5", "0.6") for b in ("1", "2")]
    # One point recomputed through the API, seed by seed (seeds 1, 1 + 2^32, ...).
    row = next(r for r in rows if (r["lam"], r["slots"], r["metric"]) ==
               ("0.6", "1", "observe.resp.mean"))
    means, tails = [], []
    for seed in (1 + k * 2 ** 32 for k in range(4)):
        rep = serq.run(serq.compile(str(program), sets={"lam": 0.6, "slots": 1}, seed=seed,
                                    horizon=60, warmup=5))
        means.append(rep.observe("resp").mean)
        tails.append(rep.observe("resp").p99_9)
    assert int(row["n_seeds"]) == 4
    assert float(row["mean"]) == math.fsum(means) / 4
    tail = next(r for r in rows if (r["lam"], r["slots"], r["metric"]) ==
                ("0.6", "1", "observe.resp.p99_9"))
    assert float(tail["mean"]) == math.fsum(tails) / 4  # the report's own p99.9
    lo, hi = stats.t.interval(0.95, 3, loc=float(row["mean"]), scale=stats.sem(means))
    assert math.isclose(float(row["ci_low"]), lo, rel_tol=1e-9)
    assert math.isclose(float(row["ci_high"]), hi, rel_tol=1e-9)


def test_slo_columns_are_each_points_attainment_and_goodput(program, tmp_path):
    out = tmp_path / "slo.csv"
    args = ["sweep", program, "--set", "lam=0.4,0.8", "--seeds", "2", "--horizon", "80",
            "--warmup", "5", "-j", "1", "--slo", "resp <= 2", "--slo", "resp <= 500ms"]
    r = serq_cli(*args, "-o", out)
    assert r.returncode == 0, r.stderr
    rows = read_table(out.read_text())
    plain = read_table(serq_cli(*args[:-4]).stdout)
    # the table without --slo, then the SLO rows at the end of each point
    assert [x for x in rows if not x["metric"].startswith("slo.")] == plain
    slo_names = ["slo.resp<=2.attainment", "slo.resp<=0.5.attainment", "slo.all.attainment",
                 "slo.all.goodput", "slo.all.requests", "slo.all.requests_per_s"]
    for lam in ("0.4", "0.8"):
        mine = [x for x in rows if x["lam"] == lam]
        assert [x["metric"] for x in mine[-6:]] == slo_names
        got = {x["metric"]: float(x["mean"]) for x in mine[-6:]}
        runs = [serq.run(serq.compile(str(program), sets={"lam": float(lam)}, seed=s,
                                      horizon=80, warmup=5), slo=["resp <= 2", "resp <= 500ms"]
                         ).slo for s in (1, 1 + 2 ** 32)]
        assert got["slo.resp<=2.attainment"] == math.fsum(x.slos[0].attainment
                                                          for x in runs) / 2
        assert got["slo.all.attainment"] == math.fsum(x.all.attainment for x in runs) / 2
        assert got["slo.all.goodput"] == math.fsum(x.goodput for x in runs) / 2
        assert got["slo.all.requests"] == math.fsum(x.requests for x in runs) / 2
    # the heavier load meets the SLOs less often
    att = {x["lam"]: float(x["mean"]) for x in rows if x["metric"] == "slo.resp<=2.attainment"}
    assert att["0.8"] < att["0.4"]
    bad = serq_cli("sweep", program, "--slo", "ttft <= 1", "--horizon", "40")
    assert bad.returncode == 2 and "the program has no observation `ttft`" in bad.stderr
    twice = serq_cli("sweep", program, "--slo", "resp <= 1", "--slo", "resp <= 1000ms")
    assert twice.returncode == 2 and "are the same SLO" in twice.stderr
    per = serq_cli("sweep", program, "--slo-per", "session", "--horizon", "40")
    assert per.returncode == 2 and "give them with --slo" in per.stderr


def test_slo_runs_have_keys_of_their_own(program):
    from serq.sweep.journal import run_keys
    prog = serq.compile(str(program)).ir
    plain = run_keys([prog], [1])
    assert run_keys([prog], [1], "") == plain  # a sweep without SLOs keeps its keys
    assert run_keys([prog], [1], "slo per request: resp <= 1") != plain


def test_seed_option_shifts_the_seeds(program):
    a = serq_cli("sweep", program, "--set", "lam=0.5", "--seeds", "2", "--seed", "7",
                 "--horizon", "40", "-j", "1")
    assert a.returncode == 0, a.stderr
    row = next(r for r in read_table(a.stdout) if r["metric"] == "run.arrivals")
    arrivals = [serq.run(serq.compile(str(program), seed=s, horizon=40)).arrivals
                for s in (7, 7 + 2 ** 32)]
    assert float(row["mean"]) == sum(arrivals) / 2


def test_jobs_give_the_same_bytes(program):
    args = ["sweep", program, "--set", "lam=0.3:0.7:3", "--set", "slots=1,3", "--seeds", "3",
            "--horizon", "50", "--warmup", "5"]
    one = serq_cli(*args, "--jobs", "1")
    two = serq_cli(*args, "--jobs", "2")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert one.stdout == two.stdout
    assert len(one.stdout.splitlines()) > 6


def _run_in_pty(args):
    import pty
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="100", TERM="xterm")
    p = subprocess.Popen([sys.executable, "-m", "serq"] + [str(a) for a in args],
                         stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out, _ = p.communicate()
    os.close(master)
    return p.returncode, out.decode(), b"".join(chunks).decode("utf-8", "replace")


def test_progress_bar_on_a_terminal_and_quiet(program):
    args = ["sweep", program, "--set", "lam=0.4,0.5", "--seeds", "3", "--horizon", "40", "-j", "2"]
    rc, out, err = _run_in_pty(args)
    assert rc == 0
    assert "sweeping" in err and "6/6" in err
    assert out.startswith("lam,metric,")
    rc, quiet_out, err = _run_in_pty(args + ["--quiet"])
    assert rc == 0 and err == "" and quiet_out == out


def test_parquet_has_the_csv_values(program, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    args = ["sweep", program, "--set", "lam=0.4,0.6", "--seeds", "2", "--horizon", "40", "-j",
            "1", "-o"]
    assert serq_cli(*args, tmp_path / "t.parquet").returncode == 0
    assert serq_cli(*args, tmp_path / "t.csv").returncode == 0
    table = pq.read_table(tmp_path / "t.parquet").to_pylist()
    rows = read_table((tmp_path / "t.csv").read_text())
    assert len(table) == len(rows)
    for a, b in zip(table, rows):
        assert a["lam"] == float(b["lam"]) and a["metric"] == b["metric"]
        assert a["n_seeds"] == int(b["n_seeds"])
        for k in ("mean", "ci_low", "ci_high"):
            assert (a[k] is None and b[k] == "") or a[k] == float(b[k])


# -------------------------------------------------------------------- ray

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_cluster_gives_the_same_bytes(program, tmp_path):
    pytest.importorskip("ray")
    ray_bin = Path(sys.executable).with_name("ray")
    if not ray_bin.exists():
        pytest.skip("the `ray` command is not next to %s" % sys.executable)
    port = _free_port()
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src")] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    # A short temp dir: Ray's sockets live under it (a 107-byte path limit).
    tmp = "/tmp/serq-ray-%d" % os.getpid()
    head = subprocess.Popen(
        [str(ray_bin), "start", "--head", "--block", "--num-cpus=2",
         "--port=%d" % port, "--node-ip-address=127.0.0.1", "--include-dashboard=false",
         "--dashboard-port=%d" % _free_port(), "--object-store-memory=80000000",
         "--temp-dir=%s" % tmp, "--disable-usage-stats"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 45
        started = []
        while time.monotonic() < deadline:
            line = head.stdout.readline().decode("utf-8", "replace")
            started.append(line)
            if "Ray runtime started" in line:
                break
            if head.poll() is not None:
                pytest.fail("ray start exited:\n" + "".join(started))
        else:
            pytest.fail("the Ray cluster did not start in 45 s:\n" + "".join(started))
        args = ["sweep", program, "--set", "lam=0.4:0.6:3", "--set", "slots=1,2",
                "--seeds", "3", "--horizon", "50", "--warmup", "5", "--quiet"]
        local = serq_cli(*args, "-j", "2", env=env)
        remote = serq_cli(*args, "--backend", "ray", "--address", "127.0.0.1:%d" % port,
                          env=env, timeout=120)
        assert local.returncode == 0, local.stderr
        assert remote.returncode == 0, remote.stderr
        assert remote.stdout == local.stdout
    finally:
        head.send_signal(signal.SIGTERM)  # `ray start --block` stops what it started
        try:
            head.wait(30)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(head.pid, signal.SIGKILL)  # anything of that session left over
        except ProcessLookupError:
            pass
        head.stdout.close()
        subprocess.run(["rm", "-rf", tmp])


def test_the_time_left_waits_for_a_round_of_workers_then_uses_the_mean_pace():
    # (issue 18: the first results arrive in a burst, one per worker, after
    # one run's time; a windowed rate then promised the sweep in seconds)
    from serq.sweep.run import eta, eta_floor
    assert eta_floor(60, 2) == 3  # 5 % of 60 runs
    assert eta_floor(60, 8) == 8  # a round of the 8 workers
    assert eta_floor(1, 4) == 1 and eta_floor(4, 1) == 2
    assert eta(3.0, 2, 60, 3) is None  # two runs done: still estimating
    assert eta(12.0, 3, 60, 3) == 12.0 / 3 * 57
    assert eta(100.0, 60, 60, 3) == 0.0
