"""Time per event of router16.sq with n replicas (rate 3.75 n, horizon 60 * 16 / n,
about 102 000 events at every n), serq and pyserq alternating in this process:

    python bench/replica_scaling.py 16 64 256
"""
from pathlib import Path
import sys, time, json
import pyserq
from serq.compiler import compile_program
from serq.report.jsonfmt import report_json
from serq.runner import run_program
for n in [int(a) for a in sys.argv[1:]]:
    h = 60.0 * 16 / n
    text = open(str(Path(__file__).resolve().parent / "programs" / "router16.sq")).read().replace("let n = 16;", "let n = %d;" % n).replace("let rate = 60;", "let rate = %s;" % (3.75 * n))
    path = "/tmp/_scale%d.sq" % n
    open(path, "w").write(text.replace("../../lib/vllm.sq", str(Path(__file__).resolve().parent.parent / "lib" / "vllm.sq")))
    ts, tr = [], []
    for rep in range(2):
        t = time.process_time()
        a = report_json(run_program(compile_program(path, horizon=h, warmup=h / 10)))
        ts.append(time.process_time() - t)
        t = time.process_time()
        b = pyserq.run(pyserq.compile(path=path, horizon=h, warmup=h / 10)).json()
        tr.append(time.process_time() - t)
    ev = json.loads(a)["events"]
    print(n, "serq %.2f s %.1f us/ev" % (min(ts), min(ts) / ev * 1e6), "pyserq %.2f s %.1f us/ev" % (min(tr), min(tr) / ev * 1e6), "ratio %.3f" % (min(tr) / min(ts)), "same" if a == b else "DIFFER")
