"""The same seed gives the same report bytes (issue 8): across runs, across
processes (with different string-hash seeds, so no set or dict order leaks
into a report) and across CPython and PyPy (skipped when ``pypy3`` is not
installed)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Pools with eviction and prefix reuse; fork/join; queue stations with a
# pull relation and shared NIC flows; the step engines' policies.
PROGRAMS = [("examples/chat_prefix_reuse.sq", "60"), ("examples/agent_subagents.sq", "60"),
            ("examples/pd_disaggregation.sq", "30"), ("examples/policies/sarathi.sq", "30")]


def report(python, program, horizon, hashseed, *extra):
    env = dict(os.environ, PYTHONHASHSEED=str(hashseed),
               PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([python, "-m", "serq", "run", str(ROOT / program), "--json", "--seed", "7",
                        "--horizon", horizon, "--warmup", "5"] + list(extra),
                       capture_output=True, env=env, cwd=str(ROOT), timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


@pytest.mark.parametrize("program,horizon", PROGRAMS, ids=[p for p, _ in PROGRAMS])
def test_same_seed_same_bytes_across_processes(program, horizon):
    a = report(sys.executable, program, horizon, 1)
    b = report(sys.executable, program, horizon, 2)
    assert a == b and len(a) > 200


def test_a_different_seed_gives_a_different_report():
    program, horizon = PROGRAMS[0]
    a = report(sys.executable, program, horizon, 1)
    b = report(sys.executable, program, horizon, 1, "--seed", "8")
    assert a != b


@pytest.mark.skipif(shutil.which("pypy3") is None, reason="pypy3 is not installed")
@pytest.mark.parametrize("program,horizon", PROGRAMS, ids=[p for p, _ in PROGRAMS])
def test_same_bytes_under_cpython_and_pypy(program, horizon):
    assert report(sys.executable, program, horizon, 1) == report("pypy3", program, horizon, 3)
