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


def _resident_kb():
    """This process's resident memory now, in KB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads Linux's /proc")
def test_whole_process_reads_the_child_usage():
    harness = _harness()
    # Linux counts in a child's peak this process's memory when the child
    # started (the floor harness.py's docstring names), so the big child
    # allocates 64 MB more than this process holds, the small one nothing
    big_kb = _resident_kb() + 64 * 1024
    spin = ("x = bytearray(%d); s = 0\nfor i in range(3000000): s += i\nprint(s)"
            % (big_kb * 1024))
    out, t, peak = harness.whole_process([sys.executable, "-c", spin], dict(os.environ))
    assert out == "%d\n" % sum(range(3000000))
    assert t > 0.01
    assert peak > big_kb
    # after it, the small child reads as small: its own usage, not the
    # largest of every child so far
    out, t_small, small = harness.whole_process([sys.executable, "-c", "print(1)"],
                                                dict(os.environ))
    assert out == "1\n"
    assert small < peak - 32 * 1024 and t_small < t


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
