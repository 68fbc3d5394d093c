"""The lexer: program text to a list of tokens (feature map 1.1).

Linear time, never raises anything but ``SyntaxError_``.  Tokens carry
1-based line and column (columns count characters, a tab is one column).
"""
from typing import List

from ..errors import Span, SyntaxError_

# token kinds
IDENT = "ident"
NUMBER = "number"
STRING = "string"
PUNCT = "punct"
EOF = "eof"

_TWO = ("<=", ">=", "==", "!=", "&&", "||")
_ONE = set("{}()[],:;.=~+-*/^<>!?")


class Token:
    """One token: kind, text (identifier / punctuation / string contents /
    number text), 1-based position, the number's value, the file and the
    text it was read from."""

    __slots__ = ("kind", "text", "line", "col", "value", "origin", "file", "src")

    def __init__(self, kind: str, text: str, line: int, col: int, value: float = 0.0,
                 origin: object = None, file: str = "<text>", src: object = None):
        self.kind = kind
        self.text = text
        self.line = line
        self.col = col
        self.value = value
        self.origin = origin
        self.file = file
        self.src = src

    def __repr__(self) -> str:
        return "Token(%s %r %d:%d)" % (self.kind, self.text, self.line, self.col)

    def span(self) -> Span:
        return Span(self.file, self.line, self.col, len(self.text) or 1)

    def describe(self) -> str:
        if self.kind == EOF:
            return "end of input"
        if self.kind == STRING:
            return '"%s"' % self.text
        return "`%s`" % self.text


def _is_ident_start(ch: str) -> bool:
    return ch == "_" or ch.isalpha()


def _is_ident_char(ch: str) -> bool:
    return ch == "_" or ch.isalnum()


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9"


def tokenize(text: str, file: str = "<text>") -> List[Token]:
    """Split ``text`` into tokens, ending with an EOF token."""
    toks: List[Token] = []
    i = 0
    n = len(text)
    line = 1
    line_start = 0  # index of the first character of the current line

    def err(msg: str, ln: int, col: int, length: int = 1, help: str = None) -> SyntaxError_:
        return SyntaxError_(msg, Span(file, ln, col, length), help=help, source=text)

    while i < n:
        ch = text[i]
        if ch == "\n":
            i += 1
            line += 1
            line_start = i
            continue
        if ch in " \t\r\f\v":
            i += 1
            continue
        col = i - line_start + 1
        if ch == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if ch == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            if j < 0:
                raise err("unterminated block comment", line, col, 2,
                          help="close this comment with `*/`")
            # count the newlines inside the comment
            inner = text.count("\n", i, j)
            if inner:
                line += inner
                line_start = text.rfind("\n", i, j) + 1
            i = j + 2
            continue
        if _is_digit(ch) or (ch == "." and i + 1 < n and _is_digit(text[i + 1])):
            j = i
            while j < n and (_is_digit(text[j]) or text[j] == "_" or text[j] == "."):
                j += 1
            if j < n and text[j] in "eE":
                k = j + 1
                if k < n and text[k] in "+-":
                    k += 1
                if k < n and _is_digit(text[k]):
                    while k < n and (_is_digit(text[k]) or text[k] == "_"):
                        k += 1
                    j = k
            raw = text[i:j]
            try:
                if raw.count(".") > 1:
                    raise ValueError(raw)
                value = float(raw.replace("_", "") or "0")
            except (ValueError, OverflowError):
                raise err("bad number `%s`" % raw, line, col, len(raw),
                          help="a number has at most one `.`")
            toks.append(Token(NUMBER, raw, line, col, value, None, file, text))
            i = j
            continue
        if _is_ident_start(ch):
            j = i + 1
            while j < n and _is_ident_char(text[j]):
                j += 1
            toks.append(Token(IDENT, text[i:j], line, col, 0.0, None, file, text))
            i = j
            continue
        if ch == '"':
            j = text.find('"', i + 1)
            if j < 0:
                # like the reference, point at the end of the input
                raise err("unterminated string", line, n - line_start + 1,
                          help="the string opened at %d:%d needs a closing `\"`" % (line, col))
            body = text[i + 1:j]
            toks.append(Token(STRING, body, line, col, 0.0, None, file, text))
            inner = body.count("\n")
            if inner:
                line += inner
                line_start = text.rfind("\n", i, j) + 1
            i = j + 1
            continue
        two = text[i:i + 2]
        if two in _TWO:
            toks.append(Token(PUNCT, two, line, col, 0.0, None, file, text))
            i += 2
            continue
        if ch in _ONE:
            toks.append(Token(PUNCT, ch, line, col, 0.0, None, file, text))
            i += 1
            continue
        shown = ch if ch.isprintable() else repr(ch)[1:-1]
        help_ = None
        if ch == "#":
            help_ = "comments are written `// …` or `/* … */`"
        elif ch == "%":
            help_ = "there is no `%` operator: write `x - n * floor(x / n)`"
        raise err("unexpected character `%s`" % shown, line, col, help=help_)
    col = i - line_start + 1
    toks.append(Token(EOF, "", line, col, 0.0, None, file, text))
    return toks
