"""A run can be stopped early — by an event count, a wall-clock budget or
Ctrl-C — and still prints its report, marked partial."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MM1 = ROOT / "bench" / "programs" / "mm1.sq"


def serq(*args):
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True)


def test_max_events_gives_a_partial_report():
    r = serq("run", MM1, "--max-events", "5000", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["events"] == 5000
    part = d["extended"]["partial"]
    assert part == {"reason": "--max-events 5000", "at": d["end"], "events": 5000}
    assert list(d)[-1] == "extended" and d["end"] < d["horizon"]


def test_full_run_has_no_partial_key():
    r = serq("run", ROOT / "tests" / "programs" / "sim" / "fork_agents.sq", "--json")
    assert "extended" not in json.loads(r.stdout)


def test_max_wall_stops_with_a_note():
    t0 = time.monotonic()
    r = serq("run", MM1, "--max-wall", "0.3", "--quiet")
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 10
    assert r.stdout.startswith("partial: the run stopped at t = ")
    assert "(--max-wall 0.3)" in r.stdout.splitlines()[0]


SLOW_EVENTS = """
// Every event is slow: 20000 holds wait in a queue ordered by a key, and
// each admission orders the whole queue again (about 0.2 s an event).
pool p { cap 1; queue by (-key); }
stage d : delay;
workload { arrive batch(20000); }
session {
  set key = ~uniform(0, 1);
  hold p (1) { run d (0.001); }
}
run { horizon 1000; }
"""


def test_max_wall_holds_when_events_are_slow(tmp_path):
    # The wall clock is read at every event: with the old check every 4096
    # events this run went on for minutes past its limit.
    prog = tmp_path / "slow_events.sq"
    prog.write_text(SLOW_EVENTS)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "serq", "run", str(prog), "--max-wall", "1",
                        "--json"], capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["extended"]["partial"]["reason"] == "--max-wall 1"
    assert d["events"] < 4096
    assert elapsed < 15


def _wait_for_cpu(pid, seconds, limit=60.0):
    """Until process ``pid`` has used ``seconds`` of CPU (from /proc), or
    2.5 s of wall time where /proc is not there; a loaded machine delays
    the child's imports by far more than a fixed sleep allows for."""
    stat = "/proc/%d/stat" % pid
    if not os.path.exists(stat):
        time.sleep(2.5)
        return
    tick = os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        try:
            with open(stat) as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            return
        if (int(fields[11]) + int(fields[12])) / tick >= seconds:
            return
        time.sleep(0.05)


def test_ctrl_c_prints_the_partial_report_and_exits_130():
    # A run far longer than the wait, so the signal lands inside the run
    # (not during the imports) however slow the machine.
    p = subprocess.Popen([sys.executable, "-m", "serq", "run", str(MM1), "--quiet",
                          "--horizon", "2e8"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         # a shell's background job ignores SIGINT, and a
                         # child would inherit that: Ctrl-C as at a terminal
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _wait_for_cpu(p.pid, 1.0)  # past the imports: the signal lands inside the run
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()  # (a run that did not stop is not left running)
    assert p.returncode == 130, err
    assert out.startswith("partial: the run stopped at t = ")
    assert "(interrupted)" in out.splitlines()[0]
    assert "Traceback" not in err
