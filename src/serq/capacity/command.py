"""``serq capacity FILE (--over | --minimize) NAME=LO:HI --slo SPEC...``: the
command line of the capacity search (docs/cli.md, docs/capacity.md)."""
import sys

from ..argtypes import add_run_times, pos_int, seed_int


def _confidence(text: str) -> float:
    import argparse
    try:
        v = float(text.strip().rstrip("%")) / (100.0 if text.strip().endswith("%") else 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % text)
    if not 0.5 <= v < 1.0:
        raise argparse.ArgumentTypeError("%r: a confidence is at least 0.5 and below 1 (0.95, "
                                         "or 95%%)" % text)
    return v


def add_arguments(p) -> None:
    p.add_argument("file", help="a program (.sq)")
    goal = p.add_mutually_exclusive_group()
    goal.add_argument("--over", metavar="NAME=LO:HI",
                      help="find the largest value of the `let` NAME in [LO, HI] at which "
                      "every SLO holds (a load: the SLOs hold below it)")
    goal.add_argument("--minimize", metavar="NAME=LO:HI",
                      help="find the smallest whole value of the `let` NAME in [LO, HI] at "
                      "which every SLO holds (replicas, servers; a `let` sizing a family works)")
    p.add_argument("--slo", action="append", default=[], metavar="SPEC",
                   help="an SLO statistic: 'p99(ttft) <= 500ms', 'mean(e2e) <= 4', "
                   "'p99(gpu.itl) <= 50ms' (a step stage's inter-token gaps), "
                   "'goodput(ttft <= 0.5, tpot <= 50ms) >= 0.9'; repeatable, all must hold")
    p.add_argument("--confidence", type=_confidence, default=0.95, metavar="C",
                   help="the confidence of the answer's bracket (default 0.95)")
    p.add_argument("--resolution", metavar="R",
                   help="the grid step of the probed values (default (HI - LO) / 64 for "
                   "--over, 1 for --minimize)")
    p.add_argument("--seeds", type=pos_int, default=4, metavar="N",
                   help="runs at a probe's first look (default 4; then doubling)")
    p.add_argument("--max-seeds", type=pos_int, default=32, metavar="N",
                   help="the most runs at one probe (default 32)")
    p.add_argument("--budget-runs", type=pos_int, default=500, metavar="N",
                   help="the most runs in all (default 500)")
    p.add_argument("--seed", type=seed_int, default=1, metavar="S",
                   help="the first seed (default 1); the others are S + 2^32, S + 2 * 2^32, ...")
    p.add_argument("--set", action="append", default=[], metavar="NAME=EXPR",
                   help="fix another `let` constant's value (a number or a constant expression)")
    p.add_argument("--def", dest="defs", action="append", default=[], metavar="NAME=EXPR",
                   help="replace an expression definition's body")
    add_run_times(p)
    p.add_argument("--jobs", "-j", type=pos_int, metavar="N",
                   help="processes for the local backend (default: every core)")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local processes (default) or a Ray cluster")
    p.add_argument("--address", metavar="ADDR",
                   help="with --backend ray: the cluster's address (host:port); without it "
                   "Ray starts a local cluster")
    p.add_argument("--json", action="store_true",
                   help="print the answer and the probes as one JSON object")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="also write the probes to FILE as CSV (one row per probe and SLO), "
                   "or FILE.json: the --json object (serq plot FILE.json draws it)")
    p.add_argument("--quiet", action="store_true", help="no progress display")


class Progress(object):
    """The bracket narrowing, on stderr (rich, transient), or nothing; a
    ``notify`` for search.search."""

    def __init__(self, show: bool):
        self.live = None
        self.plan = None
        self.probes = []
        self.runs = 0
        self.bracket = "[?, ?]"
        self.probe = ""
        if show:
            from rich.console import Console
            from rich.live import Live
            from rich.text import Text
            self.Text = Text
            self.live = Live(Text(self.line()), console=Console(file=sys.stderr),
                             transient=True, refresh_per_second=8)
            self.live.start()

    def line(self) -> str:
        name = "" if self.plan is None else self.plan.name + " "
        budget = "" if self.plan is None else " of %d" % self.plan.budget
        return "capacity %sbracket %s  %s  runs %d%s" % (name, self.bracket, self.probe,
                                                       self.runs, budget)

    def __call__(self, event: str, data) -> None:
        if event == "start":
            self.plan = data
        elif event == "probe":
            self.probes.append(data)
        elif event == "run":
            self.runs += 1
        if self.live is None or self.plan is None:
            return
        from ..report.text_ref import num
        from .search import bracket
        if event in ("probe", "run", "look"):
            pr = data
            self.probe = "probe %d at %s: %d seed%s%s" % (
                pr.order, num(pr.value), pr.seeds, "" if pr.seeds == 1 else "s",
                ", " + pr.verdict if event == "look" else "")
        if event == "look":
            low, high, _p, _f = bracket(self.plan, self.probes)
            self.bracket = "[%s, %s]" % ("?" if low is None else num(low),
                                         "?" if high is None else num(high))
        self.live.update(self.Text(self.line()))

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def command(args) -> int:
    from ..cli.common import STOP, pair
    from ..interrupt import exit_status, signal_name
    from .output import result_csv, result_json, result_text, summary
    from .run import run_capacity
    sets = dict(pair(t, "--set") for t in args.set)
    defs = dict(pair(t, "--def") for t in args.defs)
    show = not args.quiet and not args.json and sys.stderr.isatty()
    progress = Progress(show)
    try:
        result = run_capacity(
            args.file, args.over, args.minimize, args.slo, args.confidence, args.resolution,
            args.seeds, args.max_seeds, args.budget_runs, args.seed, sets, defs, args.horizon,
            args.warmup, args.arrivals, args.trace, args.jobs, args.backend, args.address,
            stop=STOP[0], notify=progress)
    finally:
        progress.close()
    if args.json:
        sys.stdout.write(result_json(result) + "\n")
    else:
        sys.stdout.write(result_text(result))
    sys.stdout.flush()
    if args.output:
        from ..atomic import write_text
        write_text(args.output, result_json(result) + "\n"
                   if args.output.lower().endswith(".json") else result_csv(result))
        sys.stderr.write(summary(result, args.output) + "\n")
    if result.partial:
        sys.stderr.write("serq capacity: %s: the bracket reached so far is printed, marked "
                         "partial\n" % ("interrupted" if result.signum in (None, 2) else
                                        "stopped by %s" % signal_name(result.signum)))
        return exit_status(result.signum)
    return 0
