"""The ``serq`` command line.

    serq run   FILE [--json [--extended]] [--admission] [--dump DIR] [--quiet]
               [--no-samples] [--fail-on-findings] [--slo 'NAME <= BOUND']...
               [--slo-per request|session]
               [overrides as for `ir`]
    serq check FILE [--strict] [--set NAME=EXPR]... [--def NAME=EXPR]...
    serq ir    FILE [--set …]... [--def …]... [--seed N] [--horizon T]
                    [--warmup T] [--arrivals N] [--trace F]
    serq ir    --from-json IR.json [--strict]
    serq sweep FILE --set NAME=A:B:N|A,B,C|V ... [--seeds N] [--jobs N]
               [--backend ray --address ADDR] [-o TABLE.csv|.parquet]
    serq capacity FILE (--over | --minimize) NAME=LO:HI --slo 'p99(NAME) <= B'...
               [--confidence C] [--resolution R] [--budget-runs N] [--jobs N |
               --backend ray] [--json] [-o PROBES.csv]
    serq compare A.sq B.sq | FILE --vs NAME=EXPR... [--set …] [--seeds N]
               [--metric PATTERN]... [--confidence C] [--jobs N | --backend ray]
               [--json] [-o TABLE.csv]
    serq sensitivity FILE --vary NAME=-10%:+10%... [--metric PATTERN]... [--seeds N]
               [-o tornado.png|.html|.csv]
    serq plot  TABLE.csv [--x NAME] [--metric PATTERN]... -o OUT.png|OUT.html
    serq plot  --run FILE [--seed N] [--set …] -o OUT.png|OUT.html
    serq draw  FILE [--format svg|tikz|dot] [--output FILE] [--set …]... [--def …]...
    serq fmt   FILE... [--check] [--diff] [--stdout]
    serq trace convert TRACE --format F [-o OUT] [--layout L] [--limit N]
               [--start S] [--duration D] [--scale F] [--rate R] [--seed N]
               [--think T] [--tokenizer chars4|words] [--block-tokens N]
    serq cost  --model M --gpu G [--tp N] [--dtype bf16|fp8] [-o FILE] [...]
    serq calibrate --model M --gpu G [...] (--steps CSV | --bench JSON...) [-o FILE]

Exit status: 0 success (for ``serq run``: the report was printed, whatever
the simulated system did; its findings are warnings in the report), 1 an
error in the user's input (printed as ``FILE:LINE:COL: error: …`` with the
source line and a caret), 2 a usage error, 3 an internal error, 4 a run
with findings under ``--fail-on-findings``, 5 an output that could not be
written (``serq.atomic``: the old file left as it was), 130 interrupted
(Ctrl-C), 143 stopped by SIGTERM, 141 the output closed early.  No input,
however malformed, ends in a Python traceback.

Beyond the reference (report/admission.py): ``--admission`` prints the
admission table (head-of-line blocking, reserve held, preemptions and their
storm) after the text report; ``--json --extended`` adds one last key,
``"extended": {"admission": [...], "findings": [...], "observes": {...},
"stages": [...], "rates": {...}}`` (``partial`` first for a stopped run,
``slo`` last under ``--slo``), after the reference's fields, which stay
byte-identical (without ``--extended`` the JSON is the reference's).
"""
import argparse
import os
import sys
from typing import List, Optional

from .. import SERQ_VERSION, __version__
import signal as _signal

from ..errors import OutputError, SerqError, UsageError
from . import commands as _c
from .colour import write_diagnostic
from .common import EXIT_OUTPUT, STOP, pair
from .helpfmt import TerminalFormatter
from .output import Guarded, StdoutError, drop_stdout

def _command_word(argv: Optional[List[str]]) -> Optional[str]:
    """The subcommand when it is the first argument (as `serq run FILE`
    writes it); None otherwise (`serq`, `serq -h`, `serq -h run`, a word that
    is not a command)."""
    args = sys.argv[1:] if argv is None else argv
    if args and any(args[0] == name for name, _kw, _add, _run in _COMMANDS):
        return args[0]
    return None


class _Version(argparse.Action):
    """``--version``: the versions and which core runs (compiled or
    interpreted), found only when asked, as it imports the core."""

    def __call__(self, parser, namespace, values, option_string=None):
        from .. import core
        sys.stdout.write("serq %s (serQ %s, IR 11; core: %s)\n" % (__version__, SERQ_VERSION, core()))
        parser.exit()


def _parser(argv: Optional[List[str]] = None) -> argparse.ArgumentParser:
    """The command line's parser.  When the first argument names a
    subcommand, only that one is built: the others are never read, and
    building them (``serq plot``'s, ``serq trace``'s options) would import
    what they need.  Otherwise (``serq -h`` lists every command, an unknown
    word lists the choices) every one is."""
    ap = argparse.ArgumentParser(prog="serq", description="serQ %s: parse, check and compile "
                                 "serving programs" % SERQ_VERSION,
                                 formatter_class=TerminalFormatter)
    ap.add_argument("-V", "--version", action=_Version, nargs=0,
                    help="show the version and which core runs, and exit")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    word = _command_word(argv)
    commands = {}
    for name, kw, add, _run in _COMMANDS:
        if word is None or word == name:
            commands[name] = sub.add_parser(name, formatter_class=TerminalFormatter, **kw)
            add(commands[name])
    ap.set_defaults(_commands=commands)
    return ap


def _command_parser(ap: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The parser of the command ``args`` names (`serq trace convert`'s for
    it), for its usage line; the top-level one when none is named."""
    p = getattr(args, "_commands", {}).get(getattr(args, "command", None))
    if p is None:
        return ap
    nested = getattr(args, "trace_command", None)
    if nested is not None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction) and nested in action.choices:
                return action.choices[nested]
    return p


def _lazy(module: str, name: str):
    """``name`` of ``serq.<module>``, imported only when called: a command's
    options and code are read only when that command runs (start-up)."""
    def call(*args):
        import importlib
        return getattr(importlib.import_module("serq." + module), name)(*args)
    return call


def _plot_arguments(p) -> None:
    from ..plot.cli import add_arguments
    add_arguments(p, pair)


# The subcommands in the order `serq --help` lists them: name, what
# `add_parser` takes, the function adding the arguments, the function
# running the command (it returns the exit status).
_COMMANDS = [
    ("run", {"help": "simulate a program and print its report"},
     _lazy("cli.run", "add_arguments"), _lazy("cli.run", "command")),
    ("check", {"help": "parse, link and validate a program"},
     _c.check_arguments, _c.check_command),
    ("ir", {"help": "print a program's IR (version 11) as JSON"}, _c.ir_arguments, _c.ir_command),
    ("sweep", {"help": "run a program over a grid of constants and seeds; write a table of "
               "means and confidence intervals",
               "description": "Run FILE at every point of the grid the --set options span, "
               "with --seeds seeds each, and write one row per point and metric: the swept "
               "constants, metric, mean, ci_low, ci_high (95% Student-t over the seeds), "
               "n_seeds."}, _c.sweep_arguments, _c.sweep_command),
    ("capacity", {"help": "find the largest load (--over) or the fewest replicas (--minimize) "
                  "meeting every SLO, as an interval at a stated confidence",
                  "description": "Probe FILE at values of a `let` constant, adding seeds at each "
                  "until every SLO statistic's interval clears its bound, and narrow a bracket "
                  "around the answer (docs/capacity.md)."},
     _lazy("capacity.command", "add_arguments"), _lazy("capacity.command", "command")),
    ("compare", {"help": "compare two programs (or two settings of one) on common random "
                 "numbers: each metric's difference with a paired confidence interval",
                 "description": "Run A and B at the same seeds (seed s for both), and report "
                 "for each metric A's and B's means, the difference B - A and B/A - 1 with "
                 "Student-t intervals over the seeds' paired differences, and the interval "
                 "two independent sets of runs would give."},
     _lazy("compare.command", "compare_arguments"), _lazy("compare.command", "compare_command")),
    ("sensitivity", {"help": "elasticity of each metric to each `let` constant from paired "
                     "runs at its low and high values, with a tornado chart",
                     "description": "Run FILE at its base values and at each --vary "
                     "constant's low and high value, at the same seeds, and report each "
                     "metric's change and its elasticity (relative change of the metric / "
                     "relative change of the constant) with Student-t intervals over the "
                     "seeds."},
     _lazy("compare.command", "sensitivity_arguments"),
     _lazy("compare.command", "sensitivity_command")),
    ("plot", {"help": "draw a sweep's curves, or one run's distributions, series and "
              "iterations, as PNG or a self-contained HTML report"},
     _plot_arguments, _lazy("plot.cli", "command")),
    ("draw", {"help": "draw the deployment: pools, stages and the request path"},
     _c.draw_arguments, _c.draw_command),
    ("fmt", {"help": "rewrite programs in the canonical layout (comments kept)"},
     _c.fmt_arguments, _c.fmt_command),
    ("trace", {"help": "work with trace files"}, _c.trace_arguments, _c.trace_command),
    ("cost", {"help": "write a library of step costs and KV capacity for a model on a GPU "
              "(a roofline; docs/costs.md)"},
     _lazy("costmodel.command", "add_arguments"), _lazy("costmodel.command", "command")),
    ("calibrate", {"help": "fit the step cost's efficiencies and overhead to a per-step CSV or "
                   "to `vllm bench serve` results, and write the fitted library"},
     _lazy("costmodel.calibrate", "add_arguments"), _lazy("costmodel.calibrate", "command")),
]


#: ``_main`` ran out of memory (the process then ends at once: ``main``).
_OUT_OF_MEMORY = [False]
_HELD: list = []  # the MemoryError, its run's state held (``_main``)


def main(argv: Optional[List[str]] = None) -> int:
    if argv is None:  # (the command line itself: on PyPy, a larger nursery)
        from .nursery import reexec_with_nursery
        reexec_with_nursery()
    ap = _parser(argv)
    try:
        args, unknown = ap.parse_known_args(argv)
        if unknown:
            # said with the command's usage, not the top level's
            _command_parser(ap, args).error("unrecognized arguments: %s" % " ".join(unknown))
    except SystemExit as e:
        return int(e.code or 0)
    if args.command is None:
        ap.print_help(sys.stderr)
        return 2
    from ..interrupt import Stop
    stop = Stop()
    real = sys.stdout
    with stop:  # SIGINT and SIGTERM caught until main returns (interrupt.py)
        STOP[0] = stop
        sys.stdout = Guarded(real)
        try:
            status = _main(args, stop)
        finally:
            if isinstance(sys.stdout, Guarded):
                sys.stdout = real
            STOP[0] = None
    if argv is None and args.command == "run":
        # The command line's `serq run`: its report and side outputs are
        # written and closed by now; freeing the run's sessions, samples and
        # generated code at exit, and the interpreter's last collections,
        # cost CPU time (2-4 % of a short run, seconds after a long one, and
        # `--max-wall` is the whole command's time) and produce nothing;
        # after running out of memory they may not finish at all.  The
        # process ends without them.  (No other command: `sweep`'s worker
        # pool and anything with exit handlers end the usual way.)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(status)
    return status


def _main(args, stop) -> int:
    from ..interrupt import exit_status, signal_name
    colour = getattr(args, "color", "auto")  # `serq run --color`
    try:
        status = _dispatch(args)
        # Written now, where a full device is an error of ours, not at exit.
        sys.stdout.flush()
        return status
    except OutputError as e:
        write_diagnostic(sys.stderr, e, "serq: ", colour)
        if isinstance(e, StdoutError):
            drop_stdout()
        return EXIT_OUTPUT
    except UsageError as e:
        write_diagnostic(sys.stderr, e, "serq: ", colour)
        return 2
    except SerqError as e:
        write_diagnostic(sys.stderr, e, "", colour)
        return 1
    except RecursionError:
        sys.stderr.write("serq: error: the input nests too deeply for serq to read; split its "
                         "deepest expression with `let`, `set` or `def`\n")
        return 1
    except MemoryError as e:
        # The reserve _bound_memory kept makes room for the message.  The
        # run's state stays held by the traceback: freeing it now would
        # finalise a million sessions' generators with no memory to do it
        # (each said on stderr as "Exception ignored"); the command line's
        # process ends at once instead (main).
        _HELD[:] = [e]
        del e
        from .run import RESERVE
        RESERVE[:] = []
        bound = getattr(args, "max_memory", None)
        sys.stderr.write("serq: error: out of memory%s\n" % (
            " (--max-memory %s: the run needs more; raise it, shorten the horizon, or try "
            "--no-samples)" % _size_text(bound) if bound else ""))
        _OUT_OF_MEMORY[0] = True
        return 1
    except KeyboardInterrupt:
        signum = stop.signum
        sys.stderr.write("serq: interrupted\n" if signum in (None, _signal.SIGINT) else
                         "serq: stopped by %s\n" % signal_name(signum))
        return exit_status(signum)
    except BrokenPipeError:
        # The reader went away (`serq run … | head`): nothing more to say, and
        # Python must not complain about flushing stdout at exit either; the
        # status is a shell's for a SIGPIPE (128 + 13).
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 141
    except Exception as e:  # a bug in serq, never the user's fault
        return _internal_error(e)


def _size_text(n: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return "%d" % n


def _internal_error(e: BaseException) -> int:
    """A bug in serq, never the user's fault."""
    sys.stderr.write("serq: internal error (%s: %s); please report it with the input that "
                     "caused it\n" % (type(e).__name__, e))
    return 3


def _dispatch(args) -> int:
    for name, _kw, _add, run in _COMMANDS:
        if name == args.command:
            return run(args)
    raise AssertionError(args.command)
