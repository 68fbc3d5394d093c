"""The session blocks written out as Python source (src/serq/sim/codegen.py)
keep every report byte-identical to the reference's and name the statement
of a run-time error as the interpreter did.

The programs here exercise what the generated code writes inline: draws in
each law (the order of the draws is the stream's contract), the short-circuit
of ``&&`` and ``||`` around draws, conditionals, folded constants (a division
by zero, infinities), comparisons and the math functions, and branches nested
deeper than the depth that is inlined (those blocks get their own function).
"""
import pytest

from serq.compiler import compile_program
from serq.errors import RunError
from serq.report.jsonfmt import report_json
from serq.runner import run_program
from serq.sim import codegen
from serq.sim.engine import Simulator

EXPRESSIONS = """
let big = 1 / 0;
stage server : fifo;
stage lane[2] : fifo;
workload { arrive poisson(0.7); init { set sz = ~uniform(1, 3); } }
session {
  set t0 = now;
  set x = ~exp(0.5) + 2 * ~det(0.25) - ~erlang(2, 0.5);
  set y = (x > 0.3 && ~bernoulli(0.5) > 0) || ~uniform(0, 1) < 0.25;
  set z = y ? ~h2(0.5, 4) : min(x, sz) / max(1, pow(sz, 2));
  set w = big > 1e300 ? floor(z * 10) / 10 : ceil(z);
  set q = !(w == 0) + abs(-x) + sqrt(sz) + exp(-sz) + ln(sz);
  run server (abs(z) + 0.1);
  run lane[serial - 2 * floor(serial / 2)] (abs(w) / 4 + 0.05);
  branch with (0.3) { run server (~exp(0.2)); } else { set q = q - 1; }
  observe response = now - t0;
  observe q = q + (3 - 1) * (2 / 4);
}
run { horizon 3000; warmup 100; seed 11; }
"""


def _nested(depth):
    """Branches nested ``depth`` deep, each arm drawing and running."""
    body = "run server (~exp(0.3));"
    for i in range(depth):
        body = ("branch (~uniform(0, 1) < 0.%d) { set k = k + 1; %s } else { run server (%d / 10); }"
                % (5 + i % 4, body, i + 1))
    return """
stage server : fifo;
workload { arrive poisson(0.3); }
session { set t0 = now; set k = 0; %s observe response = now - t0; observe k = k; }
run { horizon 4000; seed 5; }
""" % body


# A step stage's budget, chunk, cost and serve keys are written as one
# function each (``Compiler.fast``): every kind of node over the step
# context, draws from the machine stream in the budget and the cost.
STEP_EXPRESSIONS = """
pool kv { cap 4096; block 16; preempt lifo; }
stage eng : step {
  budget max(64, 256 - 8 * residents) + floor(~uniform(0, 16));
  chunk decoders > 3 ? 48 : min(96, 32 + ceil(sqrt(1 + kv_decode)));
  cost 0.004 + 0.00002 * tokens + (decoders >= 2 && prefilled == 0 ? pow(decoders, 1.5) / 1e4
       : ln(1 + kv_decode) / 5e3) + abs(-attention) * 1e-8 + exp(-residents) / 1e3
       + ~exp(0.0005) - (kv_prefill != 0 || !(decoders < 1)) * 1e-4 / 2;
  serve by (decoding ? 0 : 1, -remaining / 2, admission);
  memory kv;
}
workload { arrive poisson(14); init { set p = 16 + floor(~exp(100)); set n = 1 + floor(~exp(40)); } }
session {
  set t0 = now;
  hold kv (16) { run eng prefill (p) growing kv; run eng decode (n) growing kv; }
  observe latency = now - t0;
}
run { horizon 150; warmup 20; seed 17; }
"""

# Runs on a member chosen at run time, written out: a step family's prefill
# and decode and a fifo family's run, the member's index drawn before the
# work is (the stream's order), the growth going to the hold of the member.
MEMBER_RUNS = """
pool kv[3] { cap 4096; block 16; preempt lifo; }
stage eng[3] : step { budget 256; cost 0.004 + 0.00002 * tokens; memory kv; }
stage lane[2] : fifo;
workload { arrive poisson(20); init { set p = 16 + floor(~exp(100)); set n = 1 + floor(~exp(40)); } }
session {
  set t0 = now;
  set r = floor(~uniform(0, 3));
  hold kv[r] (16) {
    run eng[r + 0 * floor(~uniform(0, 3))] prefill (p + floor(~exp(2))) growing kv[r];
    run eng[r] decode (n) growing kv[r];
  }
  run lane[floor(~uniform(0, 2))] (~exp(0.01));
  observe latency = now - t0;
}
run { horizon 120; warmup 10; seed 23; }
"""

PROGRAMS = {
    "expressions": EXPRESSIONS,
    "member_runs": MEMBER_RUNS,
    "step_expressions": STEP_EXPRESSIONS,
    "nested": _nested(codegen.INLINE_DEPTH + 3),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_report_matches_reference(name, tmp_path):
    pyserq = pytest.importorskip("pyserq")
    path = tmp_path / ("%s.sq" % name)
    path.write_text(PROGRAMS[name])
    expected = pyserq.run(pyserq.compile(path=str(path))).json()
    assert report_json(run_program(compile_program(str(path)))) == expected


def test_deep_blocks_get_their_own_function(tmp_path):
    path = tmp_path / "nested.sq"
    path.write_text(PROGRAMS["nested"])
    sim = Simulator(compile_program(str(path)))
    writer = codegen.BlockWriter(sim.interp, sim.prog, sim.compiler)
    writer.build(None)
    assert "yield from _b" in writer.source  # past the inlined depth
    assert "op = " in writer.source  # every statement keeps its location


def test_run_time_error_names_the_statement(tmp_path):
    path = tmp_path / "bad.sq"
    path.write_text("stage server : fifo;\n"
                    "workload { arrive poisson(1); }\n"
                    "session { set x = ~exp(1); run server (x - 5); }\n"
                    "run { horizon 100; seed 1; }\n")
    with pytest.raises(RunError) as e:
        run_program(compile_program(str(path)))
    text = str(e.value)
    assert "the amount is -4.512995776888717" in text
    assert "3:32" in text  # the `run` statement's position
    assert "in the `run` statement at %s:3:32" % path in text


def test_member_runs_are_written_out(tmp_path):
    path = tmp_path / "members.sq"
    path.write_text(PROGRAMS["member_runs"])
    sim = Simulator(compile_program(str(path)))
    writer = codegen.BlockWriter(sim.interp, sim.prog, sim.compiler)
    writer.build(None)
    assert "run_op" not in writer.source
    assert writer.source.count(".submit_step(s, ") == 2
    assert "stage.submit(s, w)" in writer.source


@pytest.mark.parametrize("stmt, message", [
    ("run eng[r + 2] prefill (8) growing kv[r];",
     "the index is 2: a member of an array of 2 is 0 to 1"),
    ("release kv[r]; run eng[r] prefill (8) growing kv[r];",
     "`growing kv[0]` outside a hold of it (a `release` gave it back)"),
    ("run eng[r] decode (r - 3);",
     "the amount is -3, not a number of units, tokens or seconds"),
])
def test_member_run_errors_name_the_statement(tmp_path, stmt, message):
    path = tmp_path / "bad.sq"
    path.write_text("pool kv[2] { cap 4096; block 16; }\n"
                    "stage eng[2] : step { budget 64; cost 0.01; memory kv; }\n"
                    "workload { arrive poisson(1); }\n"
                    "session { set r = 0; hold kv[r] (16) { %s } }\n"
                    "run { horizon 100; seed 1; }\n" % stmt)
    with pytest.raises(RunError) as e:
        run_program(compile_program(str(path)))
    text = str(e.value)
    assert message in text
    assert "statement at %s:4:" % path in text
