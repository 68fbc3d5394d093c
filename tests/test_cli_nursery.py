"""On PyPy the command line runs itself again with a larger nursery
(src/serq/cli/nursery.py); elsewhere nothing changes."""
import os
import subprocess
import sys

import pytest

from serq.cli import nursery


def test_the_command_run_again_is_the_same_command(tmp_path):
    script = tmp_path / "serq"
    script.write_text("#!/bin/sh\n")
    assert nursery.command(["x", "run", "p.sq"], "serq.__main__") == \
        [sys.executable, "-m", "serq", "run", "p.sq"]
    assert nursery.command([str(script), "run", "p.sq", "--json"], None) == \
        [sys.executable, str(script), "run", "p.sq", "--json"]
    # (no script to run again: -c, an embedded interpreter, a missing file)
    assert nursery.command(["-c", "run"], None) is None
    assert nursery.command([], None) is None
    assert nursery.command([str(tmp_path / "gone"), "run"], None) is None


def test_nothing_is_run_again_off_pypy_or_with_a_nursery_set(monkeypatch):
    calls = []
    monkeypatch.setattr(os, "execve", lambda *a: calls.append(a))
    if sys.implementation.name == "pypy":
        monkeypatch.setenv("PYPY_GC_NURSERY", "4MB")
    nursery.reexec_with_nursery()
    assert calls == []


@pytest.mark.skipif(sys.implementation.name != "pypy", reason="PyPy only")
def test_pypy_runs_the_command_again_with_the_nursery(tmp_path):
    # the child prints its environment's nursery from inside serq's own main
    probe = tmp_path / "probe.py"
    probe.write_text("import os, sys\n"
                     "from serq.cli import nursery\n"
                     "nursery.reexec_with_nursery()\n"
                     "print(os.environ.get('PYPY_GC_NURSERY'), sys.argv[1:])\n")
    env = {k: v for k, v in os.environ.items() if k != "PYPY_GC_NURSERY"}
    out = subprocess.run([sys.executable, str(probe), "run", "a b.sq"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "%s ['run', 'a b.sq']" % nursery.NURSERY
    env["PYPY_GC_NURSERY"] = "2MB"  # (the user's own is kept)
    out = subprocess.run([sys.executable, str(probe), "run"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "2MB ['run']"
