"""serq: a Python implementation of serQ 0.1.3, the serving specification language."""

__version__ = "0.1.0"
SERQ_VERSION = "0.1.3"
IR_VERSION = 11

import os as _os  # noqa: E402
import sys as _sys  # noqa: E402


class _InterpretedCore(object):
    """With ``SERQ_INTERPRETED=1``, every serq module whose ``.py`` file is
    there loads from it, also where a compiled module (mypyc's ``.so``)
    sits next to it and would be preferred.  Installed first on
    ``sys.meta_path`` before any of serq's modules is imported."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if not name.startswith("serq.") or not path:
            return None
        from importlib.machinery import SourceFileLoader
        from importlib.util import spec_from_file_location
        base = name.rpartition(".")[2] + ".py"
        for d in path:
            f = _os.path.join(d, base)
            if _os.path.isfile(f):
                return spec_from_file_location(name, f, loader=SourceFileLoader(name, f))
        return None


if _os.environ.get("SERQ_INTERPRETED", "") not in ("", "0") and \
        not any(isinstance(f, _InterpretedCore) or f is _InterpretedCore for f in _sys.meta_path):
    _sys.meta_path.insert(0, _InterpretedCore)


def core():
    """Which simulator core runs: ``"compiled (mypyc)"`` (the build compiled
    it and ``SERQ_INTERPRETED`` is not set) or ``"interpreted"``."""
    from .sim import rng
    return "interpreted" if rng.__file__.endswith(".py") else "compiled (mypyc)"


REPORT_VERSION = 1

# The API's names are imported on first use (PEP 562), so that the command
# line, which needs only some of the modules behind them, starts quickly.
_LAZY = {"compile": "api", "run": "api", "read_trace": "api", "Program": "api",
         "Report": "api", "Observe": "api", "Gauge": "api", "Rng": "api",
         "Interrupted": "interrupt",
         "ProgramBuilder": "builder", "edit": "builder",
         # the packages serq.sweep and serq.capacity, callable (their
         # __init__.py): the name must be the package's, which importing
         # serq.sweep.* (serq.capacity.*) binds
         "sweep": "sweep", "capacity": "capacity"}

__all__ = ["compile", "run", "sweep", "read_trace", "Program", "Report", "Observe", "Gauge", "Rng",
           "ProgramBuilder", "edit", "Interrupted", "capacity",
           "IR_VERSION", "REPORT_VERSION", "SERQ_VERSION", "core"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError("module 'serq' has no attribute %r" % name)
    import importlib
    value = importlib.import_module("." + module, __name__)
    if name != module:
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
