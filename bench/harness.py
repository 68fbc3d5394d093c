"""Time serq against the reference on the same programs, with the same seed.

    python bench/harness.py [PROGRAM.sq ...] [--repeat N] [--horizon T]
                            [--cores compiled,interpreted,pypy]
                            [--python INTERPRETER] [--skip-slow]

For each program (default: every ``bench/programs/*.sq``, then
``startup``) the two simulators run alternately ``N`` times (default 3), in
fresh processes so that neither warms the other's caches; the reports must
be byte-identical.  Prints the median CPU time of each, the ratio
(reference time / serq time: above 1 means serq is faster) and serq's peak
memory.

``--cores`` names the serq columns, run side by side and alternating with
the reference: ``compiled`` (this interpreter, the mypyc-compiled core),
``interpreted`` (the same with ``SERQ_INTERPRETED=1``) and ``pypy``
(``pypy3``); the default is ``compiled``, or ``--python``'s interpreter
alone (the reference always runs under this one; serq is imported from
``src/``, so it need not be installed there).  Times are CPU seconds of
the compile and the run, the start-up of the interpreter excluded.
``--skip-slow`` leaves out the programs whose comments mark them
``// bench: slow``.

``startup`` (a name among the programs, or in the default list) is the
start-up row: the one-event program of ``bench/startup.py`` given to the
``serq run --json`` command and to pyserq's ``run(compile(path))``, each a
whole process timed from its own resource usage (user + system CPU, the
interpreter's start-up and imports included, as a user waits for them; peak
memory likewise); serq's printed report must be pyserq's JSON and a newline.
``--horizon`` does not apply to it.  (``bench/startup.py`` times the same
commands more often, ``serq check`` too, and the largest imports.)

Peak memory has a floor: Linux counts in a process's peak the memory of the
process that started it, as it was then (the new process begins in its
parent's memory and keeps the peak across ``exec``), so every row reads at
least this script's own size, about 14 MB under CPython 3.11; the figures
above that are the program's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from startup import PROGRAM as STARTUP_PROGRAM, SERQ as SERQ_COMMAND

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
SLOW_MARK = "// bench: slow"

SERQ = r"""
import json, resource, sys, time
from serq.compiler import compile_program
from serq.report.jsonfmt import report_json
from serq.runner import run_program
kw = json.loads(sys.argv[2])
t0 = time.process_time()
text = report_json(run_program(compile_program(sys.argv[1], **kw)))
t = time.process_time() - t0
print(json.dumps({"time": t, "report": text,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

REFERENCE = r"""
import json, resource, sys, time
import pyserq
kw = json.loads(sys.argv[2])
t0 = time.process_time()
text = pyserq.run(pyserq.compile(path=sys.argv[1], **kw)).json()
t = time.process_time() - t0
print(json.dumps({"time": t, "report": text,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


#: The start-up row's reference command: the report's JSON on stdout.
REFERENCE_STARTUP = ("import sys, pyserq; "
                     "sys.stdout.write(pyserq.run(pyserq.compile(path=sys.argv[1])).json())")

#: The start-up row's name among the programs.
STARTUP = "startup"


def run_env(extra_env=None):
    env = dict(os.environ)
    # An installed serq imports from bytecode: a run that compiled every
    # module from source (PYTHONDONTWRITEBYTECODE, set in some sandboxes)
    # would measure Python's compiler (about 0.1 s a run).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra_env or {})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    return env


def once(code, program, kwargs, python, extra_env=None):
    out = subprocess.run([python, "-c", code, str(program), json.dumps(kwargs)],
                         capture_output=True, text=True, env=run_env(extra_env))
    if out.returncode:
        raise SystemExit("%s failed on %s:\n%s" % (python, program, out.stderr))
    return json.loads(out.stdout)


def whole_process(cmd, env):
    """Run ``cmd``; its stdout, and its own CPU time (user + system) and
    peak memory (KB), read from its resource usage when it is reaped."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _pid, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)  # (reaped here, not by Popen)
        out.seek(0)
        err.seek(0)
        if p.returncode:
            raise SystemExit("%s failed:\n%s" % (" ".join(cmd), err.read().decode()))
        return (out.read().decode(), usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def startup_once(python, path, extra_env=None, reference=False):
    """One start-up run, as ``once`` returns it: serq's ``serq run --json``
    of ``path`` (its report without the newline it prints last) or, with
    ``reference``, pyserq's."""
    if reference:
        cmd = [python, "-c", REFERENCE_STARTUP, path]
    else:
        cmd = [python, "-c", SERQ_COMMAND, "run", "--json", path]
    text, t, peak = whole_process(cmd, run_env(extra_env))
    if not reference:
        if not text.endswith("\n"):
            raise SystemExit("serq run --json printed no newline after its report")
        text = text[:-1]
    return {"time": t, "report": text, "peak_kb": peak}


#: The serq columns: name -> (interpreter, environment); None is this one.
CORES_ALL = {"compiled": (None, {}),
             "interpreted": (None, {"SERQ_INTERPRETED": "1"}),
             # (the nursery `serq` asks PyPy for on the command line:
             # src/serq/cli/nursery.py; these runs call the API in-process)
             "pypy": ("pypy3", {"PYPY_GC_NURSERY": "32MB"})}
CORES = ["compiled"]


def warm_bytecode(args):
    """Write the bytecode of serq's modules (and the reference's imports)
    for each interpreter the columns use, before any run is timed."""
    pythons = {sys.executable}
    if args.python:
        pythons.add(args.python)
    if args.cores and "pypy" in args.cores.split(","):
        pythons.add(CORES_ALL["pypy"][0])
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for python in pythons:
        subprocess.run([python, "-m", "compileall", "-q", str(SRC)], env=env,
                       capture_output=True)


def is_slow(program):
    """Whether a comment line of the program is the slow mark."""
    with open(program) as f:
        return any(line.strip() == SLOW_MARK for line in f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--horizon", type=float)
    ap.add_argument("--python", default=None,
                    help="the interpreter for serq (e.g. pypy3): one column")
    ap.add_argument("--cores", default=None,
                    help="serq columns, comma-separated: compiled, interpreted, pypy")
    ap.add_argument("--skip-slow", action="store_true",
                    help="leave out programs marked `%s`" % SLOW_MARK)
    args = ap.parse_args()
    programs = [Path(p) for p in args.programs] or (sorted((HERE / "programs").glob("*.sq"))
                                                    + [Path(STARTUP)])
    if args.skip_slow:
        programs = [p for p in programs if str(p) == STARTUP or not is_slow(p)]
    kwargs = {"horizon": args.horizon} if args.horizon else {}
    warm_bytecode(args)
    cores = CORES if args.cores is None else args.cores.split(",")
    if args.python is not None:
        cores = ["python"]
    for c in cores:
        if c not in ("python",) + tuple(CORES_ALL):
            raise SystemExit("unknown core %r: choose from %s" % (c, ", ".join(CORES_ALL)))
    head = ["%-16s" % "program"] + ["%10s" % (c + " s") for c in cores] + ["%9s" % "pyserq s"]
    head += ["%9s" % ("r " + c[:7]) for c in cores] + ["%9s" % ("MB " + c[:6]) for c in cores]
    print(" ".join(head) + "  reports")
    with tempfile.TemporaryDirectory() as tmp:
        one = os.path.join(tmp, "one.sq")
        with open(one, "w") as f:
            f.write(STARTUP_PROGRAM)
        for program in programs:
            row(program, one, cores, kwargs, args)


def row(program, one, cores, kwargs, args):
    """Time ``program`` (the start-up row: ``one``, the one-event program)
    and print its line."""
    start = str(program) == STARTUP

    def serq_once(c):
        python, env = (args.python, {}) if c == "python" else CORES_ALL[c]
        if start:
            return startup_once(python or sys.executable, one, env)
        return once(SERQ, program, kwargs, python or sys.executable, env)

    def reference_once():
        if start:
            return startup_once(sys.executable, one, reference=True)
        return once(REFERENCE, program, kwargs, sys.executable)

    if start:  # (untimed: each interpreter's first process fills its caches)
        reference_once()
        for c in cores:
            serq_once(c)
    times = {c: [] for c in cores}
    peaks = {c: 0 for c in cores}
    ref_t = []
    same = True
    for _ in range(args.repeat):
        b = reference_once()
        ref_t.append(b["time"])
        for c in cores:
            a = serq_once(c)
            times[c].append(a["time"])
            peaks[c] = max(peaks[c], a["peak_kb"])
            same = same and a["report"] == b["report"]
    r = statistics.median(ref_t)
    med = {c: statistics.median(times[c]) for c in cores}
    line = ["%-16s" % program.stem] + ["%10.3f" % med[c] for c in cores] + ["%9.3f" % r]
    line += ["%9.3f" % (r / med[c]) for c in cores] + ["%9.1f" % (peaks[c] / 1024)
                                                      for c in cores]
    print(" ".join(line) + "  " + ("identical" if same else "DIFFER"))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
