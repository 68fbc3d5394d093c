"""Command-line fuzz cases (issue 19, part 6): the real ``python -m serq``
as a child in a session (process group) of its own, bounded in time, with
special files and bad paths as inputs, full devices and bad targets as
outputs, signals to the group, and limits and sizes.

``cli_case(family, seed)`` runs one case and returns its outcome
(``report``, ``partial``, ``error`` (a located error, or one naming the
option or file), ``usage``, ``output error``, ``stopped``); a case that did
not end cleanly raises ``fuzz_cases.Failure`` with one of the kinds

* ``internal error``: exit 3, or a Python traceback on stderr;
* ``hang``: past the case's bound (for ``--max-wall``: the limit, plus 10 %
  or a second, plus twice the measured start-up);
* ``unplaced``: an error about the program without FILE:LINE:COL where a
  place is expected, or an option or file error not naming it;
* ``lost``: an old output file changed by a failed write, a temporary file
  left, no report when a side output failed, a stopped sweep's finished
  points not written or not marked incomplete, a stopped run's report not
  marked partial;
* ``leftover``: a process of the group still running after serq exited;
* ``unexpected status``: an exit status the case cannot end in.

Reproduce one case with ``cli_case(family, seed)`` (``describe`` prints the
command it runs).
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from fuzz_cases import Failure

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MM1 = os.path.join(ROOT, "bench", "programs", "mm1.sq")
CHAT = os.path.join(ROOT, "examples", "chat.sq")
BURST = os.path.join(ROOT, "tests", "data", "traces", "burstgpt.csv")
FAMILIES = ("cli-input", "cli-output", "cli-signal", "cli-limits")

BODY = ("let rate = 1;\nstage server : fifo;\n"
        "session { run server (~exp(0.5)); observe r = now; }\nrun { horizon 10; seed 1; }\n")
QUICK = BODY.replace("session {", "workload { arrive poisson(rate); }\nsession {")
UGLY = "let rate=1;\nstage s:fifo;\nworkload{arrive poisson(rate);}\nsession{run s(~exp(2));}\n" \
       "run{horizon 10;}\n"
# Programs that run far past any bound the cases set.
LONG = {
    "mm1": (MM1, ["--horizon", "2e8"]),
    "slow-events": ("pool p { cap 1; queue by (-key); }\nstage d : delay;\n"
                    "workload { arrive batch(20000); }\n"
                    "session { set key = ~uniform(0, 1); hold p (1) { run d (0.001); } }\n"
                    "run { horizon 1000; }\n", []),
    "batch": ("stage s : fifo;\nworkload { arrive batch(1000000); }\n"
              "session { run s (~exp(1)); observe r = now; }\nrun { horizon 1e9; }\n", []),
    "overload": ("pool kv { cap 100; }\nstage s : fifo;\nworkload { arrive poisson(50); }\n"
                 "session { set u = ~uniform(1, 20); hold kv (u) { run s (~exp(1)); } }\n"
                 "run { horizon 1e9; }\n", []),
    "chat": (CHAT, ["--horizon", "1e7"]),
}
# A sweep with quick points and one that would run for hours.
SWEEPER = ("let rate = 0.8;\nlet h = 1000;\nstage server : fifo;\n"
           "workload { arrive poisson(rate); }\n"
           "session { set t0 = now; run server (~exp(1)); observe response = now - t0; }\n"
           "run { horizon h; warmup 10; seed 1; }\n")

_state = {}  # the worker's folder of special files and its measured start-up
PARENT = [None]  # where the worker's folder is made (None: the system's temporary folder)
LEFTOVER_WAIT = 10.0  # seconds a group's processes get to end after serq exits


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "src")] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.pop("COLUMNS", None)
    return env


def workdir():
    """The worker's folder: a directory, a FIFO, an unreadable file, large
    files, random bytes, a link to /dev/zero (made once)."""
    if _state.get("pid") == os.getpid():
        return _state["dir"]
    d = tempfile.mkdtemp(prefix="serq-clifuzz-", dir=PARENT[0])
    os.mkdir(os.path.join(d, "adir"))
    if hasattr(os, "mkfifo"):
        os.mkfifo(os.path.join(d, "fifo"))
    with open(os.path.join(d, "unreadable.sq"), "w") as f:
        f.write(BODY)
    os.chmod(os.path.join(d, "unreadable.sq"), 0)
    line = "// " + "x" * 60 + "\n"
    with open(os.path.join(d, "large.sq"), "w") as f:
        f.write(line * (9 * 1024 * 1024 // len(line) + 1))  # past the 8 MiB bound
    with open(os.path.join(d, "large.csv"), "w") as f:
        f.write("session,turn,new,out,think\n" + "1,1,2,3,4\n" * 300000)
    with open(os.path.join(d, "large.json"), "w") as f:
        f.write('{"version": 11, "pad": "' + "x" * (9 * 1024 * 1024) + '"}\n')
    with open(os.path.join(d, "random.bin"), "wb") as f:
        f.write(random.Random(1).getrandbits(8 * 65536).to_bytes(65536, "little"))
    os.symlink("/dev/zero", os.path.join(d, "zero-link"))
    _state.update(pid=os.getpid(), dir=d, ir=_ir_text())
    t = []
    for _ in range(2):
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "serq", "run", MM1, "--max-events", "1", "--quiet"],
                       capture_output=True, env=_env(), timeout=120)
        t.append(time.monotonic() - t0)
    _state["startup"] = min(t)
    return d


def _ir_text():
    r = subprocess.run([sys.executable, "-m", "serq", "ir", MM1, "--horizon", "200",
                        "--warmup", "0"], capture_output=True, text=True, env=_env(), timeout=120)
    return r.stdout


# ------------------------------------------------------------------ running

class Result(object):
    def __init__(self, argv, rc, out, err, took, timed_out):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err
        self.took, self.timed_out = took, timed_out

    def describe(self):
        return "serq %s -> %s in %.1f s\nstdout: %r\nstderr: %s" % (
            " ".join(self.argv), "timeout" if self.timed_out else self.rc, self.took,
            self.out[:300], self.err[-1500:])


def _session_alive(sid):
    """Processes of session ``sid`` that are not zombies (from /proc)."""
    alive = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                alive.append(int(d))
    return alive


def start(argv, cwd, stdout=subprocess.PIPE, fsize=None):
    def pre():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if fsize is not None:
            import resource
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return subprocess.Popen([sys.executable, "-m", "serq"] + argv, cwd=cwd, env=_env(),
                            stdout=stdout, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=pre)


def finish(p, argv, t0, timeout):
    """Wait for ``p``; the result, after checking no process of its group
    runs on (``leftover``) and killing whatever does."""
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(p.pid)
        out, err = p.communicate()
    took = time.monotonic() - t0
    out = (out or b"").decode("utf-8", "replace")
    err = (err or b"").decode("utf-8", "replace")
    r = Result(argv, p.returncode, out, err, took, timed_out)
    if timed_out:
        raise Failure("hang", "no end within %s s\n%s" % (timeout, r.describe()))
    if os.path.isdir("/proc/self"):
        t1 = time.monotonic()
        while _session_alive(p.pid) and time.monotonic() - t1 < LEFTOVER_WAIT:
            time.sleep(0.1)
        left = _session_alive(p.pid)
        if left:
            _kill(p.pid)
            raise Failure("leftover", "processes %s of the group alive %s s after exit\n%s"
                          % (left, LEFTOVER_WAIT, r.describe()))
    _kill(p.pid)
    return r


def _kill(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def serq(argv, cwd, timeout=60, stdout=subprocess.PIPE, fsize=None):
    argv = [str(a) for a in argv]
    t0 = time.monotonic()
    return finish(start(argv, cwd, stdout, fsize), argv, t0, timeout)


LOCATED = re.compile(r"^(.+):(\d+):(\d+): error: ")


def error_line(err):
    for line in err.splitlines():
        if "error" in line:
            return line
    return err.splitlines()[0] if err.strip() else ""


def judge(r, anchors=(), located=None, statuses=(0, 1, 2)):
    """The outcome of ``r``, or ``Failure``.  An error (1 or 2) must be
    located or name one of ``anchors``; with ``located`` (file names), it
    must be located in one of them."""
    if r.rc == 3 or "Traceback (most recent call last)" in r.err or "internal error" in r.err:
        raise Failure("internal error", r.describe())
    if r.rc not in statuses:
        raise Failure("unexpected status", r.describe())
    if r.rc == 0:
        return "partial" if r.out.startswith("partial:") or '"partial"' in r.out else "report"
    if r.rc in (1, 2):
        line = error_line(r.err)
        m = LOCATED.match(line)
        if located is not None:
            if not (m and any(m.group(1) == f for f in located)):
                raise Failure("unplaced", "expected a place in %s\n%s" % (located, r.describe()))
        elif not m and not any(a in line for a in anchors):
            raise Failure("unplaced", "expected a place or one of %s\n%s"
                          % (list(anchors), r.describe()))
        return "error" if r.rc == 1 else "usage"
    return {5: "output error", 130: "stopped", 143: "stopped"}.get(r.rc, "status %d" % r.rc)


# ------------------------------------------------------------------ inputs

SPECIALS = ["/dev/zero", "/dev/null", "/dev/full", "/dev/urandom", "adir", "fifo", "missing",
            "nul", "unreadable.sq", "large", "random.bin", "zero-link"]


def special(rng, d, kind, argv):
    """A path of the kind drawn, for a slot that reads ``kind`` (sq, csv,
    json); no NUL for a path on the command line."""
    s = rng.choice(SPECIALS[:7] + SPECIALS[8:] if argv else SPECIALS)
    if s == "missing":
        return os.path.join(d, "none", "missing." + kind)
    if s == "nul":
        return "a\0b." + kind
    if s == "large":
        return os.path.join(d, "large." + kind)
    if s.startswith("/"):
        return s
    return os.path.join(d, s)


def _write(folder, name, text):
    p = os.path.join(folder, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def _mutated_ir(rng, text):
    """The IR with one value changed, or cut short."""
    if rng.random() < 0.3:
        return text[:rng.randrange(len(text))]
    d = json.loads(text)
    paths = []

    def walk(x, path):
        if isinstance(x, dict):
            for k in x:
                walk(x[k], path + [k])
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, path + [i])
        paths.append(path)
    walk(d, [])
    path = rng.choice(paths[:-1])
    x = d
    for k in path[:-1]:
        x = x[k]
    x[path[-1]] = rng.choice([None, -1, 0, 1e308, 2 ** 70, "x", [], {}, True, 1.5, "Num"])
    return json.dumps(d)


def case_input(rng, d, case):
    slot = rng.choice(["program", "use", "trace", "--trace", "ir", "ir-mutated", "--set",
                       "trace convert", "fmt"])
    if slot == "program":
        x = special(rng, d, "sq", True)
        cmd = rng.choice([["run", x, "--quiet"], ["check", x], ["ir", x], ["draw", x],
                          ["fmt", "--check", x]])
        return judge(serq(cmd, case), anchors=[x])
    if slot in ("use", "trace"):
        x = special(rng, d, "sq" if slot == "use" else "csv", False)
        stmt = 'use "%s";\n' % x if slot == "use" else 'workload { trace "%s"; }\n' % x
        prog = _write(case, "p.sq", stmt + BODY)
        r = serq([rng.choice(["check", "run"]), prog], case)
        return judge(r, located=[prog, x], statuses=(0, 1))
    if slot == "--trace":
        x = special(rng, d, "csv", True)
        return judge(serq(["run", MM1, "--quiet", "--trace", x], case), anchors=["--trace"])
    if slot == "ir":
        x = special(rng, d, "json", True)
        cmd = rng.choice([["ir", "--from-json", x], ["run", x, "--quiet"]])
        return judge(serq(cmd, case), anchors=[x])
    if slot == "ir-mutated":
        f = _write(case, "p.json", _mutated_ir(rng, _state["ir"]))
        cmd = rng.choice([["ir", "--from-json", f], ["run", f, "--quiet", "--max-wall", "5"],
                          ["draw", f]])
        return judge(serq(cmd, case), anchors=["IR", f])
    if slot == "--set":
        name = rng.choice(["rate", "rate", "rate", "rte"])
        value = rng.choice([special(rng, d, "sq", True), "", "(", "1e400", "0/0", "-1",
                            "~exp(1)", "rate", "1" * 400, "\u00e9", "inf"])
        cmd = rng.choice([["run", MM1, "--quiet", "--max-wall", "5"], ["check", MM1],
                          ["ir", MM1]])
        return judge(serq(cmd + ["--set", "%s=%s" % (name, value)], case),
                     anchors=["--set"])
    if slot == "trace convert":
        x = special(rng, d, "csv", True)
        fmt = rng.choice(["burstgpt", "azure", "mooncake", "sharegpt"])
        r = serq(["trace", "convert", x, "--format", fmt], case)
        return judge(r, anchors=[x, "--format"])
    x = special(rng, d, "sq", True)
    return judge(serq(["fmt", x], case), anchors=[x])


# ------------------------------------------------------------------ outputs

OLD = "the user's old file\n"


def _leftover_tmp(folder):
    try:
        return [n for n in os.listdir(folder) if n.endswith(".tmp")]
    except OSError:
        return []


def case_output(rng, d, case):
    what = rng.choice(["draw", "trace convert", "sweep", "dump", "trace-iterations", "fmt",
                       "stdout"])
    fsize = rng.choice([None, None, 0, 60, 200, 1000, 5000])
    if what == "stdout":
        cmd = rng.choice([["run", MM1, "--horizon", "2000", "--quiet"], ["ir", MM1],
                          ["draw", MM1], ["check", MM1], ["run", MM1, "--horizon", "2000",
                                                          "--json", "--quiet"]])
        with open("/dev/full", "w") as full:
            r = serq(cmd, case, stdout=full, fsize=fsize)
        out = judge(r, statuses=(0, 5))
        if r.rc == 5 and not r.err.strip().endswith("cannot write to standard output: No "
                                                    "space left on device"):
            raise Failure("unplaced", r.describe())
        return out
    target_kind = rng.choice(["old", "old", "/dev/full", "/dev/null", "missing-dir", "adir",
                              "link", "read-only", "read-only-dir"])
    ro_dir = os.path.join(case, "ro")
    if target_kind == "/dev/full" or target_kind == "/dev/null":
        target = target_kind
    elif target_kind == "missing-dir":
        target = os.path.join(case, "none", "out")
    elif target_kind == "adir":
        target = os.path.join(d, "adir")
    else:
        folder = case
        if target_kind == "read-only-dir":
            os.mkdir(ro_dir)
            folder = ro_dir
        target = os.path.join(folder, "out.sq" if what == "fmt" else "out.csv")
        _write(folder, os.path.basename(target), UGLY if what == "fmt" else OLD)
        if target_kind == "link":
            os.rename(target, target + ".real")
            os.symlink(os.path.basename(target) + ".real", target)
        if target_kind == "read-only":
            os.chmod(target, 0o444)
        if target_kind == "read-only-dir":
            os.chmod(ro_dir, 0o555)
    if what == "dump" and target_kind in ("old", "link", "read-only", "read-only-dir"):
        # --dump takes a folder: the old file is one of its CSV files
        if target_kind == "read-only-dir":
            os.chmod(ro_dir, 0o755)
        folder = os.path.join(os.path.dirname(target), "dump")
        os.mkdir(folder)
        target = os.path.join(folder, "response.csv")
        _write(folder, "response.csv", OLD)
        if target_kind == "read-only-dir":
            os.chmod(folder, 0o555)
        dump_arg = folder
    old = None
    if os.path.isfile(target) and not target.startswith("/dev/"):
        with open(target) as f:
            old = f.read()
    side = what in ("dump", "trace-iterations")
    if what == "draw":
        cmd = ["draw", MM1, "-o", target]
    elif what == "trace convert":
        cmd = ["trace", "convert", BURST, "--format", "burstgpt", "-o", target]
    elif what == "sweep":
        cmd = ["sweep", _write(case, "q.sq", QUICK), "--set", "rate=0.5,0.6", "-j", "1",
               "--quiet", "-o", target]
    elif what == "dump":
        cmd = ["run", MM1, "--horizon", "3000", "--quiet", "--dump",
               dump_arg if target_kind in ("old", "link", "read-only", "read-only-dir")
               else target]
    elif what == "trace-iterations":
        cmd = ["run", CHAT, "--horizon", "20", "--warmup", "0", "--quiet",
               "--trace-iterations", target]
    else:
        cmd = ["fmt", target]
    try:
        r = serq(cmd, case, fsize=fsize)
    finally:
        for f in (ro_dir, os.path.dirname(target)):
            if os.path.isdir(f) and f.startswith(case):
                os.chmod(f, 0o755)
    statuses = (0, 2, 5) if what in ("dump", "fmt") else (0, 5)
    out = judge(r, anchors=[target, os.path.dirname(target), "--dump", "-o"], statuses=statuses)
    if r.rc in (2, 5):
        line = error_line(r.err)
        if target not in line and os.path.dirname(target) not in line:
            raise Failure("unplaced", "the error does not name the target\n" + r.describe())
    # a target refused before the run (a folder, a missing one) may end it
    # at once; a write that fails after the run must not lose its report
    upfront = r.rc == 5 and target_kind in ("adir", "missing-dir", "read-only-dir")
    if side and not upfront and not (r.out.startswith("run: ") or r.out.startswith("partial:")):
        raise Failure("lost", "no report with a failed side output\n" + r.describe())
    if old is not None:
        with open(target) as f:
            now = f.read()
        if r.rc != 0 and now != old:
            raise Failure("lost", "the old file changed: %r\n%s" % (now[:200], r.describe()))
        if r.rc == 0 and what != "fmt" and (now == old or not now.endswith("\n")):
            raise Failure("lost", "the new file is not whole: %r\n%s" % (now[-200:],
                                                                         r.describe()))
    left = _leftover_tmp(os.path.dirname(target)) if target.startswith(case) else []
    if left:
        raise Failure("lost", "temporary files left: %s\n%s" % (left, r.describe()))
    return out


# ------------------------------------------------------------------ signals

def _incomplete(r, out_file):
    """A stopped sweep: its table marked incomplete with its finished points."""
    m = re.search(r"(\d+) of (\d+) points \((\d+) of (\d+) runs\) finished", r.err)
    if m is None:
        raise Failure("lost", "a stopped sweep does not say what finished\n" + r.describe())
    points = int(m.group(1))
    if out_file is None:
        table = r.out
    elif os.path.exists(out_file):
        with open(out_file) as f:
            table = f.read()
    elif points == 0:
        return
    else:
        raise Failure("lost", "no table written for %d finished point(s)\n%s"
                      % (points, r.describe()))
    lines = table.splitlines()
    if not lines or not lines[0].startswith("# incomplete: %d of " % points):
        raise Failure("lost", "the table is not marked incomplete: %r\n%s"
                      % (table[:200], r.describe()))
    rows = {tuple(x.split(",")[:1]) for x in lines[2:]}
    if len(rows) != points:
        raise Failure("lost", "%d point(s) finished, %d in the table\n%s"
                      % (points, len(rows), r.describe()))


def _json(text):
    try:
        return json.loads(text)
    except ValueError:
        return {}


def _whole(out):
    """A report of a run that reached its horizon, printed to its end."""
    if out.startswith("{"):
        d = _json(out)
        return bool(d) and d.get("end") == d.get("horizon") and "partial" not in d.get(
            "extended", {})
    m = re.match(r"run: horizon (\S+) s, .*end (\S+) s,", out)
    return bool(m) and m.group(1) == m.group(2) and out.endswith("\n")


def case_signal(rng, d, case):
    signum = rng.choice([signal.SIGINT, signal.SIGTERM])
    group = rng.random() < 0.7
    if rng.random() < 0.5:
        horizon = rng.choice(["2e4", "1e5", "2e8", "2e8"])
        argv = ["run", MM1, "--quiet", "--horizon", horizon] + rng.choice(
            [[], ["--json", "--extended"], ["--json"]])
        delay = rng.uniform(0, 2.5)
        out_file = None
    else:
        jobs = rng.choice(["1", "2"])
        prog = _write(case, "slow.sq", SWEEPER)
        out_file = os.path.join(case, "t.csv") if rng.random() < 0.8 else None
        argv = ["sweep", prog, "--set", "h=1000,2000,1e9,3000", "--seeds", "2", "-j", jobs,
                "--quiet"] + (["-o", out_file] if out_file else [])
        delay = rng.uniform(0, 5)
    t0 = time.monotonic()
    p = start(argv, case)
    time.sleep(delay)
    try:
        if group:
            os.killpg(p.pid, signum)
        else:
            p.send_signal(signum)
    except ProcessLookupError:
        pass
    r = finish(p, argv + ["# %s after %.2f s%s" % (signal.Signals(signum).name, delay,
                                                    " to the group" if group else "")],
               t0, 60)
    if r.rc == -signum and not r.out and not r.err:
        return "stopped"  # before Python started: the default disposition
    if r.err.rstrip().endswith("\nKeyboardInterrupt") and "/serq/" not in r.err \
            and not r.out:
        # Ctrl-C in the interpreter's own start-up (site, runpy finding the
        # package): Python's traceback, before any line of serq ran
        return "stopped in python start-up"
    if r.rc == -signum and not r.err.strip():
        # Killed by the signal's default disposition once serq had put its
        # handlers back (its output written and flushed): a shell shows the
        # same status, 128 + signum.  What was printed is checked below.
        r.rc = 128 + signum
    out = judge(r, statuses=(0, 128 + signum))
    if argv[0] == "run":
        if r.rc == 0:
            if r.out.startswith("partial:") or '"partial"' in r.out:
                raise Failure("lost", "a whole run marked partial\n" + r.describe())
            if not _whole(r.out):
                raise Failure("lost", "the report is cut short\n" + r.describe())
        elif r.out:
            word = "interrupted" if signum == signal.SIGINT else "terminated"
            # a run that ended before the signal prints its whole report
            if not (r.out.startswith("partial:") and "(%s)" % word in r.out.splitlines()[0]
                    or r.out.startswith("{") and _json(r.out).get(
                        "extended", {}).get("partial", {}).get("reason") == word
                    or _whole(r.out)):
                raise Failure("lost", "a stopped run's report is not marked partial\n"
                              + r.describe())
        elif r.err.strip() not in ("serq: interrupted", "serq: stopped by SIGTERM"):
            raise Failure("lost", "a stopped run printed nothing\n" + r.describe())
    elif r.rc != 0:
        if "marked incomplete" in r.err or "points (" in r.err:
            _incomplete(r, out_file)
        elif r.err.strip() not in ("serq: interrupted", "serq: stopped by SIGTERM"):
            raise Failure("lost", "a stopped sweep says nothing of its points\n" + r.describe())
    return out


# ------------------------------------------------------------------ limits

def _long(rng, case, quick_events=False):
    """A program of LONG; with ``quick_events``, one whose events come
    quickly (not "slow-events", not "batch", whose start takes seconds)."""
    names = sorted(LONG)
    if quick_events:
        names = [n for n in names if n not in ("slow-events", "batch")]
    name = rng.choice(names)
    prog, extra = LONG[name]
    if "\n" in prog:
        prog = _write(case, name + ".sq", prog)
    return prog, extra


def _size_program(rng):
    n = rng.choice(["0", "1", "10000", "10001", "2000000000", "9e135", "inf", "-1", "1.5",
                    "1e308", "0/0", "3000"])
    kind = rng.choice(["pool", "stage", "sum", "nested", "lets", "parens", "chain", "defs"])
    if kind == "pool":
        return "pool kv[%s] { cap 10; }\n" % n + BODY
    if kind == "stage":
        return "stage q[%s] : fifo;\n" % n + BODY
    if kind == "sum":
        return "let x = sum i in %s (i);\n" % n + BODY
    if kind == "nested":
        return "let x = sum i in %s (sum j in %s (i * j));\n" % (n, rng.choice(["10", "3000"])) \
            + BODY
    k = rng.choice([10, 1000, 20000, 200000])
    if kind == "lets":
        return "".join("let c%d = %d;\n" % (i, i) for i in range(k)) + BODY
    if kind == "parens":
        depth = rng.choice([50, 199, 201, 1000, 100000])
        return "let x = %s1%s;\n" % ("(" * depth, ")" * depth) + BODY
    if kind == "chain":
        return "let x = %s;\n" % " + ".join(["1"] * min(k, 50000)) + BODY
    return "".join("def f%d(x) = %s;\n" % (i, "x" if i == 0 else "f%d(x) + 1" % (i - 1))
                   for i in range(min(k, 3000))) + \
        BODY.replace("observe r = now", "observe r = f%d(1)" % (min(k, 3000) - 1))


def case_limits(rng, d, case):
    what = rng.choice(["wall", "wall", "events", "memory", "sizes", "sizes", "sweep"])
    if what == "wall":
        prog, extra = _long(rng, case)
        wall = round(rng.uniform(0.2, 3.0), 2)
        r = serq(["run", prog, "--quiet", "--max-wall", wall] + extra, case, timeout=120)
        out = judge(r, statuses=(0,))
        bound = wall + max(1.0, 0.1 * wall) + 2 * _state["startup"]
        if r.took > bound:
            raise Failure("hang", "--max-wall %s took %.2f s (bound %.2f s)\n%s"
                          % (wall, r.took, bound, r.describe()))
        return out
    if what == "events":
        prog, extra = _long(rng, case, quick_events=True)
        n = rng.choice([1, 10, 1000, 4095, 4097, 50000])
        r = serq(["run", prog, "--quiet", "--json", "--extended", "--max-events", n,
                  "--max-wall", "10"] + extra, case, timeout=120)
        out = judge(r, statuses=(0,))
        rep = json.loads(r.out)
        part = rep.get("extended", {}).get("partial")
        if part and part["reason"] == "--max-events %d" % n and rep["events"] != n:
            raise Failure("hang", "--max-events %d ran %d events\n%s"
                          % (n, rep["events"], r.describe()))
        if rep["events"] > n:
            raise Failure("hang", "--max-events %d ran %d events\n%s"
                          % (n, rep["events"], r.describe()))
        return out
    if what == "memory":
        prog, extra = _long(rng, case)
        mem = rng.choice(["64M", "200M", "500M", "1G"])
        r = serq(["run", prog, "--quiet", "--max-memory", mem, "--max-wall", "4"] + extra, case,
                 timeout=120)
        out = judge(r, anchors=["--max-memory"], statuses=(0, 1))
        if r.rc == 1 and "out of memory (--max-memory %s" % mem not in r.err:
            raise Failure("unplaced", r.describe())
        return out
    if what == "sizes":
        prog = _write(case, "p.sq", _size_program(rng))
        cmd = rng.choice([["check", prog], ["run", prog, "--quiet", "--max-wall", "5"],
                          ["ir", prog]])
        r = serq(cmd, case, stdout=subprocess.DEVNULL if cmd[0] == "ir" else subprocess.PIPE,
                 timeout=90)
        return judge(r, located=[prog], statuses=(0, 1))
    prog = _write(case, "q.sq", QUICK)
    n = rng.choice([1, 2, 3, 100, 10001, 100000000])
    seeds = rng.choice([1, 2, 60, 10 ** 6])
    argv = ["sweep", prog, "--set", "rate=0.1:0.9:%d" % n, "--seeds", seeds, "-j", "1",
            "--quiet"]
    limit = 10000
    if rng.random() < 0.5:
        limit = rng.choice([1, 3, 6, 10000])
        argv += ["--max-runs", limit]
    runs = n * seeds
    if 6 < runs <= limit:
        limit = 6  # keep what runs small: this grid must be refused
        argv += ["--max-runs", limit]
    r = serq(argv, case, timeout=60)
    out = judge(r, anchors=["--max-runs", "--set"], statuses=(0, 2))
    if (r.rc == 0 and runs > limit) or (r.rc == 2 and runs <= limit and "--max-runs" in r.err):
        raise Failure("unexpected status", "%d runs, --max-runs %d\n%s"
                      % (runs, limit, r.describe()))
    if r.rc == 2 and r.took > 20:
        raise Failure("hang", "the refusal took %.1f s\n%s" % (r.took, r.describe()))
    return out


CASES = {"cli-input": case_input, "cli-output": case_output, "cli-signal": case_signal,
         "cli-limits": case_limits}


def cli_case(family, seed):
    """One command-line case (see the module's doc): its outcome, or
    ``Failure``."""
    d = workdir()
    case = tempfile.mkdtemp(prefix="case-", dir=d)
    try:
        return CASES[family](random.Random("%s %d" % (family, seed)), d, case)
    finally:
        remove_tree(case)


def remove_tree(folder):
    """``folder`` removed, its read-only folders (the output cases') first
    made writable."""
    for root, dirs, _files in os.walk(folder):
        for x in dirs:
            try:
                os.chmod(os.path.join(root, x), 0o755)
            except OSError:
                pass
    shutil.rmtree(folder, ignore_errors=True)
