"""serq._dataclass: its classes behave as the standard decorator's do."""
import copy
import dataclasses
import math
import pickle
from typing import List, Optional

import pytest

from serq import _dataclass
from serq.ir import nodes as ir
from serq.syntax import ast


def _pair():
    """The same class made by each decorator."""
    made = []
    for deco, field in ((dataclasses.dataclass, dataclasses.field),
                        (_dataclass.dataclass, _dataclass.field)):
        class Node:
            a: int
            b: Optional["Node"] = None
            c: List[int] = field(default_factory=list)
            d: float = field(default=1.5, compare=False)
            e: str = field(default="e", repr=False)

            def total(self):
                return self.a + sum(self.c)

        made.append(deco(Node))
    return made


def test_init_defaults_and_factories():
    for cls in _pair():
        x = cls(1)
        assert (x.a, x.b, x.c, x.d, x.e) == (1, None, [], 1.5, "e")
        y = cls(2, x, [3], d=2.0, e="f")
        assert (y.a, y.b, y.c, y.d, y.e) == (2, x, [3], 2.0, "f")
        assert cls(1).c is not cls(1).c  # a fresh list each time
        assert y.total() == 5
        with pytest.raises(TypeError):
            cls()
        with pytest.raises(TypeError):
            cls(1, nope=2)


def test_repr_eq_hash_as_the_standard_ones():
    std, lazy = _pair()
    for args, kw in (((1,), {}), ((2, None, [1, 2]), {"d": 3.0, "e": "x"})):
        assert repr(lazy(*args, **kw)).replace(lazy.__qualname__, "N") == \
            repr(std(*args, **kw)).replace(std.__qualname__, "N")
    nan = float("nan")
    for cls in (std, lazy):
        assert cls(1) == cls(1, d=9.0)  # d is not compared
        assert cls(1) != cls(1, c=[2])
        assert cls(1, e="x") != cls(1)
        assert (cls(1) == 1) is False and cls(1).__eq__(1) is NotImplemented
        # the tuple comparison: the same NaN object compares equal, another does not
        assert cls(nan) == cls(nan) and cls(nan) != cls(float("nan"))
        assert cls.__hash__ is None
        with pytest.raises(TypeError):
            hash(cls(1))
        x = cls(1)
        x.b = x
        assert "b=..." in repr(x)  # recursion guarded
    assert [f.name for f in dataclasses.fields(lazy)] == ["a", "b", "c", "d", "e"]
    assert lazy.__match_args__ == std.__match_args__
    assert dataclasses.is_dataclass(lazy(1))
    assert dataclasses.asdict(lazy(1, c=[2])) == dataclasses.asdict(std(1, c=[2]))
    assert dataclasses.replace(lazy(1), a=4) == lazy(4)


def test_a_method_the_class_writes_is_kept():
    @_dataclass.dataclass
    class Own:
        a: int

        def __repr__(self):
            return "own"

        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    assert repr(Own(1)) == "own" and Own(1) == Own(2)
    hash(Own(1))


def test_ir_and_ast_nodes():
    x = ir.Binary("Add", ir.Num(1.0), ir.Ref(0, 1))
    assert repr(x) == "Binary(op='Add', left=Num(value=1.0), right=Ref(base=0, count=1, index=None))"
    assert x == copy.deepcopy(x) and x != ir.Binary("Sub", ir.Num(1.0), ir.Ref(0, 1))
    assert pickle.loads(pickle.dumps(x)) == x
    run = ir.Run(ir.Ref(0, 1), "Plain", ir.Num(1.0))
    assert run.growing is None and run.also == [] and run.also is not ir.Run(
        ir.Ref(0, 1), "Plain", ir.Num(1.0)).also
    assert ir.Num(math.inf) == ir.Num(math.inf)
    assert set(dataclasses.asdict(ir.Pool("p"))) == {f.name for f in dataclasses.fields(ir.Pool)}
    assert all(dataclasses.is_dataclass(getattr(m, n)) for m in (ir, ast) for n in dir(m)
               if isinstance(getattr(m, n), type) and "__dataclass_fields__" in vars(getattr(m, n)))
