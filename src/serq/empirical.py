"""The CSV file of serq's ``~empirical("FILE.csv"[, "COLUMN"])`` draw.

A file of numbers, such as the prompt or answer lengths of a trace:

* blank lines, and lines whose first non-blank character is ``#``, are
  skipped;
* cells are separated by commas; spaces around a cell are ignored, and a
  cell in double quotes is read without them;
* the first row is a header when each of its cells starts with a letter or
  ``_`` and none is a number (``prompt_tokens,output_tokens``);
* without a column name the file has one column; with one, the file has a
  header that names it, and only that column is read;
* every row has as many cells as the first; each cell read is a finite
  number (``12``, ``3.5``, ``1e3``; not ``inf``, ``nan``, ``1_000``).

``read_table`` returns the distinct values in ascending order and how many
rows hold each, or raises ``TableError`` at the file, line and column of the
first problem (unlocated for a file that cannot be read: the caller places
it at the string that names the file).
"""
import math
from typing import Dict, List, Optional, Tuple

from .errors import SerqError, Span
from .inputfile import InputFileError, describe_limit, read_bytes
from .ir.laws import MAX_DISTINCT

#: The largest file read (some ten million rows of lengths).
MAX_TABLE = 64 * 1024 * 1024

Table = Tuple[List[float], List[int]]


class TableError(SerqError):
    """An empirical distribution's file cannot be read or is malformed."""


def _number(text: str) -> Optional[float]:
    if not text or "_" in text or text != text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _cells(line: str) -> List[Tuple[str, int]]:
    """The cells of a line and the 1-based column where each starts (its
    first non-blank character), unquoted."""
    out = []
    start = 0
    for part in line.split(","):
        stripped = part.strip()
        col = start + (len(part) - len(part.lstrip())) + 1
        if len(stripped) >= 2 and stripped[0] == '"' and stripped[-1] == '"':
            stripped = stripped[1:-1].strip()
        out.append((stripped, col))
        start += len(part) + 1
    return out


def _is_header(cells: List[Tuple[str, int]]) -> bool:
    return all(c and (c[0].isalpha() or c[0] == "_") and _number(c) is None for c, _ in cells)


def read_table(path: str, column: Optional[str] = None, written: Optional[str] = None) -> Table:
    """The distinct values of the file (or of its column ``column``),
    ascending, and the number of rows holding each (see the module).
    ``written``: the path as the program writes it, for the help texts."""
    name = path if written is None else written
    try:
        data = read_bytes(path, MAX_TABLE)
    except InputFileError as e:
        raise TableError("cannot read %s: %s" % (path.replace("\0", "\\0"), e.reason),
                         help="an empirical distribution is a CSV file of at most %s"
                         % describe_limit(MAX_TABLE) if e.too_big else None) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TableError("%s is not UTF-8 text" % path, Span(path, line, 1),
                         help="an empirical distribution is a CSV file of numbers") from None

    def error(msg: str, line: int, col: int, length: int = 1,
              help: Optional[str] = None) -> TableError:
        return TableError(msg, Span(path, line, col, max(1, length)), help=help, source=text)

    counts: Dict[float, int] = {}
    width = 0
    pick = 0
    names: List[str] = []
    first = True
    rows = 0
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cells = _cells(line)
        if first:
            first = False
            width = len(cells)
            if _is_header(cells):
                names = [c for c, _ in cells]
                if column is None:
                    if width > 1:
                        raise error("%s has %d columns (%s): name the one to read"
                                    % (path, width, ", ".join("`%s`" % n for n in names)),
                                    lineno, 1, len(line),
                                    help='write `~empirical("%s", "%s")`' % (name, names[0]))
                elif column in names:
                    pick = names.index(column)
                else:
                    raise error("%s has no column `%s`; its columns are %s"
                                % (path, column, ", ".join("`%s`" % n for n in names)),
                                lineno, 1, len(line))
                continue
            if column is not None:
                raise error("%s has no header row, so no column `%s`" % (path, column),
                            lineno, 1, len(line),
                            help="add a first row of column names, such as `prompt,output`, "
                                 "or read a file of one column without a column name")
            if width > 1:
                raise error("%s has %d columns and no header: there is no telling which one "
                            "to read" % (path, width), lineno, cells[1][1],
                            help="give the file a first row of column names and name one: "
                                 '`~empirical("%s", "NAME")`' % name)
        if len(cells) != width:
            at = cells[width][1] if len(cells) > width else len(line) + 1
            raise error("this row has %d cells, the first row %d" % (len(cells), width),
                        lineno, at, help="every row has one cell per column")
        cell, col = cells[pick]
        v = _number(cell)
        where = " (column `%s`)" % names[pick] if names and width > 1 else ""
        if v is None:
            if not cell:
                raise error("an empty cell%s: every cell read is a number" % where, lineno, col)
            raise error("`%s` is not a number%s" % (cell, where), lineno, col, len(cell),
                        help="the cells are numbers such as 12, 3.5 or 1e3")
        if not math.isfinite(v):
            raise error("`%s` is not a finite number%s" % (cell, where), lineno, col,
                        len(cell), help="drop the row, or write the largest length instead")
        rows += 1
        counts[v] = counts.get(v, 0) + 1
        if len(counts) > MAX_DISTINCT:
            raise error("more than %d distinct values" % MAX_DISTINCT, lineno, col, len(cell),
                        help="round the values (to whole tokens, or to milliseconds)")
    if rows == 0:
        raise TableError("%s holds no values%s" % (path, " (only a header)" if names else ""),
                         Span(path, 1, 1), help="an empirical distribution needs at least "
                         "one row of numbers", source=text)
    values = sorted(counts)
    return values, [counts[v] for v in values]
