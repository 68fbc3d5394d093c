"""The front door of the front end: text (or a file) -> checked IR.

``compile_program`` mirrors ``pyserq.compile``: exactly one of ``path`` and
``source``, plus the overrides.  Errors are ``SerqError``s carrying a span and
the text it points into.
"""
import os
from typing import Dict, List, Optional

from .depth import deep_recursion
from .errors import LinkError, SerqError, SerqWarning, Span, SyntaxError_, UsageError
from .ir import nodes as ir
from .link import Overrides, link
from .syntax import ast
from .syntax.lexer import tokenize
from .syntax.parser import Parser, parse_program
from .inputfile import InputFileError, read_bytes
from .tracefile import TraceError, read_trace

# A serving program is a few hundred lines; a file far larger than any program
# is refused up front instead of keeping the parser busy for minutes.
MAX_SOURCE = 8 * 1024 * 1024


def parse_expression(text: str, file: str = "<override>") -> ast.Expr:
    """One expression, as a ``--set`` or ``--def`` value is written."""
    p = Parser(text, file, None, None, True)
    p.toks = tokenize(text, file)
    p.prog = ast.Program(file=file, source=text)
    e = p.parse_expr()
    tok = p.peek()
    if tok.kind != "eof":
        raise SyntaxError_("unexpected `%s` after the expression" % tok.text, tok.span(),
                           source=text)
    return e


def read_source(path: str) -> str:
    """A program file's text; unreadable or non-UTF-8 files are located errors."""
    def too_big(size: str) -> SyntaxError_:  # (a device, a FIFO: InputFileError)
        return SyntaxError_("the file is %s bytes, larger than any serQ program serq reads "
                            "(%d MiB at most)" % (size, MAX_SOURCE >> 20), Span(path, 1, 1),
                            help="is this the program file? a trace goes in `trace \"…\"`")
    try:
        data = read_bytes(path, MAX_SOURCE)
    except InputFileError as e:
        if e.too_big:
            raise too_big("over %d" % MAX_SOURCE) from None
        raise UsageError("cannot read %s: %s" % (path, e.reason)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise SyntaxError_("the file is not UTF-8 text (byte 0x%02x)" % data[e.start],
                           Span(path, line, col),
                           help="save the program as UTF-8") from None


def is_ir(path: str, text: str) -> bool:
    """Whether a file given where a program or its IR goes is IR: its first
    non-blank character is ``{`` and its name does not end in ``.sq`` (a
    program file stays one, whatever it starts with, so its errors are a
    program's, located)."""
    return text.lstrip().startswith("{") and not path.endswith(".sq")


def compile_program(path: Optional[str] = None, *, source: Optional[str] = None,
                    sets: Optional[Dict[str, object]] = None,
                    defs: Optional[Dict[str, str]] = None, seed: Optional[int] = None,
                    horizon: Optional[float] = None, warmup: Optional[float] = None,
                    arrivals: Optional[int] = None, trace: Optional[str] = None,
                    strict: bool = False, warnings_as_errors: bool = False,
                    text: Optional[str] = None) -> ir.Program:
    """Compile a program; its warnings are ``Program.warnings`` (each a
    ``SerqWarning``, found once however often a definition is expanded).
    With ``warnings_as_errors`` (``-W error``) the first warning is raised
    as an error instead.  ``text`` (with ``path``) is the file's text as
    already read, perhaps edited (``serq capacity`` writes a `let` that sizes
    a family there); the program is still the file's: `use` and `trace`
    paths are relative to ``path``, errors point into ``text``."""
    with deep_recursion():  # (depth.py: a long operator chain)
        try:
            return _compile(path, source, sets, defs, seed, horizon, warmup, arrivals, trace,
                            strict, warnings_as_errors, text)
        except SerqError as e:
            _note_lone_crs(e, source if path is None else None, path)
            raise


def _note_lone_crs(e: SerqError, source: Optional[str], path: Optional[str]) -> None:
    """A program whose lines end in a lone CR (classic Mac OS) is one line to
    serQ 0.1.3, and to serq as well (the same IR, the same places): its first
    `//` comment runs to the end of the file.  Any error then says why."""
    text = source
    if text is None and path is not None:
        try:
            text = read_source(path)
        except SerqError:
            return
    if text is None or "\r" not in text or "\n" in text.replace("\r\n", ""):
        return
    if text.count("\r") == text.count("\r\n"):
        return
    e.notes.append("the file ends its lines with a lone CR (classic Mac OS): serQ reads it as "
                   "one line, so a `//` comment runs to the end of the file")
    e.help = e.help or "save the file with LF (or CR LF) line ends"


def _compile(path, source, sets, defs, seed, horizon, warmup, arrivals, trace, strict,
             warnings_as_errors, text=None) -> ir.Program:
    if (path is None) == (source is None):
        raise UsageError("compile takes exactly one of a path and a source")
    if path is not None:
        if text is None:
            text = read_source(path)
        file = path
    else:
        if not isinstance(source, str):
            raise UsageError("source is %s, not program text" % type(source).__name__)
        if len(source) > MAX_SOURCE:
            raise SyntaxError_("the program text is %d characters, more than serq reads (%d MiB "
                               "at most)" % (len(source), MAX_SOURCE >> 20), Span("<text>", 1, 1))
        text = source
        file = "<text>"
    prog = parse_program(text, file, defs=defs, sets=sets, from_text=path is None)
    if strict and prog.extensions:
        what, span = prog.extensions[0]
        err = LinkError("%s is serq's extension, not serQ 0.1.3 (`--strict` reads serQ 0.1.3 "
                        "only)" % what, span,
                        help="drop `--strict` to use it (its IR is then not 0.1.3's), or remove "
                             "it for a program that serQ 0.1.3 runs")
        raise err.with_source(text if span.file == file else None)
    ov = Overrides(sets=sets, seed=seed, horizon=horizon, warmup=warmup, arrivals=arrivals,
                   trace=trace)
    program = link(prog, ov, parse_expr=parse_expression)
    program.warnings = _unique(prog.warnings)
    program.surface = dict(prog.surface)
    for w in program.warnings:
        if w.source is None and w.span is not None:
            w.source = text if w.span.file == file else _library_text(w.span.file)
    if warnings_as_errors and program.warnings:
        raise program.warnings[0].as_error()
    if path is not None and trace is None:
        program.trace_dir = os.path.dirname(path)
    if program.trace is not None:
        # The reference reads the trace only when the run starts; serq reads it
        # now, so a missing or malformed trace is refused before any run.
        try:
            read_trace(trace_path(program))
        except TraceError as e:
            span = prog.workload.trace_span if prog.workload is not None else None
            if e.span is None and trace is None and span is not None:
                # a file that cannot be read: said at the `trace` that names it
                e.span = span
                e.source = text if span.file == file else _library_text(span.file)
            elif e.span is None and trace is not None:
                e.message = "--trace %s: %s" % (trace, e.message)
                e.args = (e.message,)
            raise
    return program


def _library_text(path: str) -> Optional[str]:
    """A library's text, for a warning's caret excerpt (None if unreadable)."""
    try:
        with open(path, "rb") as f:
            return f.read(MAX_SOURCE).decode("utf-8", errors="replace")
    except OSError:
        return None


def _unique(found: List[SerqWarning]) -> List[SerqWarning]:
    """Each warning once (a definition's body is read at every use)."""
    seen = set()
    out = []
    for w in found:
        key = (str(w.span), w.message)
        if key not in seen:
            seen.add(key)
            out.append(w)
    return out


def trace_path(program: ir.Program) -> str:
    """Where a program's trace is read from: next to the program file, or
    (for text programs, IR input and the ``--trace`` override) from the
    current directory."""
    if program.trace_dir is None or os.path.isabs(program.trace):
        return program.trace
    return os.path.join(program.trace_dir, program.trace)


__all__ = ["compile_program", "parse_expression", "read_source", "SerqError"]
