"""Findings (issue 14, part 3): what the simulated system did is a warning
in the report, not a failed run.  A run that printed its report exits 0;
``--fail-on-findings`` makes a run with findings exit 4; ``--json`` stays
the reference's bytes; ``--json --extended`` and ``Report.findings`` carry
the findings."""
import json
import subprocess
import sys

import pytest

import serq
from serq.report.findings import Finding, findings_json

# Two requests hold 4 of 10 KV units each, then each grows by 4: neither
# fits, nothing may preempt.  The fifo stage serves them one after the
# other: the first stalls at t = 0.2, the second at t = 0.4, and the other
# three wait in the queue from t = 0.
DEADLOCK = """
let cap = 10;
pool kv { cap cap; }
stage gpu : fifo;
workload { arrive batch(5); }
session {
  hold kv (4) { run gpu (0.2); grow kv (4); run gpu (0.2); }
  observe done = now;
}
run { horizon 5; }
"""

# The same on a continuous-batching engine: its residents' KV grows while
# they decode until the pool is full, and the engine ends idle with them.
DEADLOCK_STEP = """
pool slots { cap 6; admit via eng; }
pool kv { cap 48; block 4; }
stage eng : step { budget 24; cost 0.01; memory kv; }
workload { arrive batch(12); }
session {
  hold slots (1), kv (8) {
    run eng prefill (8) growing kv;
    run eng decode (30) growing kv;
  }
  observe done = now;
}
run { horizon 3; }
"""

# One request holding 5 of 8 units grows by 5: it can never fit, and
# `preempt lifo` preempts it (itself) at every try, at t = 1, 2, 3, ...; the
# second preemption at no progress (t = 2) counts it stuck.
LIVELOCK = """
pool kv { cap 8; preempt lifo; }
stage d : delay;
workload { arrive batch(1); }
session {
  hold kv (5) { run d (1); grow kv (5); run d (1); }
  observe done = now;
}
run { horizon 6.5; }
"""

# Requests that grow to 68 tokens on a 40-token KV pool under preempt lifo:
# the engine preempts over and over and nothing completes.
LIVELOCK_STEP = """
pool slots { cap 3; admit via eng; }
pool kv { cap 40; block 4; preempt lifo; }
stage eng : step { budget 16; cost 0.01; memory kv; }
workload { arrive batch(5); }
session {
  hold slots (1), kv (8) {
    run eng prefill (8) growing kv;
    run eng decode (60) growing kv;
  }
  observe done = now;
}
run { horizon 4; }
"""

# The second request asks for 2 + 9 * holders = 11 units of a 10-unit pool
# while the first holds on; the third waits behind it.
OVER_CAP = """
pool kv { cap 10; }
stage d : delay;
workload { arrive batch(3); }
session { hold kv (2 + 9 * holders(kv)) { run d (100); } }
run { horizon 4; }
"""

# One slot, ten requests of 3 s each at t = 0: at t = 10, six still wait,
# the oldest since t = 0.
BACKLOG = """
pool slot { cap 1; }
stage d : delay;
workload { arrive batch(10); }
session { hold slot (1) { run d (3); } }
run { horizon 10; }
"""

# A prefill of 6 tokens on an engine whose budget (4) is below its
# granule (8): it never iterates.
IDLE = """
pool slots { cap 4; admit via eng; }
stage eng : step { budget 4; cost 0.01; granule 8; }
workload { arrive batch(2); }
session { hold slots (1) { run eng prefill (6); } observe done = now; }
run { horizon 2; }
"""

# Room for everyone, and `preempt` never needed.
CLEAN = """
pool kv { cap 100; preempt lifo; }
stage gpu : fifo;
workload { arrive poisson(2); }
session {
  hold kv (4) { run gpu (0.2); grow kv (4); run gpu (0.2); }
  observe done = now;
}
run { horizon 30; seed 5; }
"""

PROGRAMS = {"deadlock": DEADLOCK, "deadlock_step": DEADLOCK_STEP, "livelock": LIVELOCK,
            "livelock_step": LIVELOCK_STEP, "over_cap": OVER_CAP, "backlog": BACKLOG,
            "idle": IDLE, "clean": CLEAN}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True)


@pytest.fixture
def files(tmp_path):
    out = {}
    for name, text in PROGRAMS.items():
        f = tmp_path / (name + ".sq")
        f.write_text(text)
        out[name] = f
    return out


def findings_of(text):
    return serq.run(serq.compile(source=text)).findings


def warnings(stdout):
    return [l for l in stdout.split("\n") if l.startswith("warning:")]


# ---------------------------------------------------------------- the kinds

def test_deadlock_plain_stage():
    [f] = findings_of(DEADLOCK)
    assert isinstance(f, Finding)
    assert (f.kind, f.subject, f.name, f.index, f.sessions) == ("deadlock", "pool", "kv",
                                                                 None, 5)
    assert f.since == pytest.approx(0.4)  # the second holder stalled then
    assert f.message == ("deadlock since t = 0.4 s: the 2 sessions holding it wait to grow, "
                         "3 more are queued for it")
    assert f.cause == "the pool is full of holders that cannot grow and nothing may preempt"
    assert f.remedy == "add `preempt lifo`, a `reserve`, or a larger cap"


def test_deadlock_step_stage_names_the_engine_once():
    fs = findings_of(DEADLOCK_STEP)
    # The idle engine is explained by its memory pool's deadlock: one finding.
    assert [f.kind for f in fs] == ["deadlock"]
    f = fs[0]
    assert (f.name, f.sessions) == ("kv", 12)
    assert "the 4 sessions holding it wait to grow, 8 more are queued for it" in f.message
    assert "stage eng ended with this work" in f.message
    assert f.since is not None and 0 < f.since < 3


def test_a_larger_cap_or_preempt_removes_the_deadlock():
    assert findings_of(DEADLOCK.replace("let cap = 10;", "let cap = 40;")) == []
    preempting = DEADLOCK.replace("pool kv { cap cap; }", "pool kv { cap cap; preempt lifo; }")
    fs = findings_of(preempting)
    assert "deadlock" not in [f.kind for f in fs]


def test_livelock_under_preempt_lifo():
    [f] = findings_of(LIVELOCK)
    assert (f.kind, f.name, f.sessions, f.since) == ("livelock", "kv", 1, 2.0)
    assert f.message == ("1 session stuck since t = 2 s: preempted again before it made "
                         "progress (6 preemptions), still live at the end")
    assert "over and over" in f.cause
    assert f.remedy.startswith("a larger cap, or fewer concurrent requests")


def test_livelock_on_a_step_engine_counts_the_queue_once():
    fs = findings_of(LIVELOCK_STEP)
    assert [f.kind for f in fs] == ["livelock"]  # no separate backlog of `slots`
    f = fs[0]
    assert f.sessions == 3 and f.since == pytest.approx(0.07)
    assert "all still live at the end, 4 more are queued for it" in f.message


def test_over_cap():
    [f] = findings_of(OVER_CAP)
    assert (f.kind, f.name, f.sessions, f.since) == ("over_cap", "kv", 2, 0.0)
    assert f.message.startswith("the head of queue kv asks for 11 units, more than the cap 10")
    assert "the 1 behind it" in f.message


def test_backlog():
    [f] = findings_of(BACKLOG)
    assert (f.kind, f.name, f.sessions, f.since) == ("backlog", "slot", 6, 0.0)
    assert "waited 10 s, more than half the run" in f.message
    # A request a second for a 1.5-second slot: at t = 10 those of t = 8, 9
    # and 10 wait, the oldest for 2 s, less than half the run: no finding.
    short = BACKLOG.replace("batch(10)", "renewal(1)").replace("d (3)", "d (1.5)")
    rep = serq.run(serq.compile(source=short))
    assert rep.pool("slot").mean_queue > 0 and rep.findings == []


def test_idle_step_stage():
    [f] = findings_of(IDLE)
    assert (f.kind, f.subject, f.name, f.sessions, f.since) == ("idle", "stage", "eng", 2, 0.0)
    assert "1 resident, 1 waiting to be admitted" in f.message
    assert "it never iterated" in f.message


def test_clean_run_has_none():
    assert findings_of(CLEAN) == []


def test_dict_and_json_forms():
    [f] = findings_of(DEADLOCK)
    d = f.to_dict()
    assert list(d) == list(Finding.FIELDS)
    assert json.loads(findings_json([f])) == [d]
    assert findings_json([]) == "[]"
    assert f.lines() == ["warning: pool kv: " + f.message, "  cause: " + f.cause,
                         "  remedy: " + f.remedy]


# --------------------------------------------------------------- the command

@pytest.mark.parametrize("name", ["deadlock", "deadlock_step", "livelock_step", "clean"])
def test_exit_status_and_report(files, name):
    r = cli("run", files[name])
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    failing = cli("run", files[name], "--fail-on-findings")
    assert failing.stdout == r.stdout
    if name == "clean":
        assert failing.returncode == 0 and warnings(r.stdout) == []
        return
    assert failing.returncode == 4
    lines = r.stdout.rstrip("\n").split("\n")
    first = lines.index(warnings(r.stdout)[0])
    # the findings are the report's last section, each with its cause and remedy
    assert lines[first - 1] == ""
    assert [l.split(":")[0] for l in lines[first:]] == ["warning", "  cause", "  remedy"]


def test_text_names_pool_count_and_remedy(files):
    out = cli("run", files["deadlock"]).stdout
    assert warnings(out) == ["warning: pool kv: deadlock since t = 0.4 s: the 2 sessions "
                             "holding it wait to grow, 3 more are queued for it"]
    assert "  remedy: add `preempt lifo`, a `reserve`, or a larger cap\n" in out
    # the loose lines of before are gone
    assert "idle:" not in out and "stuck:" not in out
    out = cli("run", files["livelock_step"]).stdout
    assert warnings(out)[0].startswith("warning: pool kv: 3 sessions stuck since t = 0.07 s")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_json_is_the_reference_and_extended_has_the_findings(files, name):
    pyserq = pytest.importorskip("pyserq")
    plain = cli("run", files[name], "--json")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == pyserq.run(pyserq.compile(path=str(files[name]))).json() + "\n"
    ext = cli("run", files[name], "--json", "--extended")
    assert ext.returncode == 0, ext.stderr
    d = json.loads(ext.stdout)
    assert list(d)[-1] == "extended"
    assert list(d["extended"]) == ["admission", "findings", "observes", "stages", "rates"]
    base = json.loads(plain.stdout)
    assert {k: v for k, v in d.items() if k != "extended"} == base
    expected = [f.to_dict() for f in findings_of(PROGRAMS[name])]
    assert d["extended"]["findings"] == expected
    assert (expected == []) == (name == "clean")


def test_partial_run_keeps_its_keys(files):
    r = cli("run", files["deadlock_step"], "--json", "--extended", "--max-events", "5")
    assert r.returncode == 0, r.stderr
    assert list(json.loads(r.stdout)["extended"]) == ["partial", "admission", "findings",
                                                      "observes", "stages", "rates"]


def test_fail_on_findings_leaves_errors_alone(tmp_path):
    bad = tmp_path / "bad.sq"
    bad.write_text("pool kv { cap 10; }\nsession { grow kv (1); }\n")
    r = cli("run", bad, "--fail-on-findings")
    assert r.returncode == 1 and "error:" in r.stderr and "Traceback" not in r.stderr


def test_sweep_over_a_deadlock_is_a_table(files, tmp_path):
    out = tmp_path / "t.csv"
    r = cli("sweep", files["deadlock"], "--set", "cap=10,40", "--jobs", "1", "--quiet",
            "-o", out)
    assert r.returncode == 0, r.stderr
    rows = out.read_text().split("\n")
    assert rows[0].startswith("cap,metric,mean")
    assert any(l.startswith("10,observe.done.count,0,") for l in rows)
    assert any(l.startswith("40,observe.done.count,5,") for l in rows)


# Queues left at the end, their heads each over two pools (one asks pool
# b for more than its cap), and in the second program queues ordered by
# keys, which every pool's reading reads as before.
MANY_QUEUES = """
pool a[3] { cap 4;%s }
pool b { cap 5; }
stage d : delay;
workload { arrive batch(12); }
session {
  set k = serial - 3 * floor(serial / 3);
  hold a[k] (3), b (k + 4 + floor(now / 1000)) { run d (100); }
  observe done = now;
}
run { horizon 5; }
"""


@pytest.mark.parametrize("queue, reads_all", [("", False), (" queue by (serial);", True)])
def test_over_cap_reads_only_the_queues_asking_the_pool(queue, reads_all):
    from serq.runner import simulate
    sim = simulate(serq.compile(source=MANY_QUEUES % queue).ir)
    waiting = [q for q in sim.pools if q.queue]
    assert len(waiting) >= 2
    asking = sim.asking(waiting)
    assert (asking is None) == reads_all
    found = [sim.over_cap(p, waiting) for p in sim.pools]
    assert any(f is not None for f in found)
    if asking is not None:
        assert [sim.over_cap(p, asking.get(p, ())) for p in sim.pools] == found
