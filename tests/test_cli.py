"""The command line: what a user types and what they see."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "chat.sq"


def serq(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True, cwd=cwd)


def test_check_ok():
    r = serq("check", EXAMPLE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("OK: 1 pool(s), 2 stage(s)")


def test_ir_prints_version_11_and_round_trips(tmp_path):
    r = serq("ir", EXAMPLE)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["version"] == 11
    f = tmp_path / "chat.json"
    f.write_text(r.stdout)
    back = serq("ir", "--from-json", f)
    assert back.returncode == 0, back.stderr
    assert back.stdout == r.stdout


def test_ir_overrides():
    r = serq("ir", EXAMPLE, "--set", "rate=0.5", "--seed", "99", "--horizon", "10",
             "--warmup", "1")
    d = json.loads(r.stdout)
    assert d["arrival"] == {"Poisson": 0.5}
    assert (d["seed"], d["horizon"], d["warmup"]) == (99, 10.0, 1.0)


def test_ir_matches_reference_bytes():
    pyserq = pytest.importorskip("pyserq")
    expected = pyserq.compile(str(EXAMPLE)).to_json() + "\n"
    assert serq("ir", EXAMPLE).stdout == expected


def test_error_is_located_with_caret_and_help(tmp_path):
    f = tmp_path / "bad.sq"
    f.write_text("pool kv { cap 100; }\nsession { grow kv (1); }\nrun { horizon 1; }\n")
    r = serq("check", f)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0].startswith("%s:2:16: error: `grow kv` outside a hold" % f)
    assert lines[1] == "2 | session { grow kv (1); }"
    assert lines[2] == "  |                ^^"
    assert lines[-1].startswith("help: ")
    assert "Traceback" not in r.stderr


def test_unknown_override_lists_constants():
    r = serq("check", EXAMPLE, "--set", "nope=1")
    assert r.returncode == 1
    assert "nope" in r.stderr and "rate" in r.stderr


def test_usage_errors_exit_2(tmp_path):
    assert serq("ir").returncode == 2
    assert serq("ir", EXAMPLE, "--seed", "-3").returncode == 2
    assert serq("ir", EXAMPLE, "--horizon", "inf").returncode == 2
    assert serq("frobnicate").returncode == 2
    missing = serq("check", tmp_path / "missing.sq")
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_from_json_refuses_bad_ir(tmp_path):
    f = tmp_path / "x.json"
    f.write_text('{"version": 10}')
    r = serq("ir", "--from-json", f)
    assert r.returncode == 1 and "IR version 10" in r.stderr
    f.write_text('{"version": 11, "attrs": 3}')
    r = serq("ir", "--from-json", f)
    assert r.returncode == 1 and "attrs" in r.stderr


@pytest.mark.parametrize("content", [
    b"\xff\xfe\x00garbage",
    b"session { set x = \"unterminated; }",
    b"/* never closed",
    b"let a = " + b"(" * 10000 + b"1" + b")" * 10000 + b";",
    bytes(range(256)),
])
def test_hostile_files_get_a_located_error(tmp_path, content):
    f = tmp_path / "h.sq"
    f.write_bytes(content)
    r = serq("check", f)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith(str(f) + ":"), r.stderr
    assert "Traceback" not in r.stderr


def test_huge_file_is_refused_quickly(tmp_path):
    f = tmp_path / "big.sq"
    with open(f, "wb") as out:
        out.seek(100 * 1024 * 1024)
        out.write(b"\n")
    r = serq("check", f)
    assert r.returncode == 1
    assert r.stderr.startswith("%s:1:1: error: the file is" % f)
