"""Mutated programs never crash the front end: the answer is always IR or a
serq error (a syntax error always with its position)."""
import re

from hypothesis import HealthCheck, given, settings, strategies as st

from corpus import programs
from serq.compiler import compile_program
from serq.errors import SerqError, SyntaxError_

SOURCES = [p.read_text() for p in programs("valid")]
TOKEN = re.compile(r"\s+|[A-Za-z_][A-Za-z0-9_.]*|\d[\d_.eE]*|\"[^\"\n]*\"|//[^\n]*|.", re.S)


def tokens(text):
    return TOKEN.findall(text)


@st.composite
def mutated(draw):
    toks = tokens(draw(st.sampled_from(SOURCES)))
    for _ in range(draw(st.integers(1, 4))):
        if not toks:
            break
        i = draw(st.integers(0, len(toks) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "bytes", "replace"]))
        if op == "delete":
            del toks[i]
        elif op == "duplicate":
            toks.insert(i, toks[i])
        elif op == "swap":
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
        elif op == "bytes":
            toks.insert(i, draw(st.text(min_size=1, max_size=6)))
        else:
            toks[i] = draw(st.sampled_from(["{", "}", "(", ")", ";", ",", "~", "[", "]", "0",
                                            "-1", "inf", "hold", "run", "loop", "fork", "join",
                                            "end", "turn", "request", "set", "=", "..", "^"]))
    return "".join(toks)


def check(text):
    try:
        compile_program(source=text)
    except SyntaxError_ as e:
        assert e.span is not None, e.render()
        e.render()
    except SerqError as e:
        e.render()


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated())
def test_mutated_programs_never_crash(text):
    check(text)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(max_size=300))
def test_random_text_never_crashes(text):
    check(text)
