"""serq's admission extensions (docs/first_fit_watermark.md): first-fit
admission (`queue … first fit [within (N)] [until waited (T)]`) and the pool
watermark (`watermark W;`).  Every expected number is worked out by hand
next to the test, and every scenario runs with the pool invariants checked
after every event.  The extensions' IR is refused by `--strict` and by
pyserq 0.1.3 (where installed); programs without them keep 0.1.3's IR (the
conformance tests check that for the whole corpus)."""
import json
import subprocess
import sys

import pytest

from serq.compiler import compile_program
from serq.errors import LinkError, SerqError
from serq.ir.json import IRError, dumps, loads
from serq.report.admission import admission_rows
from serq.report.build import build_report
from serq.runner import simulate


def run(text, **kw):
    """(report, admission row of `kv`, {observe: [(serial, value), …]})."""
    sim = simulate(compile_program(source=text, **kw), check_invariants=True)
    sim.check_pools()
    obs = {o.name: list(zip(o.sessions, o.values)) for o in sim.observations}
    rep = build_report(sim)
    return rep, admission_rows(sim)[0], obs


def kv(rep):
    return [p for p in rep.pools if p.name == "kv"][0]


def serq(*args):
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True)


# --------------------------------------------------------------------------
# 1. A small request admitted past a blocked large head.

HOL = """
pool kv { cap 10; queue fifo%s; }
stage d : delay;
workload { arrive batch(3); init { set n = serial == 0 ? 6 : serial == 1 ? 8 : 2; } }
session {
  hold kv (n) { observe adm = now; run d (serial == 0 ? 2 : 1); }
}
run { horizon 10; }
"""


def test_fifo_keeps_the_small_request_behind_the_head():
    # All three queue at t=0.  0 (6) fits; the head is then 1 (8):
    # 6 + 8 > 10, and FIFO stops although 2 (2) would fit (6 + 2 <= 10).
    # t=2: 0 releases: 1 (8), then 2 (8 + 2 = 10).  Blocked from 0 to 2 of
    # the 10 s: 0.2.
    rep, adm, obs = run(HOL % "")
    assert obs["adm"] == [(0, 0), (1, 2), (2, 2)]
    assert kv(rep).mean_wait == pytest.approx(4 / 3)
    assert adm.blocked_fraction == pytest.approx(0.2)


def test_first_fit_admits_the_small_request_past_the_head():
    # 0 (6) fits.  Head 1 (8) does not; first fit tries 2 (2): 6 + 2 = 8
    # <= 10, admitted at t=0.  t=1: 2 releases (used 6), 1 still does not
    # fit.  t=2: 0 releases, 1 goes.  Waits 0, 2, 0; nothing behind the
    # head ever fits without being admitted: no blocking.
    rep, adm, obs = run(HOL % " first fit")
    assert obs["adm"] == [(0, 0), (2, 0), (1, 2)]
    assert kv(rep).mean_wait == pytest.approx(2 / 3)
    assert adm.blocked_fraction == 0
    assert adm.blocked_attempts == 0


# --------------------------------------------------------------------------
# 2. The age bound: a head that has waited long enough blocks again.

AGE = """
pool kv { cap 10; queue fifo%s; }
stage arrive_at : delay;
stage d : delay;
workload { arrive batch(4); init {
  set at = serial == 2 ? 1 : serial == 3 ? 3 : 0;
  set n = serial == 0 ? 6 : serial == 1 ? 8 : 2;
  set hold_for = serial == 0 ? 5 : 1;
} }
session {
  run arrive_at (at);
  hold kv (n) { observe adm = now; run d (hold_for); }
}
run { horizon 10; }
"""


@pytest.mark.parametrize("option, admitted, blocked", [
    # FIFO: 0 (6) at 0; 1 (8) waits from 0.  2 (2, at t=1) and 3 (2, at
    # t=3) wait behind it although each fits next to 0's 6.  t=5: 0
    # releases: 1 (8) and 2 (8 + 2 = 10); 3 needs 12 > 10 and waits for
    # t=6 (1 and 2 release).  Blocked from t=1 (2 fits behind the head)
    # to t=5: 4 of 10 s.
    ("", [(0, 0), (1, 5), (2, 5), (3, 6)], 0.4),
    # First fit, no bound: 2 at t=1 (6 + 2), 3 at t=3 (2 released at 2,
    # 6 + 2), 1 at t=5.  Never blocked.
    (" first fit", [(0, 0), (2, 1), (3, 3), (1, 5)], 0.0),
    # First fit until waited (2): at t=1 the head (1) has waited 1 < 2, so
    # 2 passes it.  At t=3 it has waited 3 >= 2: it blocks again, and 3
    # (which fits: 6 + 2) waits for t=5, when 1 (8) and then 3 (10) go.
    # Blocked from t=3 to t=5: 2 of 10 s.
    (" first fit until waited (2)", [(0, 0), (2, 1), (1, 5), (3, 5)], 0.2),
])
def test_age_bound_lets_the_head_block_again(option, admitted, blocked):
    rep, adm, obs = run(AGE % option)
    assert obs["adm"] == admitted
    assert adm.blocked_fraction == pytest.approx(blocked)
    # waits: arrival times 0, 0, 1, 3
    arrive = {0: 0, 1: 0, 2: 1, 3: 3}
    waits = [t - arrive[s] for s, t in admitted]
    assert kv(rep).mean_wait == pytest.approx(sum(waits) / 4)


# --------------------------------------------------------------------------
# 3. `within (N)` bounds the scan, in `queue by` order.

WITHIN = """
pool kv { cap 10; queue by (-n) first fit%s; }
stage d : delay;
workload { arrive batch(4); init {
  set n = serial == 0 ? 6 : serial == 1 ? 8 : serial == 2 ? 3 : 1;
} }
session {
  hold kv (n) { observe adm = now; run d (1); }
}
run { horizon 10; }
"""


@pytest.mark.parametrize("option, admitted", [
    # Keys -n: 1 (8) goes first.  Then 0 (6): 8 + 6 > 10; behind it in key
    # order 2 (3): 11 > 10, then 3 (1): 9 <= 10, admitted.  t=1: 1 and 3
    # release: 0 (6), then 2 (6 + 3 = 9).
    ("", [(1, 0), (3, 0), (0, 1), (2, 1)]),
    # within (1): only 2 is tried past 0, and it does not fit; 3 waits for
    # t=1: then 0 (6), 2 (9), 3 (10).
    (" within (1)", [(1, 0), (0, 1), (2, 1), (3, 1)]),
])
def test_within_bounds_the_scan_in_key_order(option, admitted):
    rep, adm, obs = run(WITHIN % option)
    assert obs["adm"] == admitted


# --------------------------------------------------------------------------
# 4. The watermark refuses an admission and grants a growth.

WATERMARK = """
pool kv { cap 10;%s }
stage arrive_at : delay;
stage d : delay;
workload { arrive batch(2); init { set at = serial == 0 ? 0 : 0.5; } }
session {
  run arrive_at (at);
  branch (serial == 0) {
    hold kv (5) { run d (1); grow kv (4); observe grown = now; observe used9 = used(kv); run d (1); }
  } else {
    hold kv (3) { observe adm = now; run d (1); }
  }
}
run { horizon 10; }
"""


def test_watermark_refuses_an_admission_but_grants_a_growth():
    # watermark 3.  t=0: 0 needs 0 + 5 + 3 = 8 <= 10: admitted.  t=0.5: 1
    # needs 5 + 3 + 3 = 11 > 10: refused, although 5 + 3 <= 10.  t=1: 0
    # grows by 4: a growth needs only 5 + 4 = 9 <= 10: granted at once,
    # spending the reserve.  t=2: 0 releases; 1 needs 0 + 3 + 3 <= 10 and
    # goes.  Its wait: 1.5 s; 0's: 0.
    rep, adm, obs = run(WATERMARK % " watermark 3;")
    assert obs["grown"] == [(0, 1)]
    assert obs["used9"] == [(0, 9)]
    assert obs["adm"] == [(1, 2)]
    assert kv(rep).mean_wait == pytest.approx(1.5 / 2)
    assert kv(rep).preemptions == 0


def test_without_the_watermark_the_admission_stalls_the_growth():
    # No watermark: 1 is admitted at t=0.5 (5 + 3 <= 10); at t=1 0's growth
    # needs 8 + 4 = 12 > 10 and (preempt none) waits until 1 releases at
    # t=1.5.
    rep, adm, obs = run(WATERMARK % "")
    assert obs["adm"] == [(1, 0.5)]
    assert obs["grown"] == [(0, 1.5)]
    assert kv(rep).mean_wait == 0


def test_a_hold_that_never_clears_the_watermark_is_rejected():
    # cap 10, watermark 3: a static need of 8 can never be admitted
    # (8 + 3 > 10), so it is rejected like a need over the cap; 7 goes.
    text = """
pool kv { cap 10; watermark 3; }
stage d : delay;
workload { arrive batch(2); init { set n = serial == 0 ? 8 : 7; } }
session { hold kv (n) { observe adm = now; run d (1); } }
run { horizon 5; }
"""
    rep, adm, obs = run(text)
    assert kv(rep).rejected == 1
    assert obs["adm"] == [(1, 0)]


def test_watermark_is_checked_with_block_rounding_and_first_fit_together():
    # block 4, watermark 4, cap 16.  0 needs round_up(5) = 8: 0 + 8 + 4 <=
    # 16.  1 needs round_up(6) = 8: 8 + 8 + 4 = 20 > 16, refused; first
    # fit tries 2: round_up(3) = 4: 8 + 4 + 4 = 16 <= 16, admitted.
    # t=1: 0 and 2 release; 1 goes.
    text = """
pool kv { cap 16; block 4; watermark 4; queue fifo first fit; }
stage d : delay;
workload { arrive batch(3); init { set n = serial == 0 ? 5 : serial == 1 ? 6 : 3; } }
session { hold kv (n) { observe adm = now; run d (1); } }
run { horizon 5; }
"""
    rep, adm, obs = run(text)
    assert obs["adm"] == [(0, 0), (2, 0), (1, 1)]


# --------------------------------------------------------------------------
# 5. Step stages: first fit through `admit via`.

STEP = """
pool kv { cap 10; admit via gpu; queue fifo%s; }
stage gpu : step { cost 1; memory kv; };
workload { arrive batch(3); init { set n = serial == 0 ? 6 : serial == 1 ? 8 : 2; } }
session {
  hold kv (n) { observe adm = now; run gpu decode (serial == 0 ? 3 : 1); }
}
run { horizon 20; }
"""


def test_step_stage_admits_past_the_head_under_first_fit():
    # One token per iteration, each costing 1 s.  FIFO: the stage admits 0
    # (6) and stops at 1 (6 + 8 > 10), so 2 (2) waits behind it; 0 decodes
    # 3 tokens and leaves at t=3, when 1 (8) and 2 (8 + 2 = 10) go.  First
    # fit: 2 is admitted at t=0 next to 0 (6 + 2 <= 10) and leaves at t=1;
    # 1 still waits for t=3.
    _, _, fifo = run(STEP % "")
    _, ffa, ff = run(STEP % " first fit")
    assert fifo["adm"] == [(0, 0), (1, 3), (2, 3)]
    assert ff["adm"] == [(0, 0), (2, 0), (1, 3)]
    assert ffa.blocked_attempts == 0


# --------------------------------------------------------------------------
# 6. The IR, `--strict`, and what 0.1.3 does with it.


def test_extensions_are_an_object_queue_that_round_trips():
    p = compile_program(source=AGE % " first fit within (2) until waited (2)")
    text = dumps(p)
    q = json.loads(text)["pools"][0]["queue"]
    assert q == {"keys": None, "first_fit": {"within": 2, "age": 2.0}}
    assert dumps(loads(text)) == text
    w = compile_program(source=WATERMARK % " watermark 3;")
    assert json.loads(dumps(w))["pools"][0]["queue"] == {"keys": None, "watermark": 3.0}
    plain = compile_program(source=HOL % "")
    assert json.loads(dumps(plain))["pools"][0]["queue"] is None
    assert "first_fit" not in dumps(plain) and "watermark" not in dumps(plain)


def test_pyserq_refuses_the_extended_ir():
    pyserq = pytest.importorskip("pyserq")
    for text in (HOL % " first fit", WATERMARK % " watermark 3;"):
        with pytest.raises(ValueError):
            pyserq.Program.from_json(dumps(compile_program(source=text)))
    pyserq.Program.from_json(dumps(compile_program(source=HOL % "")))


@pytest.mark.parametrize("text, what, col", [
    (HOL % " first fit", "first-fit admission", 30),
    (WATERMARK % " watermark 3;", "the pool watermark", 19),
])
def test_strict_refuses_the_extension_by_name(text, what, col):
    with pytest.raises(LinkError) as e:
        compile_program(source=text, strict=True)
    assert e.value.message.startswith(what)
    assert e.value.span.line == 2 and e.value.span.col == col
    compile_program(source=text)  # not strict: fine


def test_check_strict_on_the_command_line(tmp_path):
    f = tmp_path / "ff.sq"
    f.write_text(HOL % " first fit")
    r = serq("check", "--strict", f)
    assert r.returncode == 1
    assert "%s:2:30: error: first-fit admission (`first fit`) is serq's extension" % f \
        in r.stderr
    assert "Traceback" not in r.stderr
    assert serq("check", f).returncode == 0
    g = tmp_path / "plain.sq"
    g.write_text(HOL % "")
    assert serq("check", "--strict", g).returncode == 0


def test_strict_ir_reading(tmp_path):
    ext = dumps(compile_program(source=WATERMARK % " watermark 3;"))
    with pytest.raises(IRError) as e:
        loads(ext, strict=True)
    assert "the pool watermark, serq's extension" in e.value.message
    assert ".pools[0].queue" in e.value.message
    plain = json.loads(dumps(compile_program(source=HOL % "")))
    assert dumps(loads(json.dumps(plain), strict=True)) == dumps(loads(json.dumps(plain)))
    plain["pools"][0]["colour"] = "red"  # 0.1.3 ignores an unknown field
    loads(json.dumps(plain))
    with pytest.raises(IRError) as e:
        loads(json.dumps(plain), strict=True)
    assert "unknown field `colour` at .pools[0]" in e.value.message
    f = tmp_path / "ext.json"
    f.write_text(ext)
    r = serq("ir", "--from-json", f, "--strict")
    assert r.returncode == 1 and "serq's extension" in r.stderr
    assert serq("ir", "--from-json", f).returncode == 0


@pytest.mark.parametrize("option, message", [
    ("queue fifo first fit within (0);", "first fit within (0)"),
    ("queue fifo first fit within (1.5);", "first fit within (1.5)"),
    ("queue fifo first fit until waited (-1);", "until waited (-1)"),
    ("queue fifo first fit until waited (now);", "until waited"),
    ("watermark -1;", "the watermark is -1"),
    ("watermark 10;", "the watermark 10 is not below the cap 10"),
])
def test_bad_options_are_located_errors(option, message):
    text = "pool kv { cap 10; %s }\nstage d : delay;\n" \
           "workload { arrive batch(1); }\nsession { hold kv (1) { run d (1); } }\nrun { horizon 1; }\n" % option
    with pytest.raises(SerqError) as e:
        compile_program(source=text)
    assert message in e.value.message
    assert e.value.span is not None and e.value.span.line == 1


def test_a_constant_hold_over_the_watermark_is_a_link_error():
    text = "pool kv { cap 10; watermark 3; }\nstage d : delay;\n" \
           "workload { arrive batch(1); }\nsession { hold kv (8) { run d (1); } }\n" \
           "run { horizon 1; }\n"
    with pytest.raises(LinkError) as e:
        compile_program(source=text)
    assert "`hold kv (8)` can never be admitted" in e.value.message
    assert "watermark 3 of its 10 free" in e.value.message
    assert e.value.span.line == 4
    compile_program(source=text.replace("kv (8)", "kv (7)"))


def test_ir_watermark_at_the_cap_is_refused():
    ir = json.loads(dumps(compile_program(source=WATERMARK % " watermark 3;")))
    ir["pools"][0]["queue"]["watermark"] = 10
    with pytest.raises(IRError) as e:
        loads(json.dumps(ir))
    assert "nothing would be admitted" in e.value.message


@pytest.mark.parametrize("option, message", [
    ("queue fifo first;", "expected `fit`"),
    ("queue fifo first fit until (3);", "expected `waited`"),
])
def test_bad_syntax(option, message):
    text = "pool kv { cap 10; %s }\nsession { }\n" % option
    with pytest.raises(SerqError) as e:
        compile_program(source=text)
    assert message in e.value.message


# --------------------------------------------------------------------------
# 7. docs/admission_tradeoff.md: its rows are what its script computes.

def _tradeoff_script():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "docs" / "figures" / "admission_tradeoff.py"
    spec = importlib.util.spec_from_file_location("admission_tradeoff", str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tradeoff_page_rows_match_the_runs():
    # One row of the page's first table (the current need, FIFO, with the
    # watermark), recomputed over the page's three seeds; and, on seed 1,
    # the claims the page makes about the watermark.
    from pathlib import Path
    mod = _tradeoff_script()
    page = (Path(__file__).resolve().parent.parent / "docs" / "admission_tradeoff.md").read_text()
    results = dict(mod.one((1, mod.WATERMARK, "0", s)) for s in mod.SEEDS)
    assert mod.main_row(results, 1, mod.WATERMARK, "0") in page
    on = results[(1, mod.WATERMARK, "0", 1)]
    _, off = mod.one((1, 0, "0", 1))
    # the watermark cuts the preemptions (by about six times), raises the
    # throughput, lowers the TTFT p99 and the head-of-line blocking
    assert on["preemptions"] < off["preemptions"] / 4
    assert on["tps"] > off["tps"] and on["p99"] < off["p99"]
    assert on["blocked"] < off["blocked"]
    # "Before t = 300 neither of them preempts": the storm follows the shift
    assert min(off["times"]) > mod.SHIFT_AT
