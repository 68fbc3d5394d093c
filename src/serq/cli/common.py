"""What the commands of ``serq`` share: exit statuses, the ``--set`` and
``--def`` options, reading a program (text or IR) with the overrides."""
import sys

from ..argtypes import DEF_HELP, SET_HELP, add_run_settings
from ..errors import UsageError

EXIT_FINDINGS = 4  # `serq run --fail-on-findings`: the run has findings


EXIT_OUTPUT = 5  # an output could not be written (the report, if any, printed first)


STOP = [None]  # the command's interrupt.Stop while main runs


def pair(text: str, flag: str):
    name, eq, value = text.partition("=")
    if not eq or not name.strip():
        raise UsageError("%s %s: write %s NAME=EXPR" % (flag, text, flag))
    return name.strip(), value


def overrides(p, run_settings: bool) -> None:
    p.add_argument("-W", dest="W", choices=("error",), metavar="error",
                   help="`-W error`: refuse a program that has warnings (a hazard serQ "
                   "0.1.3 compiles, such as a shadowed name or an option given twice)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=EXPR",
                   help=SET_HELP)
    p.add_argument("--def", dest="defs", action="append", default=[], metavar="NAME=EXPR",
                   help=DEF_HELP)
    if run_settings:
        add_run_settings(p)


def compile_args(args, run_settings: bool):
    from ..compiler import compile_program
    sets = dict(pair(t, "--set") for t in args.set)
    defs = dict(pair(t, "--def") for t in args.defs)
    kw = {"strict": getattr(args, "strict", False),
          "warnings_as_errors": getattr(args, "W", None) == "error"}
    if run_settings:
        kw.update(seed=args.seed, horizon=args.horizon, warmup=args.warmup,
                  arrivals=args.arrivals, trace=args.trace)
    prog = compile_program(args.file, sets=sets, defs=defs, **kw)
    from .colour import write_diagnostic
    for w in prog.warnings:
        # hazards serQ 0.1.3 compiles as written: on stderr, never in a report
        write_diagnostic(sys.stderr, w, "", getattr(args, "color", "auto"))
    return prog


def load_program(args):
    """A program file, or IR JSON (its first non-blank character is `{`)."""
    from ..compiler import is_ir, read_source
    text = read_source(args.file)
    if is_ir(args.file, text):
        from ..ir.json import loads
        from ..ir.validate import validate
        if args.set or args.defs:
            raise UsageError("a `let` or `def` override applies to program text, not to IR")
        prog = loads(text, file=args.file)
        for key in ("seed", "horizon", "warmup", "arrivals", "trace"):
            if getattr(args, key, None) is not None:
                setattr(prog, key, getattr(args, key))
        return validate(prog)
    return compile_args(args, hasattr(args, "seed"))


def num_json(x) -> str:
    from ..report.jsonfmt import format_float
    return format_float(x)
