"""``serq capacity``: the largest load (``--over``), or the fewest replicas
(``--minimize``), at which every SLO holds, as a bracket with a stated
confidence (search.py; the SLO statistics: spec.py).

The package is callable: ``serq.capacity("x.sq", over="rate=1:20",
slo=["p99(ttft) <= 0.5"])`` runs a search and returns its result (see
:func:`serq.capacity.run.run_capacity` for the arguments;
``result.low``, ``result.high``, ``result.probes``, ``result.json()``).
"""
import sys as _sys
import types as _types


class _CallableModule(_types.ModuleType):
    def __call__(self, file, **kwargs):
        from .api import capacity
        return capacity(file, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
