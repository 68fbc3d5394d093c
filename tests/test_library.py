"""The libraries are package data, found by `use` along a search path
(issue 18, part 2): the program's folder first (serQ 0.1.3's rule), then
each folder of SERQ_PATH, then the libraries installed with serq; a failed
`use` lists every place it looked, located at the `use`."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from serq import library
from serq.compiler import compile_program
from serq.errors import SerqError
from serq.fmt import format_source
from serq.ir.json import dumps as to_json

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "src" / "serq" / "lib"
RUN = "run { horizon 1; }\n"


def ir_of(path, **kw):
    return to_json(compile_program(str(path), **kw))


def cli(*args, cwd=None, env=None):
    full = dict(os.environ)
    full.pop("SERQ_PATH", None)
    full.update(env or {})
    r = subprocess.run([sys.executable, "-m", "serq"] + [str(a) for a in args],
                       capture_output=True, text=True, cwd=cwd, env=full)
    assert "Traceback" not in r.stderr, r.stderr
    return r


@pytest.fixture(autouse=True)
def no_serq_path(monkeypatch):
    monkeypatch.delenv("SERQ_PATH", raising=False)


def test_lib_folder_is_the_installed_library_not_a_copy():
    # lib/ at the top of the checkout is a link to the package's folder: one
    # copy of each library
    assert (ROOT / "lib").is_symlink()
    assert (ROOT / "lib").resolve() == LIB.resolve()
    assert Path(library.INSTALLED).resolve() == LIB.resolve()
    assert library.installed_libraries() == ["costs/llama-3.1-70b-h100-sxm-tp4.sq",
                                             "costs/llama-3.1-8b-h100-sxm.sq", "vllm.sq"]


def test_use_by_name_reads_the_installed_library(tmp_path):
    p = tmp_path / "p.sq"
    p.write_text('use "vllm.sq";\nuse "costs/llama-3.1-8b-h100-sxm.sq";\n' + RUN)
    q = tmp_path / "q.sq"
    q.write_text('use "%s";\nuse "%s";\n' % (LIB / "vllm.sq", LIB / "costs" / "llama-3.1-8b-h100-sxm.sq")
                 + RUN)
    assert ir_of(p) == ir_of(q)
    r = cli("check", p, cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_copied_example_finds_the_installed_library(tmp_path):
    # examples/vllm_single_turn.sq says `use "../lib/vllm.sq"`: copied out of
    # the checkout it reads the installed library, to the same IR
    src = ROOT / "examples" / "vllm_single_turn.sq"
    dst = tmp_path / "deep" / "vllm_single_turn.sq"
    dst.parent.mkdir()
    shutil.copy(src, dst)
    assert ir_of(dst) == ir_of(src)
    # and `use "lib/vllm.sq"` (the cookbook's spelling) does too
    p = tmp_path / "p.sq"
    p.write_text('use "lib/vllm.sq";\n' + RUN)
    q = tmp_path / "q.sq"
    q.write_text('use "vllm.sq";\n' + RUN)
    assert ir_of(p) == ir_of(q)


def test_program_folder_first_then_serq_path_in_order(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, n in ((a, 1), (b, 2)):
        d.mkdir()
        (d / "k.sq").write_text("def k() = %d;\n" % n)
        # a library of the same name as an installed one
        (d / "vllm.sq").write_text("def k2() = %d;\n" % (10 * n))
    prog = tmp_path / "p.sq"
    prog.write_text('use "k.sq";\nuse "vllm.sq";\nlet x = k() + k2();\nstage s : delay;\n'
                    'session { turn; run s (x); }\n' + RUN)

    def x():
        return ir_of(prog)

    monkeypatch.setenv("SERQ_PATH", os.pathsep.join([str(a), str(b)]))
    first = x()
    monkeypatch.setenv("SERQ_PATH", os.pathsep.join([str(b), str(a)]))
    second = x()
    assert first != second
    monkeypatch.setenv("SERQ_PATH", os.pathsep.join(["", str(tmp_path / "none"), str(a)]))
    assert x() == first  # empty and missing folders are passed over
    # a file next to the program wins over SERQ_PATH
    (tmp_path / "k.sq").write_text("def k() = 7;\n")
    (tmp_path / "vllm.sq").write_text("def k2() = 70;\n")
    here = x()
    assert here not in (first, second)
    monkeypatch.delenv("SERQ_PATH")
    assert x() == here


def test_serq_path_values_reach_the_ir(tmp_path, monkeypatch):
    d = tmp_path / "libs"
    d.mkdir()
    (d / "svc.sq").write_text("def svc() = 0.25;\n")
    prog = tmp_path / "p.sq"
    prog.write_text('use "svc.sq";\nstage s : delay;\nsession { turn; run s (svc()); }\n' + RUN)
    with pytest.raises(SerqError):
        compile_program(str(prog))
    monkeypatch.setenv("SERQ_PATH", str(d))
    assert "0.25" in ir_of(prog)


def test_failed_use_lists_every_place_looked(tmp_path):
    p = tmp_path / "p.sq"
    p.write_text('let a = 1;\n  use "lib/none.sq";\n' + RUN)
    r = cli("check", p, env={"SERQ_PATH": os.pathsep.join(["/nowhere/one", "rel"])})
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == "%s:2:3: error: cannot read `lib/none.sq`: no such file in any place a " \
                       "`use` looks" % p
    notes = [ln for ln in lines if ln.startswith("note: ")]
    assert notes == [
        "note: looked for %s (the program's folder)" % (tmp_path / "lib" / "none.sq"),
        "note: looked for /nowhere/one/lib/none.sq (SERQ_PATH)",
        "note: looked for %s (SERQ_PATH)" % os.path.abspath("rel/lib/none.sq"),
        "note: looked for %s (serq's installed libraries)" % (LIB / "none.sq"),
    ]
    assert "help: " in lines[-1] and "SERQ_PATH" in lines[-1] and "`vllm.sq`" in lines[-1]


def test_failed_use_inside_a_library_is_located_there(tmp_path):
    (tmp_path / "l.sq").write_text('def f() = 1;\nuse "missing.sq";\n')
    p = tmp_path / "p.sq"
    p.write_text('use "l.sq";\n' + RUN)
    r = cli("check", p)
    assert r.returncode == 1
    assert r.stderr.startswith("%s:2:1: error: cannot read `missing.sq`" % (tmp_path / "l.sq"))
    assert "note: looked for %s (the program's folder)" % (tmp_path / "missing.sq") in r.stderr


def test_existing_but_unreadable_file_next_to_the_program_keeps_its_error(tmp_path):
    # 0.1.3's rule finds it, so it is read (and fails) as 0.1.3 reads it,
    # without looking further
    (tmp_path / "vllm.sq").mkdir()
    p = tmp_path / "p.sq"
    p.write_text('use "vllm.sq";\n' + RUN)
    r = cli("check", p)
    assert r.returncode == 1 and "cannot read `vllm.sq`" in r.stderr and "directory" in r.stderr
    assert "looked for" not in r.stderr


def test_program_given_as_text_uses_installed_libraries(monkeypatch, tmp_path):
    import serq
    prog = serq.compile(source='use "vllm.sq";\n' + RUN)
    assert prog is not None
    with pytest.raises(SerqError) as info:
        serq.compile(source='use "nope.sq";\n' + RUN)
    e = info.value
    assert "given as text" in e.message and (e.span.line, e.span.col) == (1, 1)
    assert e.notes == ["looked for %s (serq's installed libraries)" % (LIB / "nope.sq")]
    d = tmp_path / "d"
    d.mkdir()
    (d / "nope.sq").write_text("def f() = 1;\n")
    monkeypatch.setenv("SERQ_PATH", str(d))
    assert serq.compile(source='use "nope.sq";\n' + RUN) is not None


def test_fmt_knows_the_definitions_of_an_installed_library(tmp_path):
    # a def's name is written against its `(`; the formatter finds the
    # library's defs along the same search path
    p = tmp_path / "p.sq"
    text = 'use "vllm.sq";\nlet c = vllm_hit_cap (100, 16);\n'
    p.write_text(text)
    assert format_source(text, str(p)) == 'use "vllm.sq";\nlet c = vllm_hit_cap(100, 16);\n'


@pytest.mark.parametrize("name,rest", [("lib/vllm.sq", "vllm.sq"), ("../../lib/costs/a.sq", "costs/a.sq"),
                                       ("x/lib/vllm.sq", None), ("lib/../vllm.sq", None),
                                       ("lib", None), ("vllm.sq", None)])
def test_paths_into_a_lib_folder(name, rest):
    got = library.candidates(name, "/p")[-1]
    assert got == (os.path.normpath(os.path.join(library.INSTALLED, rest or name)),
                   library.INSTALLED_LIBRARY)


def test_the_libraries_are_package_data(tmp_path):
    # setuptools' build (what pip's install runs) copies every library into
    # the package, and the built package's `use` finds them there
    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    out = tmp_path / "out"
    env = dict(os.environ, SERQ_NO_COMPILE="1")
    env.pop("SERQ_REQUIRE_COMPILE", None)  # (.ci/run sets it for its install)
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "-d", str(out)],
                       cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    built = sorted(str(p.relative_to(out / "serq" / "lib")) for p in (out / "serq" / "lib").rglob("*.sq"))
    assert built == sorted(str(p.relative_to(LIB)) for p in LIB.rglob("*.sq"))
    assert built
    prog = tmp_path / "elsewhere" / "p.sq"
    prog.parent.mkdir()
    prog.write_text('use "vllm.sq";\nuse "nothere.sq";\n' + RUN)
    env = dict(os.environ, PYTHONPATH=str(out), SERQ_INTERPRETED="1")
    env.pop("SERQ_PATH", None)
    r = subprocess.run([sys.executable, "-m", "serq", "check", "p.sq"], cwd=prog.parent,
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "p.sq:2:1: error: cannot read `nothere.sq`" in r.stderr, r.stderr
    assert "(%s)" % library.INSTALLED_LIBRARY in r.stderr
    assert "looked for %s (" % (out / "serq" / "lib" / "nothere.sq") in r.stderr
