"""Tiny and huge magnitudes (issue 19, point 5): what the differential
``bench/differential.py --magnitudes`` (programs of
tests/magnitude_programs.py) found, each as a small program of
tests/data/magnitudes/ compared live with pyserq 0.1.3 — the same IR, the
same report bytes — and the programs of refused/ refused by both.  One is
a divergence (docs/divergences.md): a computed hold of inf units in a
pool of cap inf, where 0.1.3's pool turns NaN, stops serq's run."""
from pathlib import Path

import json
import pytest

from serq.compiler import compile_program
from serq.errors import RunError, SerqError
from serq.ir.json import dumps
from serq.report.jsonfmt import report_json
from serq.runner import run_program

HERE = Path(__file__).resolve().parent / "data" / "magnitudes"
DIVERGE = {"hold_inf_cap_inf_run"}
SAME = [p for p in sorted(HERE.glob("*.sq")) if p.stem not in DIVERGE]
REFUSED = sorted((HERE / "refused").glob("*.sq"))


@pytest.mark.parametrize("path", SAME, ids=lambda p: p.stem)
def test_ir_and_report_are_the_references(path):
    pyserq = pytest.importorskip("pyserq")
    ref = pyserq.compile(path=str(path))
    ours = compile_program(str(path))
    assert json.loads(dumps(ours)) == json.loads(ref.to_json())
    assert report_json(run_program(ours)) == pyserq.run(ref).json()


@pytest.mark.parametrize("path", REFUSED, ids=lambda p: p.stem)
def test_refused_by_both(path):
    pyserq = pytest.importorskip("pyserq")
    with pytest.raises(ValueError):
        pyserq.compile(path=str(path))
    with pytest.raises(SerqError) as e:
        compile_program(str(path))
    assert "%s:" % path.name in e.value.render()  # located: file:line:col


def test_tiny_work_makes_jobs():
    # (not only equal to the reference: the jobs of 1e-300 s are there)
    r = json.loads(report_json(run_program(compile_program(str(HERE / "tiny_work.sq")))))
    assert r["stages"][0]["completed"] > 100
    assert 0 < r["observes"]["w"]["mean"] < 1e-298


def test_nan_lease_and_cache_warn():
    ours = compile_program(str(HERE / "lease_cache_nan.sq"))
    msgs = [w.render() for w in ours.warnings]
    assert len(msgs) == 2
    assert all("nan is not a number" in m and "lease_cache_nan.sq:" in m for m in msgs)
    assert any("the lease ends as the hold does" in m for m in msgs)
    assert any("caches nothing" in m for m in msgs)


def test_inf_hold_in_cap_inf_pool_stops_the_run():
    path = HERE / "hold_inf_cap_inf_run.sq"
    with pytest.raises(RunError) as e:
        run_program(compile_program(str(path)))
    text = e.value.render()
    assert "a hold of infinite units on pool `kv` (cap inf)" in text
    assert "hold_inf_cap_inf_run.sq:9:" in text and "t = 0" in text
    pyserq = pytest.importorskip("pyserq")
    ref = json.loads(pyserq.run(pyserq.compile(path=str(path))).json())
    pool = ref["pools"][0]
    # what 0.1.3 does wrong: `used` is NaN, and the later holds wait for ever
    assert pool["mean_used"] is None and pool["mean_queue"] > 0 and ref["ended"] == 0


def test_the_generator_reaches_tiny_and_huge_scales():
    from grammar_programs import RandomChoices
    from magnitude_programs import program
    heads = [program(RandomChoices(s)).splitlines()[0] for s in range(300)]
    scales = [float(x.split()[-1].rstrip(",")) for h in heads
              for x in h.split(", ")[:3]]
    assert min(scales) < 1e-307 and max(scales) > 1e299   # subnormal, huge
    assert sum(1 for x in scales if 1e-300 <= x <= 1e-12) > 0.3 * len(scales)
