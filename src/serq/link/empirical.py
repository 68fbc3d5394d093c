"""Where ``~empirical("FILE.csv")`` reads its file, and reading it once.

The path is relative to the folder of the file the draw is written in (the
program, or the library a ``use`` read), as a ``use`` and a ``trace`` are;
in a program given as text, or in a ``--def``, to the current directory.
The table is read when the program is linked (serq.empirical reads and
checks it) and goes into the IR, which therefore needs no file to run.
"""
import os
from typing import Dict, List, Optional, Tuple

from ..empirical import TableError, read_table
from ..errors import LinkError, Span
from ..inputfile import InputFileError, read_bytes
from ..syntax import ast

Table = Tuple[List[float], List[int]]


def source_text(file: str) -> Optional[str]:
    """The text of the program or library ``file``, for an excerpt (None for
    a program given as text: the linker then shows the program's)."""
    if file.startswith("<"):
        return None
    try:
        return read_bytes(file, 8 * 1024 * 1024).decode("utf-8", errors="replace")
    except InputFileError:
        return None


def resolve(path: str, span: Span) -> str:
    """``path`` as written at ``span``, relative to the folder of its file."""
    if os.path.isabs(path) or span.file.startswith("<"):
        return path
    return os.path.join(os.path.dirname(span.file), path)


def empirical_table(cache: Dict[Tuple[str, Optional[str]], Table], e: ast.Draw) -> Table:
    """The table of ``~empirical(…)`` ``e``, read once per link (``cache``:
    the tables read so far, by path and column)."""
    text, span = e.strings[0]
    column: Optional[str] = e.strings[1][0] if len(e.strings) > 1 else None
    here = Span(span.file, span.line, span.col, len(text) + 2)  # the string with its quotes
    if "\0" in text:
        raise LinkError('`~empirical("%s")`: the path holds a NUL byte (\\0), which no file '
                        "name can" % text.replace("\0", "\\0"), here,
                        source=source_text(span.file))
    path = resolve(text, span)
    key = (os.path.abspath(path), column)
    if key in cache:
        return cache[key]
    try:
        table = read_table(path, column, text)
    except TableError as err:
        if err.span is not None:  # in the file
            call = ", ".join('"%s"' % t for t, _ in e.strings)
            err.notes.append("read for `~empirical(%s)` at %s" % (call, span))
            raise
        # a file that cannot be read: said at the string that names it
        raise LinkError(err.message, here, source=source_text(span.file),
                        notes=["looked for %s" % os.path.abspath(path)],
                        help=err.help or "the path is relative to the folder of the file that "
                        "holds the draw (to the current directory for a program given as "
                        "text)") from None
    cache[key] = table
    return table
