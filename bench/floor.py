"""How fast serq could be at best, from the work its reports need.

A report byte-identical to the reference's fixes some work per event: a
heap push and pop, the draws of each session's own ChaCha12 stream, a
Welford update per wait, service and observation, a time-average piece per
changing signal and event, and, in a step stage, the iteration mix, the
batch statistics and every inter-token gap added in order.  This script
times each of those operations alone, in the tightest CPython loop, counts
how many a run of each benchmark program performs (from serq's own run of
it), and prints their sum -- the floor: what serq would take if it did
nothing else (no scheduling, no sessions, no pools) -- next to serq's and
pyserq's measured times.

    python bench/floor.py                  # mm1 and vllm_single
    python bench/floor.py --python pypy3   # the floor under PyPy

The floor is an underestimate of any Python implementation and the
"best ratio" an overestimate of what it could reach.
"""
import argparse
import heapq
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from serq.report.stats import IntervalAverage, ItlHistogram, Welford  # noqa: E402
from serq.sim import rng as streams  # noqa: E402
from serq.sim import rng_batch  # noqa: E402

N = 200_000


def per_op(fn, n=N):
    """Best of three: seconds per operation of ``fn(n)``."""
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        fn(n)
        t = (time.perf_counter() - t0) / n
        best = t if best is None or t < best else best
    return best


def heap_event(n):
    h = []
    push, pop = heapq.heappush, heapq.heappop
    t = 0.0
    for i in range(n):
        push(h, (t + 1.0, i, len, None))
        t = pop(h)[0]


def session_stream(n):
    ss = rng_batch.StatementStreams(7)
    for serial in range(n):
        ss.get(serial).random_f64()


def draw(n):
    r = streams.arrival_stream(7)
    f = r.random_f64
    for _ in range(n):
        f()


def welford(n):
    w = Welford()
    for _ in range(n):
        w.add(1.5)


def piece(n):
    # TimeAverage.set, inlined as the simulator writes it
    area = last = value = 0.0
    t = 0.0
    for _ in range(n):
        t += 1.0
        area += value * (t - last)
        last = t
        value = 2.0


def interval(n):
    a = IntervalAverage()
    for _ in range(n):
        a.add(0.5, 1.0, 2.0)


def itl_value(n):
    h = ItlHistogram()
    for _ in range(n // 10):
        h.add_repeat(0.0125, 10)


def sample(n):
    xs, ts = [], []
    for i in range(n):
        xs.append(1.5)
        ts.append(1.0)


COUNT = r"""
import json, sys, time
from serq.compiler import compile_program
from serq.report.jsonfmt import report_json
from serq.sim.engine import Simulator
prog = compile_program(sys.argv[1])
t0 = time.perf_counter()
sim = Simulator(prog)
sim.run()
t = time.perf_counter() - t0
steps = [st for st in sim.stages if st.kind == "step"]
print(json.dumps({
    "time": t, "events": sim.events, "arrivals": sim.arrived,
    "observations": sum(len(o.values) for o in sim.observations),
    "completed": sum(st.stats.completed for st in sim.stages),
    "iterations": sum(st.iterations for st in steps),
    "itl": sum(st.stats.itl.n for st in steps),
    "averages": 1 + 2 * len(sim.stages) + 6 * len(sim.pools),
}))
"""

REFERENCE = r"""
import sys, time, pyserq
p = pyserq.compile(path=sys.argv[1])
t0 = time.perf_counter()
pyserq.run(p).json()
print(time.perf_counter() - t0)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="*", default=["mm1", "vllm_single"])
    ap.add_argument("--python", default=sys.executable, help="the interpreter for serq")
    args = ap.parse_args()
    if args.python != sys.executable:
        # time the operations under the other interpreter (this script again)
        env = dict(os.environ, SERQ_FLOOR_CHILD="1")
        raise SystemExit(subprocess.call([args.python, __file__] + args.programs, env=env))
    cost = {name: per_op(fn) for name, fn in [
        ("heap push+pop", heap_event), ("session stream + 1 draw", session_stream),
        ("draw", draw), ("Welford add", welford), ("time-average piece", piece),
        ("interval-average add", interval), ("inter-token gap", itl_value),
        ("sample kept", sample)]}
    print("operation costs (%s):" % sys.version.split()[0])
    for k, v in cost.items():
        print("  %-26s %6.0f ns" % (k, v * 1e9))
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"))
    for name in args.programs:
        path = str(HERE / "programs" / ("%s.sq" % name))
        c = json.loads(subprocess.run([sys.executable, "-c", COUNT, path], env=env,
                                      capture_output=True, text=True, check=True).stdout)
        ref = None
        if not os.environ.get("SERQ_FLOOR_CHILD"):
            out = subprocess.run([sys.executable, "-c", REFERENCE, path],
                                 capture_output=True, text=True)
            ref = float(out.stdout) if out.returncode == 0 else None
        # What the report needs, at the least: every event pops and pushes;
        # every arrival opens its session's stream and draws its gap; every
        # completion is a wait and a service (Welford each), every observation
        # a Welford and a kept sample; the live count and each stage's two
        # averages take a piece at each event (counted once per event: most
        # do not change at every event); each iteration adds its mix (4
        # interval averages) and batch statistics (2 Welford); each gap is
        # added in order.
        floor = (c["events"] * (cost["heap push+pop"] + cost["time-average piece"])
                 + c["arrivals"] * (cost["session stream + 1 draw"] + cost["draw"])
                 + c["completed"] * 2 * cost["Welford add"]
                 + c["observations"] * (cost["Welford add"] + cost["sample kept"])
                 + c["iterations"] * (4 * cost["interval-average add"] + 2 * cost["Welford add"])
                 + c["itl"] * cost["inter-token gap"])
        print("\n%s: %d events, %d arrivals, %d iterations, %d inter-token gaps"
              % (name, c["events"], c["arrivals"], c["iterations"], c["itl"]))
        print("  floor (the operations above alone)  %.3f s" % floor)
        print("  serq (this interpreter, run only)   %.3f s" % c["time"])
        if ref is not None:
            print("  pyserq 0.1.3                        %.3f s" % ref)
            print("  best ratio the floor allows         %.2f (serq now %.3f)"
                  % (ref / floor, ref / c["time"]))


if __name__ == "__main__":
    main()
