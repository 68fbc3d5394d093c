"""Bugs the fuzzing found (issue 8), each with the smallest program that
showed it, and the run-time error's state dump."""
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import pool_programs
from fuzz_cases import run_case
from serq.compiler import compile_program
from serq.errors import LinkError, RunError, SyntaxError_
from serq.ir.json import dumps, loads
from serq.report.build import build_report
from serq.runner import simulate
from serq.sim.postmortem import explain

ROOT = Path(__file__).resolve().parent.parent


def serq(*args, **kw):
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True, **kw)


def test_fifo_with_infinite_servers_is_a_located_error():
    with pytest.raises(LinkError) as e:
        compile_program(source="stage s : fifo(inf);\nsession { run s (1); }\nrun { horizon 1; }\n")
    assert (e.value.span.line, e.value.span.col) == (1, 16)
    assert "found inf" in e.value.message


@pytest.mark.parametrize("size,shown", [("inf", "inf"), ("0/0", "NaN")])
def test_non_finite_array_size_is_a_located_error(size, shown):
    with pytest.raises(SyntaxError_) as e:
        compile_program(source="queue Q[%s] { serve fifo; }\nrun { horizon 1; }\n" % size)
    assert e.value.message == "array size must be a positive integer, found %s" % shown


def test_cv2_of_a_mean_that_squares_to_zero_is_null():
    prog = compile_program(source="workload { arrive poisson(1); }\n"
                           "session { observe o = 1e-200 * (1 + serial); }\nrun { horizon 10; }\n")
    row = build_report(simulate(prog)).observes["o"]
    assert row.count > 2 and row.mean > 0 and row.cv2 is None


def test_orphan_legs_count_in_the_invariant_check():
    # A leg's hold can never fit (n > cap 8): its session ends, the other
    # leg runs on holding p1; the checker once missed what it holds.
    assert run_case(pool_programs.program(557), 5000, check_invariants=True) == "report"


def test_closed_stdout_ends_quietly():
    p = subprocess.Popen([sys.executable, "-m", "serq", "ir", str(ROOT / "examples" / "chat.sq")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    assert "Traceback" not in err and "internal error" not in err


PROGRAM = """stage s[2] : fifo;
pool kv { cap 10; }
workload { arrive poisson(1); }
session {
  set k = serial;
  hold kv (2) { run s[k] (1); }
}
run { horizon 10; }
"""


def run_error(prog):
    with pytest.raises(RunError) as e:
        simulate(prog)
    return e.value


def test_run_time_error_dumps_time_session_statement_and_queues(tmp_path):
    f = tmp_path / "r.sq"
    f.write_text(PROGRAM)
    err = run_error(compile_program(str(f)))
    assert err.message.startswith("index `k` is 2: a member of an array of 2 is 0 to 1")
    assert (err.span.line, err.span.col) == (6, 21)
    stop = err.notes[0]
    assert stop.startswith("the run stopped at t = ") and ", session 2, " in stop
    assert stop.endswith("in the `run` statement at %s:6:21" % f)
    assert any(n.endswith("live session(s), 3 arrived") for n in err.notes)
    assert any(n.startswith("pool `kv`: used 2, cached 0 of cap 10, 1 holder(s)")
               for n in err.notes)


def test_run_time_error_from_ir_names_the_statement_by_its_place():
    prog = loads(dumps(compile_program(source=PROGRAM)))
    stop = run_error(prog).notes[0]
    assert ", session 2, in the `run` statement 1 of block " in stop


def test_step_stage_error_names_the_stage_and_its_queue():
    err = run_error(compile_program(
        source="stage e : step { budget 8; cost 0 * tokens; };\nworkload { arrive poisson(1); }\n"
        "session { run e prefill (5); }\nrun { horizon 10; }\n"))
    assert err.message.startswith("stage `e`: an iteration of 5 tokens costs 0")
    assert err.notes[0].endswith(", in stage `e`")
    assert "stage `e`: 1 present, head session 0" in err.notes


def test_fifo_queue_error_names_the_queue_head():
    # a FIFO with a queue when a later session's index fails: the dump names
    # the session at the head of the queue (it once read a job's old list
    # form, failed, and the whole dump, time included, was dropped)
    err = run_error(compile_program(
        source="stage q : fifo;\nstage d[2] : delay;\nworkload { arrive batch(4); }\n"
        "session { branch (serial < 3) { run q (5); } run d[serial] (1); }\n"
        "run { horizon 10; }\n"))
    assert err.message.startswith("index `serial` is 3")
    assert err.notes[0].startswith("the run stopped at t = 0 (event ")
    assert "stage `q`: 3 present, head session 1" in err.notes


def test_cli_prints_the_dump_without_a_traceback(tmp_path):
    f = tmp_path / "r.sq"
    f.write_text(PROGRAM)
    r = serq("run", f)
    assert r.returncode == 1
    assert "note: the run stopped at t = " in r.stderr and "Traceback" not in r.stderr
    r = serq("run", f, "--json")
    assert r.stdout == "" and "note: 1 live session(s)" in r.stderr


def test_run_settings_errors_point_at_the_setting():
    src = "workload { arrive batch(2); }\nrun {\n  horizon 10;\n  warmup %s;\n  arrivals 4;\n}\n"
    with pytest.raises(LinkError) as e:
        compile_program(source=src % "20")
    assert e.value.message.startswith("run: need 0 <= warmup < horizon")
    assert (e.value.span.line, e.value.span.col) == (4, 10)
    with pytest.raises(LinkError) as e:
        compile_program(source=src % "1")
    assert e.value.message == "run: arrivals applies only to poisson or renewal workloads"
    assert (e.value.span.line, e.value.span.col) == (5, 12)
    with pytest.raises(LinkError) as e:  # overridden: no place in the program
        compile_program(source=src % "1", arrivals=3)
    assert e.value.span is None


GROW_INF = ("stage s : fifo;\npool kv { cap 8; block 2; }\nworkload { arrive poisson(1); }\n"
            "session { hold kv (1) { run s (1); grow kv (inf); } }\nrun { horizon 5; }\n")


def same_as_reference(text):
    pyserq = pytest.importorskip("pyserq")
    from serq.report.jsonfmt import report_json
    ours = report_json(build_report(simulate(compile_program(source=text))))
    assert ours == pyserq.run(pyserq.compile(source=text)).json()


def test_infinite_amounts_round_to_themselves():
    # `grow kv (inf)` on a pool with blocks once crashed rounding inf up.
    assert run_case(GROW_INF, 5000, check_invariants=True) == "report"


def test_infinite_grow_matches_the_reference():
    same_as_reference(GROW_INF)


def test_preempting_a_just_admitted_session():
    # A session admitted to an inner hold, still in the ready queue, is
    # preempted (its outer hold is the victim): the inner allocation once
    # leaked (used 32, holds 23) and the stale ready turn ran its body
    # without an admission.
    text = pool_programs.program(2375)
    assert run_case(text, 5000, check_invariants=True) == "report"
    same_as_reference(text)


def test_invariant_holds_when_a_reuser_is_preempted():
    # 0.1.3 caches the preempted hold's whole position, which counts the
    # cached prefix it consumed but never allocated, and passes the cap;
    # serq keeps used + cached <= cap (docs/divergences.md).
    text = (ROOT / "tests" / "programs" / "steps" / "growing_lifo_det.sq").read_text()
    assert run_case(text, 5000, check_invariants=True) == "report"


def test_call_of_a_queue_declared_inside_a_def_body_is_a_located_error():
    """Differential seed 18645: a `def … = …` missing its `;` runs on over a
    queue's declaration, so the queue is never declared; a call of it was a
    KeyError (internal error). pyserq refuses the program too."""
    src = ("def svc(x) = x * 2\nqueue D : decode {\n  serve step { budget 8; cost 1; };\n"
           "  decode (n) { run D decode (n); }\n}\nstage s : delay;\n"
           "workload { arrive batch(1); }\nsession { D.decode (2); }\nrun { horizon 1; }\n")
    with pytest.raises(SyntaxError_) as e:
        compile_program(source=src)
    assert (e.value.span.line, e.value.span.col) == (8, 11)
    assert "no queue `D` is declared" in e.value.message
    pyserq = pytest.importorskip("pyserq")
    with pytest.raises(ValueError):
        pyserq.compile(source=src)


class _Unreadable:
    """A stage whose queue cannot be read (the dump once indexed a queue
    that has no indexing, failed, and returned nothing at all)."""
    name = "q"
    member = None
    kind = "fifo"

    def present(self):
        return 2

    @property
    def waiting(self):
        raise TypeError("no queue here")


def _stand_in_sim(stages):
    prog = compile_program(source="stage q : fifo;\nworkload { arrive batch(1); }\n"
                           "session { run q (1); }\nrun { horizon 1; }\n")
    return types.SimpleNamespace(prog=prog, now=1.5, events=7, live=2, arrived=3,
                                 stages=stages, pools=[])


def test_an_unreadable_queue_is_named_and_the_rest_of_the_dump_kept():
    notes = explain(_stand_in_sim([_Unreadable()]), RunError("x"))
    assert notes[0] == "the run stopped at t = 1.5 (event 7)"
    assert notes[1] == "2 live session(s), 3 arrived"
    assert notes[2] == "stage `q` (its state could not be read: TypeError: no queue here)"


def test_a_dump_that_fails_keeps_its_first_lines_and_says_why():
    class Broken:
        def __iter__(self):
            raise RuntimeError("stages gone")
    notes = explain(_stand_in_sim(Broken()), RunError("x"))
    assert notes[:2] == ["the run stopped at t = 1.5 (event 7)", "2 live session(s), 3 arrived"]
    assert notes[2] == "(the rest of the run's state could not be read: RuntimeError: stages gone)"
