"""The admission table (report/admission.py, beyond the reference): each
observable on a scenario worked out by hand, the storm indicator, the
``--admission`` table, the ``--json --extended`` key, and the programs of
examples/admission.

Every scenario's reference report is also checked against pyserq 0.1.3,
byte for byte, where it is installed (the admission rows are serq's own)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from serq.compiler import compile_program
from serq.report.admission import (AdmissionRow, admission_json, admission_rows,
                                   admission_text, storm)
from serq.report.build import build_report
from serq.report.jsonfmt import report_json
from serq.runner import simulate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "admission"
POLICIES = ("declared_max", "current_need", "growth_allowance", "watermark")


def run(text, **kw):
    sim = simulate(compile_program(source=text, **kw), check_invariants=True)
    return sim, admission_rows(sim)


def same_as_reference(text, sim, **kw):
    pyserq = pytest.importorskip("pyserq")
    ref = pyserq.run(pyserq.compile(source=text, **kw)).json()
    assert report_json(build_report(sim)) == ref


def serq(*args):
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True)


# --------------------------------------------------------------------------
# (a) Head-of-line blocking: a big head holds back a small request that fits.

HOL = """
pool kv { cap 10; }
stage arrive_at : delay;
stage d : delay;
workload { arrive batch(3); init {
  set at = serial;                                   // 0, 1, 2
  set n = serial == 0 ? 8 : serial == 1 ? 6 : 1;
  set hold_for = serial == 0 ? 5 : 1;
} }
session {
  run arrive_at (at);
  hold kv (n) { observe adm = now; run d (hold_for); }
}
run { horizon 10; }
"""


def test_head_of_line_blocking_time_and_attempts():
    # t=0: 0 takes 8 of 10 until t=5.
    # t=1: 1 asks for 6 (2 free): it waits at the head, nobody behind it:
    #      refused, but not head-of-line blocking.
    # t=2: 2 asks for 1, which fits, but FIFO tries only the head (6): one
    #      blocked attempt, and the head holds 2 back from t=2 ...
    # t=5: ... until 0 releases: 1 and then 2 are admitted, both end at 6.
    # Blocking 3 s of the 10 s run (nothing happens between t=2 and t=5, so
    # exactly one attempt is refused while blocking).
    sim, rows = run(HOL)
    obs = {o.name: o for o in sim.observations}
    assert list(obs["adm"].values) == [0, 5, 5]
    assert sim.end == 10
    (row,) = rows
    assert row.blocked_attempts == 1
    assert row.blocked_fraction == pytest.approx(3 / 10)
    assert row.mean_reserved == 0
    assert row.preemptions == 0 and row.preemption_times == []
    assert (row.storm_peak, row.storm_at) == (0, None)
    same_as_reference(HOL, sim)


def test_blocking_is_measured_after_warmup_only():
    # warm-up 3: the refused attempt at t=2 is not counted; the warm-up's
    # end is an event, and its settle tries the head again: one attempt.
    # Of the blocking only [3, 5] of the measured [3, 10] is left.
    sim, (row,) = run(HOL, warmup=3)
    assert row.blocked_attempts == 1
    assert row.blocked_fraction == pytest.approx(2 / 7)
    same_as_reference(HOL, sim, warmup=3)


def test_a_head_that_nobody_behind_could_pass_does_not_block():
    # the same, but 2 asks for 3 (2 free): the head is refused, 2 would not
    # fit either: no head-of-line blocking at all.
    text = HOL.replace(": 1;\n  set hold_for", ": 3;\n  set hold_for")
    sim, (row,) = run(text)
    assert row.blocked_attempts == 0
    assert row.blocked_fraction == 0
    same_as_reference(text, sim)


# --------------------------------------------------------------------------
# (b) The reserve held.

RESERVE = """
pool kv { cap 100; reserve held; }
stage d : delay;
workload { arrive batch(1); }
session {
  hold kv (10) reserve (50) { run d (4); grow kv (20); run d (2); }
}
run { horizon 10; }
"""


def test_reserve_held_time_average():
    # Admitted at 0 with 10 allocated of a 50 reservation: 40 reserved but
    # not allocated; the grow at t=4 takes 20 of them (20 left) until the
    # hold ends at t=6.  Integral 40*4 + 20*2 = 200 over the 10 s run.
    sim, (row,) = run(RESERVE)
    assert sim.end == 10
    assert row.mean_reserved == pytest.approx(20.0)
    assert row.blocked_attempts == 0 and row.preemptions == 0
    same_as_reference(RESERVE, sim)


def test_reserve_held_after_warmup():
    # measured over [1, 10]: 40*3 + 20*2 = 160 over 9 s
    sim, (row,) = run(RESERVE, warmup=1)
    assert row.mean_reserved == pytest.approx(160 / 9)
    same_as_reference(RESERVE, sim, warmup=1)


def test_without_reserve_held_nothing_is_reserved():
    text = RESERVE.replace(" reserve held;", "")
    sim, (row,) = run(text)
    assert row.mean_reserved == 0
    same_as_reference(text, sim)


# --------------------------------------------------------------------------
# (c) Preemptions at known times.

PREEMPT = """
pool kv { cap 10; preempt lifo; }
stage arrive_at : delay;
stage d : delay;
workload { arrive batch(4); init {
  set at = serial == 0 ? 0 : serial == 1 ? 1 : serial == 2 ? 20 : 21;
  set grower = serial == 0 || serial == 2;
} }
session {
  run arrive_at (at);
  branch (grower) {
    hold kv (6) { run d (2); grow kv (3); run d (1); }
  } else {
    hold kv (4) { observe adm = now; run d (10); }
  }
}
run { horizon 40; }
"""


def test_preemption_times():
    # t=0: grower 0 takes 6; t=1: 1 takes 4 (the pool is full).
    # t=2: 0 grows by 3: no room; lifo picks the last holder, 1, which is
    #      preempted (1st) and waits at the head for 4 units (1 free) ...
    # t=3: ... until 0 ends: 1 is readmitted and runs until 13.
    # The same again from t=20: a preemption at 22, 3 readmitted at 23,
    # ending at 33.
    sim, (row,) = run(PREEMPT)
    obs = {o.name: o for o in sim.observations}
    assert list(obs["adm"].values) == [1, 3, 21, 23]
    assert sim.end == 40
    assert row.preemptions == 2
    assert row.preemption_times == [2.0, 22.0]
    assert row.storm_window == pytest.approx(0.4)
    assert (row.storm_peak, row.storm_at) == (1, 2.0)
    # a preempted hold waiting alone at the head blocks nobody
    assert row.blocked_attempts == 0 and row.blocked_fraction == 0
    rep = build_report(sim)
    assert rep.pools[0].preemptions == 2
    same_as_reference(PREEMPT, sim)


def test_preemptions_after_warmup_only():
    sim, (row,) = run(PREEMPT, warmup=10)
    assert row.preemption_times == [22.0]
    assert row.preemptions == 1
    # the reference's pool counter counts the warm-up's preemption too
    assert build_report(sim).pools[0].preemptions == 2
    assert row.storm_window == pytest.approx(0.3)
    same_as_reference(PREEMPT, sim, warmup=10)


def test_storm_indicator():
    # half-open windows [t, t + w) starting at a preemption; first on ties
    assert storm([], 1.0) == (0, None)
    assert storm([5.0], 1.0) == (1, 5.0)
    assert storm([1.0, 1.5, 2.0, 10.0], 1.0) == (2, 1.0)
    assert storm([1.0, 1.5, 1.9, 2.0, 10.0], 1.0) == (3, 1.0)
    assert storm([0.0, 3.0, 3.2, 3.4, 3.9, 9.0], 1.0) == (4, 3.0)
    assert storm([2.0, 2.0, 2.0], 0.5) == (3, 2.0)


# --------------------------------------------------------------------------
# The table and the JSON.

ROWS = [
    AdmissionRow("kv", None, 12, 0.041326, 1536.0, 40, 5.4, 9, 301.25, [301.25]),
    AdmissionRow("slot", 1, 0, 0.0, 0.0, 0, 5.4, 0, None, []),
]


def test_admission_text():
    assert admission_text(ROWS) == (
        "admission  blocked  blocked time  reserved  preempt  storm  window  storm at\n"
        "kv              12      0.041326      1536       40      9     5.4    301.25\n"
        "slot[1]          0             0         0        0      0     5.4         -\n")


def test_admission_json():
    assert admission_json(ROWS) == (
        '[{"name":"kv","index":null,"blocked_attempts":12,"blocked_fraction":0.041326,'
        '"mean_reserved":1536,"preemptions":40,"storm_window":5.4,"storm_peak":9,'
        '"storm_at":301.25,"preemption_times":[301.25]},'
        '{"name":"slot","index":1,"blocked_attempts":0,"blocked_fraction":0,'
        '"mean_reserved":0,"preemptions":0,"storm_window":5.4,"storm_peak":0,'
        '"storm_at":null,"preemption_times":[]}]')


def test_cli_json_extended_keeps_the_reference_fields(tmp_path):
    f = tmp_path / "p.sq"
    f.write_text(PREEMPT)
    plain = serq("run", "--json", f)
    ext = serq("run", "--json", "--extended", f)
    assert plain.returncode == 0 and ext.returncode == 0, plain.stderr + ext.stderr
    base = plain.stdout.rstrip("\n")
    # the reference's object, byte for byte, then one last key
    assert base.endswith("}")
    assert ext.stdout.startswith(base[:-1] + ',"extended":{"admission":[')
    d = json.loads(ext.stdout)
    assert list(d)[-1] == "extended"
    assert list(d)[:-1] == list(json.loads(base))
    (row,) = d["extended"]["admission"]
    assert row["preemption_times"] == [2, 22]
    assert row["name"] == "kv" and row["preemptions"] == 2
    pyserq = pytest.importorskip("pyserq")
    assert base == pyserq.run(pyserq.compile(str(f))).json()


def test_cli_admission_table(tmp_path):
    f = tmp_path / "p.sq"
    f.write_text(HOL)
    plain = serq("run", f)
    r = serq("run", "--admission", f)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(plain.stdout)
    assert r.stdout[len(plain.stdout):] == (
        "admission  blocked  blocked time  reserved  preempt  storm  window (ms)  storm at (s)\n"
        "kv               1         30.0%         0        0      0          100             -\n\n")
    # serq's first layout, as before
    plain = serq("run", "--format", "ref", f)
    r = serq("run", "--format", "ref", "--admission", f)
    assert r.stdout[len(plain.stdout):] == (
        "admission  blocked  blocked time  reserved  preempt  storm  window  storm at\n"
        "kv               1           0.3         0        0      0     0.1         -\n\n")


def test_cli_flag_misuse(tmp_path):
    f = tmp_path / "p.sq"
    f.write_text(HOL)
    r = serq("run", "--extended", f)
    assert r.returncode == 2 and "--json" in r.stderr
    r = serq("run", "--json", "--admission", f)
    assert r.returncode == 2 and "--extended" in r.stderr


# --------------------------------------------------------------------------
# examples/admission

def _workload(text):
    return text[text.index("// ---- the workload"):]


def test_examples_share_one_workload():
    texts = {p: (EXAMPLES / (p + ".sq")).read_text() for p in POLICIES}
    # the same workload after the policy's own lines (its pool, its hold,
    # its parameter) are taken out
    def common(t):
        t = _workload(t)
        t = re.sub(r"\npool kv \{[^\n]*\}", "", t)
        t = re.sub(r"\n  hold kv [^\n]*\{", "\n  hold {", t)
        return re.sub(r"\nlet (allowance|watermark) [^\n]*", "", t)
    assert len({common(t) for t in texts.values()}) == 1
    for p, t in texts.items():
        assert t.startswith("// "), p
        assert "serq run --admission examples/admission/%s.sq" % p in t, p


@pytest.mark.parametrize("policy", POLICIES)
def test_example_runs_like_the_reference(policy):
    path = str(EXAMPLES / (policy + ".sq"))
    sim = simulate(compile_program(path, horizon=150, warmup=30), check_invariants=True)
    rep = build_report(sim)
    (row,) = admission_rows(sim)
    assert rep.observes["response"].count > 100
    if policy == "declared_max":
        assert row.preemptions == 0 and row.mean_reserved > 0
    if policy in ("current_need", "watermark"):
        assert row.mean_reserved == 0
    pyserq = pytest.importorskip("pyserq")
    ref = pyserq.run(pyserq.compile(path, horizon=150, warmup=30)).json()
    assert report_json(rep) == ref
