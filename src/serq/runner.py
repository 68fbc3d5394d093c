"""Run a compiled program: read its trace, simulate, build the report."""
from .compiler import trace_path
from .ir import nodes as ir
from .report.build import build_report
from .report.model import Report
from .sim.engine import Simulator
from .tracefile import read_trace


def simulate(program: ir.Program, progress=None, check_invariants=False) -> Simulator:
    trace = read_trace(trace_path(program)) if program.trace is not None else None
    return Simulator(program, trace, check_invariants).run(progress)


def run_program(program: ir.Program, check_invariants=False) -> Report:
    return build_report(simulate(program, check_invariants=check_invariants))
