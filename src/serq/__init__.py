"""serq: a Python implementation of serQ 0.1.3, the serving specification language."""

__version__ = "0.1.0"
SERQ_VERSION = "0.1.3"
IR_VERSION = 11

from .api import Gauge, Observe, Program, Report, Rng, compile, read_trace, run  # noqa: E402
from .builder import ProgramBuilder, edit  # noqa: E402

REPORT_VERSION = 1
__all__ = ["compile", "run", "read_trace", "Program", "Report", "Observe", "Gauge", "Rng",
           "ProgramBuilder", "edit",
           "IR_VERSION", "REPORT_VERSION", "SERQ_VERSION"]
