"""serq: a Python implementation of serQ 0.1.3, the serving specification language."""

__version__ = "0.1.0"
SERQ_VERSION = "0.1.3"
IR_VERSION = 11
