"""Shared by the report tests: the oracle module and fixture, float comparison."""
import json
import math

from fixtures import make_report_oracle as oracle

_fixture = None


def fixture():
    global _fixture
    if _fixture is None:
        with open(oracle.FIXTURE) as f:
            _fixture = json.load(f)
    return _fixture


def bits(x):
    """A float's exact identity as the JSON report sees it: ``None`` for an
    absent or non-finite value, else ``float.hex`` (keeps -0 apart from 0)."""
    if x is None:
        return None
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return None
    return x.hex()


def bits_hex(s):
    """``bits`` of a fixture value (a ``float.hex`` string or null)."""
    return None if s is None else bits(float.fromhex(s))
