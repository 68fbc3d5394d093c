"""The collector's pace during a run and its report (collector.py)."""
import gc

import pytest

from serq import collector
from serq.collector import RELAXED_THRESHOLD, relaxed
from serq.compiler import compile_program
from serq.runner import run_program
from serq.sweep.run import run_task

pytestmark = pytest.mark.skipif(not hasattr(gc, "get_threshold"), reason="PyPy's collector has no thresholds")


def test_relaxed_raises_the_first_threshold_and_restores_all_three():
    before = gc.get_threshold()
    gc.set_threshold(700, 11, 12)
    try:
        with relaxed():
            assert gc.get_threshold() == (RELAXED_THRESHOLD, 11, 12)
            with relaxed():  # (nested: as the outer one set it)
                assert gc.get_threshold() == (RELAXED_THRESHOLD, 11, 12)
            assert gc.get_threshold() == (RELAXED_THRESHOLD, 11, 12)
        assert gc.get_threshold() == (700, 11, 12)
        with pytest.raises(KeyError):
            with relaxed():
                raise KeyError("x")
        assert gc.get_threshold() == (700, 11, 12)
        gc.set_threshold(RELAXED_THRESHOLD * 2, 11, 12)  # (a higher one is kept)
        with relaxed():
            assert gc.get_threshold()[0] == RELAXED_THRESHOLD * 2
    finally:
        gc.set_threshold(*before)


def _sweeps_of_a_run(prog):
    """The collector's sweeps during ``run_program(prog)`` (the run and its
    report), with the thresholds at 1 (a sweep at nearly every allocation
    where they are not relaxed), and whether they were restored after."""
    before = gc.get_threshold()
    sweeps = []

    def count(phase, info):
        if phase == "start":
            sweeps.append(info["generation"])

    gc.callbacks.append(count)
    try:
        gc.set_threshold(1, 1, 1)
        run_program(prog)
        restored = gc.get_threshold() == (1, 1, 1)
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*before)
    return len(sweeps), restored


def test_a_run_and_its_report_run_relaxed_and_restore_the_thresholds(tmp_path, monkeypatch):
    path = tmp_path / "mm1.sq"
    path.write_text("stage s : fifo;\nworkload { arrive poisson(0.5); }\n"
                    "session { run s (~exp(1)); }\nrun { horizon 2000; warmup 10; seed 1; }\n")
    prog = compile_program(str(path))
    relaxed_sweeps, restored = _sweeps_of_a_run(prog)
    assert restored
    monkeypatch.setattr(collector, "RELAXED_THRESHOLD", 1)  # (relaxed() then changes nothing)
    plain_sweeps, restored = _sweeps_of_a_run(prog)
    assert restored
    # (a few sweeps remain, at the edges of the relaxed blocks)
    assert plain_sweeps > 2000 and relaxed_sweeps < plain_sweeps / 50


FAMILY = """
pool kv[32] { cap 4096; block 16; }
stage e[32] : step { budget 512; cost 0.001 + 0.0001 * tokens; memory kv; }
workload { arrive poisson(400); }
session { set t0 = now; choose r in 32 by (holders(kv[r])); hold kv[r] (64) { run e[r] prefill (64); }
          observe latency = now - t0; }
run { horizon 2; warmup 0.2; seed 3; }
"""


def _simulators():
    return sum(1 for o in gc.get_objects() if type(o).__name__ == "Simulator")


def test_the_sweep_after_a_run_frees_its_simulator(tmp_path):
    # A simulator is cycles that reference counts do not free.  The block
    # is relaxed until it is dropped, so a sweep of the youngest generation
    # after the block frees it; a sweep while it was still referenced (say
    # between the run and its report) would have moved it, live, to an
    # older generation, where it would stay as garbage.
    path = tmp_path / "family.sq"
    path.write_text(FAMILY)
    prog = compile_program(str(path))
    before = gc.get_threshold()
    gc.collect()
    alive = _simulators()  # (other tests' simulators, still referenced)
    try:
        gc.set_threshold(700, 10_000, 10_000)  # (no older generation swept by chance)
        for run in (run_program, run_program, lambda p: run_task((0, 3, p))):  # (a sweep's run)
            run(prog)
            gc.collect(0)
            assert _simulators() == alive
    finally:
        gc.set_threshold(*before)
