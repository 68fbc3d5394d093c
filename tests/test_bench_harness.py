"""bench/harness.py's start-up row: whole processes timed from their own
resource usage, serq's `serq run --json` report compared with pyserq's."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _harness():
    sys.path.insert(0, str(ROOT / "bench"))  # (it imports startup.py beside it)
    try:
        spec = importlib.util.spec_from_file_location("harness", str(ROOT / "bench" / "harness.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return mod


def _one(tmp_path, harness):
    path = tmp_path / "one.sq"
    path.write_text(harness.STARTUP_PROGRAM)
    return str(path)


def test_whole_process_reads_the_child_usage():
    harness = _harness()
    spin = "import resource; x = bytearray(64 << 20); s = 0\nfor i in range(3000000): s += i\nprint(s)"
    out, t, peak = harness.whole_process([sys.executable, "-c", spin], dict(os.environ))
    assert out == "%d\n" % sum(range(3000000))
    assert t > 0.01
    assert peak > 64 * 1024  # (KB: the child's 64 MB, not this process's peak)


def test_whole_process_names_a_failure():
    harness = _harness()
    with pytest.raises(SystemExit) as e:
        harness.whole_process([sys.executable, "-c", "import sys; sys.exit('no such thing')"],
                              dict(os.environ))
    assert "no such thing" in str(e.value)


def test_startup_report_is_the_api_report(tmp_path):
    harness = _harness()
    path = _one(tmp_path, harness)
    a = harness.startup_once(sys.executable, path)
    from serq.compiler import compile_program
    from serq.report.jsonfmt import report_json
    from serq.runner import run_program
    assert a["report"] == report_json(run_program(compile_program(path)))
    assert a["time"] > 0.0 and a["peak_kb"] > 0


def test_startup_report_is_the_reference_report(tmp_path):
    pytest.importorskip("pyserq")
    harness = _harness()
    path = _one(tmp_path, harness)
    a = harness.startup_once(sys.executable, path)
    b = harness.startup_once(sys.executable, path, reference=True)
    assert a["report"] == b["report"]
