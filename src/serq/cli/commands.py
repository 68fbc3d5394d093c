"""The smaller commands of ``serq``: check, ir, sweep, draw, fmt and
trace convert, each an ``*_arguments`` function for its options and a
``*_command`` one running it."""
import signal as _signal
import sys

from ..argtypes import pos_int as _pos_int, seed_int, add_run_times
from ..argtypes import time_value as _time
from ..errors import UsageError
from .common import STOP, compile_args, load_program, overrides, pair
from .helpfmt import TerminalFormatter
from .output import Utf8Out

def check_arguments(c) -> None:
    c.add_argument("file", help="a program (.sq)")
    c.add_argument("--strict", action="store_true",
                   help="serQ 0.1.3 only: refuse serq's language extensions (first fit, "
                        "watermark, ~lognormal ~gamma ~pareto ~empirical)")
    overrides(c, False)


def ir_arguments(i) -> None:
    i.add_argument("file", nargs="?", help="a program (.sq)")
    i.add_argument("--from-json", metavar="IR", help="read IR JSON and print it back")
    i.add_argument("--strict", action="store_true",
                   help="serQ 0.1.3 only: refuse serq's extensions and, in IR, unknown fields")
    overrides(i, True)


def draw_arguments(d) -> None:
    d.add_argument("file", help="a program (.sq) or its IR (JSON)")
    d.add_argument("--format", choices=("svg", "tikz", "dot"), default="svg",
                   help="svg (default, self-contained), tikz (a tikzpicture) or dot (Graphviz)")
    d.add_argument("-o", "--output", metavar="FILE", help="write the picture to FILE, not stdout")
    overrides(d, False)


def fmt_arguments(f) -> None:
    f.add_argument("files", nargs="+", metavar="FILE", help="program files (`-`: stdin to stdout)")
    f.add_argument("--check", action="store_true",
                   help="change nothing; list the files that would change and exit 1 if any")
    f.add_argument("--diff", action="store_true", help="print what would change, change nothing")
    f.add_argument("--stdout", action="store_true",
                   help="print the formatted programs instead of rewriting the files")


def trace_arguments(t) -> None:
    tsub = t.add_subparsers(dest="trace_command", metavar="TRACE_COMMAND")
    tc = tsub.add_parser("convert", help="convert a public trace (ShareGPT, BurstGPT, Azure "
                         "2023/2024, Mooncake) to the trace CSV a workload replays",
                         formatter_class=TerminalFormatter)
    from ..traces import FORMATS, LAYOUTS
    tc.add_argument("input", help="the trace file")
    tc.add_argument("--format", required=True, choices=FORMATS,
                    help="the input's format (azure2023 and azure2024 are azure)")
    tc.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    tc.add_argument("--layout", choices=LAYOUTS,
                    help="timeline: one session, a turn per request, think = gap to the "
                    "next (default; conversations for ShareGPT without --rate); requests: a "
                    "session per request; conversations: a session per ShareGPT conversation")
    tc.add_argument("--limit", type=_pos_int, metavar="N", help="keep the first N requests "
                    "(conversations) of the window")
    tc.add_argument("--start", type=lambda t: _time(t, False), default=0.0, metavar="S",
                    help="keep requests from S seconds after the trace's first one")
    tc.add_argument("--duration", type=lambda t: _time(t, True), metavar="D",
                    help="keep requests before start + D seconds")
    tc.add_argument("--scale", type=lambda t: _time(t, True), default=1.0, metavar="F",
                    help="multiply every gap (and think time) by F (0.5: twice as fast)")
    tc.add_argument("--rate", type=lambda t: _time(t, True), metavar="R",
                    help="ShareGPT: arrivals a second of the Poisson stream drawn for it")
    tc.add_argument("--seed", type=seed_int, default=1, help="ShareGPT: the stream's seed")
    tc.add_argument("--think", type=lambda t: _time(t, False), default=0.0, metavar="T",
                    help="ShareGPT conversations: think seconds between turns")
    tc.add_argument("--tokenizer", choices=("chars4", "words"), default="chars4",
                    help="ShareGPT: tokens per message: chars4 = characters / 4 rounded up "
                    "(default), words = whitespace-separated words")
    tc.add_argument("--block-tokens", type=_pos_int, default=512, metavar="N",
                    help="Mooncake: tokens per hash id (default 512)")


def sweep_arguments(w) -> None:
    w.add_argument("file", help="a program (.sq)")
    w.add_argument("--set", action="append", default=[], metavar="NAME=SPEC",
                   help="a `let` constant's values: V (one value), A,B,C (a list) or "
                   "A:B:N (N values from A to B, both included)")
    w.add_argument("--def", dest="defs", action="append", default=[], metavar="NAME=EXPR",
                   help="replace an expression definition's body (every point)")
    w.add_argument("--seeds", type=_pos_int, default=1, metavar="N",
                   help="runs per point, with seeds S, S + 2^32, S + 2 * 2^32, ... (default 1): 0.1.3 seeds a session from seed + session, so nearby seeds share draws")
    w.add_argument("--seed", type=seed_int, default=1, metavar="S",
                   help="the first seed (default 1; the program's own seed is not used)")
    add_run_times(w)
    w.add_argument("--jobs", "-j", type=_pos_int, metavar="N",
                   help="processes for the local backend (default: every core)")
    w.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local processes (default) or a Ray cluster")
    w.add_argument("--address", metavar="ADDR",
                   help="with --backend ray: the cluster's address (host:port); without it "
                   "Ray starts a local cluster")
    w.add_argument("-o", "--output", metavar="FILE",
                   help="write the table to FILE (.csv, or .parquet with the `parquet` "
                   "extra); default: CSV on standard output")
    w.add_argument("--quiet", action="store_true", help="no progress bar")
    w.add_argument("--max-runs", type=_pos_int, default=10000, metavar="N",
                   help="refuse a sweep of more than N runs (points x seeds; default 10000) "
                   "before running any")
    w.add_argument("--slo", action="append", default=[], metavar="'NAME <= BOUND'",
                   help="an SLO on an observation, as for `serq run --slo`, repeatable: "
                   "the table adds, per point, each SLO's attainment "
                   "(slo.NAME<=BOUND.attainment) and all of them together "
                   "(slo.all.attainment, slo.all.goodput: requests meeting every SLO a "
                   "second)")
    w.add_argument("--slo-per", choices=("request", "session"), default="request",
                   help="the unit the SLOs judge: a request (one per turn; the default) or a "
                   "session")


def check_command(args) -> int:
    prog = compile_args(args, False)
    print("OK: %d pool(s), %d stage(s), %d attribute(s), %d block(s)"
          % (len(prog.pools), len(prog.stages), len(prog.attrs), len(prog.blocks)))
    return 0


def ir_command(args) -> int:
    from ..ir.json import dumps, loads
    from ..compiler import read_source
    if args.from_json:
        if args.file or args.set or args.defs:
            raise UsageError("`--from-json` reads IR: a program file, `--set` and `--def` "
                             "apply to program text, not to IR")
        prog = loads(read_source(args.from_json), strict=args.strict, file=args.from_json)
        if args.seed is not None:
            prog.seed = args.seed
        if args.horizon is not None:
            prog.horizon = args.horizon
        if args.warmup is not None:
            prog.warmup = args.warmup
        if args.arrivals is not None:
            prog.arrivals = args.arrivals
        if args.trace is not None:
            prog.trace = args.trace
        from ..ir.validate import validate
        validate(prog)
    else:
        if not args.file:
            raise UsageError("`serq ir` needs a program file (or `--from-json IR`)")
        prog = compile_args(args, True)
    from ..depth import deep_recursion
    with deep_recursion():
        text = dumps(prog)
    sys.stdout.write(text + "\n")
    return 0


def sweep_command(args) -> int:
    from ..sweep.grid import parse_axis
    from ..sweep.run import Sweep, run_sweep
    if args.address and args.backend != "ray":
        raise UsageError("`--address` names a Ray cluster: use it with `--backend ray`")
    if args.jobs and args.backend == "ray":
        raise UsageError("`--jobs` sets the local processes; a Ray cluster schedules its own")
    sweep = Sweep(file=args.file, axes=[parse_axis(t, args.max_runs) for t in args.set],
                  defs=dict(pair(t, "--def") for t in args.defs), seeds=args.seeds,
                  first_seed=args.seed, horizon=args.horizon, warmup=args.warmup,
                  arrivals=args.arrivals, trace=args.trace, max_runs=args.max_runs,
                  slos=list(args.slo), slo_per=args.slo_per)
    if args.slo_per != "request" and not args.slo:
        raise UsageError("`--slo-per` says what the SLOs judge: give them with --slo")
    from ..sweep.run import SweepInterrupted

    def note(text: str) -> None:
        sys.stderr.write("serq sweep: %s\n" % text)
    from ..depth import deep_recursion
    try:
        with deep_recursion():  # the programs are pickled to the workers (depth.py)
            table = run_sweep(sweep, jobs=args.jobs, backend=args.backend, address=args.address,
                              show_progress=not args.quiet and sys.stderr.isatty(),
                              output=args.output or "-", stop=STOP[0], note=note)
    except SweepInterrupted as e:
        from ..interrupt import exit_status, signal_name
        sys.stdout.flush()
        note("%s: %s" % ("interrupted" if e.signum == _signal.SIGINT else
                         "stopped by %s" % signal_name(e.signum), e.summary))
        return exit_status(e.signum)
    if args.output not in (None, "-"):
        sys.stderr.write("wrote %s: %s\n" % (args.output, _table_summary(table, args.seeds)))
    return 0


def _table_summary(table, seeds: int) -> str:
    """What a sweep's table holds, in a line: rows, points, metrics, seeds."""
    points = len(set(r.point for r in table.rows))
    metrics = len(set(r.metric for r in table.rows))
    return "%d row%s (%d point%s x %d metric%s, each the mean of %d seed%s)" % (
        len(table.rows), "" if len(table.rows) == 1 else "s", points, "" if points == 1 else "s",
        metrics, "" if metrics == 1 else "s", seeds, "" if seeds == 1 else "s")


def draw_command(args) -> int:
    from ..draw import draw
    text = draw(load_program(args), args.format, args.file)
    if args.output:
        from ..atomic import write_text
        write_text(args.output, text, newline=None)
    else:
        Utf8Out(sys.stdout).write(text)
    return 0


def fmt_command(args) -> int:
    from ..fmt import fmt_command
    if args.stdout and (args.check or args.diff):
        raise UsageError("`--stdout` prints the formatted text; `--check` and `--diff` print "
                         "what would change: use one of them")
    return fmt_command(args.files, args.check, args.diff, args.stdout, Utf8Out(sys.stdout),
                       sys.stderr)


def trace_command(args) -> int:
    from ..traces import Options, convert_file
    if args.trace_command is None:
        raise UsageError("`serq trace` needs a command: `serq trace convert FILE --format F`")
    o = Options(args.format, args.layout, args.limit, args.start, args.duration, args.scale,
                args.rate, args.seed, args.think, args.tokenizer, args.block_tokens)
    summary = convert_file(args.input, args.output, o, sys.stdout)
    if args.output not in (None, "-"):
        sys.stderr.write("wrote %s: %s\n" % (args.output, summary))
    return 0
