"""The command line: what a user types and what they see."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "chat.sq"


def serq(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True, cwd=cwd)


def test_check_ok():
    r = serq("check", EXAMPLE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("OK: 1 pool(s), 2 stage(s)")


def test_ir_prints_version_11_and_round_trips(tmp_path):
    r = serq("ir", EXAMPLE)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["version"] == 11
    f = tmp_path / "chat.json"
    f.write_text(r.stdout)
    back = serq("ir", "--from-json", f)
    assert back.returncode == 0, back.stderr
    assert back.stdout == r.stdout


def test_ir_overrides():
    r = serq("ir", EXAMPLE, "--set", "rate=0.5", "--seed", "99", "--horizon", "10",
             "--warmup", "1")
    d = json.loads(r.stdout)
    assert d["arrival"] == {"Poisson": 0.5}
    assert (d["seed"], d["horizon"], d["warmup"]) == (99, 10.0, 1.0)


def test_ir_matches_reference_bytes():
    pyserq = pytest.importorskip("pyserq")
    expected = pyserq.compile(str(EXAMPLE)).to_json() + "\n"
    assert serq("ir", EXAMPLE).stdout == expected


def test_error_is_located_with_caret_and_help(tmp_path):
    f = tmp_path / "bad.sq"
    f.write_text("pool kv { cap 100; }\nsession { grow kv (1); }\nrun { horizon 1; }\n")
    r = serq("check", f)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0].startswith("%s:2:16: error: `grow kv` outside a hold" % f)
    assert lines[1] == "2 | session { grow kv (1); }"
    assert lines[2] == "  |                ^^"
    assert lines[-1].startswith("help: ")
    assert "Traceback" not in r.stderr


def test_unknown_override_lists_constants():
    r = serq("check", EXAMPLE, "--set", "nope=1")
    assert r.returncode == 1
    assert "nope" in r.stderr and "rate" in r.stderr


def test_usage_errors_exit_2(tmp_path):
    assert serq("ir").returncode == 2
    assert serq("ir", EXAMPLE, "--seed", "-3").returncode == 2
    assert serq("ir", EXAMPLE, "--horizon", "inf").returncode == 2
    assert serq("frobnicate").returncode == 2
    missing = serq("check", tmp_path / "missing.sq")
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_from_json_refuses_bad_ir(tmp_path):
    f = tmp_path / "x.json"
    f.write_text('{"version": 10}')
    r = serq("ir", "--from-json", f)
    assert r.returncode == 1 and "IR version 10" in r.stderr
    f.write_text('{"version": 11, "attrs": 3}')
    r = serq("ir", "--from-json", f)
    assert r.returncode == 1 and "attrs" in r.stderr


@pytest.mark.parametrize("content", [
    b"\xff\xfe\x00garbage",
    b"session { set x = \"unterminated; }",
    b"/* never closed",
    b"let a = " + b"(" * 10000 + b"1" + b")" * 10000 + b";",
    bytes(range(256)),
])
def test_hostile_files_get_a_located_error(tmp_path, content):
    f = tmp_path / "h.sq"
    f.write_bytes(content)
    r = serq("check", f)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith(str(f) + ":"), r.stderr
    assert "Traceback" not in r.stderr


def test_huge_file_is_refused_quickly(tmp_path):
    f = tmp_path / "big.sq"
    with open(f, "wb") as out:
        out.seek(100 * 1024 * 1024)
        out.write(b"\n")
    r = serq("check", f)
    assert r.returncode == 1
    assert r.stderr.startswith("%s:1:1: error: the file is" % f)


SIM = ROOT / "tests" / "programs" / "sim"


def test_run_json_is_the_reference_report():
    pyserq = pytest.importorskip("pyserq")
    program = SIM / "fork_agents.sq"
    r = serq("run", program, "--json", "--seed", "77")
    assert r.returncode == 0, r.stderr
    assert r.stdout == pyserq.run(pyserq.compile(str(program), seed=77)).json() + "\n"


def test_run_text_report_and_dump(tmp_path):
    program = SIM / "choose_route.sq"
    r = serq("run", program, "--dump", tmp_path / "d")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("run: horizon 500 ")
    assert "resp" in r.stdout and "rep" in r.stdout
    rows = (tmp_path / "d" / "resp.csv").read_text().splitlines()
    assert rows[0] == "time,session,turn,value" and len(rows) > 100
    t, session, turn, value = rows[1].split(",")
    assert float(t) >= 50.0 and int(session) >= 0 and int(turn) == 0 and float(value) > 0
    gauge = (tmp_path / "d" / "gauge" / "total.csv").read_text().splitlines()
    assert gauge[0] == "time,value" and float(gauge[1].split(",")[0]) == 0.0


def test_a_run_ends_with_every_output_written_and_closed(tmp_path):
    # `serq run` ends its process without the interpreter's teardown
    # (cli.main): the report, the iteration trace and the dump are whole
    # by then, the same as an in-process run's
    from serq.compiler import compile_program
    from serq.report.jsonfmt import report_json
    from serq.runner import run_program, simulate
    program = ROOT / "tests" / "data" / "fold" / "long_decode.sq"
    r = serq("run", program, "--json", "--horizon", "200", "--trace-iterations",
             tmp_path / "it.txt", "--dump", tmp_path / "d")
    assert r.returncode == 0, r.stderr
    assert r.stdout == report_json(run_program(compile_program(str(program), horizon=200.0))) + "\n"
    iterations = simulate(compile_program(str(program), horizon=200.0)).steps[0].iterations
    text = (tmp_path / "it.txt").read_text()
    lines = text.splitlines()
    assert iterations > 1000 and len(lines) == iterations and text.endswith("\n")
    assert float(lines[-1].split()[0]) <= 200.0 and lines[-1].split()[1] == "engine"
    rows = (tmp_path / "d" / "latency.csv").read_text().splitlines()
    assert rows[0] == "time,session,turn,value" and len(rows) > 1


def test_run_from_ir_gives_the_same_report(tmp_path):
    program = SIM / "shared_links.sq"
    ir_file = tmp_path / "p.json"
    ir_file.write_text(serq("ir", program).stdout)
    a = serq("run", program, "--json")
    b = serq("run", ir_file, "--json")
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout


def test_run_time_error_names_session_statement_and_time(tmp_path):
    f = tmp_path / "neg.sq"
    f.write_text("stage s : fifo;\nworkload { arrive batch(2); }\n"
                 "session {\n  set w = serial - 1;\n  run s (w);\n}\nrun { horizon 5; }\n")
    r = serq("run", f)
    assert r.returncode == 1
    first = r.stderr.splitlines()[0]
    assert first.startswith("%s:5:7: error: session 0, at t = 0: the amount is -1" % f)
    assert "Traceback" not in r.stderr


def test_a_closed_pipe_ends_quietly(tmp_path):
    """`serq … | head`: the reader is gone before serq writes; serq stops
    without a traceback or an internal error, with a SIGPIPE-like status."""
    import os
    import subprocess
    import sys
    src = tmp_path / "m.sq"
    src.write_text("stage s : fifo;\nworkload { arrive poisson(0.5); }\n"
                   "session { run s (~exp(1)); }\nrun { horizon 20; }\n")
    r, w = os.pipe()
    os.close(r)  # no reader at all: the first write fails with EPIPE
    p = subprocess.run([sys.executable, "-m", "serq", "ir", str(src)], stdout=w,
                       stderr=subprocess.PIPE, text=True)
    os.close(w)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    assert p.returncode == 141


# ------------------------------------------------ help, usage, small errors (issue 18)

def _all_parsers():
    import argparse
    from serq import cli
    out = []

    def walk(p, name):
        out.append((name, p))
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for n, sp in a.choices.items():
                    walk(sp, name + " " + n)
    walk(cli._parser([]), "serq")
    return out


def test_every_option_of_every_command_has_help():
    import argparse
    missing = [(name, a.option_strings or a.dest) for name, p in _all_parsers()
               for a in p._actions
               if a.help is None and not isinstance(a, argparse._SubParsersAction)]
    assert missing == []
    names = [name for name, _ in _all_parsers()]
    assert "serq run" in names and "serq trace convert" in names


def test_help_texts_print_single_percent_signs():
    for name, p in _all_parsers():
        text = p.format_help()
        assert "%%" not in text, name
    r = serq("sweep", "--help")
    assert r.returncode == 0 and "(95% Student-t over the seeds)" in " ".join(r.stdout.split())
    r = serq("run", "--help")
    for flag, words in (("--seed N", "the random seed"), ("--horizon T", "simulated seconds"),
                        ("--warmup T", "simulated seconds left out"),
                        ("--arrivals N", "stop the arrivals"), ("--trace FILE", "replay this")):
        # the option's line in the list, its help beside it
        assert re.search(r"^  %s +%s" % (re.escape(flag), words), r.stdout, re.M), flag


@pytest.mark.parametrize("argv,usage", [
    (["run", str(EXAMPLE), "--bogus"], "usage: serq run "),
    (["sweep", str(EXAMPLE), "--set", "rate=1", "--bogus"], "usage: serq sweep "),
    (["check", str(EXAMPLE), "--seed", "3"], "usage: serq check "),
    (["trace", "convert", "x.json", "--format", "azure", "--bogus"], "usage: serq trace convert "),
    (["--bogus"], "usage: serq [-h]"),
])
def test_an_unknown_option_prints_the_command_s_usage(argv, usage):
    r = serq(*argv)
    assert r.returncode == 2
    assert r.stderr.startswith(usage), r.stderr
    assert "unrecognized arguments: " in r.stderr and "Traceback" not in r.stderr


def test_a_bad_set_value_shows_the_set_text_not_the_program(tmp_path):
    p = tmp_path / "p.sq"
    p.write_text("// a comment on line 1\nlet rate = 1;\nstage s : fifo;\n"
                 "workload { arrive poisson(rate); }\nsession { run s (1); }\n"
                 "run { horizon 10; }\n")
    r = serq("check", p, "--set", "rate=2 * abc")
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == "--set rate:1:5: error: `let rate`: `abc` is not a constant"
    assert lines[1:3] == ["1 | 2 * abc", "  |     ^^^"]
    assert "a comment" not in r.stderr


@pytest.mark.parametrize("text,where,fix", [
    ("stage s : step { budget 10; cost 10ms; }\n", "1:36", "write `0.01` for 10 ms"),
    ("stage s : fifo;\nsession { run s (2min); }\n", "2:19", "write `120` for 2 min"),
    ("run { horizon 100s; }\n", "1:18", "write `100` for 100 s"),
    ("pool kv { cap 4k; }\n", "1:16", "write the number alone"),
])
def test_a_number_with_a_unit_says_numbers_carry_none(tmp_path, text, where, fix):
    p = tmp_path / "u.sq"
    p.write_text(text + "run { horizon 1; }\n")
    r = serq("check", p)
    assert r.returncode == 1
    first = r.stderr.splitlines()[0]
    assert first.startswith("%s:%s: error: " % (p, where)) and "a number carries no unit" in first
    assert "help: " in r.stderr and fix in r.stderr
    assert "times are in seconds" in r.stderr


def test_a_number_then_a_spaced_word_keeps_the_plain_error(tmp_path):
    p = tmp_path / "u.sq"
    p.write_text("let a = 10 ms;\nrun { horizon 1; }\n")
    r = serq("check", p)
    assert r.returncode == 1 and "expected `;`, found `ms`" in r.stderr
    assert "unit" not in r.stderr


def test_a_horizon_below_the_warmup_suggests_warmup(tmp_path):
    p = tmp_path / "p.sq"
    p.write_text("stage s : fifo;\nworkload { arrive poisson(1); }\nsession { run s (0.5); }\n"
                 "run { horizon 100; warmup 10; }\n")
    r = serq("run", p, "--horizon", "5")
    assert r.returncode == 1
    assert "need 0 <= warmup < horizon" in r.stderr
    assert "help: the horizon 5 (`--horizon`) is not past the program's warm-up 10: add " \
           "`--warmup T` with T below 5, such as `--warmup 0.5`" in r.stderr
    r = serq("run", p, "--warmup", "200")
    assert r.returncode == 1 and "lower `--warmup` or raise `--horizon`" in r.stderr
    r = serq("run", p, "--horizon", "5", "--warmup", "0.5", "--json", "--quiet")
    assert r.returncode == 0, r.stderr
