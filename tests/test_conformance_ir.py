"""Every valid program of the corpus compiles to IR JSON-equal to the
reference's (the committed ``NAME.ir.json``, written by regen.py from pyserq
0.1.3); and, when pyserq is installed, equal to what it says live."""
import json

import pytest

from corpus import header_kwargs, in_dir, programs
from serq.compiler import compile_program
from serq.ir.json import dumps, loads

VALID = programs("valid", big=True)


def compile_json(path):
    kwargs = header_kwargs(path.read_text())
    with in_dir(path.parent):
        return dumps(compile_program(path.name, **kwargs))


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_ir_matches_reference(path):
    expected = json.loads(path.with_suffix(".ir.json").read_text())
    got = json.loads(compile_json(path))
    assert got == expected


@pytest.mark.parametrize("path", VALID[::7], ids=[p.stem for p in VALID[::7]])
def test_ir_matches_live_reference(path):
    pyserq = pytest.importorskip("pyserq")
    kwargs = header_kwargs(path.read_text())
    with in_dir(path.parent):
        expected = pyserq.compile(path=path.name, **kwargs).to_json()
    assert compile_json(path) == expected  # byte for byte, not only JSON-equal


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_ir_round_trips(path):
    text = compile_json(path)
    assert dumps(loads(text)) == text


def test_corpus_is_large_enough():
    assert len(VALID) >= 80
