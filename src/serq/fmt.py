"""``serq fmt``: a program's canonical layout, its tokens and comments kept.

The formatter works on the token stream (``syntax.lexer``) plus the comments
found in the gaps between tokens, so it changes nothing but whitespace: the
formatted text has exactly the input's tokens, in order, and every comment
(checked before returning; the program therefore compiles to the same IR).

Layout:

* two spaces of indentation per `{ … }` level; one statement a line (a line
  break after every `;` outside parentheses, after `{` and around `}`;
  `} else`, `} cache`, `} lease` and `};` stay together); `{}` for an empty
  block;
* except a short block the author wrote on one line, with no comment in it
  (`pool kv { cap 4096; block 16; }`, `branch (x) { end; }`): it stays on
  one line, spaced like the rest, as long as that line fits in
  ``MAX_WIDTH`` (100) columns; a block that does not fit is spread over
  lines as above, and so is every block inside it that does not fit on a
  line of its own; an `else` the author put on the line after such a
  block stays on a line of its own;
* one space around binary operators, `=`, `?` and `:` and after `,`; none
  inside brackets, before `,` `;` `.`, after a unary `-`, `!` or `~`, or
  between a function (a built-in or a `def` of this file or a file it
  `use`s) and its `(`; one space between a statement word or a pool or stage
  name and its `(` (`hold kv (n)`, `branch (x)`, `run gpu prefill (p)`);
* a line break the author put inside a statement is kept: the continuation
  line lines up after the innermost open bracket, or is indented four spaces
  past the statement when no bracket is open; blank lines inside a
  statement go;
* at most one blank line in a row (kept where the author had one), none at
  the start, one newline at the end, and always one blank line between two
  top-level declarations when either has a `{ … }` body over several lines
  (consecutive one-line declarations such as two short pools stay
  together);
* a comment on a line of its own stays there, indented like the code after
  it; a comment after code stays after it, and the trailing comments of
  consecutive lines line up two spaces past the longest of those lines.
  Comment text is never changed (a `/* … */` running over several lines
  keeps its inner lines as written).

``format_source(text)`` is idempotent: formatting its output again gives the
same text.  Long lines are not wrapped.
"""
import os
from typing import List, Optional, Set, Tuple

from . import library
from .errors import SyntaxError_
from .link.scope import AGGREGATES, DISTRIBUTIONS, FUNCTIONS
from .syntax.lexer import EOF, IDENT, NUMBER, PUNCT, STRING, tokenize

INDENT = "  "
CONTINUATION = 4
#: The widest line a block written on one line may keep (indentation
#: included, a trailing comment not counted).
MAX_WIDTH = 100

# Words written directly before their `(`: built-in functions, distributions,
# aggregates, arrival and stage kinds.  A `def`'s name joins them.
_CALLS = frozenset(FUNCTIONS) | frozenset(AGGREGATES) | frozenset(DISTRIBUTIONS) | frozenset(
    ("poisson", "renewal", "closed", "batch", "sessions", "fifo", "ps", "delay"))

# After `}` these continue the same statement on the same line.
_AFTER_BRACE = frozenset(("else", "cache", "lease"))
_BRACE_PUNCT = frozenset((";", ",", ")", "]"))

# A `-` after one of these words (or after a statement's first word) is unary.
_EXPR_WORDS = frozenset(("by", "in", "when", "latency", "while", "only", "given"))

_OPERATORS = frozenset(("+", "-", "*", "/", "^", "<", ">", "<=", ">=", "==", "!=", "&&", "||",
                        "=", "?", ":", "!", "~"))


class _Tok(object):
    __slots__ = ("kind", "text", "raw", "nl_before", "glued")

    def __init__(self, kind: str, text: str, raw: str, nl_before: int, glued: bool = False):
        self.kind = kind      # a lexer kind, or "comment"
        self.text = text
        self.raw = raw        # the text as written (a string with its quotes)
        self.nl_before = nl_before  # newlines between the previous item and this one
        self.glued = glued    # written directly after the previous item, no gap

    def is_p(self, text: str) -> bool:
        return self.kind == PUNCT and self.text == text


def _line_offsets(text: str) -> List[int]:
    starts = [0]
    i = text.find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = text.find("\n", i + 1)
    return starts


def _comments(gap: str) -> List[Tuple[int, str]]:
    """The comments in whitespace-and-comment text, each with the number of
    newlines before it (counted from the previous comment's end)."""
    out = []
    i = 0
    nl = 0
    n = len(gap)
    while i < n:
        ch = gap[i]
        if ch == "\n":
            nl += 1
            i += 1
        elif gap.startswith("//", i):
            j = gap.find("\n", i)
            j = n if j < 0 else j
            out.append((nl, gap[i:j].rstrip()))
            nl = 0
            i = j
        elif gap.startswith("/*", i):
            j = gap.find("*/", i + 2) + 2
            out.append((nl, gap[i:j]))
            nl = 0
            i = j
        else:
            i += 1
    out.append((nl, None))
    return out


def _items(text: str, file: str) -> List[_Tok]:
    """Tokens and comments in order (the EOF token last)."""
    toks = tokenize(text, file)
    starts = _line_offsets(text)
    out: List[_Tok] = []
    pos = 0
    for t in toks:
        off = starts[t.line - 1] + t.col - 1 if t.kind != EOF else len(text)
        gaps = _comments(text[pos:off])
        for nl, c in gaps[:-1]:
            out.append(_Tok("comment", c, c, nl))
        nl_tok = gaps[-1][0]
        raw = text[off:off + len(t.text) + 2] if t.kind == STRING else t.text
        out.append(_Tok(t.kind, t.text, raw, nl_tok, off == pos and pos > 0))
        pos = off + len(raw)
    return out


def _def_names(text: str, file: Optional[str], seen: Set[str]) -> Set[str]:
    """Names of the `def`s of a program and of the files it `use`s."""
    names: Set[str] = set()
    try:
        toks = tokenize(text, file or "<text>")
    except SyntaxError_:
        return names
    base = os.path.dirname(file) if file else ""
    depth = 0
    for i, t in enumerate(toks[:-1]):
        if t.kind == PUNCT and t.text in "{}":
            depth += 1 if t.text == "{" else -1
        nxt = toks[i + 1]
        if t.kind == IDENT and t.text == "def" and nxt.kind == IDENT:
            names.add(nxt.text)
        elif depth == 0 and t.kind == IDENT and t.text == "use" and nxt.kind == STRING:
            path, _ = library.resolve(nxt.text, base)
            if path is None or path in seen:
                continue
            seen.add(path)
            try:
                with open(path, encoding="utf-8") as f:
                    used = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            names |= _def_names(used, path, seen)
    return names


class _Line(object):
    __slots__ = ("indent", "code", "comment")

    def __init__(self, indent: int):
        self.indent = indent
        self.code = ""
        self.comment: Optional[str] = None  # a trailing comment


class _Writer(object):
    """Builds the output line by line."""

    def __init__(self, calls: Set[str], inline: Set[int]):
        self.calls = calls
        self.inline = inline      # indices of the `{` kept on one line
        self.blocks: List[Tuple[int, bool]] = []  # open `{`: (index, on one line)
        self.too_wide: Set[int] = set()  # one-line blocks whose line did not fit
        self.closed_on_line = False  # the last `}` closed a one-line block
        self.lines: List[_Line] = []
        self.cur: Optional[_Line] = None
        self.depth = 0            # braces
        self.brackets: List[List[int]] = []  # per open ( or [: [column to align to]
        self.prev: Optional[_Tok] = None     # the last token (not comment) written
        self.before_prev: Optional[_Tok] = None
        self.stmt_start = True    # the next token starts a statement
        self.stmt_first: Optional[_Tok] = None
        self.need_break = False   # the next item goes on a new line
        self.blank = False        # a blank line before the next line
        self.after_comment = False  # the line ends with an inline /* … */

    # -- lines

    def newline(self, indent: int) -> None:
        if self.blank and self.lines:
            self.lines.append(_Line(0))
        self.blank = False
        self.cur = _Line(indent)
        self.lines.append(self.cur)
        self.need_break = False

    def col(self) -> int:
        return self.cur.indent + len(self.cur.code)

    def continuation_indent(self) -> int:
        if self.brackets:
            return self.brackets[-1][0]
        return self.depth * len(INDENT) + CONTINUATION

    # -- items

    def comment(self, c: _Tok, next_same_line: bool) -> None:
        line_comment = c.text.startswith("//")
        if c.nl_before == 0 and self.cur is not None and self.cur.code and self.cur.comment is None:
            if line_comment or not next_same_line or self.need_break:
                self.cur.comment = c.raw
                self.need_break = True
                return
            self.cur.code += " " + c.raw
            self.after_comment = True
            return
        # a comment on a line of its own
        if c.nl_before >= 2:
            self.blank = True
        if self.stmt_start or self.cur is None:
            self.newline(self.depth * len(INDENT))
        else:
            self.newline(self.continuation_indent())
        self.cur.code = c.raw
        if line_comment or not next_same_line:
            self.need_break = True
        else:
            self.after_comment = True

    def in_line(self) -> bool:
        """Whether the innermost open block is kept on one line."""
        return bool(self.blocks) and self.blocks[-1][1]

    def token(self, t: _Tok, nxt: _Tok, k: int = -1) -> None:
        if t.is_p("{"):
            on_line = k in self.inline or self.in_line()
            self.blocks.append((k, on_line))
        if t.is_p("}"):
            self.depth = max(0, self.depth - 1)
            opened, on_line = self.blocks.pop() if self.blocks else (-1, False)
            self.closed_on_line = on_line
            if self.prev is not None and self.prev.is_p("{") and not self.need_break \
                    and self.cur is not None and self.cur.code.endswith("{"):
                self.cur.code += "}"
            elif on_line and self.cur is not None and not self.need_break:
                self.cur.code += " }"
                if self.col() > MAX_WIDTH and not self.in_line():
                    # (a block inside another one-line block is judged with
                    # it: spread, the outer one may leave it room)
                    self.too_wide.add(opened)
            else:
                self.newline(self.depth * len(INDENT))
                self.cur.code = "}"
        elif self.cur is None or self.need_break:
            self.newline(self.depth * len(INDENT) if self.stmt_start
                         else self.continuation_indent())
            self.cur.code = t.raw
        elif t.nl_before > 0 and self.closed_on_line and self.prev is not None \
                and self.prev.is_p("}") and t.kind == IDENT and t.text in _AFTER_BRACE:
            # `else` (`cache`, `lease`) on its own line after a one-line
            # block stays there, under the statement's start
            self.newline(self.depth * len(INDENT))
            self.cur.code = t.raw
        elif t.nl_before > 0 and not self.stmt_start and not t.is_p("{") \
                and not (self.prev is not None and self.prev.is_p("}")):
            # the author's line break inside a statement
            if self.brackets and self.prev is not None and self.prev.kind == PUNCT \
                    and self.prev.text in "([":
                self.brackets[-1][0] = self.cur.indent + CONTINUATION
            self.newline(self.continuation_indent())
            self.cur.code = t.raw
        else:
            if self.cur.code and (self.after_comment or self.space(self.prev, t)):
                self.cur.code += " "
            self.cur.code += t.raw
        self.after(t, nxt)

    def after(self, t: _Tok, nxt: _Tok) -> None:
        self.after_comment = False
        if self.stmt_start:
            self.stmt_first = t
        self.stmt_start = False
        if t.kind == PUNCT:
            if t.text in "([":
                self.brackets.append([self.col()])
            elif t.text in ")]":
                if self.brackets:
                    self.brackets.pop()
            elif t.text == "{":
                self.depth += 1
                self.stmt_start = True
                self.brackets = []
                if not nxt.is_p("}") and not self.in_line():
                    self.need_break = True
            elif t.text == ";" and not self.brackets:
                self.stmt_start = True
                self.need_break = not self.in_line()
            elif t.text == "}":
                cont = (nxt.kind == IDENT and nxt.text in _AFTER_BRACE) or \
                    (nxt.kind == PUNCT and nxt.text in _BRACE_PUNCT)
                if not cont:
                    self.stmt_start = True
                    self.need_break = not self.in_line()
        self.before_prev = self.prev
        self.prev = t

    def unary_minus(self, before: Optional[_Tok]) -> bool:
        if before is None:
            return True
        if before.kind == PUNCT:
            return before.text not in (")", "]", "}")
        if before.kind == IDENT:
            return before is self.stmt_first or before.text in _EXPR_WORDS
        return False

    def space(self, a: Optional[_Tok], b: _Tok) -> bool:
        if a is None:
            return False
        return self.wants_space(a, b) or not _joinable(a.raw, b.raw)

    def wants_space(self, a: _Tok, b: _Tok) -> bool:
        if a is None:
            return False
        if a.kind == NUMBER and b.kind == IDENT and b.glued:
            # `10ms`, an error kept as written (its message names the unit)
            return False
        if b.kind == PUNCT and b.text in (")", "]", ",", ";", "."):
            return False
        if a.kind == PUNCT and a.text in ("(", "[", ".", "~", "!"):
            return False
        if a.is_p("-") and self.unary_minus(self.before_prev):
            return False
        if a.is_p("{") and b.is_p("}"):
            return False
        if b.is_p("("):
            if a.kind == IDENT:
                if self.brackets or a.text in self.calls:
                    return False
                bp = self.before_prev
                if bp is not None and bp.kind == PUNCT and bp.text in _OPERATORS:
                    return False
                return True
            if a.kind == PUNCT and a.text in (")", "]"):
                return not self.brackets
            return True
        if b.is_p("["):
            return not (a.kind == IDENT or (a.kind == PUNCT and a.text in (")", "]")))
        return True


_JOIN_CACHE = {}


def _joinable(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` written together still read as those two
    tokens (`!` `=` would read as `!=`, `1` `.` as `1.`)."""
    key = (a, b)
    got = _JOIN_CACHE.get(key)
    if got is None:
        try:
            toks = tokenize(a + b)
            got = len(toks) == 3 and toks[0].text == tokenize(a)[0].text
        except SyntaxError_:
            got = False
        if len(_JOIN_CACHE) < 4096:
            _JOIN_CACHE[key] = got
    return got


def _align_comments(lines: List[_Line]) -> List[str]:
    out: List[str] = []
    i = 0
    n = len(lines)
    while i < n:
        ln = lines[i]
        if ln.comment is None or "\n" in ln.code:
            out.append(_render(ln, None))
            i += 1
            continue
        j = i
        while j < n and lines[j].comment is not None and "\n" not in lines[j].code \
                and lines[j].code:
            j += 1
        width = max(lines[k].indent + len(lines[k].code) for k in range(i, j)) + 2
        for k in range(i, j):
            out.append(_render(lines[k], width))
        i = j
    return out


def _render(ln: _Line, width: Optional[int]) -> str:
    if not ln.code and ln.comment is None:
        return ""
    s = " " * ln.indent + ln.code
    if ln.comment is not None:
        s += " " * max(2, (width or 0) - len(s)) + ln.comment
    return s


def _has_block(items: List[_Tok], k: int, inline: Set[int]) -> bool:
    """Whether the top-level statement starting at items[k] has a `{` body
    laid over several lines."""
    for j in range(k, len(items)):
        t = items[j]
        if t.kind == EOF or (t.kind == PUNCT and t.text == ";"):
            return False
        if t.kind == PUNCT and t.text == "{":
            return j not in inline
    return False


def _one_line_blocks(items: List[_Tok]) -> Set[int]:
    """The indices of the `{` whose block the author wrote on one line with
    no comment in it (no line break from the `{` to its `}`), and of every
    empty block's."""
    out: Set[int] = set()
    opened: List[int] = []
    broken: List[bool] = []  # per open block: a line break or comment seen
    for k, t in enumerate(items):
        if t.kind == "comment" or (opened and t.nl_before > 0):
            broken = [True] * len(broken)
        if t.kind == PUNCT and t.text == "{":
            opened.append(k)
            broken.append(False)
        elif t.kind == PUNCT and t.text == "}" and opened:
            start = opened.pop()
            if not broken.pop() or k == start + 1:  # (`{}` is always one line)
                out.add(start)
    return out


def format_source(text: str, file: str = "<text>", path: Optional[str] = None) -> str:
    """The canonical layout of program ``text``.  ``path`` (default ``file``
    when that names a file) is where `use`d files are looked up, for the
    names of their `def`s.  Raises ``SyntaxError_`` if the text does not lex."""
    items = _items(text, file)
    if path is None and file != "<text>":
        path = file
    calls = set(_CALLS) | _def_names(text, path, set())
    inline = _one_line_blocks(items)
    while True:
        w = _layout(items, calls, inline)
        if not w.too_wide:
            break
        # spread the blocks that did not fit, and lay the program out again
        # (each round spreads at least one more, so this ends)
        inline -= w.too_wide
    out = "\n".join(_align_comments(w.lines)).rstrip("\n")
    result = (out + "\n") if out.strip() else ""
    _check_same(text, result, file)
    return result


def _layout(items: List[_Tok], calls: Set[str], inline: Set[int]) -> _Writer:
    """The lines of ``items`` laid out, the blocks of ``inline`` on one line."""
    w = _Writer(calls, inline)
    prev_block = False
    first_of_stmt = True
    for k, it in enumerate(items):
        if it.kind == EOF:
            break
        nxt = items[k + 1]
        if w.depth == 0 and w.stmt_start and not w.brackets and first_of_stmt:
            # the first item (comment or token) of a top-level statement
            if it.kind != "comment" or it.nl_before > 0 or not w.lines:
                if w.lines:
                    j = k
                    while items[j].kind == "comment":
                        j += 1
                    if items[j].kind != EOF and (prev_block or _has_block(items, j, inline)):
                        w.blank = True
                first_of_stmt = False
        if it.kind == "comment":
            # whether the next token follows on this line (a `}` never does)
            w.comment(it, nxt.kind not in ("comment", EOF) and nxt.nl_before == 0
                      and not nxt.is_p("}"))
            continue
        if it.nl_before >= 2 and w.stmt_start:
            w.blank = True
        was_top = w.depth == 0 and w.stmt_start
        w.token(it, nxt, k)
        if was_top:
            prev_block = False
        if it.is_p("{") and w.depth == 1 and k not in inline:
            prev_block = True
        if w.depth == 0 and w.stmt_start:
            first_of_stmt = True
    return w


def _signature(text: str, file: str) -> List[Tuple[str, str]]:
    return [(t.kind, t.text) for t in _items(text, file) if t.kind != EOF]


def _check_same(before: str, after: str, file: str) -> None:
    a = _signature(before, file)
    b = _signature(after, file)
    if a != b:  # a bug in the formatter, never the user's fault
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                break
        else:
            i = min(len(a), len(b))
        raise AssertionError("the formatter changed the program's tokens or comments at item %d "
                             "(%r became %r)" % (i, a[i:i + 3], b[i:i + 3]))


def format_file(path: str) -> Tuple[str, str]:
    """A program file's text and its canonical layout.  A file that does not
    parse raises its located ``SerqError`` (and is left alone by the caller)."""
    from .compiler import read_source
    from .syntax.parser import parse_program
    if path == "-":
        import sys
        file = "<stdin>"
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        try:
            text = data if isinstance(data, str) else data.decode("utf-8")
        except UnicodeDecodeError as e:
            from .errors import Span
            line = data.count(b"\n", 0, e.start) + 1
            col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
            raise SyntaxError_("the input is not UTF-8 text (byte 0x%02x)" % data[e.start],
                               Span(file, line, col), help="save the program as UTF-8") from None
    else:
        text = read_source(path)
        file = path
    parse_program(text, file)
    return text, format_source(text, file, None if path == "-" else path)


def fmt_command(paths: List[str], check: bool, diff: bool, stdout: bool, out, err) -> int:
    """``serq fmt``: rewrite each file in its canonical layout (``-``: standard
    input to standard output); ``check``: only list the files that would
    change (exit 1 if any); ``diff``: print what would change instead of
    writing; ``stdout``: print the formatted text instead of writing."""
    import difflib
    from .errors import SerqError, UsageError
    status = 0
    changed = []
    for path in paths:
        try:
            text, new = format_file(path)
        except UsageError:
            raise
        except SerqError as e:
            err.write(e.render() + "\n")
            status = 1
            continue
        if new != text:
            changed.append(path)
        if diff:
            name = "<stdin>" if path == "-" else path
            out.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                                name, name + " (formatted)"))
        elif check:
            pass
        elif stdout or path == "-":
            out.write(new)
        elif new != text:
            import os
            import stat
            from .atomic import write_text
            try:
                regular = stat.S_ISREG(os.stat(path).st_mode)
            except OSError:
                regular = False
            if not regular:
                raise UsageError("cannot rewrite %s in place: not a regular file (print the "
                                 "formatted program with `serq fmt --stdout`)" % path)
            write_text(path, new)  # whole or not at all: the program is never cut short
    if check:
        for path in changed:
            out.write("would reformat %s\n" % path)
        if changed:
            err.write("%d file(s) would be reformatted (run `serq fmt` on them)\n" % len(changed))
            status = 1
    return status
