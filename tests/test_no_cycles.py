"""An ended session is freed by reference counts, not left in cycles for
the collector: a run of many sessions through pools, step stages, queue
stations, leases and transfers leaves no session, hold or step job as
cyclic garbage.  (Cycles cost the collector's passes over them during the
run, and memory until a pass: before, every session of ``pd_split`` was one,
through its hold's queue entry and its last step job.)"""
import gc
import platform
from pathlib import Path

import pytest

from serq.compiler import compile_program
from serq.runner import simulate

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(platform.python_implementation() != "CPython",
                                reason="reference counts and the collector's garbage are CPython's")


@pytest.mark.parametrize("name", ["pd_split", "vllm_single", "chat_cache", "router16"])
def test_ended_sessions_leave_no_cyclic_garbage(name):
    prog = compile_program(str(ROOT / "bench" / "programs" / (name + ".sq")), horizon=40.0,
                           warmup=0.0)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        sim = simulate(prog)  # (kept alive: what it still holds is not garbage)
        gc.collect()
        kinds = {}
        for o in gc.garbage:
            k = type(o).__name__
            kinds[k] = kinds.get(k, 0) + 1
    finally:
        gc.set_debug(0)
        del gc.garbage[:]
        gc.enable()
    assert sim.events > 1000  # (the run did go through many sessions)
    left = {k: n for k, n in kinds.items() if k in ("Session", "HoldRun", "StepJob", "Waiting")}
    assert left == {}, left
