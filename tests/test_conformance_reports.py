"""The simulator's report is byte-identical to the reference's for every
program of the corpus that the reference runs (tests/programs/valid and
tests/programs/sim) at three seeds far apart (tests/programs/regen_reports.py
wrote the expected reports with pyserq 0.1.3), and live against pyserq at
each program's own run-block seed.

One known exception: 0.1.3 sums ``work(s)`` in an order that changes from
one of its own runs to the next, so a program that reads ``work(…)`` is
compared number by number to a relative 1e-12 where the bytes differ (a
zero's sign still counts: an idle step stage's work is -0).
"""
import json
import math

import pytest

from corpus import PROGRAMS, header_kwargs, in_dir
from serq.compiler import compile_program
from serq.errors import SerqError
from serq.report.jsonfmt import report_json
from serq.runner import run_program

SEEDS = (1, 10000019, 987654321001)

# Programs whose spills overflow their tier: 0.1.3 makes room in the tier
# before it adds the spilled units, so the tier goes over its cap; serq keeps
# the pool invariant (the seed's pool page), so these reports differ by
# design (docs/divergences.md).  Each also runs with a roomy tier in
# test_spill_divergence_is_only_the_tier_cap.
SPILL_OVERFLOW = {"evict_draws", "spill_block_det", "spill_tier"}

# Programs where 0.1.3 caches a preempted hold's whole position, counting a
# cached prefix it consumed but never allocated, and so passes the cap; serq
# keeps the invariant (older entries make room, the rest is not kept).
# tests/test_iteration_trace.py shows the schedules agree up to the breach.
INVARIANT_KEPT = {"growing_lifo_det", "preempt_readmitted_prefix_det"}


# Step-engine programs (tests/programs/steps) where serq's report differs
# from the reference's: pending fixes in src/serq/sim/step.py, each with the
# first differing field at seed 1.
STEP_PENDING = {}  # (program, seed) -> why serq differs from 0.1.3 there


CASES = [(p, seed) for kind in ("valid", "sim", "pools", "steps", "warn")
         for p in sorted((PROGRAMS / kind).glob("*.sq"))
         if (PROGRAMS / "reports" / kind / ("%s.%d.json" % (p.stem, SEEDS[0]))).exists()
         for seed in SEEDS]


def serq_report(path, seed):
    kwargs = header_kwargs(path.read_text())
    kwargs["seed"] = seed
    with in_dir(path.parent):
        return report_json(run_program(compile_program(path.name, **kwargs)))


def close(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(close, a, b))
    if isinstance(a, float) or isinstance(b, float):
        if a == 0 and b == 0:  # `-0` and `0` differ (a sum of nothing is -0)
            return math.copysign(1.0, a) == math.copysign(1.0, b)
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)
    return a == b


@pytest.mark.parametrize("path,seed", CASES,
                         ids=["%s-%s@%d" % (p.parent.name, p.stem, s) for p, s in CASES])
def test_report_is_byte_identical(path, seed):
    if path.stem in SPILL_OVERFLOW:
        pytest.skip("spills overflow the tier in 0.1.3 (a listed divergence)")
    if path.stem in INVARIANT_KEPT:
        pytest.skip("0.1.3 caches past the cap after a reuser's preemption (a listed divergence)")
    if (path.stem, seed) in STEP_PENDING:
        pytest.xfail("step engine differs from 0.1.3: " + STEP_PENDING[(path.stem, seed)])
    expected = (PROGRAMS / "reports" / path.parent.name /
                ("%s.%d.json" % (path.stem, seed))).read_text().rstrip("\n")
    got = serq_report(path, seed)
    if got != expected and "work(" in path.read_text():
        assert close(json.loads(got, parse_int=float), json.loads(expected, parse_int=float))
        return
    assert got == expected


def test_suite_covers_enough_programs():
    programs = {p for p, _ in CASES}
    assert len(programs) >= 40


@pytest.mark.parametrize("name", sorted(SPILL_OVERFLOW))
def test_spill_divergence_is_only_the_tier_cap(name, tmp_path):
    """With its tier made large enough never to overflow, the program's
    report is the reference's again; as written, serq keeps the invariant
    where 0.1.3 does not."""
    pyserq = pytest.importorskip("pyserq")
    import re
    path = PROGRAMS / "pools" / (name + ".sq")
    text = path.read_text()
    tier = re.search(r"^pool [^\n]*spill (\w+) via", text, re.M).group(1)
    roomy = re.sub(r"pool %s \{ cap [^;]*;" % tier, "pool %s { cap 1000000;" % tier, text)
    assert roomy != text
    f = tmp_path / (name + ".sq")
    f.write_text(roomy)
    assert report_json(run_program(compile_program(str(f)))) == \
        pyserq.run(pyserq.compile(path=str(f))).json()
    with in_dir(path.parent):
        ours = run_program(compile_program(path.name), check_invariants=True)
    assert report_json(ours) != pyserq.run(pyserq.compile(path=str(path))).json()


@pytest.mark.parametrize("path", sorted({p for p, _ in CASES})[::9])
def test_report_matches_live_reference(path):
    pyserq = pytest.importorskip("pyserq")
    kwargs = header_kwargs(path.read_text())
    kwargs["seed"] = 424242
    with in_dir(path.parent):
        try:
            expected = pyserq.run(pyserq.compile(path=path.name, **kwargs)).json()
        except ValueError:
            # the reference's run fails at this seed (a hold-and-wait cycle,
            # say): serq's must fail too
            with pytest.raises(SerqError):
                serq_report(path, 424242)
            return
    got = serq_report(path, 424242)
    if path.stem in SPILL_OVERFLOW | INVARIANT_KEPT:
        pytest.skip("a listed divergence (the pool invariant)")
    if got != expected and "work(" in path.read_text():
        assert close(json.loads(got, parse_int=float), json.loads(expected, parse_int=float))
        return
    if got != expected and path.stem in {name for name, _ in STEP_PENDING}:
        pytest.xfail("a program with a pending step-engine difference: "
                     + STEP_PENDING[min(k for k in STEP_PENDING if k[0] == path.stem)])
    assert got == expected


# Programs whose own run-block seed meets a listed divergence that the three
# seeds above do not: at seed 743512 gen_leg_refused's self-preempting grower
# is preempted again after its re-admission onto its own cached prefix, and
# 0.1.3 caches its whole position (used 10 + cached 7 of cap 12 from
# t = 7.53) where serq keeps 2 of the 7 (INVARIANT_KEPT; pinned
# deterministically by steps/preempt_readmitted_prefix_det.sq).
OWN_SEED_INVARIANT_KEPT = {"gen_leg_refused"}

OWN_SEED_CASES = [p for kind in ("valid", "sim", "pools", "steps", "warn")
                  for p in sorted((PROGRAMS / kind).glob("*.sq"))]


@pytest.mark.parametrize("path", OWN_SEED_CASES,
                         ids=["%s-%s" % (p.parent.name, p.stem) for p in OWN_SEED_CASES])
def test_report_matches_live_reference_at_own_seed(path):
    """Each program at the seed its run block gives (or the default one):
    no seed override, only the header's, live against pyserq."""
    pyserq = pytest.importorskip("pyserq")
    if path.stem in SPILL_OVERFLOW | INVARIANT_KEPT | OWN_SEED_INVARIANT_KEPT:
        pytest.skip("a listed divergence (the pool invariant)")
    kwargs = header_kwargs(path.read_text())
    with in_dir(path.parent):
        try:
            expected = pyserq.run(pyserq.compile(path=path.name, **kwargs)).json()
        except ValueError:
            # the reference refuses the program or fails its run at this
            # seed: serq must fail too
            with pytest.raises(SerqError):
                run_program(compile_program(path.name, **kwargs))
            return
        got = report_json(run_program(compile_program(path.name, **kwargs)))
    if got != expected and "work(" in path.read_text():
        assert close(json.loads(got, parse_int=float), json.loads(expected, parse_int=float))
        return
    assert got == expected
