"""Findings of the grammar differential (tests/grammar_programs.py against
pyserq 0.1.3; tests/programs/FINDINGS.md, "Grammar differential"): the
smallest program of each, and what 0.1.3 does with it."""
import pytest

from serq.compiler import compile_program
from serq.errors import RunError
from serq.report.jsonfmt import report_json
from serq.runner import run_program

HEAD = ("stage e : step { budget 8; cost 1; memory kv; };\npool kv { cap 32; }\npool q { cap 32; }\n"
        "workload { arrive batch(1); }\n")
TAIL = "\nrun { horizon 10; }\n"

AFTER_RELEASE = [
    ("session { hold kv (1) { release kv; grow kv (2); } }", "grow outside a hold of pool `kv`"),
    ("session { hold kv (1) { hold q (1) { release kv; grow kv (1); } } }",
     "grow outside a hold of pool `kv`"),
    ("session { hold kv (1) { release kv; load kv (2); } }", "`load kv` outside a hold of `kv`"),
    ("session { hold kv (1) { release kv; run e decode (2) growing kv; } }",
     "`growing kv` outside a hold of it"),
]


@pytest.mark.parametrize("body,message", AFTER_RELEASE)
def test_pool_statement_after_its_release_is_a_run_time_error(body, message):
    """Finding 3: `grow`, `load` and `growing` after a `release` of the
    pool (no hold of it left) fail the run, as in 0.1.3 (serq skipped them)."""
    with pytest.raises(RunError) as e:
        run_program(compile_program(source=HEAD + body + TAIL))
    assert message in e.value.message and "t = 0" in e.value.message
    pyserq = pytest.importorskip("pyserq")
    with pytest.raises(ValueError) as r:
        pyserq.run(pyserq.compile(source=HEAD + body + TAIL))
    assert message in str(r.value)


@pytest.mark.parametrize("body", [
    "session { hold kv (1) { hold kv (1) { release kv; grow kv (1); } } }",
    "session { hold kv (1) { release kv; run e decode (0) growing kv; } }",
])
def test_pool_statement_with_a_hold_left_runs(body):
    got = report_json(run_program(compile_program(source=HEAD + body + TAIL)))
    pyserq = pytest.importorskip("pyserq")
    assert got == pyserq.run(pyserq.compile(source=HEAD + body + TAIL)).json()


WAIT_HEAD = "stage d : delay;\npool kv { cap 4; }\nworkload { arrive batch(%d); }\n"
WAIT_CASES = [  # (sessions, body, a cycle 0.1.3 reports at the end)
    (1, "session { fork { hold kv (3) { run d (1); } lease kv (inf) hold kv (2) { run d (1); } } "
        "join; }", True),
    (1, "session { hold kv (3) { run d (1); } lease kv (inf) hold kv (2) { run d (1); } }", False),
    (1, "session { fork { hold kv (3) { run d (1); } lease kv (20) hold kv (2) { run d (1); } } "
        "join; }", False),
    (1, "session { fork { hold kv (3) { run d (1); } lease kv (inf) run d (1); } "
        "hold kv (2) { run d (1); } join; }", False),
    (1, "session { fork { hold kv (3) { run d (1); } lease kv (inf) hold kv (2) { run d (1); } } "
        "fork { run d (100); } join; }", False),
    (2, "session { branch (serial == 0) { fork { hold kv (4) { run d (1); } lease kv (inf) "
        "run d (1); } join; run d (100); } else { run d (3); fork { hold kv (1) { run d (1); } } "
        "join; } }", False),
    (2, "session { branch (serial == 0) { fork { hold kv (4) { run d (1); } lease kv (inf) "
        "hold kv (1) { run d (1); } } join; } else { run d (3); fork { hold kv (1) { run d (1); } } "
        "join; } }", True),
    # A session waits on itself (nested holds of kv) at the queue's head; a
    # leg waits behind it: blocked if its hold does not fit now, not blocked
    # (no error) if it would fit but for the head (pool seed 2013).
    (2, "session { branch (serial == 0) { hold kv (3) { run d (1); hold kv (3) { run d (1); } } } "
        "else { run d (2); fork { hold kv (2) { run d (1); } } join; } }", True),
    (2, "session { branch (serial == 0) { hold kv (3) { run d (1); hold kv (3) { run d (1); } } } "
        "else { run d (2); fork { hold kv (1) { run d (1); } } join; } }", False),
]


@pytest.mark.parametrize("n,body,cycle", WAIT_CASES)
def test_a_hold_and_wait_cycle_through_a_join_fails_the_run_at_its_end(n, body, cycle):
    """Finding 9: at the end of the run, sessions waiting at a `join` for
    legs that wait in pools held only by waiters (leases that never
    expire) are an error, as in 0.1.3; a cycle with no `join` is not."""
    src = WAIT_HEAD % n + body + "\nrun { horizon 10; }\n"
    if cycle:
        with pytest.raises(RunError) as e:
            run_program(compile_program(source=src))
        assert "wait for each other" in e.value.message
    else:
        report_json(run_program(compile_program(source=src)))
    pyserq = pytest.importorskip("pyserq")
    try:
        pyserq.run(pyserq.compile(source=src))
        refused = False
    except ValueError as e:
        assert "wait for each other" in str(e)
        refused = True
    assert refused == cycle
