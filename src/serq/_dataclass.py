"""``@dataclass`` that costs little at import time.

The standard decorator writes ``__init__``, ``__repr__`` and ``__eq__`` as
source text and compiles each with ``exec`` when the class is defined, and
builds a docstring from ``inspect.signature``: about half a millisecond a
class on CPython 3.11.  serq's syntax tree and IR have some ninety classes,
and a run of a small program instantiates a few of them, so ``serq run``
spent more time defining them than simulating.

This decorator lets ``dataclasses`` do the bookkeeping (the fields,
``__dataclass_fields__``, ``__match_args__``: ``dataclasses.fields``,
``asdict``, ``replace``, ``is_dataclass`` and ``copy`` work as before) and
compiles each of the three methods the first time it is called, from the
same fields, to what the standard decorator writes for a class that is not
frozen: the same parameters, defaults and default factories, the same
tuple comparison (``(self.a, self.b) == (other.a, other.b)``: an identical
NaN compares equal, as there), the same ``Name(a=..., b=...)`` text,
guarded against recursion, and ``__hash__`` set to None.  A method the
class writes itself is kept.  ``frozen=True`` goes to the standard
decorator unchanged (serq has two such classes).

The docstring is the class's, or ``Name(field, ...)`` when it has none.
"""
import dataclasses
from dataclasses import MISSING, field  # noqa: F401  (re-exported)
from reprlib import recursive_repr

__all__ = ["dataclass", "field"]


class _HasFactory(object):
    """The default of a parameter whose field has a default factory."""

    def __repr__(self):
        return "<factory>"


_HAS_FACTORY = _HasFactory()


def dataclass(cls=None, frozen=False):
    """``dataclasses.dataclass`` with its methods compiled on first use."""
    if cls is None:
        return lambda c: dataclass(c, frozen=frozen)
    if frozen:
        return dataclasses.dataclass(cls, frozen=True)
    own = cls.__dict__
    if not own.get("__doc__"):
        cls.__doc__ = "%s(%s)" % (cls.__name__, ", ".join(own.get("__annotations__", ())))
    class_hash = own.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in own))
    methods = [(name, make) for name, make in (("__init__", _make_init), ("__repr__", _make_repr),
                                               ("__eq__", _make_eq)) if name not in own]
    dataclasses.dataclass(cls, init=False, repr=False, eq=False)
    for name, make in methods:
        setattr(cls, name, _compiled_on_first_call(cls, name, make))
    if not explicit_hash:
        cls.__hash__ = None
    return cls


def _compiled_on_first_call(cls, name, make):
    def first_call(self, *args, **kwargs):
        method = make(cls)
        method.__qualname__ = "%s.%s" % (cls.__qualname__, name)
        if cls.__dict__.get(name) is first_call:
            setattr(cls, name, method)
        return method(self, *args, **kwargs)
    first_call.__name__ = name
    first_call.__qualname__ = "%s.%s" % (cls.__qualname__, name)
    return first_call


def _compile(name: str, params: str, body, namespace: dict):
    text = "def %s(%s):\n%s\n" % (name, params, "\n".join("    " + line for line in body))
    exec(text, namespace)
    return namespace[name]


def _make_init(cls):
    params = ["self"]
    body = []
    namespace = {"_HAS_FACTORY": _HAS_FACTORY}
    for f in dataclasses.fields(cls):
        default, factory = "_default_" + f.name, "_factory_" + f.name
        if f.default is not MISSING:
            namespace[default] = f.default
        if f.default_factory is not MISSING:
            namespace[factory] = f.default_factory
        if f.init:
            if f.default is not MISSING:
                params.append("%s=%s" % (f.name, default))
            elif f.default_factory is not MISSING:
                params.append("%s=_HAS_FACTORY" % f.name)
            else:
                params.append(f.name)
            if f.default_factory is not MISSING:
                body.append("self.%s = %s() if %s is _HAS_FACTORY else %s"
                            % (f.name, factory, f.name, f.name))
            else:
                body.append("self.%s = %s" % (f.name, f.name))
        elif f.default_factory is not MISSING:
            body.append("self.%s = %s()" % (f.name, factory))
        elif f.default is not MISSING:
            body.append("self.%s = %s" % (f.name, default))
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    return _compile("__init__", ", ".join(params), body or ["pass"], namespace)


def _make_repr(cls):
    shown = ", ".join("%s={self.%s!r}" % (f.name, f.name)
                      for f in dataclasses.fields(cls) if f.repr)
    method = _compile("__repr__", "self",
                      ['return self.__class__.__qualname__ + f"(%s)"' % shown], {})
    return recursive_repr()(method)


def _make_eq(cls):
    names = [f.name for f in dataclasses.fields(cls) if f.compare]
    mine = "".join("self.%s," % n for n in names)
    theirs = "".join("other.%s," % n for n in names)
    return _compile("__eq__", "self, other",
                    ["if other.__class__ is self.__class__:",
                     "    return (%s) == (%s)" % (mine, theirs),
                     "return NotImplemented"], {})
