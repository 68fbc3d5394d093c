"""Input files (issue 8): a malformed trace names its row and column and
what it expected; a missing or unreadable program, trace or `use` file, an
unknown `--set`/`--def` name and a `use` cycle each get a clear message,
never a traceback."""
import subprocess
import sys

PROGRAM = ('let rate = 2;\ndef svc(x) = x / 2;\nstage s : fifo;\n'
           'workload { arrive poisson(rate); trace "t.csv"; }\n'
           'session { turn; run s (svc(new)); }\nrun { horizon 10; }\n')


def serq(*args, cwd=None):
    r = subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                       capture_output=True, text=True, cwd=cwd)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    return r


def setup(tmp_path, trace="session,turn,new,out,think\n1,1,2,3,4\n"):
    (tmp_path / "p.sq").write_text(PROGRAM)
    (tmp_path / "t.csv").write_text(trace)
    return tmp_path / "p.sq"


def test_trace_bad_field_names_row_column_and_what_was_expected(tmp_path):
    p = setup(tmp_path, "session,turn,new,out,think\n1,1,2,3,4\n1,2,2,x3,4\n")
    r = serq("run", p)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == "%s:3:7: error: trace %s: line 3: column 4 (out): invalid number `x3`" \
        % (tmp_path / "t.csv", tmp_path / "t.csv")
    assert lines[1] == "3 | 1,2,2,x3,4" and lines[2] == "  |       ^^"
    assert lines[-1] == "help: replace `out` with a numeric value"


def test_trace_row_with_too_few_fields(tmp_path):
    p = setup(tmp_path, "1,1,2\n")
    r = serq("check", p)
    assert r.returncode == 1
    assert "t.csv:1:1: error: trace" in r.stderr and "expected 5 or 6 fields, got 3" in r.stderr
    assert "help: use session,turn,new,out,think[,forced]" in r.stderr


def test_missing_trace_and_missing_trace_override(tmp_path):
    p = setup(tmp_path)
    (tmp_path / "t.csv").unlink()
    r = serq("check", p)
    assert r.returncode == 1 and "cannot read trace" in r.stderr and "t.csv" in r.stderr
    assert "help: trace paths are relative to the program's directory" in r.stderr
    setup(tmp_path)
    r = serq("run", p, "--trace", tmp_path / "none.csv")
    assert r.returncode == 1 and "cannot read trace %s" % (tmp_path / "none.csv") in r.stderr


def test_missing_or_unreadable_program(tmp_path):
    r = serq("run", tmp_path / "none.sq")
    assert r.returncode == 2
    assert r.stderr.startswith("serq: error: cannot read %s: No such file" % (tmp_path / "none.sq"))
    (tmp_path / "dir.sq").mkdir()
    r = serq("check", tmp_path / "dir.sq")
    assert r.returncode == 2 and "cannot read" in r.stderr and "directory" in r.stderr


def test_missing_use_file_is_located_at_the_use(tmp_path):
    f = tmp_path / "u.sq"
    f.write_text('let a = 1;\nuse "lib/none.sq";\nrun { horizon 1; }\n')
    r = serq("check", f)
    assert r.returncode == 1
    assert r.stderr.startswith("%s:2:1: error: cannot read `lib/none.sq`: no such file in any "
                               "place a `use` looks" % f)
    assert "note: looked for %s (the program's folder)" % (tmp_path / "lib" / "none.sq") in r.stderr


def test_unknown_set_and_def_list_the_declared_names(tmp_path):
    p = setup(tmp_path)
    r = serq("check", p, "--set", "rte=3")
    assert r.returncode == 1 and "`rte`" in r.stderr
    assert "help: the program's constants are: rate" in r.stderr
    r = serq("check", p, "--def", "sv=~exp(1)")
    assert r.returncode == 1 and "`sv`" in r.stderr
    assert "help: the expression definitions are: svc" in r.stderr


def test_use_cycle_is_a_warning_not_recursed(tmp_path):
    (tmp_path / "a.sq").write_text('use "b.sq";\ndef fa(x) = x;\n')
    (tmp_path / "b.sq").write_text('use "a.sq";\ndef fb(x) = x;\n')
    main = tmp_path / "main.sq"
    main.write_text('use "a.sq";\nsession { set y = fa(1) + fb(2); }\nrun { horizon 1; }\n')
    r = serq("check", main)
    # 0.1.3 reads each file once: the closing `use` reads nothing
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith('%s:1:1: warning: `use "a.sq"` is a cycle (a.sq uses b.sq uses '
                               'a.sq)' % (tmp_path / "b.sq"))
    r = serq("check", "-W", "error", main)
    assert r.returncode == 1 and ": error: `use \"a.sq\"` is a cycle" in r.stderr


def test_set_errors_name_the_option(tmp_path):
    # issue 19's CLI fuzzing: an unknown `--set` name was "unknown constant
    # `rte` in an override", naming no option; a NaN given as a number was
    # placed at the `let` with no word of `--set`
    p = setup(tmp_path)
    r = serq("check", p, "--set", "rte=3")
    assert r.returncode == 1
    assert r.stderr.startswith("error: `--set rte`: unknown constant `rte` in an override\n")
    r = serq("check", p, "--set", "rate=nan")
    assert r.returncode == 1
    assert r.stderr.startswith("%s:1:5: error: `let rate` (set by `--set rate`) is NaN" % p)
