"""An observation's samples (src/serq/sim/samples.py) wait in short lists
and are moved into machine arrays ``FLUSH`` at a time: a reader sees every
sample, in the order taken, whenever it reads, on either core and whether a
sample came through ``Observation.take`` or the generated session code."""
from array import array

import pytest

from serq.compiler import compile_program
from serq.sim import samples
from serq.sim.engine import Simulator
from serq.sim.session import Session

PROGRAM = """
stage server : fifo;
workload { arrive poisson(2); }
session { set t0 = now; run server (~exp(0.3)); observe response = now - t0; }
run { horizon 2000; warmup 300; seed 3; }
"""


def _simulator(tmp_path):
    path = tmp_path / "p.sq"
    path.write_text(PROGRAM)
    return Simulator(compile_program(str(path)))


@pytest.mark.parametrize("keep_all", [True, False])
@pytest.mark.parametrize("count", [0, 1, samples.FLUSH - 1, samples.FLUSH, 3 * samples.FLUSH + 7])
def test_take_keeps_every_sample_in_order(tmp_path, count, keep_all):
    sim = _simulator(tmp_path)
    o = samples.Observation("x", 0, keep_all)
    want = {"all": [], "values": [], "times": [], "sessions": [], "turns": []}
    reads = []
    for k in range(count):
        sim.warm = k % 3 != 0
        sim.now = 0.5 * k
        s = Session(1000 + k, [float(k % 7)], None)
        v = k * 1.25 - 3.0
        o.take(v, s, sim)
        if keep_all:  # (only for an observation an `at end` aggregate reads)
            want["all"].append(v)
        if sim.warm:
            want["values"].append(v)
            want["times"].append(sim.now)
            want["sessions"].append(1000 + k)
            want["turns"].append(k % 7)
        if k in (5, samples.FLUSH + 2):  # a read in the middle moves what is pending
            reads.append((len(o.all_values), list(o.values),
                          len(want["all"]), list(want["values"])))
    assert all(len(p) < samples.FLUSH for p in (o.p_all, o.p_values))
    assert o.all_values == array("d", want["all"])
    assert o.values == array("d", want["values"])
    assert o.times == array("d", want["times"])
    assert o.sessions == array("q", want["sessions"])
    assert o.turns == array("q", want["turns"])
    assert not o.p_all and not o.p_values  # (read: nothing is pending)
    for n, values, n_want, values_want in reads:  # (all taken so far, at each read)
        assert n == n_want and values == values_want


@pytest.mark.parametrize("aggregate", [False, True])
def test_a_run_keeps_each_sessions_sample(tmp_path, aggregate):
    # the generated code's samples (written out on the interpreted core,
    # Observation.take on the compiled one): one a session ended after the
    # warm-up, in the order of their times; every value only where an
    # `at end` aggregate reads them
    path = tmp_path / "p.sq"
    path.write_text(PROGRAM.replace("run {", "claim many : at end (count(response) > 100);\nrun {")
                    if aggregate else PROGRAM)
    sim = Simulator(compile_program(str(path)))
    sim.run()
    o = sim.observations[0]
    assert len(o.values) > 3 * samples.FLUSH
    assert len(o.values) == len(o.times) == len(o.sessions) == len(o.turns)
    assert list(o.times) == sorted(o.times) and min(o.times) >= 300.0
    assert len(set(o.sessions)) == len(o.sessions)
    if aggregate:
        assert len(o.all_values) > len(o.values)
        assert list(o.values) == list(o.all_values)[len(o.all_values) - len(o.values):]
    else:
        assert len(o.all_values) == 0
