"""serq refuses every invalid program of the corpus, with a located error at
the reference's line and column wherever the reference gives one; and it
refuses every program of ``diverge/``, which the reference silently accepts
(each is listed in docs/divergences.md)."""
import re

import pytest

from corpus import header_kwargs, in_dir, programs
from serq.compiler import compile_program
from serq.errors import SerqError

INVALID = programs("invalid", big=True)
DIVERGE = programs("diverge", big=True)
POS = re.compile(r"^(?:(\S+?\.sq):)?(\d+):(\d+): ")


def refuse(path):
    kwargs = header_kwargs(path.read_text())
    with in_dir(path.parent):
        with pytest.raises(SerqError) as info:
            compile_program(path.name, **kwargs)
    return info.value


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_invalid_program_is_refused_where_the_reference_points(path):
    err = refuse(path)
    rendered = err.render()
    assert "Traceback" not in rendered and err.message
    expected = path.with_suffix(".err").read_text()
    m = POS.match(expected)
    if m:
        assert err.span is not None, rendered
        assert (err.span.line, err.span.col) == (int(m.group(2)), int(m.group(3))), \
            "serq: %s\nreference: %s" % (rendered, expected)
        if m.group(1):
            assert err.span.file.endswith(m.group(1))


@pytest.mark.parametrize("path", DIVERGE, ids=[p.stem for p in DIVERGE])
def test_silently_accepted_program_is_refused(path):
    err = refuse(path)
    assert err.message


def test_corpus_sizes():
    assert len(INVALID) >= 50
    assert len(DIVERGE) >= 5
