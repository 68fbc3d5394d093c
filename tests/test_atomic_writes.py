"""Every file serq writes is written whole or not at all (serq.atomic): a
full disk, a folder that cannot be written, a target that is a folder or a
device give a clear error (exit 5) and leave the old file as it was; a run
whose side output fails still prints its report."""
import os
import resource
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from serq.atomic import AtomicFile, replacing, write_text
from serq.errors import OutputError

ROOT = Path(__file__).resolve().parent.parent
MM1 = ROOT / "bench" / "programs" / "mm1.sq"
DATA = ROOT / "tests" / "data" / "traces"
UGLY = "let rate=1;\nstage s:fifo;\nworkload{arrive poisson(rate);}\nsession{run s(~exp(2));}\n" \
       "run{horizon 10;}\n"
FULL = "/dev/full"
have_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full")


def serq(*args, limit=None):
    """``serq ARGS`` in a child; ``limit``: the largest file it may write
    (RLIMIT_FSIZE: a write past it fails with EFBIG, as on a full disk;
    Python ignores the SIGXFSZ that comes with it)."""
    def pre():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                          capture_output=True, text=True,
                          preexec_fn=pre if limit is not None else None)


def leftovers(folder):
    """Temporary files serq left behind in ``folder``."""
    return [n for n in os.listdir(folder) if n.endswith(".tmp")]


# ------------------------------------------------------------ the helper

def test_replace_keeps_permissions_and_follows_links(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_text(str(link), "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    fresh = tmp_path / "fresh.txt"
    write_text(str(fresh), "x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o666 & ~umask
    assert leftovers(tmp_path) == []


def test_a_failure_inside_the_block_keeps_the_old_file(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with replacing(str(target)) as f:
            f.write("half")
            raise KeyboardInterrupt()
    with pytest.raises(OutputError) as e:
        with replacing(str(target)) as f:
            f.write("half")
            raise OSError(28, "No space left on device")
    assert "left as it was" in str(e.value) and "No space left" in str(e.value)
    assert target.read_text() == "old" and leftovers(tmp_path) == []
    f = AtomicFile(str(target))
    f.file.write("dropped")
    f.discard()
    assert target.read_text() == "old" and leftovers(tmp_path) == []


def test_a_folder_target_and_a_missing_folder_are_refused(tmp_path):
    with pytest.raises(OutputError, match="it is a folder"):
        write_text(str(tmp_path), "x")
    with pytest.raises(OutputError, match="No such file or directory"):
        write_text(str(tmp_path / "nowhere" / "t.txt"), "x")


@have_full
def test_a_device_is_written_directly():
    write_text(os.devnull, "discarded")  # /dev/null stays a device
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    with pytest.raises(OutputError) as e:
        write_text(FULL, "x" * 100000)
    assert "No space left on device" in str(e.value) and "left as it was" not in str(e.value)


# ------------------------------------------------------------ the commands

def test_fmt_on_a_full_disk_leaves_the_program_whole(tmp_path):
    prog = tmp_path / "ugly.sq"
    prog.write_text(UGLY)
    r = serq("fmt", prog, limit=60)  # the formatted text is longer than 60 bytes
    assert r.returncode == 5, r.stderr
    assert "cannot write %s: File too large; %s is left as it was" % (prog, prog) in r.stderr
    assert prog.read_text() == UGLY and leftovers(tmp_path) == []
    assert "Traceback" not in r.stderr
    r = serq("fmt", prog)
    assert r.returncode == 0 and prog.read_text() != UGLY


@have_full
def test_fmt_of_a_device_is_refused_at_once():
    # /dev/full reads as endless zeros: serq once read it until memory ran out
    r = subprocess.run([sys.executable, "-m", "serq", "fmt", FULL], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "it is a device, not a file" in r.stderr


@pytest.mark.parametrize("command", [
    ["draw", MM1, "-o"],
    ["trace", "convert", DATA / "burstgpt.csv", "--format", "burstgpt", "-o"],
    ["cost", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-o"],
    ["sweep", MM1, "--set", "rate=0.5,0.6", "--horizon", "2000", "-j", "1", "--quiet", "-o"],
])
def test_outputs_on_a_full_disk_keep_the_old_file(tmp_path, command):
    out = tmp_path / ("out.csv" if command[0] in ("trace", "sweep") else "out.sq")
    out.write_text("the user's old file\n")
    r = serq(*(command + [out]), limit=200)
    assert r.returncode == 5, r.stderr
    assert "cannot write %s: File too large; %s is left as it was" % (out, out) in r.stderr
    assert out.read_text() == "the user's old file\n" and leftovers(tmp_path) == []
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    r = serq(*(command + [out]))
    assert r.returncode == 0, r.stderr
    assert out.read_text() != "the user's old file\n" and leftovers(tmp_path) == []


@have_full
@pytest.mark.parametrize("command", [
    ["draw", MM1, "-o"],
    ["sweep", MM1, "--set", "rate=0.5,0.6", "--horizon", "2000", "-j", "1", "--quiet", "-o"],
    ["trace", "convert", DATA / "burstgpt.csv", "--format", "burstgpt", "-o"],
])
def test_dev_full_as_the_target_is_a_clear_error(command):
    r = serq(*(command + [FULL]))
    assert r.returncode == 5, r.stderr
    assert "cannot write /dev/full: No space left on device" in r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


@have_full
@pytest.mark.parametrize("command", [
    ["run", MM1, "--horizon", "3000"],
    ["run", MM1, "--horizon", "3000", "--json"],
    ["ir", MM1],
    ["draw", MM1],
    ["sweep", MM1, "--set", "rate=0.5,0.6", "--horizon", "2000", "-j", "1", "--quiet"],
])
def test_stdout_on_a_full_device_is_a_clear_error(command):
    with open(FULL, "w") as full:
        r = subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in command],
                           stdout=full, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 5, r.stderr
    assert r.stderr.strip().endswith("cannot write to standard output: No space left on device")
    assert "internal error" not in r.stderr and "Exception ignored" not in r.stderr


def test_a_folder_target_and_a_missing_folder_on_the_command_line(tmp_path):
    r = serq("draw", MM1, "-o", tmp_path)
    assert r.returncode == 5 and "cannot write %s: it is a folder" % tmp_path in r.stderr
    r = serq("draw", MM1, "-o", tmp_path / "no" / "x.svg")
    assert r.returncode == 5 and "No such file or directory" in r.stderr


def _read_only(folder):
    """Make ``folder`` unwritable: no write bit, or for root (whom that does
    not stop) the immutable attribute; False where neither holds."""
    if os.geteuid() != 0:
        os.chmod(folder, 0o555)
        return True
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", "+i", folder], capture_output=True).returncode == 0


def _writable(folder):
    if os.geteuid() == 0 and shutil.which("chattr"):
        subprocess.run(["chattr", "-i", folder], capture_output=True)
    os.chmod(folder, 0o755)


def test_a_read_only_folder_keeps_the_old_file(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    prog = folder / "ugly.sq"
    prog.write_text(UGLY)
    os.chmod(prog, 0o666)  # the file itself may be written: only a replace is refused
    if not _read_only(str(folder)):
        pytest.skip("cannot make a folder read-only here")
    try:
        r = serq("fmt", prog)
        assert r.returncode == 5, r.stderr
        assert "cannot write %s: " % prog in r.stderr
        assert ("Permission denied" in r.stderr or "Operation not permitted" in r.stderr)
        assert "%s is left as it was" % prog in r.stderr
        assert prog.read_text() == UGLY
        r = serq("draw", MM1, "-o", folder / "new.svg")
        assert r.returncode == 5 and "cannot write %s" % (folder / "new.svg") in r.stderr
        assert sorted(os.listdir(folder)) == ["ugly.sq"]
    finally:
        _writable(str(folder))


# ------------------------------------- side outputs: the report still printed

def test_a_failing_dump_still_prints_the_report(tmp_path):
    (tmp_path / "dump").mkdir()
    old = tmp_path / "dump" / "response.csv"
    old.write_text("old samples\n")
    r = serq("run", MM1, "--horizon", "3000", "--dump", tmp_path / "dump", limit=2000)
    assert r.returncode == 5, r.stderr
    assert r.stdout.startswith("run: horizon 3000 s, warm-up 1000 s, end 3000 s")
    assert "cannot write %s: File too large; %s is left as it was" % (old, old) in r.stderr
    assert old.read_text() == "old samples\n" and leftovers(tmp_path / "dump") == []
    full = serq("run", MM1, "--horizon", "3000")
    assert r.stdout == full.stdout


def test_a_failing_iteration_trace_still_prints_the_report(tmp_path):
    prog = ROOT / "examples" / "chat.sq"
    trace = tmp_path / "iters.txt"
    trace.write_text("old trace\n")
    r = serq("run", prog, "--horizon", "20", "--warmup", "0", "--trace-iterations", trace,
             limit=1000)
    assert r.returncode == 5, r.stderr
    assert r.stdout.startswith("run: horizon 20")
    assert "cannot write %s: File too large; %s is left as it was" % (trace, trace) in r.stderr
    assert trace.read_text() == "old trace\n" and leftovers(tmp_path) == []
    r = serq("run", prog, "--horizon", "20", "--warmup", "0", "--trace-iterations", trace)
    assert r.returncode == 0 and trace.read_text().count("\n") > 10


@have_full
def test_a_dump_into_a_device_says_it_is_not_a_folder_and_prints_the_report():
    # issue 19's CLI fuzzing: the reason was makedirs' "File exists"
    r = serq("run", MM1, "--horizon", "3000", "--quiet", "--dump", FULL)
    assert r.returncode == 5, r.stderr
    assert r.stdout.startswith("run: horizon 3000 s, warm-up 1000 s, end 3000 s")
    assert r.stderr == ("serq: error: cannot write the dump to /dev/full: it is not a folder "
                        "(--dump names a folder for the CSV files)\n")
