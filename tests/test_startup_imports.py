"""`serq run` and `serq check` import only what they use: never numpy, the
plotting, sweep and trace modules, rich (the progress bar, after a second on
a terminal) or the Python API.  A fresh interpreter runs the command and
lists its modules (what this asserts is the import graph, not a time: see
bench/startup.py for that)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import serq

SRC = str(Path(__file__).resolve().parent.parent / "src")

PROGRAM = """stage d : delay;
workload { arrive batch(1); }
session { run d (1); }
run { horizon 10; }
"""

# Third-party packages none of these commands needs.
HEAVY = ("numpy", "pandas", "matplotlib", "plotly", "scipy", "ray", "pyarrow", "rich", "pyserq")
# serq's own modules for the other commands and for the Python API.
OPTIONAL = ("serq.api", "serq.builder", "serq.sweep", "serq.plot", "serq.traces",
            "serq.draw", "serq.fmt", "serq.report.admission", "serq.report.dump")

SCRIPT = """
import contextlib, io, json, sys
from serq.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(sys.argv[1:])
sys.stdout.write(json.dumps({"status": status, "out": out.getvalue(),
                             "modules": sorted(sys.modules)}))
"""


def _modules(tmp_path, *argv):
    env = dict(os.environ, PYTHONPATH=SRC)
    r = subprocess.run([sys.executable, "-c", SCRIPT] + list(argv), env=env, cwd=str(tmp_path),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
    return json.loads(r.stdout)


def _unwanted(modules):
    return sorted(m for m in modules
                  if m.split(".")[0] in HEAVY or any(m == o or m.startswith(o + ".")
                                                     for o in OPTIONAL))


@pytest.mark.parametrize("argv", [["run"], ["run", "--json"], ["check"]])
def test_a_command_imports_only_what_it_uses(tmp_path, argv):
    program = tmp_path / "one.sq"
    program.write_text(PROGRAM)
    got = _modules(tmp_path, *(argv + [str(program)]))
    assert got["status"] == 0
    assert got["out"].startswith("{" if "--json" in argv else
                                 "OK" if argv == ["check"] else "run: horizon 10")
    assert _unwanted(got["modules"]) == []


@pytest.mark.skipif(sys.implementation.name != "cpython" or sys.version_info < (3, 11),
                    reason="Python 3.9's argparse imports shutil itself")
@pytest.mark.parametrize("argv", [["run"], ["run", "--json"]])
def test_a_run_leaves_the_slow_standard_modules_alone(tmp_path, argv):
    """Neither serq nor argparse's help formatter (cli/helpfmt.py) imports
    shutil (and with it bz2, lzma), platform or threading for a run: 5 ms
    of a 60 ms start."""
    program = tmp_path / "one.sq"
    program.write_text(PROGRAM)
    got = _modules(tmp_path, *(argv + [str(program)]))
    assert got["status"] == 0
    assert [m for m in ("shutil", "bz2", "lzma", "platform", "threading")
            if m in got["modules"]] == []


def test_the_help_width_is_shutils(monkeypatch):
    import shutil
    from serq.cli.helpfmt import terminal_columns
    for columns in (None, "57", "0", "x"):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert terminal_columns() == shutil.get_terminal_size().columns


def test_import_serq_loads_the_api_on_first_use(tmp_path):
    env = dict(os.environ, PYTHONPATH=SRC)
    code = ("import sys, serq; before = 'serq.api' in sys.modules; f = serq.compile; "
            "print(before, 'serq.api' in sys.modules, f.__module__)")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path),
                         stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    assert out == ["False", "True", "serq.api"]


def test_the_lazy_names():
    from serq import api, builder
    assert serq.compile is api.compile and serq.Report is api.Report
    assert serq.ProgramBuilder is builder.ProgramBuilder and serq.edit is builder.edit
    assert set(serq.__all__) <= set(dir(serq))
    for name in serq.__all__:
        assert getattr(serq, name) is not None
    with pytest.raises(AttributeError):
        serq.no_such_name


@pytest.mark.parametrize("argv", [["-h"], ["-h", "run"], ["--help", "check"]])
def test_the_top_level_help_lists_every_command(argv, capsys):
    """`serq run ...` builds only run's parser; help before the command
    still lists them all."""
    from serq.cli import _COMMANDS, main
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert all(("    %s " % name) in out for name, _kw, _add, _run in _COMMANDS)


def test_an_unknown_command_lists_the_choices(capsys):
    from serq.cli import main
    assert main(["runn", "x.sq"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'runn'" in err and "'trace'" in err and "'check'" in err
