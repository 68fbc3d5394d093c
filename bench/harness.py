"""Time serq against the reference on the same programs, with the same seed.

    python bench/harness.py [PROGRAM.sq ...] [--repeat N] [--horizon T]
                            [--python INTERPRETER] [--skip-slow]

For each program (default: every ``bench/programs/*.sq``) the two
simulators run alternately ``N`` times (default 3), in fresh processes so
that neither warms the other's caches; the reports must be byte-identical.
Prints the median wall time of each, the ratio (reference time / serq time:
above 1 means serq is faster) and serq's peak memory.

``--python pypy3`` runs serq's side under another interpreter (the
reference always runs under this one); serq is imported from ``src/`` so
it need not be installed there.  ``--skip-slow`` leaves out the programs
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
t0 = time.perf_counter()
text = report_json(run_program(compile_program(sys.argv[1], **kw)))
t = time.perf_counter() - t0
print(json.dumps({"time": t, "report": text,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

REFERENCE = r"""
import json, resource, sys, time
import pyserq
kw = json.loads(sys.argv[2])
t0 = time.perf_counter()
text = pyserq.run(pyserq.compile(path=sys.argv[1], **kw)).json()
t = time.perf_counter() - t0
print(json.dumps({"time": t, "report": text,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def once(code, program, kwargs, python):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    out = subprocess.run([python, "-c", code, str(program), json.dumps(kwargs)],
                         capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit("%s failed on %s:\n%s" % (python, program, out.stderr))
    return json.loads(out.stdout)


def is_slow(program):
    """Whether a comment line of the program is the slow mark."""
    with open(program) as f:
        return any(line.strip() == SLOW_MARK for line in f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--horizon", type=float)
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter for serq (e.g. pypy3)")
    ap.add_argument("--skip-slow", action="store_true",
                    help="leave out programs marked `%s`" % SLOW_MARK)
    args = ap.parse_args()
    programs = [Path(p) for p in args.programs] or sorted((HERE / "programs").glob("*.sq"))
    if args.skip_slow:
        programs = [p for p in programs if not is_slow(p)]
    kwargs = {"horizon": args.horizon} if args.horizon else {}
    print("%-24s %10s %10s %8s %10s  %s" % ("program", "serq s", "pyserq s", "ratio",
                                            "serq MB", "reports"))
    for program in programs:
        serq_t, ref_t, peak = [], [], 0
        same = True
        for _ in range(args.repeat):
            a = once(SERQ, program, kwargs, args.python)
            b = once(REFERENCE, program, kwargs, sys.executable)
            serq_t.append(a["time"])
            ref_t.append(b["time"])
            peak = max(peak, a["peak_kb"])
            same = same and a["report"] == b["report"]
        s, r = statistics.median(serq_t), statistics.median(ref_t)
        print("%-24s %10.3f %10.3f %8.3f %10.1f  %s" % (program.stem, s, r, r / s, peak / 1024,
                                                        "identical" if same else "DIFFER"))


if __name__ == "__main__":
    main()
