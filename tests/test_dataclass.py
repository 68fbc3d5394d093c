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
        assert cls(nan) == cls(nan)  # the tuple comparison: the same NaN object equals itself
        assert cls.__hash__ is None
        with pytest.raises(TypeError):
            hash(cls(1))
        x = cls(1)
        x.b = x
        assert "b=..." in repr(x)  # recursion guarded
    # another NaN: unequal on CPython (PyPy's floats are identical by value), as there
    assert (lazy(nan) == lazy(float("nan"))) == (std(nan) == std(float("nan")))
    assert [f.name for f in dataclasses.fields(lazy)] == ["a", "b", "c", "d", "e"]
    assert getattr(lazy, "__match_args__", None) == getattr(std, "__match_args__", None)
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
    assert repr(x) == ("Binary(op='Add', left=Num(value=1.0), "
                       "right=Ref(base=0, count=1, index=None))")
    assert x == copy.deepcopy(x) and x != ir.Binary("Sub", ir.Num(1.0), ir.Ref(0, 1))
    assert pickle.loads(pickle.dumps(x)) == x
    run = ir.Run(ir.Ref(0, 1), "Plain", ir.Num(1.0))
    assert run.growing is None and run.also == [] and run.also is not ir.Run(
        ir.Ref(0, 1), "Plain", ir.Num(1.0)).also
    assert ir.Num(math.inf) == ir.Num(math.inf)
    assert set(dataclasses.asdict(ir.Pool("p"))) == {f.name for f in dataclasses.fields(ir.Pool)}
    classes = [c for m in (ir, ast) for c in vars(m).values()
               if isinstance(c, type) and "__dataclass_fields__" in vars(c)]
    assert len(classes) > 80 and all(dataclasses.is_dataclass(c) for c in classes)


def _frozen_pair():
    made = []
    for deco, field in ((dataclasses.dataclass, dataclasses.field),
                        (_dataclass.dataclass, _dataclass.field)):
        class Point:
            x: int
            y: int = 0
            tags: tuple = field(default=(), compare=False)
        made.append(deco(frozen=True)(Point))
    return made


def test_frozen_as_the_standard_one():
    std, lazy = _frozen_pair()
    for cls in (std, lazy):
        p = cls(1, 2)
        assert (p.x, p.y, p.tags) == (1, 2, ())
        assert p == cls(1, 2, ("t",)) and hash(p) == hash(cls(1, 2, ("t",))) == hash((1, 2))
        assert {p: 1}[cls(1, 2)] == 1
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
            p.x = 3
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'z'"):
            p.z = 3  # type(self) is cls: no attribute at all
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'y'"):
            del p.y
        assert dataclasses.replace(p, y=5) == cls(1, 5)
        assert dataclasses.astuple(p) == (1, 2, ())
        assert copy.copy(p) == p and copy.deepcopy(p) == p
    assert repr(lazy(1)).replace(lazy.__qualname__, "P") == repr(std(1)).replace(
        std.__qualname__, "P")
    assert lazy.__dataclass_params__.frozen and not _pair()[1].__dataclass_params__.frozen
    assert lazy.__dataclass_params__.eq and lazy.__dataclass_params__.init


def test_fields_are_the_standard_ones():
    std, lazy = _pair()
    keys = ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare",
            "metadata")
    for a, b in zip(dataclasses.fields(std), dataclasses.fields(lazy)):
        assert [getattr(a, k) for k in keys] == [getattr(b, k) for k in keys]
    assert list(lazy.__dataclass_fields__) == ["a", "b", "c", "d", "e"]
    assert lazy.d == 1.5 and not hasattr(lazy, "c")  # the class attribute of a factory goes


def test_what_the_decorator_refuses_as_the_standard_one_does():
    for deco, field in ((dataclasses.dataclass, dataclasses.field),
                        (_dataclass.dataclass, _dataclass.field)):
        with pytest.raises(TypeError, match="non-default argument 'b' follows default"):
            @deco
            class A:
                a: int = 0
                b: int
        with pytest.raises(ValueError, match="mutable default"):
            @deco
            class B:
                a: list = []
        with pytest.raises(ValueError, match="both default and default_factory"):
            field(default=1, default_factory=list)


def test_the_modules_import_no_dataclasses(tmp_path):
    """What the decorator is for: the dataclasses (and inspect) modules are
    imported only when something asks for a Field."""
    import subprocess
    import sys
    from pathlib import Path
    src = str(Path(__file__).resolve().parent.parent / "src")
    code = ("import sys; import serq.ir.nodes, serq.syntax.ast, serq.link, serq.report.model, "
            "serq.errors; print('dataclasses' in sys.modules, 'inspect' in sys.modules); "
            "import dataclasses; dataclasses.fields(serq.ir.nodes.Pool); "
            "print('dataclasses' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), text=True,
                         stdout=subprocess.PIPE, check=True,
                         env=dict(__import__("os").environ, PYTHONPATH=src)).stdout.split()
    assert out == ["False", "False", "True"]


def test_span_and_moment_frozen():
    from serq.errors import Span
    from serq.link.scope import moment
    s = Span("f", 1, 2)
    assert pickle.loads(pickle.dumps(s)) == s and hash(s) == hash(("f", 1, 2, 1))
    assert repr(s) == "Span(file='f', line=1, col=2, length=1)" and str(s) == "f:1:2"
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.line = 3
    m = moment("Gauge", "a gauge")
    assert m.replace(name="x").name == "x" and m.replace(name="x") != m
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.name = "y"


def test_the_same_errors_for_wrong_arguments():
    std, lazy = _pair()
    for args, kw in (((), {}), ((1, 2, 3, 4, 5, 6), {}), ((1,), {"x": 1})):
        messages = []
        for cls in (std, lazy):
            with pytest.raises(TypeError) as e:
                cls(*args, **kw)
            messages.append(str(e.value).replace(cls.__qualname__, "Node"))
        assert messages[0] == messages[1]


def test_frozen_keeps_an_explicit_hash():
    for deco in (dataclasses.dataclass, _dataclass.dataclass):
        @deco(frozen=True)
        class H:
            a: int

            def __hash__(self):
                return 7
        assert hash(H(1)) == 7 and H(1) == H(1)
