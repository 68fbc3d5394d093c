"""`serq sweep`: a grid of constants x seeds, run in parallel, summarized as a tidy table.

The package is also the Python API's function: ``serq.sweep(program,
{"rate": [1, 2, 3]}, seeds=3)`` runs the grid as the command does and
returns its table as a pandas DataFrame (frame.py, ``sweep``).  A package
and a function cannot share the name ``serq.sweep`` otherwise: importing
``serq.sweep.grid`` binds ``serq.sweep`` to the package, so the package
itself is made callable.
"""
import sys as _sys
import types as _types


class _CallablePackage(_types.ModuleType):
    """``serq.sweep(...)`` is ``serq.sweep.frame.sweep(...)``."""

    def __call__(self, *args, **kwargs):
        from .frame import sweep
        return sweep(*args, **kwargs)

    @property
    def __signature__(self):
        import inspect
        from .frame import sweep
        return inspect.signature(sweep)


_sys.modules[__name__].__class__ = _CallablePackage
