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

from . import SERQ_VERSION, __version__
from .argtypes import DEF_HELP, SET_HELP, add_run_settings, add_run_times
from .argtypes import memory_size, pos_int as _pos_int, seed_int
from .argtypes import time_value as _time
import signal as _signal

from .errors import OutputError, SerqError, UsageError

EXIT_FINDINGS = 4  # `serq run --fail-on-findings`: the run has findings
EXIT_OUTPUT = 5  # an output could not be written (the report, if any, printed first)
_STOP = [None]  # the command's interrupt.Stop while main runs


def _pair(text: str, flag: str):
    name, eq, value = text.partition("=")
    if not eq or not name.strip():
        raise UsageError("%s %s: write %s NAME=EXPR" % (flag, text, flag))
    return name.strip(), value


def _overrides(p, run_settings: bool) -> None:
    p.add_argument("-W", dest="W", choices=("error",), metavar="error",
                   help="`-W error`: refuse a program that has warnings (a hazard serQ "
                   "0.1.3 compiles, such as a shadowed name or an option given twice)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=EXPR",
                   help=SET_HELP)
    p.add_argument("--def", dest="defs", action="append", default=[], metavar="NAME=EXPR",
                   help=DEF_HELP)
    if run_settings:
        add_run_settings(p)


def _run_parser(r) -> None:
    r.add_argument("file", help="a program (.sq) or its IR (JSON, as `serq ir` prints)")
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument("--extended", action="store_true",
                   help="with --json: add serq's own measures under a last key `extended`")
    r.add_argument("--admission", action="store_true",
                   help="print the admission table (blocking, reserve, preemptions) "
                   "after the report")
    r.add_argument("--dump", metavar="DIR", help="write samples and gauges as CSV files")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--no-samples", action="store_true",
                   help="keep observations as running statistics only (memory bounded "
                   "however long the run): count, mean and cv2 stay exact; ci is exact "
                   "below 10240 samples, above that from block sums apportioned at the "
                   "batch ends (within 1%% on long M/M/1 runs); p99 is within 0.5%% "
                   "(relative) of the exact one, from 1%% log buckets; not with --dump "
                   "(see docs/divergences.md)")
    r.add_argument("--slo", action="append", default=[], metavar="'NAME <= BOUND'",
                   help="a service-level objective on an observation (`ttft <= 0.5`, "
                   "`tpot <= 50ms`; ops <= < >= >), repeatable: the report adds the share of "
                   "requests meeting each and all, with 95%% CIs, and the goodput (requests "
                   "meeting every SLO a second); a request's samples of one observation are "
                   "judged by their mean, a missing one fails (docs/cli.md)")
    r.add_argument("--slo-per", choices=("request", "session"), default="request",
                   help="the unit the SLOs judge: a request (one per turn; the default) or a "
                   "session (it meets an SLO when each of its requests does)")
    r.add_argument("--trace-iterations", metavar="FILE",
                   help="write one line per step iteration to FILE (`-`: stderr)")
    r.add_argument("--max-events", type=_pos_int, metavar="N",
                   help="stop after N events with a partial report")
    r.add_argument("--max-wall", type=lambda t: _time(t, True), metavar="SECONDS",
                   help="stop after SECONDS of wall time with a partial report")
    r.add_argument("--max-memory", type=memory_size, metavar="SIZE",
                   help="stop with an error (exit 1) when the process would take more than "
                   "SIZE of memory (bytes, or 512M, 2G: its address space, as `ulimit -v` "
                   "bounds it), instead of swapping or meeting the OOM killer")
    r.add_argument("--check-invariants", action="store_true",
                   help="check every pool invariant after every event (slower)")
    r.add_argument("--fail-on-findings", action="store_true",
                   help="exit %d when the run has findings (a deadlock, a livelock, a queue "
                   "head over the cap, a long backlog, an idle step stage), for CI; without "
                   "it a run that printed its report exits 0" % EXIT_FINDINGS)
    _overrides(r, True)


def _check_parser(c) -> None:
    c.add_argument("file", help="a program (.sq)")
    c.add_argument("--strict", action="store_true",
                   help="serQ 0.1.3 only: refuse serq's language extensions (first fit, "
                        "watermark)")
    _overrides(c, False)


def _ir_parser(i) -> None:
    i.add_argument("file", nargs="?", help="a program (.sq)")
    i.add_argument("--from-json", metavar="IR", help="read IR JSON and print it back")
    i.add_argument("--strict", action="store_true",
                   help="serQ 0.1.3 only: refuse serq's extensions and, in IR, unknown fields")
    _overrides(i, True)


def _draw_parser(d) -> None:
    d.add_argument("file", help="a program (.sq) or its IR (JSON)")
    d.add_argument("--format", choices=("svg", "tikz", "dot"), default="svg",
                   help="svg (default, self-contained), tikz (a tikzpicture) or dot (Graphviz)")
    d.add_argument("-o", "--output", metavar="FILE", help="write the picture to FILE, not stdout")
    _overrides(d, False)


def _fmt_parser(f) -> None:
    f.add_argument("files", nargs="+", metavar="FILE", help="program files (`-`: stdin to stdout)")
    f.add_argument("--check", action="store_true",
                   help="change nothing; list the files that would change and exit 1 if any")
    f.add_argument("--diff", action="store_true", help="print what would change, change nothing")
    f.add_argument("--stdout", action="store_true",
                   help="print the formatted programs instead of rewriting the files")


def _trace_parser(t) -> None:
    tsub = t.add_subparsers(dest="trace_command", metavar="TRACE_COMMAND")
    tc = tsub.add_parser("convert", help="convert a public trace (ShareGPT, BurstGPT, Azure "
                         "2023/2024, Mooncake) to the trace CSV a workload replays")
    from .traces import FORMATS, LAYOUTS
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


def _command_word(argv: Optional[List[str]]) -> Optional[str]:
    """The subcommand when it is the first argument (as `serq run FILE`
    writes it); None otherwise (`serq`, `serq -h`, `serq -h run`, a word that
    is not a command)."""
    args = sys.argv[1:] if argv is None else argv
    if args and any(args[0] == name for name, _kw, _add in _COMMANDS):
        return args[0]
    return None


class _Version(argparse.Action):
    """``--version``: the versions and which core runs (compiled or
    interpreted), found only when asked, as it imports the core."""

    def __call__(self, parser, namespace, values, option_string=None):
        from . import core
        sys.stdout.write("serq %s (serQ %s, IR 11; core: %s)\n" % (__version__, SERQ_VERSION, core()))
        parser.exit()


def _parser(argv: Optional[List[str]] = None) -> argparse.ArgumentParser:
    """The command line's parser.  When the first argument names a
    subcommand, only that one is built: the others are never read, and
    building them (``serq plot``'s, ``serq trace``'s options) would import
    what they need.  Otherwise (``serq -h`` lists every command, an unknown
    word lists the choices) every one is."""
    ap = argparse.ArgumentParser(prog="serq", description="serQ %s: parse, check and compile "
                                 "serving programs" % SERQ_VERSION)
    ap.add_argument("-V", "--version", action=_Version, nargs=0,
                    help="show the version and which core runs, and exit")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    word = _command_word(argv)
    commands = {}
    for name, kw, add in _COMMANDS:
        if word is None or word == name:
            commands[name] = sub.add_parser(name, **kw)
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


def _sweep_parser(w) -> None:
    w.add_argument("file", help="a program (.sq)")
    w.add_argument("--set", action="append", default=[], metavar="NAME=SPEC",
                   help="a `let` constant's values: V (one value), A,B,C (a list) or "
                   "A:B:N (N values from A to B, both included)")
    w.add_argument("--def", dest="defs", action="append", default=[], metavar="NAME=EXPR",
                   help="replace an expression definition's body (every point)")
    w.add_argument("--seeds", type=_pos_int, default=1, metavar="N",
                   help="runs per point, with seeds S, S+1, ..., S+N-1 (default 1)")
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


def _cost_parser(p) -> None:
    from .costmodel.command import add_arguments
    add_arguments(p)


def _calibrate_parser(p) -> None:
    from .costmodel.calibrate import add_arguments
    add_arguments(p)


def _plot_parser(p) -> None:
    from .plot.cli import add_arguments
    add_arguments(p, _pair)


# The subcommands in the order `serq --help` lists them: name, what
# `add_parser` takes, the function adding the arguments.
_COMMANDS = [
    ("run", {"help": "simulate a program and print its report"}, _run_parser),
    ("check", {"help": "parse, link and validate a program"}, _check_parser),
    ("ir", {"help": "print a program's IR (version 11) as JSON"}, _ir_parser),
    ("sweep", {"help": "run a program over a grid of constants and seeds; write a table of "
               "means and confidence intervals",
               "description": "Run FILE at every point of the grid the --set options span, "
               "with --seeds seeds each, and write one row per point and metric: the swept "
               "constants, metric, mean, ci_low, ci_high (95% Student-t over the seeds), "
               "n_seeds."}, _sweep_parser),
    ("plot", {"help": "draw a sweep's curves, or one run's distributions, series and "
              "iterations, as PNG or a self-contained HTML report"}, _plot_parser),
    ("draw", {"help": "draw the deployment: pools, stages and the request path"}, _draw_parser),
    ("fmt", {"help": "rewrite programs in the canonical layout (comments kept)"}, _fmt_parser),
    ("trace", {"help": "work with trace files"}, _trace_parser),
    ("cost", {"help": "write a library of step costs and KV capacity for a model on a GPU "
              "(a roofline; docs/costs.md)"}, _cost_parser),
    ("calibrate", {"help": "fit the step cost's efficiencies and overhead to a per-step CSV or "
                   "to `vllm bench serve` results, and write the fitted library"},
     _calibrate_parser),
]


def _compile(args, run_settings: bool):
    from .compiler import compile_program
    sets = dict(_pair(t, "--set") for t in args.set)
    defs = dict(_pair(t, "--def") for t in args.defs)
    kw = {"strict": getattr(args, "strict", False),
          "warnings_as_errors": getattr(args, "W", None) == "error"}
    if run_settings:
        kw.update(seed=args.seed, horizon=args.horizon, warmup=args.warmup,
                  arrivals=args.arrivals, trace=args.trace)
    prog = compile_program(args.file, sets=sets, defs=defs, **kw)
    for w in prog.warnings:
        # hazards serQ 0.1.3 compiles as written: on stderr, never in a report
        sys.stderr.write(w.render() + "\n")
    return prog


def _cmd_check(args) -> int:
    prog = _compile(args, False)
    print("OK: %d pool(s), %d stage(s), %d attribute(s), %d block(s)"
          % (len(prog.pools), len(prog.stages), len(prog.attrs), len(prog.blocks)))
    return 0


def _load(args):
    """A program file, or IR JSON (its first non-blank character is `{`)."""
    from .compiler import is_ir, read_source
    text = read_source(args.file)
    if is_ir(args.file, text):
        from .ir.json import loads
        from .ir.validate import validate
        if args.set or args.defs:
            raise UsageError("a `let` or `def` override applies to program text, not to IR")
        prog = loads(text, file=args.file)
        for key in ("seed", "horizon", "warmup", "arrivals", "trace"):
            if getattr(args, key, None) is not None:
                setattr(prog, key, getattr(args, key))
        return validate(prog)
    return _compile(args, hasattr(args, "seed"))


class _Progress(object):
    """A progress bar on stderr (simulated time against the horizon), shown
    only once a run has taken a second and only on a terminal."""

    def __init__(self):
        import time
        self.clock = time.monotonic
        self.start = self.clock()
        self.bar = None

    def __call__(self, now, horizon):
        if self.bar is None:
            if self.clock() - self.start < 1.0:
                return
            from rich.progress import Progress
            self.bar = Progress(transient=True)
            self.bar.start()
            self.task = self.bar.add_task("simulating", total=horizon)
        self.bar.update(self.task, completed=now)

    def close(self):
        if self.bar is not None:
            self.bar.stop()


def _cmd_run(args) -> int:
    from .report.build import build_report
    from .report.findings import findings_json, report_findings
    from .report.jsonfmt import report_json
    from .report.text import report_text
    from .runner import simulate
    if args.extended and not args.json:
        raise UsageError("`--extended` adds a key to the JSON report: use it with `--json`")
    if args.admission and args.json:
        raise UsageError("`--admission` prints a table after the text report; with `--json` "
                         "write `--extended`")
    if args.no_samples and args.dump:
        raise UsageError("`--dump` writes every sample, which `--no-samples` does not keep")
    if args.max_memory is not None:
        _bound_memory(args.max_memory)
    prog = _load(args)
    slos = None
    if args.slo:
        if args.no_samples:
            raise UsageError("`--slo` joins each request's samples, which `--no-samples` does "
                             "not keep")
        from .report.slo import parse_slos
        slos = parse_slos(args.slo, prog, args.slo_per)
    elif args.slo_per != "request":
        raise UsageError("`--slo-per` says what the SLOs judge: give them with --slo")
    progress = None if args.quiet or not sys.stderr.isatty() else _Progress()
    trace = None
    if args.trace_iterations == "-":
        trace = _SideOutput(None, sys.stderr)
        progress = None
    elif args.trace_iterations:
        from .atomic import AtomicFile
        trace = _SideOutput(AtomicFile(args.trace_iterations), None)
    stop = _STOP[0]
    try:
        sim = simulate(prog, progress, args.check_invariants,
                       None if trace is None else trace.line, args.no_samples,
                       args.max_events, args.max_wall,
                       on_start=None if stop is None else stop.attach,
                       track_requests=slos is not None)
    except SerqError:
        # The iterations up to the error are what one reads to find it.
        if trace is not None:
            failures = []
            trace.finish(failures)
            for e in failures:
                sys.stderr.write("serq: %s\n" % e.render())
        raise
    except BaseException:
        if trace is not None:
            trace.discard()
        raise
    finally:
        if stop is not None:
            # The run is over: a signal now is recorded, the report still printed.
            stop.detach()
            stop.defer = True
        if progress is not None:
            progress.close()
    if stop is not None and stop.signum == _signal.SIGTERM and sim.partial == "interrupted":
        sim.partial = "terminated"
    # Side outputs fail without losing the report: it is printed, then
    # their errors, and the exit status is 5.
    failures = []
    if trace is not None:
        trace.finish(failures)
    # serq's own measures (percentiles, units, rates) cost a sort of each
    # observation: not for the reference's JSON alone.
    report = build_report(sim, extras=not args.json or args.extended)
    if slos is not None:
        from .report.slo import evaluate
        report.slo = evaluate(sim, slos, args.slo_per)
    if args.dump:
        from .report.dump import write_dump
        try:
            write_dump(args.dump, {o.name: o for o in sim.observations},
                       {g.name: g for g in sim.gauges})
        except OutputError as e:
            failures.append(e)
    extended = None
    if sim.partial is not None:
        # A stopped run says so in the JSON too (serq's own key, last).
        import json as _json
        extended = [("partial", '{"reason":%s,"at":%s,"events":%d}' % (
            _json.dumps(sim.partial), _num_json(sim.end), sim.events))]
    if args.admission or args.extended:
        from .report.admission import admission_json, admission_rows, admission_text
        rows = admission_rows(sim)
        if args.extended:
            extended = (extended or []) + [("admission", admission_json(rows))]
    findings = report_findings(report)
    if args.extended:
        from .report.jsonfmt import extras_json
        extended = (extended or []) + [("findings", findings_json(findings))] + \
            extras_json(report)
        if report.slo is not None:
            extended.append(("slo", report.slo.json()))
    if args.json:
        sys.stdout.write(report_json(report, extended) + "\n")
    else:
        if sim.partial is not None:
            sys.stdout.write("partial: the run stopped at t = %s after %d events (%s); the "
                             "report covers [%s, %s]\n\n" % (_num_json(sim.end), sim.events,
                                                             sim.partial, _num_json(report.warmup),
                                                             _num_json(sim.end)))
        sys.stdout.write(report_text(report))
        if args.admission:
            sys.stdout.write("\n" + admission_text(rows))
        if args.no_samples and report.observes:
            sys.stdout.write("\nnote: --no-samples: observe count, mean and cv2 are exact; "
                             "p99 is estimated (within 0.5%), and so is ci above 10240 "
                             "samples (within about 1%); see serq run --help\n")
        sys.stdout.write("\n")
    if failures:
        sys.stdout.flush()
        for e in failures:
            sys.stderr.write("serq: %s\n" % e.render())
        return EXIT_OUTPUT
    if sim.partial in ("interrupted", "terminated") or (stop is not None and stop.signum):
        from .interrupt import exit_status
        return exit_status(None if stop is None else stop.signum)
    # What the simulated system did (a deadlock, a livelock, ...) is a
    # finding, printed with the report; the run itself succeeded.
    return EXIT_FINDINGS if findings and args.fail_on_findings else 0


def _bound_memory(size: int) -> None:
    """``--max-memory``: the address space bounded (RLIMIT_AS), so that an
    allocation past it is a ``MemoryError`` (said by ``_main``), not the
    OOM killer's SIGKILL."""
    try:
        import resource
    except ImportError:
        raise UsageError("`--max-memory` needs the `resource` module (Unix)") from None
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and size > hard:
        raise UsageError("--max-memory %d: more than this process may take (%d bytes, "
                         "`ulimit -v`)" % (size, hard))
    resource.setrlimit(resource.RLIMIT_AS, (size, hard))
    _RESERVE[:] = [bytearray(4 << 20)]  # given back to say "out of memory"


_RESERVE: list = []


class _SideOutput(object):
    """``--trace-iterations``: lines written during the run, to a file
    replaced at the end (``AtomicFile``) or to stderr.  A write that fails
    (a full disk) stops the writing, not the run: the error is given after
    the report, and the file is left as it was."""

    def __init__(self, file, stream):
        self.file = file
        self.stream = stream if file is None else file.file
        self.error = None

    def line(self, text: str) -> None:
        if self.error is None:
            try:
                self.stream.write(text + "\n")
            except OSError as e:
                self.error = e

    def discard(self) -> None:
        if self.file is not None:
            self.file.discard()

    def finish(self, failures: list) -> None:
        if self.error is not None:
            self.discard()
            if self.file is None:
                failures.append(OutputError("cannot write the iteration trace to standard "
                                            "error: %s" % (self.error.strerror or self.error)))
            else:
                from .atomic import output_error
                failures.append(output_error(self.file.path, self.error, self.file.kept))
        elif self.file is not None:
            try:
                self.file.commit()
            except OutputError as e:
                failures.append(e)


def _num_json(x) -> str:
    from .report.jsonfmt import format_float
    return format_float(x)


def _cmd_ir(args) -> int:
    from .ir.json import dumps, loads
    from .compiler import read_source
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
        from .ir.validate import validate
        validate(prog)
    else:
        if not args.file:
            raise UsageError("`serq ir` needs a program file (or `--from-json IR`)")
        prog = _compile(args, True)
    from .depth import deep_recursion
    with deep_recursion():
        text = dumps(prog)
    sys.stdout.write(text + "\n")
    return 0


def _cmd_sweep(args) -> int:
    from .sweep.grid import parse_axis
    from .sweep.run import Sweep, run_sweep
    if args.address and args.backend != "ray":
        raise UsageError("`--address` names a Ray cluster: use it with `--backend ray`")
    if args.jobs and args.backend == "ray":
        raise UsageError("`--jobs` sets the local processes; a Ray cluster schedules its own")
    sweep = Sweep(file=args.file, axes=[parse_axis(t, args.max_runs) for t in args.set],
                  defs=dict(_pair(t, "--def") for t in args.defs), seeds=args.seeds,
                  first_seed=args.seed, horizon=args.horizon, warmup=args.warmup,
                  arrivals=args.arrivals, trace=args.trace, max_runs=args.max_runs)
    from .sweep.run import SweepInterrupted

    def note(text: str) -> None:
        sys.stderr.write("serq sweep: %s\n" % text)
    from .depth import deep_recursion
    try:
        with deep_recursion():  # the programs are pickled to the workers (depth.py)
            table = run_sweep(sweep, jobs=args.jobs, backend=args.backend, address=args.address,
                              show_progress=not args.quiet and sys.stderr.isatty(),
                              output=args.output or "-", stop=_STOP[0], note=note)
    except SweepInterrupted as e:
        from .interrupt import exit_status, signal_name
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


class _Utf8Out(object):
    """Standard output taking program text: UTF-8 whatever the locale (a
    comment or a picture may hold any character)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        enc = (getattr(self.stream, "encoding", None) or "").lower().replace("-", "")
        if enc == "utf8" or not hasattr(self.stream, "buffer"):
            self.stream.write(text)
        else:
            self.stream.flush()
            self.stream.buffer.write(text.encode("utf-8"))
            self.stream.buffer.flush()

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)


def _cmd_draw(args) -> int:
    from .draw import draw
    text = draw(_load(args), args.format, args.file)
    if args.output:
        from .atomic import write_text
        write_text(args.output, text, newline=None)
    else:
        _Utf8Out(sys.stdout).write(text)
    return 0


def _cmd_fmt(args) -> int:
    from .fmt import fmt_command
    if args.stdout and (args.check or args.diff):
        raise UsageError("`--stdout` prints the formatted text; `--check` and `--diff` print "
                         "what would change: use one of them")
    return fmt_command(args.files, args.check, args.diff, args.stdout, _Utf8Out(sys.stdout),
                       sys.stderr)


def _cmd_trace(args) -> int:
    from .traces import Options, convert_file
    if args.trace_command is None:
        raise UsageError("`serq trace` needs a command: `serq trace convert FILE --format F`")
    o = Options(args.format, args.layout, args.limit, args.start, args.duration, args.scale,
                args.rate, args.seed, args.think, args.tokenizer, args.block_tokens)
    summary = convert_file(args.input, args.output, o, sys.stdout)
    if args.output not in (None, "-"):
        sys.stderr.write("wrote %s: %s\n" % (args.output, summary))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
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
    from .interrupt import Stop
    stop = Stop()
    real = sys.stdout
    with stop:  # SIGINT and SIGTERM caught until main returns (interrupt.py)
        _STOP[0] = stop
        sys.stdout = _Guarded(real)
        try:
            status = _main(args, stop)
        finally:
            if isinstance(sys.stdout, _Guarded):
                sys.stdout = real
            _STOP[0] = None
    if argv is None and args.command == "run" and getattr(args, "max_wall", None) is not None:
        # The command line's `serq run --max-wall`: the wall time asked for is
        # the command's, and freeing a million sessions at exit takes seconds
        # of it.  Everything is written; the process ends without the freeing.
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(status)
    return status


class _StdoutError(OutputError):
    """Standard output could not take the output (a full device)."""


class _Guarded(object):
    """Standard output whose write errors (ENOSPC on ``> /dev/full``) are
    ``_StdoutError``s: said as such, not taken for a bug; a closed pipe
    stays ``BrokenPipeError`` (exit 141)."""

    def __init__(self, stream):
        self._stream = stream

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise _StdoutError("cannot write to standard output: %s"
                               % (e.strerror or e)) from None

    def write(self, text):
        return self._call(self._stream.write, text)

    def flush(self):
        return self._call(self._stream.flush)

    @property
    def buffer(self):
        return _Guarded(self._stream.buffer)  # AttributeError where there is none

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _main(args, stop) -> int:
    from .interrupt import exit_status, signal_name
    try:
        status = _dispatch(args)
        # Written now, where a full device is an error of ours, not at exit.
        sys.stdout.flush()
        return status
    except OutputError as e:
        sys.stderr.write("serq: %s\n" % e.render())
        if isinstance(e, _StdoutError):
            _drop_stdout()
        return EXIT_OUTPUT
    except UsageError as e:
        sys.stderr.write("serq: %s\n" % e.render())
        return 2
    except SerqError as e:
        sys.stderr.write(e.render() + "\n")
        return 1
    except RecursionError:
        sys.stderr.write("serq: error: the input nests too deeply for serq to read; split its "
                         "deepest expression with `let`, `set` or `def`\n")
        return 1
    except MemoryError as e:
        # The run's state is held by the traceback's frames: let it go (and
        # the reserve _bound_memory kept) so that the message can be written.
        e.__traceback__ = None
        del e
        _RESERVE[:] = []
        import gc
        gc.collect()
        bound = getattr(args, "max_memory", None)
        sys.stderr.write("serq: error: out of memory%s\n" % (
            " (--max-memory %s: the run needs more; raise it, shorten the horizon, or try "
            "--no-samples)" % _size_text(bound) if bound else ""))
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


def _dispatch(args) -> int:
    if args.command == "check":
        return _cmd_check(args)
    if args.command == "run":
        return _cmd_run(args)
    if args.command == "sweep":
        return _cmd_sweep(args)
    if args.command == "plot":
        from .plot.cli import command
        return command(args)
    if args.command == "draw":
        return _cmd_draw(args)
    if args.command == "fmt":
        return _cmd_fmt(args)
    if args.command == "trace":
        return _cmd_trace(args)
    if args.command == "cost":
        from .costmodel.command import command
        return command(args)
    if args.command == "calibrate":
        from .costmodel.calibrate import command as calibrate
        return calibrate(args)
    return _cmd_ir(args)


def _drop_stdout() -> None:
    """Standard output to /dev/null: what could not be written is dropped,
    and Python does not complain about it again at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())
    except (OSError, ValueError):
        pass


def _internal_error(e: BaseException) -> int:
    """A bug in serq, never the user's fault."""
    sys.stderr.write("serq: internal error (%s: %s); please report it with the input that "
                     "caused it\n" % (type(e).__name__, e))
    return 3


if __name__ == "__main__":
    sys.exit(main())
