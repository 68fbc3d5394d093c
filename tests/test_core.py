"""Which simulator core runs: compiled by mypyc (setup.py) or interpreted.

``serq --version`` and ``serq.core()`` name it; ``SERQ_INTERPRETED=1``
loads every core module from its ``.py`` file, also where the compiled
module is installed.  ``SERQ_EXPECT_CORE`` (set by .ci/run) names the core
this environment must have, so that a build that silently fell back to the
interpreted core fails CI.
"""
import json
import os
import subprocess
import sys

import pytest

import serq

CORE_MODULES = ["serq.sim.rng", "serq.sim.rng_chacha", "serq.sim.rng_seed",
                "serq.sim.rng_batch", "serq.sim.dist", "serq.sim.stages", "serq.sim.step",
                "serq.sim.step_plan", "serq.sim.pools", "serq.sim.holds", "serq.sim.session",
                "serq.sim.postmortem", "serq.sim.fold", "serq.report.stats"]

PROBE = r"""
import importlib, json, sys
import serq
mods = sys.argv[1:]
print(json.dumps({"core": serq.core(),
                  "files": {m: importlib.import_module(m).__file__ for m in mods}}))
"""


def probe(interpreted):
    env = dict(os.environ)
    env.pop("SERQ_INTERPRETED", None)
    if interpreted:
        env["SERQ_INTERPRETED"] = "1"
    out = subprocess.run([sys.executable, "-c", PROBE] + CORE_MODULES, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def version(interpreted):
    env = dict(os.environ)
    env.pop("SERQ_INTERPRETED", None)
    if interpreted:
        env["SERQ_INTERPRETED"] = "1"
    out = subprocess.run([sys.executable, "-m", "serq", "--version"], env=env,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_version_names_the_core():
    assert serq.core() in ("compiled (mypyc)", "interpreted")
    got = probe(False)
    assert version(False) == "serq %s (serQ 0.1.3, IR 11; core: %s)" % (
        serq.__version__, got["core"])
    assert version(True).endswith("; core: interpreted)")


def test_interpreted_loads_the_python_files():
    got = probe(True)
    assert got["core"] == "interpreted"
    for m, f in got["files"].items():
        assert f.endswith(".py"), (m, f)


def test_the_default_core_is_consistent():
    """Compiled: every core module is an extension; interpreted: none is."""
    got = probe(False)
    compiled = [m for m, f in got["files"].items() if not f.endswith(".py")]
    if got["core"] == "compiled (mypyc)":
        assert compiled == CORE_MODULES
    else:
        assert compiled == []


@pytest.mark.skipif(not os.environ.get("SERQ_EXPECT_CORE"), reason="SERQ_EXPECT_CORE not set")
def test_expected_core():
    want = os.environ["SERQ_EXPECT_CORE"]
    assert (serq.core() == "interpreted") == (want == "interpreted"), (serq.core(), want)


def test_both_cores_give_the_same_report_bytes(tmp_path):
    """One step-engine program under both cores (the conformance tests run
    the corpus on each core: .ci/run)."""
    prog = os.path.join(os.path.dirname(__file__), "..", "examples", "vllm_single_turn.sq")
    outs = []
    for interpreted in (False, True):
        env = dict(os.environ)
        env.pop("SERQ_INTERPRETED", None)
        if interpreted:
            env["SERQ_INTERPRETED"] = "1"
        out = subprocess.run([sys.executable, "-m", "serq", "run", prog, "--json",
                              "--horizon", "120"], env=env,
                             capture_output=True, text=True, check=True)
        outs.append(out.stdout)
    assert outs[0] == outs[1]
    json.loads(outs[0])
