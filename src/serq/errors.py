"""Diagnostics: every error serq reports about a user's input.

A diagnostic carries a span (file, line, column), a message that says what is
wrong, and optional ``help`` and ``note`` lines.  ``render`` prints it the way a
compiler does::

    prog.sq:3:14: error: expected `;`, found `}`
      3 | session { end }
        |              ^
    help: every simple statement ends with `;`

The hierarchy follows the pipeline: ``SyntaxError_`` (lexing and parsing,
including sugar expansion), ``LinkError`` (names, constants, moments, IR
validation) and ``RunError`` (raised by the simulator).  ``SerqWarning`` has the same shape
and renders as ``warning:``; it is collected, not raised.  All derive from
``SerqError``, which derives from ``ValueError`` so that callers written
against pyserq (which raises ``ValueError``) keep working.
"""
from typing import Any, List, Optional, Tuple

from ._dataclass import dataclass


@dataclass(frozen=True)
class Span:
    """Where a node starts in the source: 1-based line and column."""

    file: str
    line: int
    col: int
    length: int = 1

    def __str__(self) -> str:
        return "%s:%d:%d" % (self.file, self.line, self.col)


class SerqError(ValueError):
    """An error in a user's program, trace or command line."""

    kind = "error"

    def __init__(self, message: str, span: Optional[Span] = None,
                 help: Optional[str] = None, notes: Optional[List[str]] = None,
                 source: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.help = help
        self.notes = list(notes or [])
        # The text the span points into, for the caret excerpt.
        self.source = source

    def with_source(self, source: Optional[str]) -> "SerqError":
        if self.source is None:
            self.source = source
        return self

    def render(self) -> str:
        return "\n".join("".join(text for text, _ in line) for line in self.styled())

    def styled(self) -> List[List[Tuple[str, str]]]:
        """``render``'s lines as ``(text, style)`` pieces, for a terminal in
        colour (cli/colour.py): the place and the message bold, ``error:``
        or ``warning:`` and the caret in the kind's colour, the excerpt's
        gutter and the ``note:`` and ``help:`` labels marked."""
        kind = self.kind
        lines: List[List[Tuple[str, str]]] = []
        if self.span is not None:
            lines.append([("%s: " % self.span, "loc"), (kind + ":", kind),
                          (" " + self.message, "msg")])
            excerpt = _excerpt(self.source, self.span)
            if excerpt:
                source, caret = excerpt
                bar = source.index(" | ") + 3
                lines.append([(source[:bar], "gutter"), (source[bar:], "")])
                mark = caret.index("^", bar)
                lines.append([(caret[:bar], "gutter"), (caret[bar:mark], ""),
                              (caret[mark:], kind)])
        else:
            lines.append([(kind + ":", kind), (" " + self.message, "msg")])
        for note in self.notes:
            lines.append([("note:", "note"), (" " + note, "")])
        if self.help:
            lines.append([("help:", "help"), (" " + self.help, "")])
        return lines

    def __str__(self) -> str:
        return self.render()


class SyntaxError_(SerqError):
    """Lexing, parsing or sugar expansion failed."""


class LinkError(SerqError):
    """Name resolution, constant folding, moment checks or IR validation failed."""


class RunError(SerqError):
    """The simulation stopped on a run-time error."""

    #: The stage whose planning raised it, for the post-mortem (set where
    #: the raising code is compiled: its frames show no ``self``).
    stage: Any = None


class UsageError(SerqError):
    """A command-line or API argument is wrong."""


class OutputError(SerqError):
    """An output could not be written (a full disk, a folder that is not
    there or not writable, a target that is a folder, standard output on a
    full device).  A file serq would have replaced is left as it was
    (``serq.atomic``).  The command line exits 5 for it."""


class SerqWarning(SerqError):
    """A hazard in a program that serQ 0.1.3 compiles and runs as written: a
    name shadowed, an option given twice, a setting that does nothing.  It is
    never raised by the front end: the parser and the linker collect it
    (``Program.warnings``) and the command line prints it on stderr.
    ``-W error`` (``compile_program(..., warnings_as_errors=True)``) raises
    ``as_error()`` instead."""

    kind = "warning"

    def __init__(self, message: str, span: Optional[Span] = None,
                 help: Optional[str] = None, notes: Optional[List[str]] = None,
                 source: Optional[str] = None, phase: str = "link"):
        super().__init__(message, span, help, notes, source)
        self.phase = phase

    def as_error(self) -> SerqError:
        """The same diagnostic as an error of its phase (`-W error`)."""
        cls = SyntaxError_ if self.phase == "syntax" else LinkError
        err = cls(self.message, self.span, self.help, self.notes, self.source)
        err.notes.append("a warning, made an error by `-W error`")
        return err


def _excerpt(source: Optional[str], span: Span) -> List[str]:
    if source is None:
        return []
    text_lines = source.split("\n")
    if not 1 <= span.line <= len(text_lines):
        return []
    text = text_lines[span.line - 1].rstrip("\r")
    # Keep very long lines readable: show at most 200 characters around the caret.
    start = 0
    if len(text) > 200:
        start = max(0, span.col - 100)
        text = text[start:start + 200]
    text = "".join(ch if ch.isprintable() or ch == "\t" else "?" for ch in text)
    number = str(span.line)
    pad = " " * len(number)
    caret_col = max(0, span.col - 1 - start)
    width = max(1, min(span.length, len(text) - caret_col))
    prefix = "".join(ch if ch == "\t" else " " for ch in text[:caret_col])
    return ["%s | %s" % (number, text), "%s | %s%s" % (pad, prefix, "^" * width)]
