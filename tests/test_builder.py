"""serq.builder: a program made or edited in Python is checked like IR read
from JSON, round-trips through it, and runs like the same program written
as text."""
import math

import pytest

import serq
from serq.builder import ProgramBuilder, cond, ctx, draw, fn
from serq.errors import SerqError, UsageError

MM1_TEXT = """stage cpu : fifo;
workload { arrive poisson(0.8); }
session { set t0 = now; run cpu (~exp(1)); observe resp = now - t0; }
run { horizon 2000; warmup 100; seed 3; }
"""


def mm1():
    b = ProgramBuilder(horizon=2000, warmup=100, seed=3)
    cpu = b.add_stage("cpu", b.fifo(1))
    b.poisson(0.8)
    b.session.extend([
        b.set("t0", ctx("now")),
        b.run(cpu, draw("exp", 1.0)),
        b.observe("resp", ctx("now") - b.attr("t0")),
    ])
    return b


def test_built_program_is_the_text_programs_ir_and_report():
    built = mm1().program()
    text = serq.compile(source=MM1_TEXT)
    assert built.to_json() == text.to_json()
    assert serq.run(built).json() == serq.run(text).json()


def test_round_trip_through_json():
    p = mm1().program()
    again = serq.Program.from_json(p.to_json())
    assert again.to_json() == p.to_json()
    assert serq.run(again).json() == serq.run(p).json()


def test_program_is_a_copy():
    b = mm1()
    p = b.program()
    b.stage("cpu").stage_kind = b.fifo(2)
    assert '"Fifo": 1' in p.to_json()
    assert '"Fifo": 2' in b.program().to_json()


def test_edit_a_compiled_program_cap_pool_and_stage():
    base = serq.compile(source="""
pool kv { cap 100; }
stage gpu : fifo;
workload { arrive poisson(2); }
session { set t0 = now; hold kv (40) { run gpu (~exp(0.4)); } observe resp = now - t0; }
run { horizon 400; warmup 20; seed 4; }
""")
    before = serq.run(base)
    b = serq.edit(base)
    kv = b.pool("kv")
    assert kv.cap == 100
    kv.cap = 40  # one holder at a time now
    slots = b.add_pool("slots", 1, count=2)
    net = b.add_stage("net", b.delay())
    b.session.insert(2, b.hold((slots[1], 1), [b.run(net, 0.25)]))
    b.session.append(b.observe("size_seen", fn("used", kv)))
    edited = b.program()
    # The original program is unchanged.
    assert serq.run(base).json() == before.json()
    report = serq.run(edited)
    assert report.pool("kv").mean_holders <= 1.0 + 1e-12
    assert before.pool("kv").mean_holders > report.pool("kv").mean_holders
    assert [p.index for p in report.pools_named("slots")] == [0, 1]
    assert report.pools_named("slots")[0].admissions == 0
    assert report.pools_named("slots")[1].admissions > 0
    net_row = report.stage("net")
    assert net_row.completed > 0 and abs(net_row.mean_service - 0.25) < 1e-9
    again = serq.Program.from_json(edited.to_json())
    assert serq.run(again).json() == report.json()


def test_step_engine_with_memory_and_growth():
    b = ProgramBuilder(horizon=300, warmup=30, seed=2)
    kv = b.add_pool("kv", 4096, block=16, preempt="lifo")
    gpu = b.add_stage("gpu", b.step(0.01 + 0.0001 * ctx("tokens"), budget=512, memory=kv))
    b.poisson(4)
    b.init.append(b.set("prompt", 64 + fn("floor", draw("exp", 200))))
    b.session.extend([
        b.set("t0", ctx("now")),
        b.hold((kv, b.attr("prompt")), [
            b.run(gpu, b.attr("prompt"), "prefill", growing=kv),
            b.observe("ttft", ctx("now") - b.attr("t0")),
            b.run(gpu, 32, "decode", growing=kv),
        ]),
        b.observe("e2e", ctx("now") - b.attr("t0")),
    ])
    b.gauge("kv_used", fn("used", kv))
    r = serq.run(b.program())
    assert r.stage("gpu").iterations > 0 and r.observe("ttft").count > 100
    assert r.observe("e2e").mean > r.observe("ttft").mean
    assert 0 < r.gauge("kv_used").mean <= 4096


def test_branch_cond_and_operators():
    b = ProgramBuilder(horizon=100, seed=1)
    s = b.add_stage("s", b.fifo(1))
    b.batch(50)
    b.session.extend([
        b.set("x", draw("uniform", 0, 1)),
        b.branch(b.attr("x") < 0.5, [b.observe("low", 1)], [b.observe("high", 1)]),
        b.observe("pick", cond((b.attr("x") >= 0.5) & ~(b.attr("x") > 2), 1, 0)),
        b.run(s, 2 * b.attr("x") ** 2 - -1),
    ])
    r = serq.run(b.program())
    assert r.observe("low").count + r.observe("high").count == 50
    assert r.observe("pick").count == 50
    assert round(r.observe("pick").mean * 50) == r.observe("high").count > 0


def test_bad_builds_are_clear_errors():
    b = mm1()
    with pytest.raises(UsageError, match="no stage `gpu`; the program's stages are: cpu"):
        b.stage("gpu")
    with pytest.raises(UsageError, match="already has a stage `cpu`"):
        b.add_stage("cpu", b.fifo(1))
    with pytest.raises(UsageError, match="~exp takes 1"):
        draw("exp", 1, 2)
    with pytest.raises(UsageError, match="used reads a pool"):
        fn("used", b.stage("cpu"))
    with pytest.raises(UsageError, match="no context variable `clock`"):
        ctx("clock")
    with pytest.raises(TypeError, match="formula"):
        if ctx("now") > 1:
            pass
    with pytest.raises(UsageError, match="no horizon"):
        ProgramBuilder().program()
    # What only the whole program shows is the validator's to find.
    kv = b.add_pool("kv", 10)
    b.session.append(b.run(b.stage("cpu"), 1, "decode"))
    with pytest.raises(SerqError, match=r"decode run on `cpu`, which is not a step stage "
                       r"at blocks\[2\]\[3\]"):
        b.program()
    b.session.pop()
    b.session.append(serq.ir.nodes.Grow(kv.ref, serq.ir.nodes.Num(1.0)))
    with pytest.raises(SerqError, match="`grow` outside a hold of pool `kv`"):
        b.program()
    b.session.pop()
    b.warmup = 5000
    with pytest.raises(SerqError, match="warmup < horizon"):
        b.program()


def test_renewal_and_closed_arrivals():
    b = ProgramBuilder(horizon=50, seed=8)
    s = b.add_stage("s", b.ps(2), count=3)
    b.closed(4)
    b.session.extend([b.set("k", fn("floor", draw("uniform", 0, 2.999))),
                      b.run(s[b.attr("k")], draw("exp", 1)),
                      b.observe("done", ctx("now"))])
    r = serq.run(b.program())
    assert [x.index for x in r.stages_named("s")] == [0, 1, 2]
    assert sum(x.completed for x in r.stages_named("s")) >= r.observe("done").count
    b.renewal(draw("det", 0.5))
    assert math.isclose(serq.run(b.program()).arrivals, 100, abs_tol=1)
