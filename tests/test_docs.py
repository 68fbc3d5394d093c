"""Every code block of the documentation runs.

The blocks of each page run in order, in a scratch directory that links
the repository's ``examples/``, ``lib/`` and ``tests/`` (the pages are
written as if run from the repository's root):

* a ```` ```serq ```` block is a whole program: it is compiled and run with
  a horizon of at most 20 (and no warm-up).  A first line
  ``// file: NAME.sq`` saves it under that name for later blocks of the
  page (``$ serq run NAME.sq``);
* a ```` ```python ```` block is executed; a page's blocks share one
  namespace (a block that calls ``to_dataframe`` or ``serq.sweep`` needs pandas: without
  it the page's other blocks run and the test is skipped; so does a
  block of either kind that mentions ``serq plot``, which needs
  matplotlib and plotly);
* a ```` ```console ```` (or ```` ```sh ````) block holds commands, each a line ``$ serq ...``,
  and what it prints below it (stdout, then stderr).  The output shown must
  be the output, line for line, except that a line ``...`` stands for any
  number of lines, and a line ending in ``...`` for any line that starts
  with the text before it.  A command that prints an ``error:`` line may fail; any
  other must exit with status 0.

A page may use no other fence (an unmarked ```` ``` ```` block is refused),
so nothing in the docs escapes the test.  docs/divergences.md,
docs/examples.md and docs/admission.md predate this rule; their marked
blocks run, their unmarked ones (a report excerpt) are left alone.
"""
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import serq

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
STRICT = ["getting-started.md", "language.md", "cookbook.md", "cli.md", "api.md"]
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.S | re.M)
KINDS = ("serq", "python", "console", "sh")
try:
    import pandas  # noqa: F401
    HAVE_PANDAS = True
except ImportError:
    HAVE_PANDAS = False
HAVE_MATPLOTLIB = all(importlib.util.find_spec(m) is not None for m in ("matplotlib", "plotly"))


def blocks(text):
    """(kind, body, line) of each fenced block."""
    for m in FENCE.finditer(text):
        yield m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1


def scratch(tmp_path: Path) -> Path:
    for name in ("examples", "lib", "tests"):
        os.symlink(ROOT / name, tmp_path / name)
    return tmp_path


def run_serq_block(body: str, work: Path, where: str) -> None:
    first = body.split("\n", 1)[0].strip()
    name = first[len("// file:"):].strip() if first.startswith("// file:") else "_block.sq"
    (work / name).write_text(body)
    program = serq.compile(str(work / name))
    horizon = min(program.ir.horizon, 20.0)
    quick = serq.compile(str(work / name), horizon=horizon, warmup=0)
    report = serq.run(quick)
    assert report.end <= horizon, where


def lines_match(expected, actual) -> bool:
    """``expected`` with ``...`` lines matching any run of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(lines_match(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    e, a = expected[0], actual[0] if actual else None
    same = a is not None and (e == a or (e.endswith("...") and a.startswith(e[:-3])))
    return same and lines_match(expected[1:], actual[1:])


def run_console_block(body: str, work: Path, where: str) -> None:
    commands = []
    for line in body.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            commands.append((line[2:], []))
        else:
            assert commands, "%s: output before any `$ serq` command" % where
            commands[-1][1].append(line.rstrip())
    assert commands, "%s: a console block without a command" % where
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                               if p]), COLUMNS="100")
    for command, expected in commands:
        argv = shlex.split(command)
        assert argv[0] == "serq", "%s: only `$ serq ...` commands run: %s" % (where, command)
        proc = subprocess.run([sys.executable, "-m", "serq"] + argv[1:], cwd=str(work),
                              env=env, capture_output=True, text=True, timeout=120)
        actual = (proc.stdout + proc.stderr).rstrip("\n").split("\n")
        actual = [l.rstrip() for l in actual] if actual != [""] else []
        while expected and expected[-1] == "":
            expected.pop()
        shows_error = any("error:" in l for l in expected)
        assert proc.returncode == 0 or shows_error, "%s: `%s` exited %d:\n%s" % (
            where, command, proc.returncode, proc.stderr)
        if expected:
            assert lines_match(expected, actual), "%s: `%s` printed\n%s\nnot\n%s" % (
                where, command, "\n".join(actual), "\n".join(expected))


@pytest.mark.parametrize("page", PAGES)
def test_every_block_runs(page, tmp_path, monkeypatch):
    text = (DOCS / page).read_text()
    work = scratch(tmp_path)
    monkeypatch.chdir(work)
    namespace = {"__name__": "__doc__"}
    ran = 0
    needs = []
    for kind, body, line in blocks(text):
        where = "docs/%s:%d" % (page, line)
        if kind not in KINDS:
            assert page not in STRICT, "%s: a ```%s block; use serq, python or console" % (
                where, kind)
            continue
        if "serq plot" in body and kind != "serq" and not HAVE_MATPLOTLIB:
            needs.append("%s needs matplotlib and plotly (the `plot` extra)" % where)
            continue
        if kind == "serq":
            run_serq_block(body, work, where)
        elif kind == "python":
            if ("to_dataframe" in body or "serq.sweep(" in body) and not HAVE_PANDAS:
                needs.append("%s needs pandas (the `frames` extra)" % where)
                continue
            exec(compile(body, where, "exec"), namespace)
        else:
            run_console_block(body, work, where)
        ran += 1
    if page in STRICT:
        assert ran > 0
    if needs:
        pytest.skip("the other blocks ran; %s" % "; ".join(needs))


def test_the_pages_exist_and_the_readme_links_each():
    index = (ROOT / "README.md").read_text()
    for page in STRICT:
        assert (DOCS / page).exists(), page
    for page in PAGES:
        assert "docs/%s" % page in index, "README does not link docs/%s" % page


def test_the_readme_opens_with_an_example_command_and_the_ci_test_command():
    # the README's first two commands: install and run an example; install
    # what the tests need and run them, the very line .ci/run runs
    readme = (ROOT / "README.md").read_text()
    commands = [line[4:] for line in readme.splitlines() if line.startswith("    ")][:2]
    assert commands[0] == "pip install -e . && serq run examples/vllm_single_turn.sq"
    assert commands[1] == "pip install -e '.[test]' && python -m pytest -q"
    assert (ROOT / commands[0].split()[-1]).exists()
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "(%s)" % commands[1] in ci
    # the `test` extra brings every other extra the suite exercises
    pyproject = (ROOT / "pyproject.toml").read_text()
    test_extra = pyproject.split("\ntest = [", 1)[1].split("]\n", 1)[0]
    extras = re.findall(r"^(\w+) = \[", pyproject.split("[project.optional-dependencies]")[1]
                        .split("\n[", 1)[0], re.M)
    others = set(extras) - {"test", "docs"}
    brought = re.search(r'"serq\[([\w,]+)\]"', test_extra)
    assert brought and set(brought.group(1).split(",")) == others, (others, test_extra)


def test_lines_match():
    assert lines_match(["a", "...", "d"], ["a", "b", "c", "d"])
    assert lines_match(["a", "...", "d"], ["a", "d"])
    assert not lines_match(["a", "...", "d"], ["a", "b"])
    assert not lines_match(["a"], ["a", "b"])
    assert lines_match(["{\"x\": 1, ..."], ["{\"x\": 1, \"y\": 2}"])
    assert not lines_match(["{\"x\": 2, ..."], ["{\"x\": 1, \"y\": 2}"])
