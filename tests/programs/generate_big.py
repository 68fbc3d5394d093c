#!/usr/bin/env python3
"""Corpus programs too large to commit, written from a few lines each.

The reference keeps a program as one token stream into which `use`d
libraries and `def` uses are spliced, and refuses the splice that takes the
stream past 99 999 tokens (without its end).  Showing that takes programs of
about 100 000 tokens, some 300 kB each, so they are generated here rather
than committed: every program below is written as ``valid/big_*.sq`` or
``invalid/big_*.sq`` (ignored by git, see ``.gitignore``); the reference's
outputs for them (``.ir.json``/``.err``, small) are committed as for every
other program.  ``regen.py`` writes them before it compiles the corpus, and
the conformance tests before they collect it (``corpus.programs(kind,
big=True)``).  Writing is idempotent: a file already holding the text is not
touched.

Each program is a head (a comment saying what the reference does, the
definitions, a session whose first statement uses one) and padding: `let`
lines of five tokens each, the last one taking one to four tokens more, so
that the whole program has exactly the number of tokens the comment names.
Comments are not tokens.

Usage: ``python3 tests/programs/generate_big.py`` (prints what it wrote).
"""
import re
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
CAP = 99_999  # the most tokens the reference's stream may hold

_TOKEN = re.compile(r'//[^\n]*|\s+|"[^"]*"|\d+(?:\.\d+)?|[A-Za-z_]\w*|&&|\|\||[<>=!]=|.')


def count_tokens(text: str) -> int:
    """Tokens of a generated program (comments and blanks are not tokens)."""
    return sum(1 for m in _TOKEN.finditer(text) if not m.group().startswith("//")
               and not m.group().isspace())


def padding(n: int) -> str:
    """`let` lines holding exactly ``n`` (>= 5) tokens."""
    whole, extra = divmod(n, 5)
    lines = ["let k%d = %d;" % (i, i) for i in range(whole - 1)]
    last = ("-" if extra % 2 else "") + "1" + " + 1" * (extra // 2)
    lines.append("let k_last = %s;" % last)
    return "\n".join(lines) + "\n"


def program(head: str, tail: str, tokens: int) -> str:
    """``head``, padding, ``tail``: ``tokens`` tokens in all."""
    pad = tokens - count_tokens(head) - count_tokens(tail)
    text = head + padding(pad) + tail
    assert count_tokens(text) == tokens, (count_tokens(text), tokens)
    return text


RUN = "run { horizon 10; }\n"

# `svc(2)` (4 tokens) becomes `( ~ exp ( ( 2 ) ) + 0.5 )` (11 tokens): +7
_EXPR_HEAD = """// %s
// The program has %d tokens; `svc(2)` (4 tokens) expands to `~exp((2)) + 0.5`,
// parenthesised (11 tokens): %d after the splice.
def svc(x) = ~exp(x) + 0.5;
session {
  set s = svc(2);
}
"""

# `respond(2);` (5 tokens) becomes `set t = ( 2 ) ; set u = t + 1 ;` (14 tokens): +9
_STMT_HEAD = """// %s
// The program has %d tokens; `respond(2);` (5 tokens with its `;`) expands to
// `set t = (2); set u = t + 1;` (14 tokens, not parenthesised): %d after the splice.
def respond(n) { set t = n; set u = t + 1; }
session {
  respond(2);
}
"""

# `outer(2)` (4) -> `( inner ( ( 2 ) ) * 3 )` (10): +6; then `inner((2))`
# (6) -> `( ( ( 2 ) ) + 1 )` (9): +3.  The second splice is the one refused.
_NESTED_HEAD = """// %s
// The program has %d tokens; `outer(2)` adds 6 (%d) and the `inner` use in its body
// 3 more (%d).
def inner(x) = x + 1;
def outer(y) = inner(y) * 3;
session {
  set s = outer(2);
}
"""

# `use "lib/cap_defs.sq";` (3 tokens) is checked with the library's tokens
# added (the `use` itself still counted), then replaced by them.
_LIB_HEAD = """// %s
// The program has %d tokens and lib/cap_defs.sq %d: %d while the `use` is read.
use "lib/cap_defs.sq";
session {
  set s = twice(3);
}
"""
LIB = "lib/cap_defs.sq"  # committed in valid/ and invalid/


def _lib_tokens() -> int:
    return count_tokens((HERE / "valid" / LIB).read_text())


def _expr(kind: str, tokens: int) -> str:
    says = ("The reference refuses the single use of `svc`, at the use: the whole expanded\n"
            "// program would pass 99 999 tokens (the tokens after the use count too)."
            if kind == "invalid" else
            "The reference accepts it: with `svc` expanded the program holds exactly 99 999 tokens.")
    return program(_EXPR_HEAD % (says, tokens, tokens + 7), RUN, tokens)


def _stmt(kind: str, tokens: int) -> str:
    says = ("The reference refuses the use of the statement def `respond`, at the use: the\n"
            "// expanded program would pass 99 999 tokens."
            if kind == "invalid" else
            "The reference accepts it: with `respond` expanded the program holds exactly 99 999 tokens.")
    return program(_STMT_HEAD % (says, tokens, tokens + 9), RUN, tokens)


def _nested(tokens: int) -> str:
    says = ("The reference refuses the use of `inner` in the body of `outer` (with a note\n"
            "// naming the use of `outer`): that second splice passes 99 999 tokens.")
    return program(_NESTED_HEAD % (says, tokens, tokens + 6, tokens + 9), RUN, tokens)


def _library(kind: str, tokens: int) -> str:
    says = ("The reference refuses the `use`, at `use`: the program and its library would\n"
            "// pass 99 999 tokens (no def use is needed)."
            if kind == "invalid" else
            "The reference accepts it: the program and its library hold exactly 99 999 tokens.")
    lib = _lib_tokens()
    return program(_LIB_HEAD % (says, tokens, lib, tokens + lib), RUN, tokens)


def _no_use(tokens: int) -> str:
    head = ("// The reference accepts a program of %d tokens whose definitions are never\n"
            "// used: only a splice is measured, not the program as written.\n"
            "def svc(x) = ~exp(x) + 0.5;\n"
            "def respond(n) { set t = n; }\n"
            "session {\n  set s = 1;\n}\n" % tokens)
    return program(head, RUN, tokens)


def big_programs() -> Dict[str, str]:
    """Relative path -> text of every generated program (and library)."""
    return {
        "valid/big_def_use_at_cap.sq": _expr("valid", CAP - 7),
        "invalid/big_def_use_past_cap.sq": _expr("invalid", CAP - 6),
        "valid/big_stmt_def_use_at_cap.sq": _stmt("valid", CAP - 9),
        "invalid/big_stmt_def_use_past_cap.sq": _stmt("invalid", CAP - 8),
        "invalid/big_nested_def_use_past_cap.sq": _nested(CAP - 8),
        "valid/big_library_at_cap.sq": _library("valid", CAP - _lib_tokens()),
        "invalid/big_library_past_cap.sq": _library("invalid", CAP - _lib_tokens() + 1),
        "valid/big_no_def_use.sq": _no_use(150_000),
    }


def write_all() -> List[str]:
    """Write every generated file whose text differs; return their paths."""
    written = []
    for rel, text in big_programs().items():
        path = HERE / rel
        if path.exists() and path.read_text() == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(rel)
    return written


if __name__ == "__main__":
    for rel in write_all():
        print("wrote", rel)
