"""A handful of bench/fuzz.py's command-line cases (tests/cli_fuzz_cases.py)
at fixed seeds, so that the generators and the checks cannot rot: each
case ends cleanly, and the checks do catch what they are there for."""
import os
import subprocess
import sys
import time

import pytest

import cli_fuzz_cases as cf
from fuzz_cases import Failure

OUTCOMES = {"report", "partial", "error", "usage", "output error", "stopped",
            "stopped in python start-up"}

needs_posix = pytest.mark.skipif(not (os.path.isdir("/proc/self") and os.path.exists("/dev/full")
                                      and hasattr(os, "mkfifo")),
                                 reason="needs /proc, /dev/full and FIFOs")


@pytest.fixture(scope="module", autouse=True)
def _workdir(tmp_path_factory):
    """The cases' folder of special files (about 20 MB) under pytest's
    temporary folder, not left in the system's."""
    cf.PARENT[0] = str(tmp_path_factory.mktemp("clifuzz"))
    cf._state.clear()
    yield
    cf.PARENT[0] = None
    cf._state.clear()


@needs_posix
@pytest.mark.parametrize("family, seed", [
    ("cli-input", 0), ("cli-input", 3), ("cli-input", 7), ("cli-input", 11),
    ("cli-output", 0), ("cli-output", 2), ("cli-output", 5), ("cli-output", 9),
    ("cli-signal", 1), ("cli-signal", 7), ("cli-limits", 2), ("cli-limits", 4),
    ("cli-limits", 9),
])
def test_a_cli_case_ends_cleanly(family, seed):
    assert cf.cli_case(family, seed) in OUTCOMES


def _result(rc, err, out=""):
    return cf.Result(["run", "p.sq"], rc, out, err, 0.1, False)


def test_the_judge_catches_internal_and_unplaced_errors():
    with pytest.raises(Failure) as info:
        cf.judge(_result(3, "serq: internal error (KeyError: 'x')\n"))
    assert info.value.kind == "internal error"
    with pytest.raises(Failure) as info:
        cf.judge(_result(1, "Traceback (most recent call last):\n  ...\nValueError\n"))
    assert info.value.kind == "internal error"
    with pytest.raises(Failure) as info:
        cf.judge(_result(1, "error: no horizon (run { horizon T; })\n"), anchors=["--set"])
    assert info.value.kind == "unplaced"
    with pytest.raises(Failure) as info:  # located, but not in the file it is about
        cf.judge(_result(1, "--set rate:1:1: error: x\n"), located=["p.sq"])
    assert info.value.kind == "unplaced"
    assert cf.judge(_result(1, "p.sq:2:5: error: x\n"), located=["p.sq"]) == "error"
    assert cf.judge(_result(2, "serq: error: --set rate: x\n"), anchors=["--set"]) == "usage"
    assert cf.judge(_result(0, "", "partial: the run stopped at t = 3 s")) == "partial"
    with pytest.raises(Failure) as info:
        cf.judge(_result(5, "serq: error: cannot write x\n"), statuses=(0,))
    assert info.value.kind == "unexpected status"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_finish_catches_a_process_left_in_the_group(monkeypatch):
    monkeypatch.setattr(cf, "LEFTOVER_WAIT", 0.5)
    p = subprocess.Popen(["sh", "-c", "sleep 30 >/dev/null 2>&1 & exit 0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    with pytest.raises(Failure) as info:
        cf.finish(p, ["sh"], time.monotonic(), 30)
    assert info.value.kind == "leftover"
    t0 = time.monotonic()
    while cf._session_alive(p.pid) and time.monotonic() - t0 < 5:
        time.sleep(0.05)
    assert cf._session_alive(p.pid) == []  # and it was killed


def test_finish_catches_a_hang():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    t0 = time.monotonic()
    with pytest.raises(Failure) as info:
        cf.finish(p, ["sleep"], t0, 0.5)
    assert info.value.kind == "hang" and time.monotonic() - t0 < 10


def test_a_whole_report_is_told_from_a_cut_or_partial_one():
    head = "run: horizon 100000 s, warm-up 1000 s, end %s s, seed 1, 158921 events\n"
    assert cf._whole(head % "100000" + "sessions: ...\n")
    assert not cf._whole(head % "85121.8")  # stopped early, but not marked partial
    assert not cf._whole((head % "100000")[:-1])  # cut short
    assert cf._whole('{"horizon":20000,"end":20000,"events":3}')
    assert not cf._whole('{"horizon":20000,"end":20000,"ev')
    assert not cf._whole('{"horizon":9,"end":9,"extended":{"partial":{"reason":"terminated"}}}')
