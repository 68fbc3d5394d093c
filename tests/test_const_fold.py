"""The parser's constant folder (array sizes and the ``let``s they read):
aggregates, the reference's arithmetic on NaN and infinities, and the
reference's bound of 4 096 terms a fold writes out.  Each case states the
pools the program has (or that it is refused at the size), and is compared
with pyserq 0.1.3 where it is installed: the same IR, or refused by both."""
import json

import pytest

from serq.compiler import compile_program
from serq.errors import SerqError
from serq.ir.json import dumps

BODY = ("\nstage s : fifo(1);\nworkload { arrive poisson(1); }\n"
        "session { hold kv[0] (1) { run s (1); } }\nrun { horizon 10; }\n")

#: (declarations, pools in the IR or None when the size is refused)
CASES = [
    ("pool kv[sum i in 4 (i)] { cap 10; }", 6),
    ("pool kv[max i in 4 (i)] { cap 10; }", 3),
    ("pool kv[min i in 3 (i + 2)] { cap 10; }", 2),
    ("let n = sum i in 4 (i); pool kv[n] { cap 10; }", 6),
    ("let n = 3; pool kv[sum i in n (i)] { cap 10; }", 3),
    ("let a = 2; pool kv[sum i in a (i) + a] { cap 10; }", 3),
    ("let a = 2; pool kv[sum a in 3 (a)] { cap 10; }", 3),  # the index hides the let
    ("pool kv[sum i in 2 (sum j in 3 (j))] { cap 10; }", 6),
    ("pool kv[sum i in 2 (sum i in 3 (i))] { cap 10; }", 6),
    ("pool kv[sum i in 3 (0.5)] { cap 10; }", None),  # 1.5
    ("pool kv[sum i in 0 (i)] { cap 10; }", None),
    ("pool kv[sum i in 2.5 (1)] { cap 10; }", None),
    ("pool kv[sum i in 3 (inf) - inf] { cap 10; }", None),
    # the bound: 4 096 terms a fold, nested counts included
    ("pool kv[sum i in 4096 (0) + 1] { cap 10; }", 1),
    ("pool kv[sum i in 4097 (0) + 1] { cap 10; }", None),
    ("pool kv[sum i in 4095 (0) + sum i in 1 (1)] { cap 10; }", 1),
    ("pool kv[sum i in 4096 (0) + sum i in 1 (1)] { cap 10; }", None),
    ("pool kv[sum i in 2 (sum j in 2047 (1)) - 4093] { cap 10; }", 1),
    ("pool kv[sum i in 2 (sum j in 2048 (1)) - 4095] { cap 10; }", None),
    # an array size's terms are not the program's: 3 + 4 096 links
    ("pool kv[sum i in 3 (i)] { cap 10; } let m = sum i in 4096 (0);", 3),
    # the reference's arithmetic: a number wins over NaN, ln(0) = -inf, ...
    ("pool kv[min(0/0, 3)] { cap 10; }", 3),
    ("pool kv[max i in 3 (i == 1 ? 0/0 : i)] { cap 10; }", 2),
    ("pool kv[ln(0) < 0 ? 2 : 3] { cap 10; }", 2),
    ("pool kv[sqrt(0 - 1) > 0 ? 2 : 3] { cap 10; }", 3),
    ("pool kv[2 ^ 2000 > 1 ? 2 : 3] { cap 10; }", 2),
    ("pool kv[exp(1000) > 1 ? 2 : 3] { cap 10; }", 2),
    ("pool kv[floor(1/0) > 1 ? 2 : 3] { cap 10; }", 2),
    ("pool kv[pow(0 - 8, 1/3) > 1 ? 2 : 3] { cap 10; }", 3),
    ("pool kv[(1 ? 2 : zz)] { cap 10; }", 2),
    ("pool kv[(0 && zz) + 2] { cap 10; }", None),  # both sides of && must fold
]


@pytest.mark.parametrize("decl,pools", CASES, ids=[c[0] for c in CASES])
def test_array_size_folds_as_the_reference(tmp_path, decl, pools):
    path = tmp_path / "p.sq"
    path.write_text(decl + BODY)
    if pools is None:
        with pytest.raises(SerqError) as e:
            compile_program(str(path))
        text = e.value.render()
        assert "array size" in text and "p.sq:1:" in text
    else:
        ir = json.loads(dumps(compile_program(str(path))))
        assert len(ir["pools"]) == pools
    try:
        import pyserq
    except ImportError:
        return
    if pools is None:
        with pytest.raises(ValueError):
            pyserq.compile(path=str(path))
    else:
        assert ir == json.loads(pyserq.compile(path=str(path)).to_json())
