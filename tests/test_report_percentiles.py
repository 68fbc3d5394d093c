"""serq's own report measures beyond 0.1.3: the p50, p90 and p99.9 of every
observation (nearest rank, as 0.1.3's p99), the ITL percentiles of a step
stage, the unit of an observation (seconds when it records times), and the
rates (sessions, turns, generated tokens a second)."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import serq
from serq.report.units import observation_units

ROOT = Path(__file__).resolve().parent.parent

RANKS = """
stage d : delay;
workload { arrive batch(1000); }
session { set t0 = now; run d (1 + serial / 1000); observe k = serial + 1; observe w = now - t0; }
run { horizon 10; }
"""


def test_percentiles_are_nearest_ranks_by_hand():
    r = serq.run(serq.compile(source=RANKS))
    k = r.observe("k")  # the values 1 .. 1000
    assert (k.p50, k.p90, k.p99, k.p99_9) == (500.0, 900.0, 990.0, 999.0)
    assert json.loads(r.json())["observes"]["k"]["p99"] == 990
    assert k.unit is None
    w = r.observe("w")  # 1 + serial / 1000 seconds
    assert w.unit == "s"
    assert w.p50 == 1 + 499 / 1000 and w.p99_9 == 1 + 998 / 1000


def _nearest(xs, q):
    s = sorted(xs)
    return s[min(max(int(math.ceil(q * len(s))), 1), len(s)) - 1]


@pytest.mark.parametrize("path,seed", [("examples/chat.sq", 3),
                                       ("tests/programs/sim/choose_route.sq", 5)])
def test_same_definition_as_pyserq_p99(path, seed):
    # 0.1.3's p99 is the nearest rank: our p50/p90/p99.9 are the same
    # formula on pyserq's own samples, and our p99 is its p99.
    pyserq = pytest.importorskip("pyserq")
    kw = dict(seed=seed, horizon=150.0, warmup=10.0)
    theirs = pyserq.run(pyserq.compile(str(ROOT / path), **kw))
    ours = serq.run(serq.compile(str(ROOT / path), **kw))
    for name, o in theirs.observes.items():
        mine = ours.observe(name)
        samples = list(o.samples)
        assert mine.p99 == o.p99 == _nearest(samples, 0.99)
        assert (mine.p50, mine.p90, mine.p99_9) == tuple(
            _nearest(samples, q) for q in (0.5, 0.9, 0.999))


def test_units_read_from_the_program():
    src = """
stage d : delay;
workload { arrive poisson(1); }
session {
  set t0 = now; set d0 = ~exp(1); set t1 = t0 + 2; set late = max(now, t1);
  run d (1);
  observe e2e = now - t0;
  observe at = now;
  observe shifted = now - t1;
  observe drawn = d0;
  observe scaled = (now - t0) * 2;
  observe later = late - t0;
  observe mixed = serial;
  branch (serial > 2) { observe mixed = now - t0; }
}
run { horizon 10; }
"""
    prog = serq.compile(source=src).ir
    units = dict(zip(prog.observes, observation_units(prog)))
    assert units == {"e2e": "s", "at": "s", "shifted": "s", "drawn": None, "scaled": None,
                     "later": "s", "mixed": None}
    chat = serq.compile(str(ROOT / "examples" / "chat.sq")).ir
    assert observation_units(chat) == ["s", "s"]
    vllm = serq.compile(str(ROOT / "examples" / "vllm_single_turn.sq")).ir
    assert dict(zip(vllm.observes, observation_units(vllm)))["hit_share"] is None


STEP = """
stage gpu : step { budget 64; cost 0.01; }
workload { arrive batch(5); }
session { run gpu prefill (10); run gpu decode (20); observe done = now; }
run { horizon 100; }
"""


def test_rates_and_generated_tokens_by_hand():
    r = serq.run(serq.compile(source=STEP))
    span = r.end - r.warmup
    assert r.rates.decode_tokens == 5 * 20  # each decode a token
    assert r.rates.tokens == 100 / span
    assert r.rates.sessions == 5 / span and r.rates.requests == r.rates.sessions
    assert r.rates.turns == 0.0
    gpu = r.stage("gpu")
    assert gpu.decode_tokens == 100
    # the ITL percentiles come from 0.1.3's histogram: p50 and p99 are its
    assert gpu.itl_quantiles[0] == gpu.itl_p50 and gpu.itl_quantiles[2] == gpu.itl_p99
    assert gpu.itl_quantiles == sorted(gpu.itl_quantiles)


def test_turns_make_the_requests():
    r = serq.run(serq.compile(str(ROOT / "examples" / "chat.sq"), horizon=100.0,
                              warmup=10.0))
    assert r.turns > r.ended
    assert r.rates.requests == r.rates.turns == r.turns / 90.0


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True, env=env)


def test_text_and_extended_json(tmp_path):
    f = tmp_path / "step.sq"
    f.write_text(STEP)
    text = _cli("run", f, "--quiet")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.split("\n")
    assert lines[2].startswith("rates: 0.0500 sessions/s, 1 generated tokens/s")
    head = next(l for l in lines if l.startswith("observe"))
    assert head.split() == ["observe", "unit", "count", "mean", "95%", "CI", "cv2", "p50",
                            "p90", "p99", "p99.9"]
    assert "thru (/s)" in text.stdout and "itl p99.9 (ms)" in text.stdout
    ref = _cli("run", f, "--quiet", "--format", "ref").stdout.split("\n")
    assert ref[1].startswith("rates: 0.05 sessions/s, 1 generated tokens/s")
    assert any("itl p99.9 (s)" in l for l in ref)
    plain = _cli("run", f, "--json")
    ext = _cli("run", f, "--json", "--extended")
    d = json.loads(ext.stdout)
    assert {k: v for k, v in d.items() if k != "extended"} == json.loads(plain.stdout)
    assert "extended" not in json.loads(plain.stdout)
    x = d["extended"]
    assert x["observes"]["done"]["unit"] == "s"
    assert x["observes"]["done"]["p99"] == d["observes"]["done"]["p99"]
    (gpu,) = x["stages"]
    assert gpu["decode_tokens"] == 100 and gpu["itl_p50"] == d["stages"][0]["itl_p50"]
    assert x["rates"]["generated_tokens"] == 100
    assert x["rates"]["sessions_per_s"] == 5 / d["end"]
