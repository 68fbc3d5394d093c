"""Colour on a terminal: whether to use it, and painting styled lines.

``auto`` (the default of ``serq run --color``) colours a stream that is a
terminal, unless ``NO_COLOR`` is set (https://no-color.org: to anything
but the empty string) or ``TERM`` is ``dumb``; ``FORCE_COLOR`` (set, not
empty and not ``0``) colours a pipe too; ``NO_COLOR`` wins over it.
``always`` and ``never`` decide alone.  A piped output has no escape codes.

The lines are lists of ``(text, style)`` pieces (report/text.py, and
``SerqError.styled`` for errors and warnings); :func:`paint` joins them,
wrapping each styled piece in the escape codes of its style, written by
``rich`` (imported only to colour: start-up stays fast).  Without colour
the text is the pieces' texts alone, the same bytes.
"""
import os
from typing import Sequence, Tuple

#: The styles the lines name, as rich writes them.
STYLES = {
    "head": "bold",
    "dim": "dim",
    "note": "bold cyan",
    "warn": "bold yellow",
    "warn_text": "yellow",
    "good": "green",
    "bad": "bold red",
    "error": "bold red",
    "warning": "bold yellow",
    "loc": "bold",
    "msg": "bold",
    "gutter": "blue",
    "help": "bold cyan",
}

CHOICES = ("auto", "always", "never")


def wanted(stream, choice: str = "auto") -> bool:
    """Whether to colour what is written to ``stream``."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    env = os.environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR", "0") not in ("", "0"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def paint(lines: Sequence[Sequence[Tuple[str, str]]], colour: bool) -> str:
    """The lines' text, each ended by a newline; coloured if ``colour``."""
    if not colour:
        return "".join("".join(t for t, _ in line) + "\n" for line in lines)
    from rich.color import ColorSystem
    from rich.style import Style
    styles = {}
    out = []
    for line in lines:
        for text, name in line:
            if name and text and name in STYLES:
                st = styles.get(name)
                if st is None:
                    st = styles[name] = Style.parse(STYLES[name])
                out.append(st.render(text, color_system=ColorSystem.STANDARD))
            else:
                out.append(text)
        out.append("\n")
    return "".join(out)


def write_diagnostic(stream, error, prefix: str = "", choice: str = "auto") -> None:
    """A ``SerqError`` (or warning) rendered to ``stream`` (stderr), its
    first line after ``prefix`` (``serq: ``), in colour on a terminal."""
    lines = [list(line) for line in error.styled()]
    if prefix and lines:
        lines[0].insert(0, (prefix, ""))
    stream.write(paint(lines, wanted(stream, choice)))
