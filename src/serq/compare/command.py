"""``serq compare A.sq B.sq`` and ``serq sensitivity FILE --vary ...``: the
options, the runs (``serq sweep``'s runner, sweep/run.py ``execute``) and
the output.

Both run every variant at the seeds ``S + k * 2^32`` (``k = 0..N-1``,
independent replications: sweep/seeds.py): seed ``s`` of one variant is
paired with seed ``s`` of the others (common random numbers), and the
statistics are those of paired.py.  Ctrl-C or SIGTERM stops the
runs; the seeds whose every run finished are reported (with at least two),
marked incomplete, and the status is 130 (143).
"""
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from ..argtypes import add_run_times, pos_int, seed_int
from ..errors import SerqError, UsageError

DEFAULT_SEEDS = 10


def _confidence(text: str) -> float:
    import argparse
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("`%s` is not a number (0.95 for 95 %%)" % text)
    if not 0.0 < v < 1.0:
        raise argparse.ArgumentTypeError("%s: a confidence level is between 0 and 1 (0.95 "
                                         "for 95 %%)" % text)
    return v


def _common_arguments(p, what: str) -> None:
    p.add_argument("--set", action="append", default=[], metavar="NAME=EXPR",
                   help="a `let` constant's value (a number or a constant expression, as "
                   "`serq run --set`) in %s" % what)
    p.add_argument("--def", dest="defs", action="append", default=[], metavar="NAME=EXPR",
                   help="replace an expression definition's body in %s" % what)
    p.add_argument("--seeds", type=pos_int, default=DEFAULT_SEEDS, metavar="N",
                   help="runs of each variant, at the seeds S + k * 2^32 (k = 0..N-1: "
                   "independent replications), paired by seed (at least 2; default %d)"
                   % DEFAULT_SEEDS)
    p.add_argument("--seed", type=seed_int, default=1, metavar="S",
                   help="the first seed (default 1; the program's own seed is not used)")
    add_run_times(p)
    p.add_argument("--metric", action="append", default=[], metavar="PATTERN",
                   help="the metrics to report, named as in `serq sweep`'s table, shell-style "
                   "patterns (`observe.*.p99`), repeatable (default: observations' means and "
                   "p99s, step ITL, stage throughput, pool usage, and with --slo the "
                   "attainments and goodput)")
    p.add_argument("--confidence", type=_confidence, default=0.95, metavar="LEVEL",
                   help="the confidence of the intervals (default 0.95)")
    p.add_argument("--slo", action="append", default=[], metavar="'NAME <= BOUND'",
                   help="an SLO on an observation, as for `serq run --slo`, repeatable: adds "
                   "its attainment and the goodput (slo.* metrics)")
    p.add_argument("--slo-per", choices=("request", "session"), default="request",
                   help="the unit the SLOs judge: a request (one per turn; the default) or a "
                   "session")
    p.add_argument("--jobs", "-j", type=pos_int, metavar="N",
                   help="processes for the local backend (default: every core)")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local processes (default) or a Ray cluster")
    p.add_argument("--address", metavar="ADDR",
                   help="with --backend ray: the cluster's address (host:port)")
    p.add_argument("--json", action="store_true", help="print one JSON object, not the table")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def compare_arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="the two programs, A.sq B.sq; or one program, with B given by --vs")
    p.add_argument("--vs", action="append", default=[], metavar="NAME=EXPR",
                   help="B's `let` overrides, on top of --set: `serq compare FILE --vs "
                   "rate=2` compares FILE with FILE at rate 2")
    _common_arguments(p, "both programs")
    p.add_argument("-o", "--output", metavar="FILE.csv",
                   help="also write the table as CSV (`-`: standard output, instead of the "
                   "text table)")


def sensitivity_arguments(p) -> None:
    p.add_argument("file", help="a program (.sq)")
    p.add_argument("--vary", action="append", default=[], metavar="NAME=-10%:+10%",
                   help="a `let` constant and its low and high values, relative to its "
                   "value (-10%%:+10%%, or 10%%) or as values (LOW:HIGH), repeatable")
    _common_arguments(p, "every run")
    p.add_argument("-o", "--output", action="append", default=[], metavar="FILE",
                   help="write the tornado chart (.png, or a self-contained .html page) or "
                   "the table (.csv); repeatable")


# ------------------------------------------------------------------ shared

def _pairs(texts: Sequence[str], flag: str) -> Dict[str, object]:
    from ..cli.common import pair
    out: Dict[str, object] = {}
    for t in texts:
        name, value = pair(t, flag)
        out[name] = value
    return out


def _check(args) -> None:
    if args.address and args.backend != "ray":
        raise UsageError("`--address` names a Ray cluster: use it with `--backend ray`")
    if args.jobs and args.backend == "ray":
        raise UsageError("`--jobs` sets the local processes; a Ray cluster schedules its own")
    if args.seeds < 2:
        raise UsageError("--seeds %d: an interval over seeds needs at least 2 of them"
                         % args.seeds, help="--seeds 10 is a good start")
    from ..sweep.seeds import replication_seeds
    replication_seeds(args.seed, args.seeds)  # refused if past 2^64 - 1
    if args.slo_per != "request" and not args.slo:
        raise UsageError("`--slo-per` says what the SLOs judge: give them with --slo")


def _settings(args) -> Dict[str, object]:
    return dict(horizon=args.horizon, warmup=args.warmup, arrivals=args.arrivals,
                trace=args.trace)


def _compile(file: str, variants: List[Dict[str, object]], defs: Dict[str, str], args,
             where) -> List:
    from ..depth import deep_recursion
    from ..sweep.run import compile_variants
    with deep_recursion():
        return compile_variants(file, variants, defs, args.seed, where=where,
                                verb="compare", **_settings(args))


def _run(progs: Sequence, args, label: str, describe) -> Tuple[Dict, List[int], Optional[str]]:
    """Every program at every seed: the results, the seeds whose every run
    finished and, if the runs were stopped, a line saying so."""
    from ..cli.common import STOP
    from ..depth import deep_recursion
    from ..sweep.run import check_slos, execute
    from ..sweep.seeds import replication_seeds
    seeds = replication_seeds(args.seed, args.seeds)
    spec = None
    if args.slo:
        check_slos(args.slo, args.slo_per, progs)
        spec = (tuple(args.slo), args.slo_per)
    with deep_recursion():  # the programs are pickled to the workers (depth.py)
        results, stopped = execute(progs, seeds, jobs=args.jobs, backend=args.backend,
                                   address=args.address,
                                   show_progress=not args.quiet and sys.stderr.isatty(),
                                   stop=STOP[0], label=label, describe=describe, slos=spec)
    done = [s for s in seeds if all((i, s) in results for i in range(len(progs)))]
    incomplete = None
    if stopped is not None:
        import signal
        from ..interrupt import signal_name
        signum = None if STOP[0] is None else STOP[0].signum
        how = "interrupted" if signum in (None, signal.SIGINT) else \
            "stopped by %s" % signal_name(signum)
        incomplete = ("incomplete: the runs were %s; %d of %d seeds finished every run"
                      % (how, len(done), len(seeds)))
    return results, done, incomplete


def _stopped_status() -> Optional[int]:
    """The exit status of a command whose runs a signal stopped."""
    from ..cli.common import STOP
    from ..interrupt import exit_status
    stop = STOP[0]
    return exit_status(None if stop is None else stop.signum)


def _columns(results: Dict, index: int, seeds: Sequence[int]) -> Dict[str, List]:
    """``metric -> [value at each seed]`` for one variant."""
    cols: Dict[str, List] = {}
    for k, s in enumerate(seeds):
        for m, v in results[(index, s)]:
            if m not in cols:
                cols[m] = [None] * len(seeds)
            cols[m][k] = v
    return cols


def _names(results: Dict, n: int, seeds: Sequence[int]) -> Tuple[List[str], List[str]]:
    """The metrics every variant gives (in the first's order) and those only
    some give."""
    from .paired import metric_names
    per = [metric_names([results[(i, s)] for s in seeds]) for i in range(n)]
    everywhere = set.intersection(*[set(p) for p in per])
    common = [m for m in per[0] if m in everywhere]
    some = [m for p in per for m in p if m not in everywhere]
    return common, list(dict.fromkeys(some))


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    from ..atomic import write_text
    write_text(path, text)


# ----------------------------------------------------------------- compare

def compare_command(args) -> int:
    from .output import compare_csv, compare_json, compare_text
    from .paired import difference, select
    _check(args)
    if len(args.files) > 2:
        raise UsageError("serq compare takes two programs (A.sq B.sq), or one with --vs; got %d"
                         % len(args.files))
    if len(args.files) == 1 and not args.vs:
        raise UsageError("serq compare needs two programs: A.sq B.sq, or one program and B's "
                         "overrides with --vs NAME=EXPR",
                         help="e.g. serq compare %s --vs rate=2" % args.files[0])
    file_a = args.files[0]
    file_b = args.files[-1]
    sets = _pairs(args.set, "--set")
    defs = {k: str(v) for k, v in _pairs(args.defs, "--def").items()}
    vs = _pairs(args.vs, "--vs")
    sets_b = dict(sets)
    sets_b.update(vs)

    def label(file: str, extra: Dict[str, object]) -> str:
        return file + "".join(" --vs %s=%s" % (k, v) for k, v in extra.items())
    a_label, b_label = label(file_a, {}), label(file_b, vs)
    prog_a = _compile(file_a, [sets], defs, args, lambda k: "in program A (%s)" % a_label)[0]
    prog_b = _compile(file_b, [sets_b], defs, args, lambda k: "in program B (%s)" % b_label)[0]
    results, seeds, incomplete = _run([prog_a, prog_b], args, "comparing",
                                      lambda i: "A" if i == 0 else "B")
    status = None if incomplete is None else _stopped_status()
    if len(seeds) < 2:
        if status is None:
            raise AssertionError("every run finished, yet fewer than 2 seeds")
        sys.stderr.write("serq compare: %s: too few to compare\n" % incomplete)
        return status
    common, some = _names(results, 2, seeds)
    metrics = select(common, args.metric, some)
    a_cols = _columns(results, 0, seeds)
    b_cols = _columns(results, 1, seeds)
    diffs = [difference(m, a_cols[m], b_cols[m], args.confidence) for m in metrics]
    if args.json:
        side = lambda f, s: {"file": f, "sets": {k: str(v) for k, v in s.items()}}
        sys.stdout.write(compare_json(diffs, side(file_a, sets), side(file_b, sets_b), seeds,
                                      args.confidence, incomplete))
    elif args.output != "-":
        sys.stdout.write(compare_text(diffs, a_label, b_label, seeds, args.confidence,
                                      incomplete))
    if args.output:
        _write(args.output, compare_csv(diffs))
        if args.output != "-":
            sys.stderr.write("wrote %s: %d metric%s\n" % (args.output, len(diffs),
                                                          "" if len(diffs) == 1 else "s"))
    if incomplete is not None:
        sys.stderr.write("serq compare: %s\n" % incomplete)
    return 0 if status is None else status


# ------------------------------------------------------------- sensitivity

def sensitivity_command(args) -> int:
    from .output import sensitivity_csv, sensitivity_json, sensitivity_text
    from .paired import effect, select
    from .vary import let_values, parse_range, resolve, trial
    _check(args)
    if not args.vary:
        raise UsageError("serq sensitivity needs at least one --vary NAME=-10%:+10%",
                         help="the constants are the program's `let`s")
    for path in args.output:
        if not path.endswith((".png", ".html", ".csv")):
            raise UsageError("-o %s: write the chart to FILE.png or FILE.html, or the table to "
                             "FILE.csv" % path)
    ranges = [parse_range(t) for t in args.vary]
    sets = _pairs(args.set, "--set")
    defs = {k: str(v) for k, v in _pairs(args.defs, "--def").items()}
    base = _compile(args.file, [sets], defs, args, None)[0]
    lets, array_lets = let_values(args.file, sets, defs)
    varies = resolve(ranges, lets, array_lets,
                     trial(args.file, sets, defs, _settings(args)))
    # The variants: the base, then each constant's low and high value (a
    # rounded one equal to the base is the base's runs).
    variants: List[Dict[str, object]] = []
    labels: List[str] = []
    where: List[Tuple[int, int]] = []  # (low index, high index) of each constant
    for v in varies:
        ends = []
        for value in (v.low, v.high):
            if value == v.base:
                ends.append(0)
                continue
            s = dict(sets)
            s[v.name] = value
            variants.append(s)
            labels.append("%s=%r" % (v.name, value))
            ends.append(len(variants))
        where.append((ends[0], ends[1]))
    progs = [base] + _compile(args.file, variants, defs, args,
                              lambda k: "at %s" % labels[k])
    names = ["the base"] + labels
    results, seeds, incomplete = _run(progs, args, "varying", lambda i: names[i])
    status = None if incomplete is None else _stopped_status()
    if len(seeds) < 2:
        if status is None:
            raise AssertionError("every run finished, yet fewer than 2 seeds")
        sys.stderr.write("serq sensitivity: %s: too few to compare\n" % incomplete)
        return status
    common, some = _names(results, len(progs), seeds)
    metrics = select(common, args.metric, some)
    cols = [_columns(results, i, seeds) for i in range(len(progs))]
    effects = []
    for m in metrics:
        row = [effect(v.name, m, cols[0][m], cols[lo][m], cols[hi][m], v.base, v.low, v.high,
                      args.confidence) for v, (lo, hi) in zip(varies, where)]
        row.sort(key=lambda e: -abs(e.elasticity or 0.0))
        effects.extend(row)
    text = sensitivity_text(effects, varies, args.file, seeds, args.confidence, incomplete)
    if args.json:
        sys.stdout.write(sensitivity_json(effects, varies, args.file, seeds, args.confidence,
                                          incomplete))
    else:
        sys.stdout.write(text)
    for path in args.output:
        if path.endswith(".csv"):
            _write(path, sensitivity_csv(effects, varies))
            sys.stderr.write("wrote %s: %d rows\n" % (path, len(effects)))
        else:
            from .tornado import write_tornado
            write_tornado(path, effects, varies, args.confidence, len(seeds),
                          "serq sensitivity: %s" % args.file, text)
            sys.stderr.write("wrote %s: a tornado chart of %d metric%s x %d constant%s\n"
                             % (path, len(metrics), "" if len(metrics) == 1 else "s",
                                len(varies), "" if len(varies) == 1 else "s"))
    if incomplete is not None:
        sys.stderr.write("serq sensitivity: %s\n" % incomplete)
    return 0 if status is None else status
