"""``@dataclass`` and ``field`` that cost little at import time.

The standard decorator writes ``__init__``, ``__repr__``, ``__eq__`` (and,
frozen, ``__hash__``, ``__setattr__``, ``__delattr__``) as source text and
compiles each with ``exec`` when the class is defined, and builds a
docstring from ``inspect.signature``: about half a millisecond a class on
CPython 3.11, and importing ``dataclasses`` imports ``inspect`` (``ast``,
``dis``, ``tokenize``...).  serq's syntax tree, IR, linker and report have
some hundred such classes, of which a run of a small program instantiates a
few, so ``serq run`` spent more time defining classes than simulating.

This decorator reads the class's annotations itself and compiles each
method the first time it is called, to what the standard decorator writes:
the same parameters, defaults and default factories, the same tuple
comparison (``(self.a, self.b) == (other.a, other.b)``, where one NaN
object equals itself), the same ``Name(a=..., b=...)`` text guarded against
recursion, ``__hash__`` None (frozen: the hash of the fields' tuple), and
for a frozen class ``FrozenInstanceError`` on assignment.  A method the class
writes itself is kept.

The classes are dataclasses to ``dataclasses``: ``__dataclass_fields__``
holds each field's name (its keys are all ``ir.walk`` reads) and, once a
value is first asked for (``dataclasses.fields``, ``asdict``, ``replace``),
the real ``dataclasses.Field``, made by the standard decorator from a copy
of the class's annotations and fields; ``dataclasses`` is imported only then.

Not supported (the standard decorator is used instead): a base class that
is a dataclass, ``ClassVar``, ``InitVar`` and ``KW_ONLY`` annotations, and
options other than ``frozen``.  The docstring is the class's, or
``Name(field, ...)`` when it has none.
"""
import sys
from reprlib import recursive_repr
from typing import TYPE_CHECKING

__all__ = ["dataclass", "field"]


class _Missing(object):
    def __repr__(self):
        return "MISSING"


MISSING = _Missing()


class _HasFactory(object):
    """The default of a parameter whose field has a default factory."""

    def __repr__(self):
        return "<factory>"


_HAS_FACTORY = _HasFactory()


class _Spec(object):
    """A field as ``field()`` describes it (``dataclasses.field``'s options)."""
    __slots__ = ("name", "default", "default_factory", "init", "repr", "hash", "compare",
                 "metadata")

    def __init__(self, default=MISSING, default_factory=MISSING, init=True, repr=True,
                 hash=None, compare=True, metadata=None):
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare
        self.metadata = metadata


def _lazy_field(*, default=MISSING, default_factory=MISSING, init=True, repr=True, hash=None,
          compare=True, metadata=None):
    """``dataclasses.field``, for this module's ``dataclass``."""
    return _Spec(default, default_factory, init, repr, hash, compare, metadata)


def _standard(cls, frozen: bool):
    """The standard decorator, given this module's ``field()`` specs as its own."""
    import dataclasses
    for name, value in list(cls.__dict__.items()):
        if isinstance(value, _Spec):
            setattr(cls, name, _standard_field(value))
    return dataclasses.dataclass(cls, frozen=frozen)


def _standard_field(spec: _Spec):
    import dataclasses
    kw = {"init": spec.init, "repr": spec.repr, "hash": spec.hash, "compare": spec.compare,
          "metadata": spec.metadata}
    if spec.default is not MISSING:
        kw["default"] = spec.default
    if spec.default_factory is not MISSING:
        kw["default_factory"] = spec.default_factory
    return dataclasses.field(**kw)


def _plain_annotation(a) -> bool:
    """Not ClassVar, InitVar or KW_ONLY (which the standard decorator handles)."""
    if isinstance(a, str):
        return not any(w in a for w in ("ClassVar", "InitVar", "KW_ONLY"))
    if getattr(a, "__module__", None) == "dataclasses":
        return False
    typing = sys.modules.get("typing")
    return typing is None or getattr(a, "__origin__", None) is not typing.ClassVar \
        and a is not typing.ClassVar


def _lazy_dataclass(cls=None, *, frozen=False):
    """``dataclasses.dataclass`` (the default options, or ``frozen=True``)
    with its methods compiled on first use."""
    if cls is None:
        return lambda c: _lazy_dataclass(c, frozen=frozen)
    own = cls.__dict__
    annotations = own.get("__annotations__", {})
    if any("__dataclass_fields__" in vars(b) for b in cls.__mro__[1:]) or \
            not all(_plain_annotation(a) for a in annotations.values()):
        return _standard(cls, frozen)
    specs = []
    for name in annotations:
        value = own.get(name, MISSING)
        spec = value if isinstance(value, _Spec) else _Spec(default=value)
        spec.name = name
        if spec.default is not MISSING and type(spec.default).__hash__ is None:
            raise ValueError("mutable default %s for field %s is not allowed: use "
                             "default_factory" % (type(spec.default), name))
        if isinstance(value, _Spec):
            if spec.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        specs.append(spec)
    seen_default = None
    for s in specs:
        if s.init:
            if s.default is not MISSING or s.default_factory is not MISSING:
                seen_default = s
            elif seen_default is not None:
                raise TypeError("non-default argument %r follows default argument" % s.name)
    if not own.get("__doc__"):
        cls.__doc__ = "%s(%s)" % (cls.__name__, ", ".join(annotations))
    class_hash = own.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in own))
    makers = [("__init__", _make_init), ("__repr__", _make_repr), ("__eq__", _make_eq)]
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in own:
                raise TypeError("Cannot overwrite attribute %s in class %s" % (name, cls.__name__))
        makers += [("__setattr__", _make_setattr), ("__delattr__", _make_delattr)]
        if not explicit_hash:
            makers.append(("__hash__", _make_hash))
    for name, make in makers:
        if name not in own or name == "__hash__":
            setattr(cls, name, _compiled_on_first_call(cls, name, make, specs, frozen))
    if not frozen and not explicit_hash:
        cls.__hash__ = None
    cls.__dataclass_fields__ = _Fields(cls, specs)
    cls.__dataclass_params__ = _Params(frozen)
    if sys.version_info >= (3, 10) and "__match_args__" not in own:
        cls.__match_args__ = tuple(s.name for s in specs if s.init)
    return cls


class _Fields(dict):
    """``__dataclass_fields__``: the field names, mapped to their
    ``dataclasses.Field`` once a value is asked for."""
    __slots__ = ("_pending",)

    def __init__(self, cls, specs):
        dict.__init__(self, ((s.name, None) for s in specs))
        self._pending = (cls, specs)

    def _real(self):
        if self._pending is not None:
            cls, specs = self._pending
            dict.update(self, _real_fields(cls, specs))
            self._pending = None

    def __getitem__(self, name):
        self._real()
        return dict.__getitem__(self, name)

    def get(self, name, default=None):
        self._real()
        return dict.get(self, name, default)

    def values(self):
        self._real()
        return dict.values(self)

    def items(self):
        self._real()
        return dict.items(self)

    def copy(self):
        self._real()
        return dict(dict.items(self))

    def __repr__(self):
        self._real()
        return dict.__repr__(self)

    def __reduce__(self):
        self._real()
        return (dict, (dict(dict.items(self)),))


def _real_fields(cls, specs):
    """The standard decorator's Fields for ``cls``: it decorates a copy."""
    import dataclasses
    ns = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
          "__annotations__": dict(cls.__dict__.get("__annotations__", {}))}
    for s in specs:
        ns[s.name] = _standard_field(s)
    copy = dataclasses.dataclass(type(cls.__name__, (), ns), init=False, repr=False, eq=False)
    return copy.__dataclass_fields__


class _Params(object):
    """``__dataclass_params__``: the standard one, made when first read."""

    def __init__(self, frozen: bool):
        self.frozen = frozen

    def __get__(self, instance, owner):
        params = _real_params(self.frozen)
        for klass in owner.__mro__:
            if klass.__dict__.get("__dataclass_params__") is self:
                klass.__dataclass_params__ = params
        return params


_PARAMS = {}


def _real_params(frozen: bool):
    """The standard decorator's params for its default options (or frozen)."""
    if frozen not in _PARAMS:
        import dataclasses

        class Probe:
            """Probe()"""
        _PARAMS[frozen] = dataclasses.dataclass(Probe, frozen=frozen).__dataclass_params__
    return _PARAMS[frozen]


def _compiled_on_first_call(cls, name, make, specs, frozen):
    def first_call(self, *args, **kwargs):
        method = make(cls, specs, frozen)
        method.__qualname__ = "%s.%s" % (cls.__qualname__, name)
        if cls.__dict__.get(name) is first_call:
            setattr(cls, name, method)
        return method(self, *args, **kwargs)
    first_call.__name__ = name
    first_call.__qualname__ = "%s.%s" % (cls.__qualname__, name)
    return first_call


def _compile(name: str, params: str, body, namespace: dict):
    text = "def %s(%s):\n%s\n" % (name, params, "\n".join("    " + line for line in body))
    # A code object, not the text: CPython's exec of a string marks a
    # KeyboardInterrupt raised inside it as unhandled, even once caught, and
    # `python -m serq` then ends killed by SIGINT (see __main__.py).
    exec(compile(text, "<serq dataclass>", "exec"), namespace)
    return namespace[name]


def _make_init(cls, specs, frozen):
    params = ["self"]
    body = []
    namespace = {"_HAS_FACTORY": _HAS_FACTORY, "_object_setattr": object.__setattr__}
    assign = "_object_setattr(self, %r, %%s)" if frozen else "self.%s = %%s"
    for f in specs:
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
                value = "%s() if %s is _HAS_FACTORY else %s" % (factory, f.name, f.name)
            else:
                value = f.name
        elif f.default_factory is not MISSING:
            value = factory + "()"
        elif f.default is not MISSING:
            value = default
        else:
            continue
        body.append((assign % f.name) % value)
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    return _compile("__init__", ", ".join(params), body or ["pass"], namespace)


def _make_repr(cls, specs, frozen):
    shown = ", ".join("%s={self.%s!r}" % (f.name, f.name) for f in specs if f.repr)
    method = _compile("__repr__", "self",
                      ['return self.__class__.__qualname__ + f"(%s)"' % shown], {})
    return recursive_repr()(method)


def _fields_tuple(who: str, names) -> str:
    return "(%s)" % "".join("%s.%s," % (who, n) for n in names)


def _make_eq(cls, specs, frozen):
    names = [f.name for f in specs if f.compare]
    return _compile("__eq__", "self, other",
                    ["if other.__class__ is self.__class__:",
                     "    return %s == %s" % (_fields_tuple("self", names),
                                              _fields_tuple("other", names)),
                     "return NotImplemented"], {})


def _make_hash(cls, specs, frozen):
    names = [f.name for f in specs if (f.compare if f.hash is None else f.hash)]
    return _compile("__hash__", "self", ["return hash(%s)" % _fields_tuple("self", names)], {})


def _frozen_error():
    import dataclasses
    return dataclasses.FrozenInstanceError


def _make_setattr(cls, specs, frozen):
    return _compile("__setattr__", "self, name, value",
                    ["if type(self) is cls or name in %r:" % (tuple(f.name for f in specs),),
                     '    raise _frozen_error()(f"cannot assign to field {name!r}")',
                     "super(cls, self).__setattr__(name, value)"],
                    {"cls": cls, "_frozen_error": _frozen_error})


def _make_delattr(cls, specs, frozen):
    return _compile("__delattr__", "self, name",
                    ["if type(self) is cls or name in %r:" % (tuple(f.name for f in specs),),
                     '    raise _frozen_error()(f"cannot delete field {name!r}")',
                     "super(cls, self).__delattr__(name)"],
                    {"cls": cls, "_frozen_error": _frozen_error})



# A type checker (mypy, mypyc) sees the standard ones, whose meaning it
# knows: the same constructors, fields and methods.
if TYPE_CHECKING:
    from dataclasses import dataclass, field
else:
    dataclass = _lazy_dataclass
    field = _lazy_field
