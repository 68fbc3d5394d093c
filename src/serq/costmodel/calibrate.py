"""``serq calibrate``: fit the roofline's three parameters (compute
efficiency, memory efficiency, per-step overhead) to measurements of a real
engine and write the fitted library.

* A per-step CSV: each step's work is known, so its predicted time is a
  closed form in the parameters; scipy's bounded least squares minimizes the
  relative error of the step times.
* A ``vllm bench serve`` result: only the requests' latencies are known, so
  serq replays the same requests on the engine (loadsim.py) and a
  derivative-free search (scipy's Nelder-Mead, a bounded number of parameter
  sets, the same send times every time) minimizes the squared log error of
  the medians and p99s of TTFT, TPOT, ITL and end-to-end latency.

scipy is imported only here, only when the command runs."""
import argparse
import math
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..argtypes import nonneg_int, pos_int
from ..errors import SerqError, UsageError
from .loadsim import METRICS, Metrics, Simulator, percentile
from .roofline import COMPUTE_EFF, DEFAULT_KNOBS, MEMORY_EFF, Deployment, Knobs

# Where the search may go: efficiencies in (0, 1], an overhead of at most
# 50 ms a step.
EFF_MIN, EFF_MAX = 0.02, 1.0
OVERHEAD_MAX = 0.05
FIT_KEYS = ("ttft_median", "ttft_p99", "tpot_median", "tpot_p99", "itl_median", "itl_p99",
            "e2el_median", "e2el_p99")


# ------------------------------------------------------------ per-step fit

@dataclass
class StepFit:
    knobs: Knobs
    before: List[float]            # predicted step times, default parameters
    after: List[float]             # predicted step times, fitted
    notes: List[str] = field(default_factory=list)


def step_features(d: Deployment, steps) -> List[Tuple[float, float, float]]:
    """Each step's compute and memory seconds at efficiency 1 and its
    all-reduce seconds: the step time is max(C / ce, M / me) + K + overhead."""
    out = []
    for s in steps:
        c, m, k, _ = d.step_parts(s.tokens, s.decoders, s.kv_decode, s.kv_prefill, s.attention,
                                  1.0, 1.0, 0.0)
        out.append((c, m, k))
    return out


def predict(features: Sequence[Tuple[float, float, float]], knobs: Knobs) -> List[float]:
    return [max(c / knobs.compute_eff, m / knobs.memory_eff) + k + knobs.step_overhead
            for c, m, k in features]


def fit_steps(d: Deployment, steps) -> StepFit:
    import numpy as np
    from scipy.optimize import least_squares
    feats = step_features(d, steps.rows)
    C = np.array([f[0] for f in feats])
    M = np.array([f[1] for f in feats])
    K = np.array([f[2] for f in feats])
    y = np.array([s.duration for s in steps.rows])

    def residuals(x):
        a, b, o = x                       # 1 / compute_eff, 1 / memory_eff, overhead
        return (np.maximum(a * C, b * M) + K + o) / y - 1.0

    lo = [1.0 / EFF_MAX, 1.0 / EFF_MAX, 0.0]
    hi = [1.0 / EFF_MIN, 1.0 / EFF_MIN, max(float(y.max()), 1e-6)]
    best = None
    for ce in (0.9, 0.6, 0.3):
        for me in (0.9, 0.7, 0.4):
            x0 = [1 / ce, 1 / me, min(DEFAULT_KNOBS.step_overhead, hi[2] / 2)]
            r = least_squares(residuals, x0, bounds=(lo, hi), method="trf", x_scale="jac")
            if best is None or r.cost < best.cost:
                best = r
    assert best is not None
    a, b, o = (float(v) for v in best.x)
    ce, me = 1.0 / a, 1.0 / b
    notes = []
    # a step at the kink (compute and memory time equal, to 0.1 %) tells
    # nothing about the side that is not above it
    compute_bound = int(np.sum(a * C > b * M * 1.001))
    memory_bound = int(np.sum(b * M > a * C * 1.001))
    if compute_bound == 0:
        # Every step memory bound: the data say only that compute stays
        # below memory time, i.e. ce >= max C / (b M).
        floor_ = float(np.max(C / (b * M))) if len(C) else 0.0
        ce = min(EFF_MAX, max(COMPUTE_EFF, floor_))
        notes.append("no step is compute bound at the fit: the steps bound compute_eff from "
                     "below only (>= %.3g); it is set to %.3g%s" % (
                         floor_, ce, " (the default)" if ce == COMPUTE_EFF else ""))
    if memory_bound == 0:
        floor_ = float(np.max(M / (a * C))) if len(C) else 0.0
        me = min(EFF_MAX, max(MEMORY_EFF, floor_))
        notes.append("no step is memory bound at the fit: the steps bound memory_eff from "
                     "below only (>= %.3g); it is set to %.3g%s" % (
                         floor_, me, " (the default)" if me == MEMORY_EFF else ""))
    for name, v, bound in (("compute_eff", ce, EFF_MAX), ("memory_eff", me, EFF_MAX)):
        if abs(v - bound) < 1e-6:
            notes.append("%s is at its bound %g: the steps are faster than the roofline with "
                         "the peaks of the catalogue allows (check the GPU, the dtype and --tp)"
                         % (name, bound))
    knobs = Knobs(ce, me, o)
    return StepFit(knobs, predict(feats, DEFAULT_KNOBS), predict(feats, knobs), notes)


def step_error_table(steps, fit: StepFit) -> List[Tuple[str, int, float, float, float, float]]:
    """Rows (kind, steps, median |error| before, after, mean error before,
    after), the errors relative to the measured step times."""
    rows = []
    kinds = [("decode-only", "decode"), ("mixed", "mixed"), ("prefill-only", "prefill"),
             ("all steps", None)]
    for label, kind in kinds:
        idx = [i for i, s in enumerate(steps.rows) if kind is None or s.kind == kind]
        if not idx or (kind is not None and len(idx) == len(steps.rows)):
            if kind is not None:
                continue
        eb = [fit.before[i] / steps.rows[i].duration - 1 for i in idx]
        ea = [fit.after[i] / steps.rows[i].duration - 1 for i in idx]
        rows.append((label, len(idx), percentile([abs(e) for e in eb], 50),
                     percentile([abs(e) for e in ea], 50), sum(eb) / len(eb),
                     sum(ea) / len(ea)))
    return rows


# ---------------------------------------------------- fit through simulation

@dataclass
class Case:
    """A load whose measured metrics the simulation should match."""
    sim: Simulator
    targets: Dict[str, float]
    keys: Tuple[str, ...] = FIT_KEYS


def log_error(metrics: Metrics, targets: Dict[str, float], keys: Sequence[str]) -> List[float]:
    out = []
    for k in keys:
        if k in targets and k in metrics.values and targets[k] > 0 and metrics.values[k] > 0:
            out.append(math.log(metrics.values[k] / targets[k]))
    return out


def _squash(u: float, lo: float, hi: float) -> float:
    return lo + (hi - lo) / (1.0 + math.exp(-max(-60.0, min(60.0, u))))


def _unsquash(v: float, lo: float, hi: float) -> float:
    p = min(1 - 1e-9, max(1e-9, (v - lo) / (hi - lo)))
    return math.log(p / (1 - p))


def _knobs(u: Sequence[float]) -> Knobs:
    return Knobs(_squash(u[0], EFF_MIN, EFF_MAX), _squash(u[1], EFF_MIN, EFF_MAX),
                 _squash(u[2], 0.0, OVERHEAD_MAX))


def fit_simulated(cases: List[Case], start: Knobs = DEFAULT_KNOBS, max_evals: int = 40,
                  progress: Optional[Callable[[int, Knobs, float], None]] = None
                  ) -> Tuple[Knobs, int]:
    """The parameters minimizing the mean squared log error over every
    case's metrics, found by Nelder-Mead in a space where each parameter
    stays inside its bounds; at most ``max_evals`` parameter sets, each
    simulating every case once.  Returns the best set and how many were
    tried."""
    from scipy.optimize import minimize
    seen: Dict[Tuple[float, float, float], float] = {}

    def objective(u) -> float:
        k = _knobs(u)
        key = (round(k.compute_eff, 6), round(k.memory_eff, 6), round(k.step_overhead, 9))
        if key in seen:
            return seen[key]
        errs: List[float] = []
        for c in cases:
            e = log_error(c.sim.run(k), c.targets, c.keys)
            if e:
                errs.append(sum(x * x for x in e) / len(e))
        val = sum(errs) / len(errs) if errs else math.inf
        seen[key] = val
        if progress is not None:
            progress(len(seen), k, val)
        return val

    u0 = [_unsquash(start.compute_eff, EFF_MIN, EFF_MAX),
          _unsquash(start.memory_eff, EFF_MIN, EFF_MAX),
          _unsquash(max(start.step_overhead, 1e-5), 0.0, OVERHEAD_MAX)]
    simplex = [u0, [u0[0] + 0.8, u0[1], u0[2]], [u0[0], u0[1] + 0.8, u0[2]],
               [u0[0], u0[1], u0[2] + 0.8]]
    best_u = u0
    if max_evals > 1:
        r = minimize(objective, u0, method="Nelder-Mead",
                     options={"maxfev": max_evals, "initial_simplex": simplex,
                              "xatol": 1e-3, "fatol": 1e-7})
        best_u = list(r.x)
    else:
        objective(u0)
    # the best set tried (Nelder-Mead's answer is one of them)
    k = _knobs(best_u)
    key = (round(k.compute_eff, 6), round(k.memory_eff, 6), round(k.step_overhead, 9))
    if key not in seen or min(seen.values()) < seen[key]:
        bk = min(seen, key=lambda s: seen[s])
        k = Knobs(*bk)
    return k, len(seen)


# ---------------------------------------------------------------- the command

def add_arguments(p: argparse.ArgumentParser) -> None:
    from .command import add_deployment_arguments
    add_deployment_arguments(p)
    src = p.add_argument_group("measurements (one kind)")
    src.add_argument("--steps", metavar="CSV",
                     help="a per-step CSV: the work of each step and its time "
                     "(docs/costs.md#calibrating lists the columns)")
    src.add_argument("--bench", action="append", default=[], metavar="JSON",
                     help="a `vllm bench serve --save-result --save-detailed` result; "
                     "several fit one set of parameters to all of them")
    p.add_argument("--max-evals", type=pos_int, default=40, metavar="N",
                   help="with --bench: parameter sets the search tries at most, each "
                   "simulating every benchmark once (default 40)")
    p.add_argument("--seed", type=nonneg_int, default=0, metavar="S",
                   help="with --bench: the seed of the send times drawn for a result that "
                   "did not record them (default 0)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the fitted library to FILE and the report to stdout "
                   "(default: the library to stdout, the report to stderr)")


def rounded(k: Knobs) -> Knobs:
    """Four significant digits: what the measurements can tell apart."""
    return Knobs(*(float("%.4g" % v) for v in k.as_tuple()))


def _pct(x: float) -> str:
    return "%+.1f %%" % (100 * x) if not math.isnan(x) else "-"


def _ms(x: Optional[float]) -> str:
    if x is None or math.isnan(x):
        return "-"
    return "%.2f ms" % (1e3 * x) if x < 1 else "%.3f s" % x


def _written_by(args) -> str:
    from .library import command_line
    parts = [command_line(args._deployment, args.prefix).replace("serq cost", "serq calibrate",
                                                                1)]
    if args.steps:
        parts.append("--steps %s" % args.steps)
    for b in args.bench:
        parts.append("--bench %s" % b)
    if args.bench and args.max_evals != 40:
        parts.append("--max-evals %d" % args.max_evals)
    if args.bench and args.seed:
        parts.append("--seed %d" % args.seed)
    return " ".join(parts)


def _knob_lines(before: Knobs, after: Knobs) -> List[str]:
    return ["  compute_eff    %.4g -> %.4g" % (before.compute_eff, after.compute_eff),
            "  memory_eff     %.4g -> %.4g" % (before.memory_eff, after.memory_eff),
            "  step_overhead  %.4g ms -> %.4g ms" % (before.step_overhead * 1e3,
                                                    after.step_overhead * 1e3)]


def command(args, stdout=None, stderr=None) -> int:
    from .command import deployment, library_name, write_file
    from .library import render
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if not args.model or not args.gpu:
        raise UsageError("`serq calibrate` needs --model and --gpu, the engine that was "
                         "measured (`serq cost --list` names them)")
    if bool(args.steps) == bool(args.bench):
        raise UsageError("`serq calibrate` fits to one kind of measurement: give --steps CSV "
                         "or --bench JSON (one or more)")
    d = deployment(args)
    args._deployment = d
    if args.steps:
        report, knobs, fitted = _calibrate_steps(d, args.steps)
    else:
        report, knobs, fitted = _calibrate_bench(d, args.bench, args.max_evals, args.seed)
    knobs = rounded(knobs)
    text = render(d, args.prefix, library_name(args, d), knobs, _written_by(args), fitted)
    if args.output:
        write_file(args.output, text)
        stdout.write("wrote %s\n" % args.output)
        stdout.write(report)
    else:
        stdout.write(text)
        stderr.write(report)
    return 0


def _calibrate_steps(d: Deployment, path: str):
    from .library import title
    from .measure import read_steps
    steps = read_steps(path)
    fit = fit_steps(d, steps)
    rows = step_error_table(steps, fit)
    L = ["%s: %d steps of %s" % (path, len(steps.rows), title(d)),
         "fitted by least squares on the relative error of the step times:"]
    L += _knob_lines(DEFAULT_KNOBS, fit.knobs)
    L += ["", "%-14s %6s  %-22s %-22s" % ("step time", "steps", "median |error|",
                                        "mean error (bias)"),
          "%-14s %6s  %-10s %-11s %-10s %-11s" % ("", "", "before", "after", "before", "after")]
    for label, n, mb, ma, eb, ea in rows:
        L.append("%-14s %6d  %-10s %-11s %-10s %-11s" % (
            label, n, "%.1f %%" % (100 * mb), "%.1f %%" % (100 * ma), _pct(eb), _pct(ea)))
    for note in steps.notes + fit.notes:
        L.append("note: %s" % note)
    all_row = rows[-1]
    fitted = ["%s: %d steps, least squares on the relative error of the step times." % (
        path, len(steps.rows)),
        "Median |error| of a step's time: %.1f %% with the defaults, %.1f %% fitted." % (
            100 * all_row[2], 100 * all_row[3])]
    fitted += ["Note: %s." % n for n in fit.notes]
    return "\n".join(L) + "\n", fit.knobs, fitted


def _calibrate_bench(d: Deployment, paths: List[str], max_evals: int, seed: int):
    from .library import title
    from .measure import read_bench
    benches = [read_bench(p, seed) for p in paths]
    cases = [Case(Simulator(d, b.load), b.targets) for b in benches]
    try:
        before = [c.sim.run(DEFAULT_KNOBS) for c in cases]
        knobs, tried = fit_simulated(cases, DEFAULT_KNOBS, max_evals)
        after = [c.sim.run(knobs) for c in cases]
    finally:
        for c in cases:
            c.sim.close()
    L = ["%s, %d benchmark%s; each parameter set simulates the same requests" % (
        title(d), len(benches), "" if len(benches) == 1 else "s"),
        "fitted by Nelder-Mead on the squared log error of the medians and p99s "
        "(%d parameter sets tried):" % tried]
    L += _knob_lines(DEFAULT_KNOBS, knobs)
    all_b: List[float] = []
    all_a: List[float] = []
    for b, mb, ma in zip(benches, before, after):
        n = len(b.load.requests)
        L += ["", "%s: %d requests%s, sent %s%s" % (
            b.path, n, " (%d failed, left out)" % b.failed if b.failed else "", b.arrivals,
            ", at most %d in flight" % b.load.concurrency if b.load.concurrency else ""),
            "%-18s %-12s %-22s %-22s" % ("metric", "measured", "before (error)", "after (error)")]
        for key in FIT_KEYS + ("output_throughput",):
            meas = b.throughput if key == "output_throughput" else b.targets.get(key)
            if meas is None:
                continue
            vb, va = mb.values.get(key), ma.values.get(key)
            fmt = ((lambda v: "-" if v is None else "%.1f tok/s" % v)
                   if key == "output_throughput" else _ms)
            eb = vb / meas - 1 if vb is not None and meas > 0 else math.nan
            ea = va / meas - 1 if va is not None and meas > 0 else math.nan
            if key != "output_throughput":
                if not math.isnan(eb):
                    all_b.append(abs(eb))
                if not math.isnan(ea):
                    all_a.append(abs(ea))
            L.append("%-18s %-12s %-22s %-22s" % (
                key.replace("_", " "), fmt(meas), "%s (%s)" % (fmt(vb), _pct(eb)),
                "%s (%s)" % (fmt(va), _pct(ea))))
        if ma.preemptions:
            L.append("note: the fitted run preempted %d times (the KV cache ran out)"
                     % ma.preemptions)
    mb_ = percentile(all_b, 50) if all_b else math.nan
    ma_ = percentile(all_a, 50) if all_a else math.nan
    L += ["", "median |error| of the medians and p99s: %.1f %% before, %.1f %% after" % (
        100 * mb_, 100 * ma_)]
    fitted = ["%s: simulated with the same requests, %d parameter sets tried;" % (
        ", ".join(paths), tried),
        "median |error| of the TTFT, TPOT, ITL and E2E medians and p99s: %.1f %% with the" % (
            100 * mb_),
        "defaults, %.1f %% fitted." % (100 * ma_)]
    return "\n".join(L) + "\n", knobs, fitted


__all__ = ["fit_steps", "fit_simulated", "Case", "command", "add_arguments", "METRICS"]
