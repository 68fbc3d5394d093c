import pytest

from serq.errors import SyntaxError_
from serq.syntax.lexer import EOF, IDENT, NUMBER, PUNCT, STRING, tokenize


def kinds(text):
    return [(t.kind, t.text) for t in tokenize(text)[:-1]]


def test_numbers_with_fraction_exponent_underscores():
    toks = tokenize("1_000 .5 1e3 1.5e-1 1.e2 5. 3")
    assert [t.value for t in toks if t.kind == NUMBER] == [1000.0, 0.5, 1000.0, 0.15, 100.0, 5.0, 3.0]


def test_exponent_needs_digits():
    # `1e` is the number 1 followed by the identifier e (as the reference lexes it)
    assert kinds("1e") == [(NUMBER, "1"), (IDENT, "e")]
    assert kinds("1e+") == [(NUMBER, "1"), (IDENT, "e"), (PUNCT, "+")]


def test_hex_is_number_then_identifier():
    assert kinds("0x10") == [(NUMBER, "0"), (IDENT, "x10")]


def test_comments_and_positions():
    toks = tokenize("a // x\n/* y\n z */ b")
    assert [(t.text, t.line, t.col) for t in toks] == [("a", 1, 1), ("b", 3, 7), ("", 3, 8)]
    assert toks[-1].kind == EOF


def test_two_char_punctuation():
    assert [t.text for t in tokenize("<= >= == != && || < > ! = ~ ^ ?")[:-1]] == \
        ["<=", ">=", "==", "!=", "&&", "||", "<", ">", "!", "=", "~", "^", "?"]


def test_string():
    assert kinds('use "lib/a.sq";') == [(IDENT, "use"), (STRING, "lib/a.sq"), (PUNCT, ";")]


def test_unicode_identifier_columns_count_characters():
    toks = tokenize("é x")
    assert (toks[0].kind, toks[1].col) == (IDENT, 3)


@pytest.mark.parametrize("text,line,col,msg", [
    ("a # b", 1, 3, "unexpected character `#`"),
    ("x = 1 % 2", 1, 7, "unexpected character `%`"),
    ("a\n  /* never closed", 2, 3, "unterminated block comment"),
    ('use "abc', 1, 9, "unterminated string"),  # the reference points at the end
])
def test_errors_are_located(text, line, col, msg):
    with pytest.raises(SyntaxError_) as ei:
        tokenize(text)
    e = ei.value
    assert (e.span.line, e.span.col) == (line, col)
    assert msg in e.message
    assert e.source == text


def test_control_characters_are_unexpected():
    with pytest.raises(SyntaxError_) as ei:
        tokenize("a \x00")
    assert ei.value.span.col == 3


def test_lexing_is_linear():
    import time
    text = "a + 1 " * 200_000
    t0 = time.time()
    toks = tokenize(text)
    assert len(toks) == 600_001
    assert time.time() - t0 < 10


def test_random_text_never_crashes():
    import random
    rng = random.Random(7)
    for _ in range(300):
        text = "".join(chr(rng.randrange(0, 0x3000)) for _ in range(rng.randrange(0, 60)))
        try:
            tokenize(text)
        except SyntaxError_ as e:
            assert e.span is not None
