"""Time per event of router16.sq with n replicas (rate 3.75 n, horizon 60 * 16 / n,
about 102 000 events at every n), serq and pyserq alternating in this process:

    python bench/replica_scaling.py 16 64 256
    python bench/replica_scaling.py --marginal 4 16 64 256

Each figure is the least CPU time of ``--repeat`` runs (default 2), each run
compiling the program, running it and writing its report.  ``--marginal K``
also runs K times the horizon and prints the time per event of the events
the longer run adds, ``(T(K h) - T(h)) / (E(K h) - E(h))``: what each event
costs once the run is under way, without the costs of one run (compiling,
building the simulator, the report, the collector's sweep of what the run
built), which grow with the replicas and are paid once.
"""
import argparse
import json
import sys
import time
from pathlib import Path

import pyserq
from serq.compiler import compile_program
from serq.report.jsonfmt import report_json
from serq.runner import run_program

HERE = Path(__file__).resolve().parent


def program(n):
    """The path of router16.sq with ``n`` replicas and rate 3.75 n."""
    text = (HERE / "programs" / "router16.sq").read_text()
    text = text.replace("let n = 16;", "let n = %d;" % n).replace(
        "let rate = 60;", "let rate = %s;" % (3.75 * n))
    path = "/tmp/_scale%d.sq" % n
    Path(path).write_text(text.replace("../../lib/vllm.sq", str(HERE.parent / "lib" / "vllm.sq")))
    return path


def least_times(path, horizon, warmup, repeat):
    """(serq's least time, pyserq's least time, events, same report)."""
    ts, tr = [], []
    for _ in range(repeat):
        t = time.process_time()
        a = report_json(run_program(compile_program(path, horizon=horizon, warmup=warmup)))
        ts.append(time.process_time() - t)
        t = time.process_time()
        b = pyserq.run(pyserq.compile(path=path, horizon=horizon, warmup=warmup)).json()
        tr.append(time.process_time() - t)
    return min(ts), min(tr), json.loads(a)["events"], a == b


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("replicas", nargs="+", type=int)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--marginal", type=float, metavar="K",
                    help="also run K times the horizon: the time per event it adds")
    args = ap.parse_args(argv)
    for n in args.replicas:
        path = program(n)
        h = 60.0 * 16 / n
        ts, tr, ev, same = least_times(path, h, h / 10, args.repeat)
        line = "%d serq %.2f s %.1f us/ev pyserq %.2f s %.1f us/ev ratio %.3f %s" % (
            n, ts, ts / ev * 1e6, tr, tr / ev * 1e6, tr / ts, "same" if same else "DIFFER")
        if args.marginal:
            ts2, tr2, ev2, same2 = least_times(path, args.marginal * h, h / 10, args.repeat)
            line += " | marginal (%gx horizon) serq %.2f us/ev pyserq %.2f us/ev %s" % (
                args.marginal, (ts2 - ts) / (ev2 - ev) * 1e6, (tr2 - tr) / (ev2 - ev) * 1e6,
                "same" if same2 else "DIFFER")
        print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
