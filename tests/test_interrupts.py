"""Ctrl-C (SIGINT to the process group) and SIGTERM keep the work done:
`serq run` prints its partial report, `serq sweep` writes its finished
points marked incomplete, leaves no process behind and resumes on a rerun,
and `serq.run` raises KeyboardInterrupt with the partial report."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from test_limits import _wait_for_cpu

ROOT = Path(__file__).resolve().parent.parent
MM1 = ROOT / "bench" / "programs" / "mm1.sq"

# The horizon is a constant: a sweep over it has quick points and one that
# would run for hours, where the signal lands.
PROGRAM = """
let rate = 0.8;
let h = 1000;
stage server : fifo;
workload { arrive poisson(rate); }
session { set t0 = now; run server (~exp(1)); observe response = now - t0; }
run { horizon h; warmup 10; seed 1; }
"""
FOREVER = "1e9"


def start(args, cwd=None):
    """``serq ARGS`` in a session of its own (its workers too), with
    SIGINT's default disposition: pytest may run as a shell's background
    job, which ignores SIGINT, and a child would inherit that."""
    return subprocess.Popen([sys.executable, "-m", "serq"] + [str(a) for a in args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def finish(p, timeout=60):
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # nothing left running, whatever happened
        except (ProcessLookupError, PermissionError):
            pass
    return out, err


def session_processes(sid):
    """``(pid, state)`` of the processes in session ``sid`` (from /proc)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == sid:
            found.append((int(d), fields[0]))
    return found


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")


def wait_for_runs(journal, n, p, limit=120.0):
    """Until the sweep's journal holds ``n`` finished runs."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        try:
            with open(journal) as f:
                if f.read().count("\n") >= n + 1:  # and the header line
                    return
        except OSError:
            pass
        if p.poll() is not None:
            pytest.fail("the sweep ended early: %s" % (p.communicate(),))
        time.sleep(0.05)
    pytest.fail("the sweep finished no %d runs in %d s" % (n, limit))


def assert_nothing_left(sid):
    """No process of the sweep's session is running once it has exited
    (a worker killed with the fork server may stay a zombie until init
    reaps it: it is not running, and it goes within seconds)."""
    alive = [p for p in session_processes(sid) if p[1] != "Z"]
    assert alive == [], alive
    t0 = time.monotonic()
    while session_processes(sid) and time.monotonic() - t0 < 10:
        time.sleep(0.1)
    assert session_processes(sid) == []


@pytest.fixture
def program(tmp_path):
    f = tmp_path / "slow.sq"
    f.write_text(PROGRAM)
    return f


# ------------------------------------------------------------------ run

def test_sigterm_prints_the_partial_report_and_exits_143():
    p = start(["run", MM1, "--quiet", "--horizon", "2e8", "--json", "--extended"])
    _wait_for_cpu(p.pid, 1.0)  # past the imports: the signal lands inside the run
    p.send_signal(signal.SIGTERM)
    out, err = finish(p)
    assert p.returncode == 143, err
    d = json.loads(out)
    assert d["extended"]["partial"]["reason"] == "terminated"
    assert d["end"] < 2e8 and d["extended"]["partial"]["at"] == d["end"]
    assert "Traceback" not in err


def test_ctrl_c_to_the_group_prints_the_partial_report():
    p = start(["run", MM1, "--quiet", "--horizon", "2e8"])
    _wait_for_cpu(p.pid, 1.0)
    os.killpg(p.pid, signal.SIGINT)
    out, err = finish(p)
    assert p.returncode == 130, err
    assert out.startswith("partial: the run stopped at t = ") and "(interrupted)" in out


# ------------------------------------------------------------------ sweep

@needs_proc
@pytest.mark.parametrize("jobs,how,status", [
    ("1", "group-SIGINT", 130),
    ("2", "group-SIGINT", 130),
    ("1", "SIGTERM", 143),
    ("2", "SIGTERM", 143),
    ("2", "group-SIGTERM", 143),
])
def test_a_stopped_sweep_keeps_its_finished_points(program, tmp_path, jobs, how, status):
    out = tmp_path / "t.csv"
    grid = "h=1000,2000,%s,3000,%s" % (FOREVER, FOREVER)
    p = start(["sweep", program, "--set", grid, "--seeds", "2", "-j", jobs, "--quiet", "-o", out])
    wait_for_runs(str(out) + ".runs", 4, p)  # the first two points: the third runs on
    time.sleep(0.3)
    signum = signal.SIGINT if how.endswith("SIGINT") else signal.SIGTERM
    if how.startswith("group"):
        os.killpg(p.pid, signum)
    else:
        p.send_signal(signum)
    stdout, err = finish(p)
    assert p.returncode == status, err
    assert_nothing_left(p.pid)
    assert "Traceback" not in err
    assert "2 of 5 points (4 of 10 runs) finished in %s, marked incomplete" % out in err
    assert "run the same command again to resume" in err
    lines = out.read_text().splitlines()
    assert lines[0] == "# incomplete: 2 of 5 points (4 of 10 runs) finished; the sweep was " \
                       "interrupted"
    assert lines[1] == "h,metric,mean,ci_low,ci_high,n_seeds"
    rows = [line.split(",") for line in lines[2:]]
    # Only the finished points, each with both seeds: the stopped run is not in.
    assert sorted({r[0] for r in rows}) == ["1000", "2000"]
    ends = {r[0]: r for r in rows if r[1] == "run.end"}
    assert ends["1000"][2] == "1000" and ends["2000"][2] == "2000"
    assert {r[5] for r in rows if r[1] == "run.events"} == {"2"}
    # The journal has the four runs; the rerun takes them.  (The same
    # command would run the hours-long point again: the quick grid shares
    # its first two points, which are the same runs, recognised by key.)
    quick = "h=1000,2000,4000,3000,5000"
    r = subprocess.run([sys.executable, "-m", "serq", "sweep", str(program), "--set", quick,
                        "--seeds", "2", "-j", jobs, "--quiet", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "resuming: 4 of 10 runs were finished before (kept in %s.runs)" % out in r.stderr
    assert not os.path.exists(str(out) + ".runs")  # complete: the journal is gone
    fresh = subprocess.run([sys.executable, "-m", "serq", "sweep", str(program), "--set", quick,
                            "--seeds", "2", "-j", "1", "--quiet"],
                           capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stderr
    assert out.read_text() == fresh.stdout  # byte for byte an uninterrupted sweep's table
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


def test_ctrl_c_without_an_output_file_prints_the_finished_points(program):
    p = start(["sweep", program, "--set", "h=1000,%s" % FOREVER, "-j", "1", "--quiet"])
    _wait_for_cpu(p.pid, 2.0)
    os.killpg(p.pid, signal.SIGINT)
    out, err = finish(p)
    assert p.returncode == 130, err
    assert out.startswith("# incomplete: 1 of 2 points (1 of 2 runs) finished")
    assert "with `-o FILE` a rerun resumes instead" in err


def test_the_journal_is_only_taken_for_the_same_runs(program, tmp_path):
    from serq.sweep.grid import parse_axis
    from serq.sweep.journal import run_keys
    from serq.sweep.run import Sweep, compile_points
    def keys(text, **kw):
        f = tmp_path / "p.sq"
        f.write_text(text)
        return run_keys(compile_points(Sweep(str(f), [parse_axis("h=1000,2000")], **kw)), [1, 2])
    a = keys(PROGRAM)
    assert a == keys("// a comment changes no run\n" + PROGRAM)
    assert len(set(a.values())) == 4
    b = keys(PROGRAM.replace("rate = 0.8", "rate = 0.7"))
    assert not set(a.values()) & set(b.values())
    c = keys(PROGRAM, warmup=20.0)
    assert not set(a.values()) & set(c.values())


def test_a_foreign_journal_is_refused(program, tmp_path):
    out = tmp_path / "t.csv"
    (tmp_path / "t.csv.runs").write_text("my own notes\n")
    r = subprocess.run([sys.executable, "-m", "serq", "sweep", str(program), "--set",
                        "h=1000,2000", "-j", "1", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and "is not the runs file of a serq sweep" in r.stderr
    assert (tmp_path / "t.csv.runs").read_text() == "my own notes\n" and not out.exists()


def test_an_incomplete_table_reads_back_with_its_mark(tmp_path):
    from serq.sweep.table import Row, Table, read, write
    t = Table(["h"], [Row((1000.0,), "run.end", 1000.0, None, None, 1)],
              "incomplete: 1 of 2 points (1 of 2 runs) finished; the sweep was interrupted")
    write(t, str(tmp_path / "t.csv"))
    back = read(str(tmp_path / "t.csv"))
    assert back.incomplete == t.incomplete and back.rows == t.rows


# ------------------------------------------------------------------ API

def test_api_run_raises_keyboard_interrupt_with_the_partial_report():
    code = textwrap.dedent("""
        import json, sys
        import serq
        prog = serq.compile(%r, horizon=2e8)
        try:
            serq.run(prog)
        except KeyboardInterrupt as e:
            r = e.report
            print(json.dumps({"type": type(e).__name__, "partial": r.partial, "end": r.end,
                              "horizon": r.horizon, "is_interrupted": isinstance(e, serq.Interrupted),
                              "repr": repr(r)}))
            sys.exit(0)
        print("returned")
    """ % str(MM1))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _wait_for_cpu(p.pid, 1.5)
    os.killpg(p.pid, signal.SIGINT)
    out, err = finish(p)
    assert p.returncode == 0, err
    d = json.loads(out)
    assert d["type"] == "Interrupted" and d["is_interrupted"]
    assert d["partial"] == "interrupted" and d["end"] < d["horizon"] == 2e8
    assert "partial='interrupted'" in d["repr"]


def test_api_report_of_a_whole_run_is_not_partial():
    import serq
    r = serq.run(serq.compile(str(MM1), horizon=2000))
    assert r.partial is None and "partial" not in repr(r)


# ------------------------------------------------------------------ start-up and worker start

def test_a_fork_server_dying_while_a_worker_starts_is_the_signal_not_a_bug():
    # issue 19's CLI fuzzing: SIGTERM to the group while `sweep -j 2` started
    # its workers killed the fork server first; starting a worker raised
    # EOFError, which ended in "internal error"
    from serq.interrupt import WorkStopped
    from serq.sweep import backends

    class Stop(object):
        signum = None

    stop = Stop()

    class Executor(object):
        def submit(self, fn, task):
            stop.signum = signal.SIGTERM  # the handler ran; the fork server is gone
            raise EOFError("unexpected EOF")

        def shutdown(self, wait=True, cancel_futures=False):
            pass

    pool = backends.LocalPool(2, None)
    pool.ex = Executor()
    with pytest.raises(WorkStopped) as info:
        pool.run([(0, 1, None), (1, 2, None)], stop, lambda r: None)
    assert info.value.reason == "interrupted" and info.value.results == []


@needs_proc
def test_stopping_a_pool_closes_its_call_queue_once(tmp_path):
    # CI at stop 25: SIGTERM to `sweep -j 2` printed "Exception in thread
    # ...: OSError: [Errno 9] Bad file descriptor".  The pool's manager
    # thread (its workers gone) and the queue's feeder thread (sent its
    # sentinel by the finalizers _stop_helpers runs) closed one pipe side
    # by side.  Here every close is made slow, so that the two overlap
    # whenever they run together.
    (tmp_path / "drive.py").write_text(textwrap.dedent("""
        import multiprocessing, threading, time
        import multiprocessing.connection as mc
        from concurrent.futures import ProcessPoolExecutor
        from serq.sweep import backends
        errors = []
        threading.excepthook = lambda a: errors.append(repr(a.exc_value))
        close = mc.Connection._close
        def slow_close(self):
            time.sleep(0.02)
            close(self)
        mc.Connection._close = slow_close
        if __name__ == "__main__":
            for _ in range(3):
                ex = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver"))
                for i in range(4):
                    ex.submit(time.sleep, 100)
                time.sleep(0.3)
                backends._stop_workers(ex, backends._workers(ex))
                backends._stop_helpers()
            time.sleep(0.3)
            print(errors)
    """))
    r = subprocess.run([sys.executable, "drive.py"], cwd=str(tmp_path), capture_output=True,
                       text=True, timeout=60)  # (without the fix it can hang)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[]\n", r.stdout
    assert "Traceback" not in r.stderr, r.stderr


def test_ctrl_c_while_the_command_line_is_imported_is_no_traceback():
    # Ctrl-C before main's handler is in place (the CLI's imports) printed
    # Python's KeyboardInterrupt traceback; here it lands on an import
    code = textwrap.dedent("""
        import runpy, sys
        import serq  # (its finder of the interpreted core goes first on the path)
        class CtrlC(object):
            @staticmethod
            def find_spec(name, path=None, target=None):
                if name == "serq.cli.colour":
                    raise KeyboardInterrupt()
                return None
        sys.meta_path.insert(0, CtrlC)
        sys.argv = ["serq", "check", %r]
        runpy.run_module("serq", run_name="__main__", alter_sys=True)
    """ % str(MM1))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 130, r.stderr
    assert r.stderr == "serq: interrupted\n"


def test_a_signal_caught_inside_exec_of_a_string_keeps_the_exit_status(tmp_path):
    # SIGTERM landing while an import made a dataclass (exec of a string):
    # caught and said, but CPython had marked the KeyboardInterrupt unhandled
    # and `python -m serq` ended killed by SIGINT (-2), not with 143.  The
    # driver runs as `-m` too, as the fuzzer's processes do.
    (tmp_path / "drive.py").write_text(textwrap.dedent("""
        import runpy, signal, sys
        import serq.cli as cli
        def dispatch(args):
            cli.STOP[0].handle(signal.SIGTERM, None)  # what the handler does
        def in_exec(args):
            exec("dispatch(args)", {"dispatch": dispatch, "args": args})
        cli._dispatch = in_exec
        sys.argv = ["serq", "check", %r]
        runpy.run_module("serq", run_name="__main__", alter_sys=True)
    """ % str(MM1)))
    r = subprocess.run([sys.executable, "-m", "drive"], cwd=str(tmp_path), capture_output=True,
                       text=True, timeout=60)
    assert r.stderr == "serq: stopped by SIGTERM\n"
    assert r.returncode == 143, r.stderr
