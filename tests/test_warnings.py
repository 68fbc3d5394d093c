"""Hazards that serQ 0.1.3 compiles and runs as written (tests/programs/warn):
serq compiles each to the reference's IR (``NAME.ir.json``, written by
pyserq 0.1.3; tests/test_conformance_reports.py checks the reports at three
seeds) and reports a located warning, on stderr and never in the report;
``-W error`` refuses the program at the same place."""
import json
import subprocess
import sys

import pytest

from corpus import PROGRAMS, header_kwargs, in_dir, programs
from serq.compiler import compile_program
from serq.errors import LinkError, SerqError, SyntaxError_
from serq.ir.json import dumps

WARN = programs("warn")


def compiled(path, **extra):
    kwargs = header_kwargs(path.read_text())
    kwargs.update(extra)
    with in_dir(path.parent):
        return compile_program(path.name, **kwargs)


@pytest.mark.parametrize("path", WARN, ids=[p.stem for p in WARN])
def test_hazard_compiles_to_the_reference_ir_with_a_located_warning(path):
    prog = compiled(path)
    assert json.loads(dumps(prog)) == json.loads(path.with_suffix(".ir.json").read_text())
    assert prog.warnings, "no warning for %s" % path.name
    for w in prog.warnings:
        text = w.render()
        assert w.span is not None and ": warning: " in text.splitlines()[0]
        assert "^" in text and "help: " in text, text  # a caret and a remedy


@pytest.mark.parametrize("path", WARN, ids=[p.stem for p in WARN])
def test_warnings_as_errors_refuses_at_the_first_warning(path):
    first = compiled(path).warnings[0]
    with pytest.raises(SerqError) as info:
        compiled(path, warnings_as_errors=True)
    err = info.value
    assert isinstance(err, (LinkError, SyntaxError_))
    assert (err.span, err.message) == (first.span, first.message)
    assert "error: " in err.render().splitlines()[0]


def test_cli_prints_warnings_on_stderr_and_keeps_the_report_clean():
    path = PROGRAMS / "warn" / "def_params_shadow_library.sq"
    run = subprocess.run([sys.executable, "-m", "serq", "run", path.name, "--json"],
                         cwd=str(path.parent), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "warning: parameter `bs` of `round_down` shadows the let `bs`" in run.stderr
    assert "lib/engine_defs.sq:3:19" in run.stderr
    expected = (PROGRAMS / "reports" / "warn" / "def_params_shadow_library.1.json").read_text()
    assert run.stdout == expected
    strict = subprocess.run([sys.executable, "-m", "serq", "check", "-W", "error", path.name],
                            cwd=str(path.parent), capture_output=True, text=True)
    assert strict.returncode == 1
    assert "error: parameter `bs`" in strict.stderr and "-W error" in strict.stderr


def test_a_second_workload_session_is_still_refused():
    # 0.1.3 refuses it ("duplicate session in workload"): not a hazard, an error
    with pytest.raises(SyntaxError_) as info:
        compile_program(source="workload { arrive poisson(1); session { end; } "
                               "session { end; } }\nrun { horizon 1; }")
    assert (info.value.span.line, info.value.span.col) == (1, 48)


def test_corpus_size():
    assert len(WARN) >= 20
