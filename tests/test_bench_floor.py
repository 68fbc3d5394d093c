"""bench/floor.py (the work a byte-identical report needs, timed alone):
its operations run, and its counts of a run agree with the run's report."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _floor():
    spec = importlib.util.spec_from_file_location("floor", str(ROOT / "bench" / "floor.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_operation_runs():
    floor = _floor()
    for fn in (floor.heap_event, floor.session_stream, floor.draw, floor.welford,
               floor.piece, floor.interval, floor.itl_value, floor.sample):
        assert floor.per_op(fn, 20) > 0.0


def test_counts_match_the_report(tmp_path):
    floor = _floor()
    prog = tmp_path / "p.sq"
    prog.write_text("""
pool kv { cap 256; block 16; }
stage eng : step { budget 64; cost 0.01 + 0.001 * tokens; memory kv; }
workload { arrive poisson(20); }
session { set t0 = now; hold kv (16) { run eng prefill (20) growing kv; run eng decode (12) growing kv; }
          observe lat = now - t0; }
run { horizon 20; warmup 2; seed 3; }
""")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    counts = json.loads(subprocess.run([sys.executable, "-c", floor.COUNT, str(prog)], env=env,
                                       capture_output=True, text=True, check=True).stdout)
    from serq.api import compile as api_compile, run as api_run
    rep = json.loads(api_run(api_compile(path=str(prog))).json())
    assert counts["events"] == rep["events"]
    assert counts["arrivals"] == rep["arrivals"]
    assert counts["iterations"] == rep["stages"][0]["iterations"]
    assert counts["observations"] == rep["observes"]["lat"]["count"]
    # every decode but a turn's first token is a gap (after warm-up)
    assert 0 < counts["itl"] < 12 * counts["arrivals"]
