"""The trace file a workload replays: ``trace "file.csv" [ordered];``.

One row per turn, ``session,turn,new,out,think[,forced]``:

* blank lines and lines whose first non-blank character is ``#`` are skipped,
  and so is a first row whose first field is literally ``session`` (a header);
* fields are not trimmed; every field but ``turn`` is a number (``inf`` and
  negative numbers included), ``forced`` is 0 when absent;
* a new corpus session starts whenever the ``session`` value differs from the
  previous row's, so ids need not be sorted or unique;
* the ``turn`` column is not read: turns are in file order.

``read_trace`` returns the corpus as a list of sessions, each a list of
``(new, out, think, forced)`` tuples, or raises ``TraceError`` pointing at
the file, line and column of the first problem.
"""
import math
from typing import List, Tuple

from .errors import SerqError, Span
from .inputfile import InputFileError, describe_limit, read_bytes

Turn = Tuple[float, float, float, float]
COLUMNS = ("session", "turn", "new", "out", "think", "forced")
LAYOUT = "session,turn,new,out,think[,forced]"


class TraceError(SerqError):
    """A trace file cannot be read or is malformed."""


def _number(text: str):
    """Parse a trace number as the reference does: no spaces, no underscores."""
    if not text or text != text.strip() or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


#: The largest trace file read (about ten million rows): far more rows than
#: that would not fit in memory as turns anyway.
MAX_TRACE = 256 * 1024 * 1024


def read_trace(path: str) -> List[List[Turn]]:
    """The corpus (see the module's text); ``TraceError`` located in the
    file for a malformed one, unlocated (the caller places it at the
    ``trace`` statement) for a file that cannot be read."""
    try:
        data = read_bytes(path, MAX_TRACE)
    except InputFileError as e:
        raise TraceError("cannot read trace %s: %s" % (path.replace("\0", "\\0"), e.reason),
                         span=Span(path, 1, 1) if e.too_big else None,
                         help="a trace is a CSV file of at most %s" % describe_limit(MAX_TRACE)
                         if e.too_big else
                         "trace paths are relative to the program's directory (to the "
                         "current directory for `--trace` and for programs given as text)") \
            from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TraceError("trace %s is not UTF-8 text" % path, Span(path, line, 1)) from None
    corpus: List[List[Turn]] = []
    last_id = None
    first_row = True
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        fields = line.split(",")
        if first_row:
            first_row = False
            if fields[0] == "session":
                continue
        if len(fields) not in (5, 6):
            raise TraceError("trace %s: line %d: expected 5 or 6 fields, got %d"
                             % (path, lineno, len(fields)), Span(path, lineno, 1, len(line) or 1),
                             help="use %s" % LAYOUT, source=text)
        values = []
        col = 1
        for i, field in enumerate(fields):
            if i != 1:
                v = _number(field)
                if v is None or (i == 0 and math.isnan(v)):
                    raise TraceError("trace %s: line %d: column %d (%s): invalid number `%s`"
                                     % (path, lineno, i + 1, COLUMNS[i], field),
                                     Span(path, lineno, col, max(1, len(field))),
                                     help="replace `%s` with a numeric value" % COLUMNS[i],
                                     source=text)
                values.append(v)
            col += len(field) + 1
        sid, new, out, think = values[0], values[1], values[2], values[3]
        forced = values[4] if len(values) == 5 else 0.0
        if last_id is None or sid != last_id:
            corpus.append([])
            last_id = sid
        corpus[-1].append((new, out, think, forced))
    if not corpus:
        raise TraceError("trace %s: empty trace (no data row)" % path, Span(path, 1, 1),
                         help="add a data row: %s" % LAYOUT)
    return corpus
