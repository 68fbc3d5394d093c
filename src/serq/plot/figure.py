"""Matplotlib, loaded on demand (the ``plot`` extra), and a figure with its
title and caption."""
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed)."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError("serq plot needs matplotlib: pip install 'serq[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


@dataclass
class Section:
    """One figure of a report: ``fig`` is a matplotlib Figure."""
    title: str
    fig: Any
    caption: str = ""
