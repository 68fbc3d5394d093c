"""The bracketing search of ``serq capacity``, and the confidence it states.

The question.  ``--over NAME=LO:HI``: the largest value of the parameter in
[LO, HI] at which every SLO holds (SLOs hold at low values, fail at high
ones: a load).  ``--minimize NAME=LO:HI``: the smallest (whole) value at
which every SLO holds (they fail at low values: a number of replicas).
The search assumes that monotony; it is what makes a bracket an answer.

The grid.  Values are probed on the grid LO, LO + R, LO + 2R, ..., HI
(``R`` the resolution, default (HI - LO) / 64 for ``--over`` and 1 for
``--minimize``; the last step may be shorter), computed exactly from the
decimal texts and rounded once, so that a probe reads ``12.5``, not
``12.500000000000002``.

A probe.  At a value, the program runs at seeds ``S, S + 2^32, S + 2 *
2^32, ...`` (the same list at every value: common random numbers, so that
two values differ by their parameter, not by their draws; seeds 2^32
apart, as the sweep's replications (sweep/seeds.py): a session's streams
are seeded with seed + serial, so seeds one apart would share all but one
session's draws).  Each run gives each SLO
statistic one number (spec.py: the p99 of that run's samples, ...).  The
runs come in *looks*: ``--seeds`` runs (default 4), then doubling up to
``--max-seeds`` (default 32).  After each look every SLO gets a Student-t
interval over its per-seed values, ``mean -+ t(1 - a, n - 1) s / sqrt(n)``,
each side a one-sided bound at level ``1 - a``; the SLO *passes* when the
interval lies within its bound, *fails* when it lies beyond it.  The probe
passes when every SLO passes, fails when one fails, and is otherwise
undecided; an undecided probe takes the next look, until the seeds or the
budget (``--budget-runs``) run out.  A run that gives an SLO no value (no
sample) cannot pass it; if no run does, the SLO fails.

What the interval estimates.  The mean over seeds of the statistic of one
run of the program's horizon: for a mean, the steady-state mean when the
warm-up removes the empty start; for a percentile, the expected
nearest-rank percentile of a run's samples, which comes near the
steady-state percentile as a run holds more samples (its bias is of the
order of the spacing of the samples near the quantile).  Longer horizons
make both closer; more seeds make the interval narrower.

The confidence.  The answer is the bracket [low, high] between the largest
value that passed and the smallest that failed (for ``--minimize``: one
above the largest that failed, up to the smallest that passed).  It holds
when every decision taken on the way was right, whichever probes ended up
deciding.  A decision is wrong only when one SLO's one-sided bound is wrong
in one look, so by Bonferroni's inequality the bracket holds with
probability at least ``1 - M L k a``: ``k`` SLOs, at most ``L`` looks a
probe and at most ``M = 2 + 2 ceil(log2 G)`` probes for a grid of ``G``
steps (each probe halves one of the two gaps next to the bracket's ends,
and the gaps' widths never grow).  Each test is taken at ``a = (1 -
confidence) / (M L k)``, so that the stated confidence is honest; the
search stops at M probes.  Undecided probes do not narrow the bracket:
the search then probes the gaps next to its ends, and the bracket stays
wider than the resolution when the statistic sits on its bound across a
stretch of values (status ``undecided``).
"""
import math
from fractions import Fraction
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import RunError, UsageError
from ..sweep.seeds import STRIDE, replication_seeds

PASS, FAIL, UNDECIDED = "pass", "fail", "undecided"
#: Seeds of one probe are this far apart (a session's streams are seeded
#: with seed + serial): the sweep's replications' stride (sweep/seeds.py).
SEED_STEP = STRIDE
#: ``--over``'s default number of grid steps.
DEFAULT_STEPS = 64


def parse_range(text: str, flag: str, integer: bool) -> Tuple[str, Fraction, Fraction]:
    """``NAME=LO:HI`` -> (name, LO, HI) as exact fractions of the texts."""
    name, eq, spec = text.partition("=")
    name = name.strip()
    parts = spec.split(":")
    how = "write %s NAME=LO:HI, e.g. %s" % (flag, "replicas=1:16" if integer else "rate=1:20")
    if not eq or not name or len(parts) != 2:
        raise UsageError("`%s %s`: %s" % (flag, text, how))
    try:
        lo, hi = (Fraction(p.strip().replace("_", "")) for p in parts)
    except (ValueError, ZeroDivisionError):
        raise UsageError("`%s %s`: LO and HI are numbers; %s" % (flag, text, how)) from None
    if lo >= hi:
        raise UsageError("`%s %s`: LO must be below HI" % (flag, text), help=how)
    if integer and (lo.denominator != 1 or hi.denominator != 1):
        raise UsageError("`%s %s`: --minimize searches whole numbers (replicas, servers): "
                         "LO and HI are whole" % (flag, text))
    return name, lo, hi


class Stat(object):
    """One SLO statistic at a probe: the per-seed values, their mean and
    interval (None below two values), its verdict."""

    __slots__ = ("values", "mean", "low", "high", "verdict", "missing")

    def __init__(self, values: List[Optional[float]]):
        self.values = values
        self.mean: Optional[float] = None
        self.low: Optional[float] = None
        self.high: Optional[float] = None
        self.verdict = UNDECIDED
        self.missing = 0


def judge(spec, values: Sequence[Optional[float]], level: float) -> Stat:
    """``values`` (one per seed) against ``spec``'s bound, each side of the
    interval a one-sided bound at ``level``."""
    from ..sweep.tdist import t_quantile
    st = Stat(list(values))
    good = [float(v) for v in values if v is not None and math.isfinite(v)]
    st.missing = len(values) - len(good)
    if not good:
        if values:
            st.verdict = FAIL  # no run gave it a value
        return st
    n = len(good)
    m = math.fsum(good) / n
    st.mean = m
    if n < 2:
        return st
    var = math.fsum((x - m) ** 2 for x in good) / (n - 1)
    half = t_quantile(level, n - 1) * math.sqrt(var / n)
    st.low, st.high = m - half, m + half
    b = spec.bound
    if spec.op == "<=":
        ok, bad = st.high <= b, st.low > b
    elif spec.op == "<":
        ok, bad = st.high < b, st.low >= b
    elif spec.op == ">=":
        ok, bad = st.low >= b, st.high < b
    else:
        ok, bad = st.low > b, st.high <= b
    if bad:
        st.verdict = FAIL
    elif ok and st.missing == 0:
        st.verdict = PASS
    return st


class Probe(object):
    """One probed value: its grid index, the seeds run, each SLO's
    statistic, the verdict."""

    def __init__(self, order: int, index: int, value):
        self.order = order  # 1 for the first probe
        self.index = index
        self.value = value
        self.results: Dict[int, List[Optional[float]]] = {}  # seed number -> values
        self.stats: List[Stat] = []
        self.verdict = UNDECIDED
        self.looks = 0

    @property
    def seeds(self) -> int:
        return len(self.results)

    def judge(self, specs, level: float) -> None:
        ordered = [self.results[k] for k in sorted(self.results)]
        self.stats = [judge(spec, [r[j] for r in ordered], level)
                      for j, spec in enumerate(specs)]
        verdicts = [s.verdict for s in self.stats]
        self.verdict = FAIL if FAIL in verdicts else (
            PASS if verdicts and all(v == PASS for v in verdicts) else UNDECIDED)


class Plan(object):
    """What was asked: the grid, the seeds, the budget, the confidence."""

    def __init__(self, name: str, lo: Fraction, hi: Fraction, goal: str = "over",
                 resolution: Optional[Fraction] = None, confidence: float = 0.95,
                 first_seeds: int = 4, max_seeds: int = 32, budget: int = 500,
                 first_seed: int = 1, nspecs: int = 1):
        if goal not in ("over", "minimize"):
            raise UsageError("the goal is `over` or `minimize`")
        if not 0.5 <= confidence < 1.0:
            raise UsageError("--confidence %s: a confidence is at least 0.5 and below 1 (0.95 "
                             "for 95 %%)" % confidence)
        if first_seeds < 2:
            raise UsageError("--seeds %d: an interval over seeds needs at least 2" % first_seeds)
        if max_seeds < first_seeds:
            raise UsageError("--max-seeds %d is below --seeds %d" % (max_seeds, first_seeds))
        if budget < first_seeds:
            raise UsageError("--budget-runs %d: not even one probe's first %d runs"
                             % (budget, first_seeds))
        self.seeds = replication_seeds(first_seed, max_seeds)  # (refused past 2^64 - 1)
        self.name = name
        self.goal = goal
        self.integer = goal == "minimize"
        self.lo, self.hi = lo, hi
        if resolution is None:
            resolution = Fraction(1) if self.integer else (hi - lo) / DEFAULT_STEPS
        if resolution <= 0:
            raise UsageError("--resolution is positive")
        if self.integer and resolution.denominator != 1:
            raise UsageError("--resolution %s: --minimize steps by whole numbers"
                             % _frac_text(resolution))
        self.resolution = resolution
        self.steps = int(math.ceil((hi - lo) / resolution))  # G: the grid is 0..steps
        self.confidence = confidence
        self.first_seeds = first_seeds
        self.max_seeds = max_seeds
        self.budget = budget
        self.first_seed = first_seed
        self.nspecs = nspecs
        self.schedule = []
        n = first_seeds
        while True:
            self.schedule.append(min(n, max_seeds))
            if n >= max_seeds:
                break
            n *= 2
        self.max_probes = 2 + 2 * int(math.ceil(math.log2(self.steps))) if self.steps > 1 else 2
        self.max_probes = min(self.max_probes, self.steps + 1)
        self.tests = self.max_probes * len(self.schedule) * nspecs
        self.level = 1.0 - (1.0 - confidence) / self.tests

    def value(self, k: int):
        v = self.hi if k >= self.steps else self.lo + self.resolution * k
        return int(v) if self.integer else float(v)

    def seed(self, j: int) -> int:
        return self.seeds[j]

    def pos(self, k: int) -> int:
        """The index in the search's own order, where SLOs hold at low
        positions (``--minimize`` searches from the top)."""
        return k if self.goal == "over" else self.steps - k


def _frac_text(f: Fraction) -> str:
    return str(f.numerator) if f.denominator == 1 else repr(float(f))


class Result(object):
    """A search's outcome: the bracket (``low``/``high``, None for an end
    the search could not close), why it stopped (``status``: resolved,
    undecided, budget, probes, interrupted), the probes in the order run."""

    def __init__(self, plan: Plan, specs, probes: List[Probe], status: str, runs: int,
                 signum: Optional[int] = None):
        self.plan = plan
        self.specs = specs
        self.probes = probes
        self.status = status
        self.runs = runs
        self.signum = signum
        self.partial = status == "interrupted"
        self.low, self.high, self.passed, self.failed = bracket(plan, probes)

    def describe(self) -> str:
        """The answer in words, with the confidence."""
        from ..report.text_ref import num
        p = self.plan
        conf = "%s%% confidence" % num(100 * p.confidence)
        if p.goal == "over":
            what = "the largest %s meeting every SLO" % p.name
            if self.low is not None and self.high is not None:
                return "%s is in [%s, %s] at %s" % (what, num(self.low), num(self.high), conf)
            if self.low is not None:
                return "%s is at least %s (the SLOs hold at %s%s) at %s" % (
                    what, num(self.low), num(self.low),
                    ", the top of the range" if self.low == p.value(p.steps) else "", conf)
            if self.high is not None:
                if self.failed is not None and self.failed == p.value(0):
                    return "%s is below %s: the SLOs fail already at %s = %s, at %s" % (
                        what, num(self.high), p.name, num(self.high), conf)
                return "%s is at most %s at %s" % (what, num(self.high), conf)
            return "%s is not decided: no probe passed or failed at %s" % (what, conf)
        what = "the fewest %s meeting every SLO" % p.name
        if self.low is not None and self.high is not None:
            if self.low == self.high:
                return "%s is %s at %s" % (what, num(self.low), conf)
            return "%s is in [%s, %s] at %s" % (what, num(self.low), num(self.high), conf)
        if self.high is not None:
            if self.passed == p.value(0):
                return "%s is at most %s: the SLOs hold already at %s = %s, at %s" % (
                    what, num(self.high), p.name, num(self.high), conf)
            return "%s is at most %s at %s" % (what, num(self.high), conf)
        if self.low is not None:
            return "%s is at least %s%s at %s" % (
                what, num(self.low), " (the SLOs fail up to the top of the range, %s)"
                % num(p.value(p.steps)) if self.failed == p.value(p.steps) else "", conf)
        return "%s is not decided: no probe passed or failed at %s" % (what, conf)


def bracket(plan: Plan, probes: Sequence[Probe]):
    """(low, high, the value that passed, the value that failed) from the
    decided probes (see the module's notes)."""
    passes = [plan.pos(p.index) for p in probes if p.verdict == PASS]
    fails = [plan.pos(p.index) for p in probes if p.verdict == FAIL]
    a = max(passes) if passes else None
    b = min(fails) if fails else None
    at = {plan.pos(p.index): p.value for p in probes}
    passed = None if a is None else at[a]
    failed = None if b is None else at[b]
    if plan.goal == "over":
        return passed, failed, passed, failed
    low = None if failed is None else failed + 1
    return low, passed, passed, failed


def next_position(plan: Plan, verdicts: Dict[int, str]) -> Optional[int]:
    """Where to probe next (a position, see ``Plan.pos``), or None when the
    bracket cannot be narrowed by probing: both ends probed first, then the
    middle of the wider of the two gaps next to the bracket's ends."""
    if 0 not in verdicts:
        return 0
    if verdicts[0] == FAIL:
        return None  # fails at the good end: the answer is out of range
    if plan.steps not in verdicts:
        return plan.steps
    if verdicts[plan.steps] == PASS:
        return None
    passes = [p for p, v in verdicts.items() if v == PASS]
    fails = [p for p, v in verdicts.items() if v == FAIL]
    a = max(passes) if passes else None
    b = min(fails) if fails else None
    gaps = []
    if a is not None:
        gaps.append((a, min(p for p in verdicts if p > a)))
    if b is not None:
        gaps.append((max(p for p in verdicts if p < b), b))
    gaps = [g for g in gaps if g[1] - g[0] > 1]
    if not gaps:
        return None
    lo, hi = max(gaps, key=lambda g: g[1] - g[0])
    return (lo + hi) // 2


def search(plan: Plan, specs, compile_at: Callable, runner, stop,
           notify: Callable[[str, object], None] = lambda event, data: None) -> Result:
    """Run the search (see the module's notes).  ``compile_at(value)``
    gives the program at a value; ``runner`` (sweep/backends.py) runs the
    seeds of a look; ``stop`` (``interrupt.Stop``) stops it: the result is
    then the bracket so far, marked partial.  ``notify(event, data)`` hears
    of the plan (``"start"``), each probe (``"probe"``, ``"run"``, ``"look"``)
    and the result (``"done"``)."""
    from ..interrupt import WorkStopped
    probes: List[Probe] = []
    verdicts: Dict[int, str] = {}
    runs = 0
    status = "resolved"
    notify("start", plan)
    while True:
        if stop.signum is not None:
            status = "interrupted"
            break
        pos = next_position(plan, verdicts)
        if pos is None:
            a, b, _p, _f = bracket(plan, probes)
            if a is not None and b is not None and _gap_open(plan, probes):
                status = "undecided"
            elif (a is None or b is None) and any(p.verdict == UNDECIDED for p in probes):
                status = "undecided"
            break
        if len(probes) >= plan.max_probes:
            status = "probes"
            break
        if runs + plan.schedule[0] > plan.budget:
            status = "budget"
            break
        k = pos if plan.goal == "over" else plan.steps - pos
        value = plan.value(k)
        probe = Probe(len(probes) + 1, k, value)
        prog = compile_at(value)
        probes.append(probe)
        notify("probe", probe)
        interrupted = False
        for n in plan.schedule:
            want = min(n, probe.seeds + plan.budget - runs)
            if want <= probe.seeds:
                break
            tasks = [(probe.order, plan.seed(j), (prog, specs)) for j in range(probe.seeds, want)]

            def done(r, probe=probe):
                _i, seed, values = r
                if isinstance(values, str):
                    raise RunError("the run at %s = %s, seed %d, failed:\n%s"
                                   % (plan.name, _text(probe.value), seed, values))
                probe.results[(seed - plan.first_seed) // SEED_STEP] = values
                notify("run", probe)
            try:
                runner.run(tasks, stop, done)
            except WorkStopped:
                interrupted = True
            runs = sum(p.seeds for p in probes)
            if interrupted:
                break
            probe.looks += 1
            probe.judge(specs, plan.level)
            notify("look", probe)
            if probe.verdict != UNDECIDED:
                break
        if interrupted:
            probe.judge(specs, plan.level)  # the intervals of what finished, shown
            probe.verdict = UNDECIDED  # a look cut short decides nothing
            status = "interrupted"
            break
        verdicts[plan.pos(k)] = probe.verdict
        if probe.verdict == UNDECIDED and runs >= plan.budget:
            status = "budget"
            break
    result = Result(plan, specs, probes, status, runs, stop.signum)
    notify("done", result)
    return result


def _gap_open(plan: Plan, probes: Sequence[Probe]) -> bool:
    """Whether the bracket spans more than one grid step."""
    passes = [plan.pos(p.index) for p in probes if p.verdict == PASS]
    fails = [plan.pos(p.index) for p in probes if p.verdict == FAIL]
    return bool(passes and fails) and min(fails) - max(passes) > 1


def _text(v) -> str:
    from .program import value_text
    return value_text(v)
