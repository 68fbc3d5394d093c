"""Time serq against the reference on the same programs, with the same seed.

    python bench/harness.py [PROGRAM.sq ...] [--repeat N] [--horizon T]
                            [--cores compiled,interpreted,pypy]
                            [--python INTERPRETER] [--skip-slow]

For each program (default: every ``bench/programs/*.sq``) the two
simulators run alternately ``N`` times (default 3), in fresh processes so
that neither warms the other's caches; the reports must be byte-identical.
Prints the median wall time of each, the ratio (reference time / serq time:
above 1 means serq is faster) and serq's peak memory.

``--cores`` names the serq columns, run side by side and alternating with
the reference: ``compiled`` (this interpreter, the mypyc-compiled core),
``interpreted`` (the same with ``SERQ_INTERPRETED=1``) and ``pypy``
(``pypy3``); the default is ``compiled``, or ``--python``'s interpreter
alone (the reference always runs under this one; serq is imported from
``src/``, so it need not be installed there).  Times are CPU seconds of
the compile and the run, the start-up of the interpreter excluded.  ``--skip-slow`` leaves out the programs
whose comments mark them ``// bench: slow``.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

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


def once(code, program, kwargs, python, extra_env=None):
    env = dict(os.environ)
    # An installed serq imports from bytecode: a run that compiled every
    # module from source (PYTHONDONTWRITEBYTECODE, set in some sandboxes)
    # would measure Python's compiler (about 0.1 s a run).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra_env or {})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    out = subprocess.run([python, "-c", code, str(program), json.dumps(kwargs)],
                         capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit("%s failed on %s:\n%s" % (python, program, out.stderr))
    return json.loads(out.stdout)


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
    programs = [Path(p) for p in args.programs] or sorted((HERE / "programs").glob("*.sq"))
    if args.skip_slow:
        programs = [p for p in programs if not is_slow(p)]
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
    for program in programs:
        times = {c: [] for c in cores}
        peaks = {c: 0 for c in cores}
        ref_t = []
        same = True
        for _ in range(args.repeat):
            b = once(REFERENCE, program, kwargs, sys.executable)
            ref_t.append(b["time"])
            for c in cores:
                python, env = (args.python, {}) if c == "python" else CORES_ALL[c]
                a = once(SERQ, program, kwargs, python or sys.executable, env)
                times[c].append(a["time"])
                peaks[c] = max(peaks[c], a["peak_kb"])
                same = same and a["report"] == b["report"]
        r = statistics.median(ref_t)
        med = {c: statistics.median(times[c]) for c in cores}
        row = ["%-16s" % program.stem] + ["%10.3f" % med[c] for c in cores] + ["%9.3f" % r]
        row += ["%9.3f" % (r / med[c]) for c in cores] + ["%9.1f" % (peaks[c] / 1024)
                                                         for c in cores]
        print(" ".join(row) + "  " + ("identical" if same else "DIFFER"))
        sys.stdout.flush()

if __name__ == "__main__":
    main()
