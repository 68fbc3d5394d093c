"""``serq run``: simulate a program and print its report (text or JSON),
with side outputs (``--dump``, ``--trace-iterations``) that fail without
losing the report, limits, SLOs and the admission table."""
import signal as _signal
import sys

from ..argtypes import memory_size, pos_int as _pos_int
from ..argtypes import time_value as _time
from ..errors import OutputError, SerqError, UsageError
from .colour import write_diagnostic
from .common import EXIT_FINDINGS, EXIT_OUTPUT, STOP, load_program, overrides

def add_arguments(r) -> None:
    r.add_argument("file", help="a program (.sq) or its IR (JSON, as `serq ir` prints)")
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument("--format", choices=("text", "ref"), default="text",
                   help="the text report's layout: `text` (the default) is for reading, "
                   "with units chosen per column and 3 significant digits; `ref` is serq's "
                   "first layout, kept byte for byte for scripts (6 digits, seconds)")
    r.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text report and the errors: `auto` (the default) on a "
                   "terminal, unless NO_COLOR is set (FORCE_COLOR colours a pipe too)")
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
    overrides(r, True)


def command(args) -> int:
    from ..collector import relaxed
    with relaxed():  # (the run's objects walked less often, the report's too)
        return _command(args)


def _command(args) -> int:
    from ..report.build import build_report
    from ..report.findings import report_findings
    from ..report.page import run_json, run_lines, run_text_ref
    from ..runner import simulate
    if args.json and args.format != "text":
        raise UsageError("`--format %s` chooses the text report's layout; `--json` prints "
                         "JSON: give one of them" % args.format)
    if args.extended and not args.json:
        raise UsageError("`--extended` adds a key to the JSON report: use it with `--json`")
    if args.admission and args.json:
        raise UsageError("`--admission` prints a table after the text report; with `--json` "
                         "write `--extended`")
    if args.no_samples and args.dump:
        raise UsageError("`--dump` writes every sample, which `--no-samples` does not keep")
    if args.max_memory is not None:
        _bound_memory(args.max_memory)
    prog = load_program(args)
    slos = None
    if args.slo:
        if args.no_samples:
            raise UsageError("`--slo` joins each request's samples, which `--no-samples` does "
                             "not keep")
        from ..report.slo import parse_slos
        slos = parse_slos(args.slo, prog, args.slo_per)
    elif args.slo_per != "request":
        raise UsageError("`--slo-per` says what the SLOs judge: give them with --slo")
    from ..linesink import LineSink
    from ..progressbar import RunProgress
    progress = None if args.quiet or not sys.stderr.isatty() else RunProgress()
    trace = None
    if args.trace_iterations == "-":
        trace = LineSink(None, sys.stderr)
        progress = None
    elif args.trace_iterations:
        from ..atomic import AtomicFile
        trace = LineSink(AtomicFile(args.trace_iterations), None)
    stop = STOP[0]
    try:
        sim = simulate(prog, progress, args.check_invariants,
                       None if trace is None else trace.line, args.no_samples,
                       args.max_events, args.max_wall,
                       on_start=None if stop is None else stop.attach,
                       track_requests=slos is not None, max_memory=args.max_memory)
    except SerqError:
        # The iterations up to the error are what one reads to find it.
        if trace is not None:
            failures = []
            trace.finish(failures)
            for e in failures:
                write_diagnostic(sys.stderr, e, "serq: ", args.color)
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
        from ..report.slo import evaluate
        report.slo = evaluate(sim, slos, args.slo_per)
    if args.dump:
        from ..report.dump import write_dump
        try:
            write_dump(args.dump, {o.name: o for o in sim.observations},
                       {g.name: g for g in sim.gauges})
        except OutputError as e:
            failures.append(e)
    rows = None
    if args.admission or args.extended:
        from ..report.admission import admission_rows
        rows = admission_rows(sim)
    if args.json:
        sys.stdout.write(run_json(report, sim.partial, args.extended, rows) + "\n")
    elif args.format == "text":
        from .colour import paint, wanted
        sys.stdout.write(paint(run_lines(report, sim.partial, rows if args.admission else None,
                                         args.no_samples), wanted(sys.stdout, args.color)))
    else:
        sys.stdout.write(run_text_ref(report, sim.partial, rows if args.admission else None,
                                      args.no_samples))
    findings = report_findings(report)
    if failures:
        sys.stdout.flush()
        for e in failures:
            write_diagnostic(sys.stderr, e, "serq: ", args.color)
        return EXIT_OUTPUT
    if sim.partial in ("interrupted", "terminated") or (stop is not None and stop.signum):
        from ..interrupt import exit_status
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
    RESERVE[:] = [bytearray(4 << 20)]  # given back to say "out of memory"


RESERVE: list = []
