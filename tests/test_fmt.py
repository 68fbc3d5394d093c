"""`serq fmt`: the canonical layout keeps every token and comment, is
idempotent, and the formatted program compiles to the identical IR."""
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from corpus import header_kwargs, programs
from serq import compiler
from serq.cli import main
from serq.compiler import compile_program
from serq.errors import SerqError, SyntaxError_
from serq.fmt import MAX_WIDTH, format_source
from serq.ir.json import dumps
from serq.syntax import defs as syntax_defs
from serq.syntax.lexer import tokenize

ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
#: The programs shipped with serq: the examples, the libraries, the
#: benchmarks' programs.
SHIPPED = sorted(set((ROOT / "examples").rglob("*.sq")) | set((ROOT / "lib").rglob("*.sq"))
                 | set((ROOT / "bench" / "programs").glob("*.sq")))
FILES = sorted(set(programs("valid")) | set(SHIPPED))
LIBRARIES = [ROOT / "lib" / "vllm.sq", ROOT / "examples" / "policies" / "workload.sq"]
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def comments(text):
    """The comments of a program, in order (strings hold no `//` in the
    corpus, which the lexer check below confirms)."""
    return [c.rstrip() for c in COMMENT.findall(text)]


def compiled(path, text=None, lib=None, monkeypatch=None):
    """The IR JSON of ``path`` (with its header's overrides), read as
    ``text`` if given and with the library file ``lib`` = (path, text)
    replaced; or the error message if it does not compile."""
    if text is not None:
        monkeypatch.setattr(compiler, "read_source",
                            lambda p: text if Path(p) == Path(path) else open(p).read())
    if lib is not None:
        real_open = open

        def fake_open(p, mode="r", *a, **k):
            if os.path.normpath(p) == os.path.normpath(str(lib[0])):
                return io.BytesIO(lib[1].encode("utf-8"))
            return real_open(p, mode, *a, **k)
        monkeypatch.setattr(syntax_defs, "open", fake_open, raising=False)
    try:
        return dumps(compile_program(str(path), **header_kwargs(Path(path).read_text())))
    except SerqError as e:
        return "error: " + e.message
    finally:
        if monkeypatch is not None:
            monkeypatch.undo()


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_formatting_keeps_tokens_comments_and_ir_and_is_idempotent(path, monkeypatch):
    text = path.read_text()
    out = format_source(text, str(path))
    assert format_source(out, str(path)) == out
    assert comments(out) == comments(text)
    assert [(t.kind, t.text) for t in tokenize(out)] == [(t.kind, t.text) for t in tokenize(text)]
    assert compiled(path, out, monkeypatch=monkeypatch) == compiled(path)
    # the layout's promises: indentation by braces, no trailing blanks, one
    # final newline, never two blank lines in a row
    assert out.endswith("\n") and not out.endswith("\n\n")
    assert "\n\n\n" not in out
    assert all(line == line.rstrip() for line in out.splitlines())


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda p: p.name)
def test_formatted_libraries_give_the_same_ir(lib, monkeypatch):
    out = format_source(lib.read_text(), str(lib))
    users = [p for p in FILES if p not in LIBRARIES and lib.name in p.read_text()
             and compiled(p).startswith("{")]
    assert users
    for p in users:
        assert compiled(p, lib=(lib, out), monkeypatch=monkeypatch) == compiled(p), p


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_program_is_in_the_canonical_layout(path):
    # what `serq fmt --check` checks
    text = path.read_text()
    assert format_source(text, str(path)) == text


# The documentation's programs (```serq blocks), but docs/cli.md's
# hurry.sq, which shows what `serq fmt` changes.
DOC_FENCE = re.compile(r"^```serq\n(.*?)^```\s*$", re.S | re.M)
DOC_BLOCKS = [(page.name, text[:m.start()].count("\n") + 1, m.group(1))
              for page in sorted((ROOT / "docs").glob("*.md")) for text in [page.read_text()]
              for m in DOC_FENCE.finditer(text) if "// file: hurry.sq" not in m.group(1)]


@pytest.mark.parametrize("page,line,body", DOC_BLOCKS, ids=["%s:%d" % b[:2] for b in DOC_BLOCKS])
def test_every_doc_program_is_in_the_canonical_layout(page, line, body):
    assert format_source(body, str(ROOT / "docs" / "_block.sq")) == body


def test_doc_programs_are_found():
    assert len(DOC_BLOCKS) >= 15


def test_canonical_layout():
    messy = ("let a=1;let b = a+2 ;   // two\n"
             "pool kv{cap 4*a;\nblock 16;}\n"
             "pool q{cap 2;}\n"
             "\n\n\n"
             "stage gpu:fifo(1);\n"
             "workload{arrive poisson( 1 );session{set x=-a+ ~exp (2);\n"
             "hold kv(1){run gpu(x);\n}cache (x);\n"
             "hold kv(1){run gpu(x);}cache (x);\n"
             "branch(x>1){observe y=x;}\n   else{end;}\n"
             "branch(x>1){\nobserve y=x;}   else{end;\n}\n"
             "  // before the end\n"
             "}}\n"
             "run{horizon 10;}")
    assert format_source(messy) == (
        "let a = 1;\n"
        "let b = a + 2;  // two\n"
        "\n"
        "pool kv {\n"
        "  cap 4 * a;\n"
        "  block 16;\n"
        "}\n"
        "\n"
        "pool q { cap 2; }\n"
        "\n"
        "stage gpu : fifo(1);\n"
        "\n"
        "workload {\n"
        "  arrive poisson(1);\n"
        "  session {\n"
        "    set x = -a + ~exp(2);\n"
        "    hold kv (1) {\n"
        "      run gpu (x);\n"
        "    } cache (x);\n"
        "    hold kv (1) { run gpu (x); } cache (x);\n"
        "    branch (x > 1) { observe y = x; }\n"
        "    else { end; }\n"
        "    branch (x > 1) {\n"
        "      observe y = x;\n"
        "    } else {\n"
        "      end;\n"
        "    }\n"
        "    // before the end\n"
        "  }\n"
        "}\n"
        "\n"
        "run { horizon 10; }\n")


def test_a_short_block_written_on_one_line_stays_on_one_line():
    # consecutive one-line declarations stay together; a block with a line
    # break or a comment inside is spread; `{}` stays empty
    text = ("pool seqs {cap 256;admit via gpu;}\n"
            "pool kv { cap 64 * 16; block 16; preempt lifo; }   // KV\n"
            "pool c { cap 1; /* one */ }\n"
            "pool e {}\n"
            "stage gpu : step { budget 2048; cost 0.01; memory kv; }\n"
            "queue Q[2] : r { pool kv { cap 8; } serve fifo; }\n")
    assert format_source(text) == (
        "pool seqs { cap 256; admit via gpu; }\n"
        "pool kv { cap 64 * 16; block 16; preempt lifo; }  // KV\n"
        "\n"
        "pool c {\n"
        "  cap 1;  /* one */\n"
        "}\n"
        "\n"
        "pool e {}\n"
        "stage gpu : step { budget 2048; cost 0.01; memory kv; }\n"
        "queue Q[2] : r { pool kv { cap 8; } serve fifo; }\n")


def test_a_one_line_block_too_wide_is_spread_and_its_inner_blocks_kept_if_they_fit():
    inner = "branch (x > 1) { observe y = x; }"
    wide = "session { set x = 1; %s %s %s }\n" % (inner, inner, inner)
    assert len(wide) > MAX_WIDTH
    out = format_source(wide)
    assert out == ("session {\n  set x = 1;\n" + ("  %s\n" % inner) * 3 + "}\n")
    assert format_source(out) == out
    # exactly at the limit stays, one column past spreads
    for width, lines in ((MAX_WIDTH, 1), (MAX_WIDTH + 1, 3)):
        head = "pool kv { cap "
        tail = "; }"
        line = head + "1" * (width - len(head) - len(tail)) + tail
        assert len(line) == width
        assert format_source(line + "\n").count("\n") == lines


def test_comments_stay_where_they_were():
    text = ("/* header,\n   two lines */\n"
            "let k = 2; // k\n"
            "let longer_name = 3; // aligned with k's\n"
            "session { /* in */ set x = k /* mid */ + 1; }\n"
            "// last\n")
    out = format_source(text)
    assert out == ("/* header,\n   two lines */\n"
                   "let k = 2;            // k\n"
                   "let longer_name = 3;  // aligned with k's\n"
                   "\n"
                   "session {  /* in */\n"
                   "  set x = k /* mid */ + 1;\n"
                   "}\n"
                   "// last\n")


def test_a_line_break_inside_a_statement_is_kept_and_aligned():
    text = "def f(a, b) = min(a,\n b) +\n 1;\nsession { set y = f(1,\n2); }\n"
    out = format_source(text)
    assert out == ("def f(a, b) = min(a,\n"
                   "                  b) +\n"
                   "    1;\n"
                   "\n"
                   "session {\n"
                   "  set y = f(1,\n"
                   "            2);\n"
                   "}\n")


def test_a_number_glued_to_a_word_stays_glued():
    # `50A` is an error that names the unit; written `50 A` it would be
    # another error (found by test_mutated_programs_format_safely)
    text = "session { run gpu (prompt / 50A); }\n"
    assert format_source(text) == text
    assert format_source("let a = 10 ms;\n") == "let a = 10 ms;\n"
    with pytest.raises(SerqError) as before:
        compile_program(source=text)
    assert "a number carries no unit" in before.value.message


def test_tokens_that_would_merge_keep_a_space():
    # `!` `=` and `<` `=` are two tokens each here: joining them would make one
    out = format_source("let a = ! = b < = c; let d = 2 .kv;")
    assert [t.text for t in tokenize(out)] == [t.text for t in tokenize(
        "let a = ! = b < = c; let d = 2 .kv;")]


SOURCES = [p.read_text() for p in FILES]


@st.composite
def respaced(draw):
    """A corpus program with random spaces and tabs added between tokens."""
    text = draw(st.sampled_from(SOURCES))
    toks = tokenize(text)
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    cuts = sorted(set(starts[t.line - 1] + t.col - 1 for t in toks[:-1]))
    chosen = draw(st.lists(st.sampled_from(cuts), max_size=12, unique=True)) if cuts else []
    out = text
    for c in sorted(chosen, reverse=True):
        out = out[:c] + draw(st.sampled_from([" ", "\t", "   ", " \t "])) + out[c:]
    return text, out


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(respaced())
def test_the_layout_does_not_depend_on_spaces(pair):
    original, spaced = pair
    assert format_source(spaced) == format_source(original)


def formatted_stably(text):
    """``text`` formatted (None where it does not lex: a located error),
    checked idempotent and with every comment kept."""
    try:
        out = format_source(text)
    except SyntaxError_ as e:
        assert e.span is not None
        return None
    assert format_source(out) == out
    assert comments(out) == comments(text)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_programs_format_safely(data):
    from test_fuzz_frontend import mutated
    text = data.draw(mutated())
    out = formatted_stably(text)
    if out is None:
        return
    try:
        before = dumps(compile_program(source=text))
    except SerqError as e:
        before = "error: " + e.message
    try:
        after = dumps(compile_program(source=out))
    except SerqError as e:
        after = "error: " + e.message
    assert after == before


PIECES = list("ab1 .\n\t\r{}();,=-!<~/*_") + [
    "//", "/*", "*/", "\n\n", "else", "cache", "lease", "let", "run", "[", "]", "?", ":",
    "2.5", '"s"', "<=", "&&"]


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(PIECES), max_size=60).map("".join))
def test_any_text_that_lexes_formats_idempotently(text):
    formatted_stably(text)


# ------------------------------------------------------------------ the CLI

def run_cli(args, stdin=None):
    return subprocess.run([sys.executable, "-m", "serq"] + args, capture_output=True, text=True,
                          input=stdin, env=dict(os.environ, PYTHONPATH=SRC), cwd=str(ROOT))


def test_cli_rewrites_checks_and_diffs(tmp_path, capsys):
    messy = tmp_path / "messy.sq"
    messy.write_text("let a=1;\nrun{\nhorizon 10;}\n")
    tidy = tmp_path / "tidy.sq"
    tidy.write_text(format_source(messy.read_text()))
    assert main(["fmt", "--check", str(messy), str(tidy)]) == 1
    out, err = capsys.readouterr()
    assert out == "would reformat %s\n" % messy
    assert "1 file(s)" in err
    assert messy.read_text() == "let a=1;\nrun{\nhorizon 10;}\n"  # untouched
    assert main(["fmt", "--diff", str(messy)]) == 0
    out, _ = capsys.readouterr()
    assert "-let a=1;" in out and "+let a = 1;" in out
    assert main(["fmt", "--stdout", str(messy)]) == 0
    assert capsys.readouterr().out == tidy.read_text()
    assert main(["fmt", str(messy)]) == 0
    assert messy.read_text() == tidy.read_text()
    assert main(["fmt", "--check", str(messy), str(tidy)]) == 0


def test_cli_stdin_to_stdout():
    r = run_cli(["fmt", "-"], stdin="let a=1;run{horizon 1;}")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "let a = 1;\nrun { horizon 1; }\n"


def test_cli_writes_utf8_whatever_the_locale():
    text = "// déjà — ünïcode\nlet a=1;\n"
    env = dict(os.environ, PYTHONPATH=SRC, PYTHONIOENCODING="ascii")
    r = subprocess.run([sys.executable, "-m", "serq", "fmt", "-"], input=text.encode("utf-8"),
                       capture_output=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode("utf-8") == "// déjà — ünïcode\nlet a = 1;\n"
    r = subprocess.run([sys.executable, "-m", "serq", "fmt", "-"], input=b"let a = 1;\xff\n",
                       capture_output=True, env=env)
    assert r.returncode == 1 and b"<stdin>:1:11: error: the input is not UTF-8" in r.stderr


def test_cli_a_file_that_does_not_parse_is_located_and_untouched(tmp_path):
    bad = tmp_path / "bad.sq"
    bad.write_text("let a = 1\nrun { horizon 1; }\n")
    good = tmp_path / "good.sq"
    good.write_text("let a=1;\n")
    r = run_cli(["fmt", str(bad), str(good)])
    assert r.returncode == 1
    assert "bad.sq:2:1: error:" in r.stderr
    assert "Traceback" not in r.stderr
    assert bad.read_text() == "let a = 1\nrun { horizon 1; }\n"
    assert good.read_text() == "let a = 1;\n"  # the others are still formatted


def test_cli_usage_errors(tmp_path):
    r = run_cli(["fmt", "--stdout", "--check", "x.sq"])
    assert r.returncode == 2 and "--stdout" in r.stderr
    r = run_cli(["fmt", str(tmp_path / "missing.sq")])
    assert r.returncode == 2 and "cannot read" in r.stderr

