"""The lexer: program text to a list of tokens (feature map 1.1).

Linear time, never raises anything but ``SyntaxError_``.  Tokens carry
1-based line and column (columns count characters, a tab is one column).
"""
import re
from typing import List

from ..errors import Span, SyntaxError_

# token kinds
IDENT = "ident"
NUMBER = "number"
STRING = "string"
PUNCT = "punct"
EOF = "eof"



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
        return Span(self.file, self.line, self.col, max(1, len(self.text)))

    def describe(self) -> str:
        if self.kind == EOF:
            return "end of input"
        if self.kind == STRING:
            return '"%s"' % self.text
        return "`%s`" % self.text


# One pattern for the whole language; `finditer` walks the text once.  The
# alternatives are tried in order: blanks (newlines among them), comments,
# numbers (before `.`), identifiers, strings, two- then one-character
# punctuation; anything else is one character the lexer reports (an
# unterminated string or comment is found there too).  The groups are told
# apart by number (``lastindex``).
_MASTER = re.compile(r"""
  ([ \t\r\f\v\n]+)                                          # 1 blanks
| (//[^\n]*)                                                # 2 line comment
| ([A-Za-z_]\w*)                                            # 3 identifier
| ((?:[0-9]|\.[0-9])[0-9_.]*(?:[eE][+-]?[0-9][0-9_]*)?)     # 4 number
| (<=|>=|==|!=|&&|\|\||[{}()\[\],:;.=~+\-*^<>!?]|/(?![*/]))  # 5 punctuation
| (/\*[\s\S]*?\*/)                                          # 6 block comment
| ("[^"]*")                                                 # 7 string
| ([^\x00-\x7f]\w*)                                         # 8 non-ASCII word
| ([\s\S])                                                  # 9 anything else
""", re.X)


def tokenize(text: str, file: str = "<text>") -> List[Token]:
    """Split ``text`` into tokens, ending with an EOF token."""
    toks: List[Token] = []
    append = toks.append
    line = 1
    line_start = 0  # index of the first character of the current line

    def err(msg: str, ln: int, col: int, length: int = 1, help: str = None) -> SyntaxError_:
        return SyntaxError_(msg, Span(file, ln, col, length), help=help, source=text)

    for m in _MASTER.finditer(text):
        g = m.lastindex
        if g == 3 or g == 5:
            append(Token(IDENT if g == 3 else PUNCT, m.group(), line, m.start() - line_start + 1,
                         0.0, None, file, text))
        elif g == 1:
            raw = m.group()
            inner = raw.count("\n")
            if inner:
                line += inner
                line_start = m.start() + raw.rfind("\n") + 1
        elif g == 2:
            continue
        elif g == 4:
            raw = m.group()
            col = m.start() - line_start + 1
            try:
                if raw.count(".") > 1:
                    raise ValueError(raw)
                value = float(raw.replace("_", "") or "0")
            except (ValueError, OverflowError):
                raise err("bad number `%s`" % raw, line, col, len(raw),
                          help="a number has at most one `.`")
            append(Token(NUMBER, raw, line, col, value, None, file, text))
        elif g == 6 or g == 7:
            raw = m.group()
            i = m.start()
            if g == 7:
                append(Token(STRING, raw[1:-1], line, i - line_start + 1, 0.0, None, file, text))
            inner = raw.count("\n")
            if inner:
                line += inner
                line_start = i + raw.rfind("\n") + 1
        elif g == 8 and m.group()[0].isalpha():
            append(Token(IDENT, m.group(), line, m.start() - line_start + 1, 0.0, None, file, text))
        else:
            i = m.start()
            col = i - line_start + 1
            ch = text[i]
            if text.startswith("/*", i):
                raise err("unterminated block comment", line, col, 2,
                          help="close this comment with `*/`")
            if ch == '"':
                # like the reference, point at the end of the input
                raise err("unterminated string", line, len(text) - line_start + 1,
                          help="the string opened at %d:%d needs a closing `\"`" % (line, col))
            shown = ch if ch.isprintable() else repr(ch)[1:-1]
            help_ = None
            if ch == "#":
                help_ = "comments are written `// …` or `/* … */`"
            elif ch == "%":
                help_ = "there is no `%` operator: write `x - n * floor(x / n)`"
            raise err("unexpected character `%s`" % shown, line, col, help=help_)
    col = len(text) - line_start + 1
    toks.append(Token(EOF, "", line, col, 0.0, None, file, text))
    return toks
