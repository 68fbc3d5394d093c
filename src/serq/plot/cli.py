"""``serq plot``: its arguments and its command (the drawing is elsewhere).

    serq plot TABLE.csv|.parquet [--x NAME] [--metric PATTERN]... -o OUT
    serq plot CAPACITY.json|.csv -o OUT   (serq capacity --json, or its -o FILE)
    serq plot --run FILE [--seed N] [--set …] [--def …] [--horizon T] … [--window A:B] -o OUT
    serq plot --dump DIR [--iterations FILE] [--window A:B] -o OUT

OUT ends in ``.png`` (one image, the figures stacked, drawn by matplotlib)
or ``.html`` (one self-contained interactive page drawn by plotly, its
plotly.js inlined, with tables of the numbers).
"""
import math
import os
import sys
import tempfile

from ..errors import UsageError


def _number(text: str) -> float:
    import argparse
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % text)
    if math.isnan(v) or math.isinf(v):
        raise argparse.ArgumentTypeError("%r is not a finite number" % text)
    return v


def _window(text: str):
    import argparse
    start, sep, end = text.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError("%r is not START:END (two times in seconds, e.g. "
                                         "20:25)" % text)
    a, b = _number(start), _number(end)
    if not a < b:
        raise argparse.ArgumentTypeError("%r: START must be before END" % text)
    return a, b


def add_arguments(p, pair) -> None:
    from ..argtypes import DEF_HELP, SET_HELP, add_run_settings
    p.add_argument("table", nargs="?", help="a sweep's table (serq sweep -o TABLE), or a "
                   "capacity search's result (serq capacity --json > cap.json, or its "
                   "-o cap.json / -o probes.csv)")
    p.add_argument("--run", metavar="FILE",
                   help="run FILE once and draw its observations' CDFs, each step stage's "
                   "inter-token latency, pool occupancy (held and cached units) and queue "
                   "lengths over time and a Gantt chart of its step iterations")
    p.add_argument("--dump", metavar="DIR",
                   help="with --run: also keep the run's series here (serq run --dump); "
                   "alone: draw a dump written by `serq run --dump DIR`")
    p.add_argument("--iterations", metavar="FILE",
                   help="with --dump DIR: an iteration trace (serq run --trace-iterations)")
    p.add_argument("-o", "--output", metavar="OUT", required=True,
                   help="OUT.png (one image) or OUT.html (a self-contained report)")
    g = p.add_argument_group("sweep tables")
    g.add_argument("--x", metavar="NAME", help="the swept constant on the x axis (default: "
                   "the first one with more than one value)")
    g.add_argument("--metric", action="append", default=[], metavar="PATTERN",
                   help="metrics to draw, one panel each; shell-style patterns "
                   "(default: observe.*.mean and observe.*.p99)")
    g.add_argument("--log-y", action="store_true", help="logarithmic y axes")
    r = p.add_argument_group("one run")
    r.add_argument("--set", action="append", default=[], metavar="NAME=EXPR", help=SET_HELP)
    r.add_argument("--def", dest="defs", action="append", default=[], metavar="NAME=EXPR",
                   help=DEF_HELP)
    add_run_settings(r)
    r.add_argument("--observe", action="append", default=[], metavar="NAME",
                   help="observations whose CDF to draw (default: all)")
    r.add_argument("--window", type=_window, metavar="START:END",
                   help="the Gantt chart's window in seconds (default: from the warm-up's end, "
                   "10 median request lifetimes and at least 300 iterations)")
    p.set_defaults(pair=pair)


def _output_kind(path: str) -> str:
    low = path.lower()
    if low.endswith(".png"):
        return "png"
    if low.endswith(".html") or low.endswith(".htm"):
        return "html"
    raise UsageError("-o %s: write OUT.png (an image) or OUT.html (a report)" % path)


def command(args) -> int:
    kind = _output_kind(args.output)
    modes = [m for m, on in (("TABLE", args.table), ("--run", args.run),
                             ("--dump", args.dump and not args.run)) if on]
    if len(modes) != 1:
        raise UsageError("serq plot draws a sweep's TABLE or a capacity result, one program "
                         "(--run FILE) or a dump (--dump DIR): give exactly one" +
                         ("" if not modes else " (got %s)" % " and ".join(modes)))
    run_only = ("--set", args.set), ("--def", args.defs), ("--seed", args.seed is not None), \
        ("--horizon", args.horizon is not None), ("--warmup", args.warmup is not None), \
        ("--arrivals", args.arrivals is not None), ("--trace", args.trace is not None)
    if not args.run:
        given = [flag for flag, on in run_only if on]
        if given:
            raise UsageError("%s applies to a run: use it with --run FILE" % given[0])
    if not args.dump and args.iterations:
        raise UsageError("--iterations goes with --dump DIR")
    capacity = None
    if args.table:
        from .capread import sniff
        capacity = sniff(args.table)
    if capacity is not None:
        given = [f for f, on in (("--x", args.x), ("--metric", args.metric),
                                 ("--log-y", args.log_y), ("--observe", args.observe),
                                 ("--window", args.window is not None)) if on]
        if given:
            raise UsageError("%s does not apply to a capacity result (%s): serq plot draws "
                             "its probes as they are" % (given[0], args.table))
        from .capfigs import capacity_figures
        from .capread import read
        result = read(args.table, capacity)
        figures, tables, notes = capacity_figures(result)
        title = "serq capacity: %s" % os.path.basename(args.table)
        source = "%d probe%s of %s" % (len(result.probes),
                                       "" if len(result.probes) == 1 else "s", args.table)
        report_text = None
        if result.partial:
            sys.stderr.write("serq plot: warning: %s is partial (an interrupted search)\n"
                             % args.table)
    elif args.table:
        if args.observe or args.window is not None:
            raise UsageError("--observe and --window draw one run: use them with --run or "
                             "--dump")
        from .sweep import sweep_figures
        from ..sweep.table import read
        table = read(args.table)
        figures, tables = sweep_figures(table, args.x, args.metric, args.log_y)
        title = "serq sweep: %s" % os.path.basename(args.table)
        source = "%d row%s of %s" % (len(table.rows), "" if len(table.rows) == 1 else "s",
                                     args.table)
        notes, report_text = [], None
        if table.incomplete:
            # An interrupted sweep's table: said in the page and on stderr.
            notes.append("%s is %s" % (os.path.basename(args.table), table.incomplete))
            sys.stderr.write("serq plot: warning: %s is %s\n" % (args.table, table.incomplete))
    else:
        if args.x or args.metric or args.log_y:
            raise UsageError("--x, --metric and --log-y draw a sweep's table")
        from .rundata import load_dump, run_and_dump
        if args.run:
            sets = dict(args.pair(t, "--set") for t in args.set)
            defs = dict(args.pair(t, "--def") for t in args.defs)
            keep = args.dump
            with tempfile.TemporaryDirectory(prefix="serq-plot-") as tmp:
                data = run_and_dump(args.run, keep or tmp, sets, defs, seed=args.seed,
                                    horizon=args.horizon, warmup=args.warmup,
                                    arrivals=args.arrivals, trace=args.trace)
            title = "serq run: %s" % os.path.basename(args.run)
            source = "one run of %s" % args.run
        else:
            data = load_dump(args.dump, args.iterations)
            title = "serq dump: %s" % args.dump
            source = "the dump %s" % args.dump
        from .runfigs import run_figures
        figures, notes = run_figures(data, args.observe, args.window)
        report_text = data.report_text
        from .tables import report_tables, sample_tables
        tables = report_tables(data.report) if data.report is not None else \
            sample_tables(data.observes, data.units)
    if kind == "png":
        from .mpl import write_png
        write_png(figures, args.output)
    else:
        from .web import write_html
        write_html(figures, args.output, title, notes, tables, report_text)
    sys.stderr.write("wrote %s: %d figure%s from %s\n" % (
        args.output, len(figures), "" if len(figures) == 1 else "s", source))
    return 0
