"""serq: a Python implementation of serQ 0.1.3, the serving specification language."""

__version__ = "0.1.0"
SERQ_VERSION = "0.1.3"
IR_VERSION = 11
REPORT_VERSION = 1

# The API's names are imported on first use (PEP 562), so that the command
# line, which needs only some of the modules behind them, starts quickly.
_LAZY = {"compile": "api", "run": "api", "read_trace": "api", "Program": "api",
         "Report": "api", "Observe": "api", "Gauge": "api", "Rng": "api",
         "ProgramBuilder": "builder", "edit": "builder"}

__all__ = ["compile", "run", "read_trace", "Program", "Report", "Observe", "Gauge", "Rng",
           "ProgramBuilder", "edit",
           "IR_VERSION", "REPORT_VERSION", "SERQ_VERSION"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError("module 'serq' has no attribute %r" % name)
    import importlib
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
