"""The tables and the figure of docs/admission_tradeoff.md.

    pip install -e '.[docs]'
    python docs/figures/admission_tradeoff.py     # about 2 minutes on one core

Runs examples/admission/shift.sq (the chapter's preemption storm: short
chat answers, then long document generations from t = 300 s) at rate 1.3
over seeds 1-3:

* every admission bound (declared maximum, current need, growth allowance)
  with and without a 4096-token watermark, under strict FIFO and under
  first fit (``patience`` 0 and inf);
* the current need under a sweep of the watermark, FIFO and first fit;

prints the two Markdown tables of the page (means over the seeds) and
writes docs/figures/admission_tradeoff.png.
"""
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from serq.compiler import compile_program  # noqa: E402
from serq.report.admission import admission_rows  # noqa: E402
from serq.report.build import build_report  # noqa: E402
from serq.runner import simulate  # noqa: E402

PROGRAM = ROOT / "examples" / "admission" / "shift.sq"
RATE = 1.3
SEEDS = [1, 2, 3]
SHIFT_AT = 300
WATERMARK = 4096
SWEEP = [0, 1024, 2048, 4096, 8192, 16384]
BOUNDS = [(0, "declared maximum"), (1, "current need"), (2, "growth allowance (256)")]
QUEUES = [("0", "FIFO"), ("inf", "first fit")]
KEYS = ("tps", "rps", "ttft", "p99", "preemptions", "storm", "blocked", "stuck")


def one(job):
    bound, wm, patience, seed = job
    sets = {"rate": str(RATE), "bound": str(bound), "wm": str(wm), "patience": patience}
    sim = simulate(compile_program(str(PROGRAM), sets=sets, seed=seed))
    rep = build_report(sim)
    (adm,) = admission_rows(sim)
    span = sim.end - sim.prog.warmup
    tokens, ttft = rep.observes["tokens"], rep.observes["ttft"]
    return job, dict(tps=tokens.mean * tokens.count / span, rps=tokens.count / span,
                     ttft=ttft.mean, p99=ttft.p99, preemptions=adm.preemptions,
                     storm=adm.storm_peak, blocked=adm.blocked_fraction,
                     stuck=rep.pools[0].stuck, times=adm.preemption_times)


def mean(results, bound, wm, patience):
    rs = [results[(bound, wm, patience, s)] for s in SEEDS]
    return {k: sum(r[k] for r in rs) / len(rs) for k in KEYS}


def main_table(results):
    lines = ["| bound | watermark | queue | tokens / s | requests / s | TTFT mean (s) "
             "| TTFT p99 (s) | preemptions | storm (in 5.4 s) | blocked time | stuck |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for b, _ in BOUNDS:
        for wm in (0, WATERMARK):
            for pat, _ in QUEUES:
                lines.append(main_row(results, b, wm, pat))
    return "\n".join(lines)


def main_row(results, bound, wm, patience):
    m = mean(results, bound, wm, patience)
    return "| %s | %d | %s | %.0f | %.2f | %.1f | %.1f | %.0f | %.1f | %.3f | %.1f |" % (
        dict(BOUNDS)[bound], wm, dict(QUEUES)[patience], m["tps"], m["rps"], m["ttft"],
        m["p99"], m["preemptions"], m["storm"], m["blocked"], m["stuck"])


def sweep_table(results):
    lines = ["| watermark (tokens) | queue | tokens / s | TTFT mean (s) | TTFT p99 (s) "
             "| preemptions | blocked time |", "|---:|---|---:|---:|---:|---:|---:|"]
    for wm in SWEEP:
        for pat, qlabel in QUEUES:
            m = mean(results, 1, wm, pat)
            lines.append("| %d | %s | %.0f | %.1f | %.1f | %.0f | %.3f |" % (
                wm, qlabel, m["tps"], m["ttft"], m["p99"], m["preemptions"], m["blocked"]))
    return "\n".join(lines)


def figure(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 4, figsize=(18, 8.5))
    variants = [(0, "0", "FIFO", "tab:blue"), (0, "inf", "first fit", "tab:orange"),
                (WATERMARK, "0", "FIFO + watermark %d" % WATERMARK, "tab:green"),
                (WATERMARK, "inf", "first fit + watermark %d" % WATERMARK, "tab:red")]
    bars = [("tps", "tokens / s", "Throughput (generated tokens)"),
            ("p99", "seconds", "TTFT p99"),
            ("preemptions", "count (after warm-up)", "Preemptions"),
            ("blocked", "fraction of time", "Head-of-line blocking")]
    width = 0.2
    for ax, (key, ylabel, title) in zip(axes[0], bars):
        for j, (wm, pat, label, colour) in enumerate(variants):
            ys = [mean(results, b, wm, pat)[key] for b, _ in BOUNDS]
            ax.bar([i + (j - 1.5) * width for i in range(len(BOUNDS))], ys, width,
                   color=colour, label=label)
        ax.set_xticks(range(len(BOUNDS)))
        ax.set_xticklabels([lab.replace(" (", "\n(") for _, lab in BOUNDS], fontsize=8)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][3].legend(fontsize=8, loc="upper right")
    sweeps = [("tps", "tokens / s", "Throughput against the watermark"),
              ("p99", "seconds", "TTFT p99 against the watermark"),
              ("preemptions", "count (after warm-up)", "Preemptions against the watermark")]
    for ax, (key, ylabel, title) in zip(axes[1], sweeps):
        for pat, qlabel in QUEUES:
            ax.plot(SWEEP, [mean(results, 1, wm, pat)[key] for wm in SWEEP], marker="o",
                    label="current need, %s" % qlabel)
        ax.set_xlabel("watermark (tokens; the pool holds 49152)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    axes[1][0].legend(fontsize=8)
    ax = axes[1][3]
    bins = [60 + 10 * i for i in range(55)]
    for wm, pat, label, colour in variants:
        times = results[(1, wm, pat, SEEDS[0])]["times"]
        ax.hist(times, bins=bins, histtype="step", color=colour, linewidth=1.5,
                label="%s: %d" % (label, len(times)))
    ax.axvline(SHIFT_AT, color="grey", linestyle=":")
    ax.set_title("Current need: preemptions over time (seed %d)" % SEEDS[0], fontsize=10)
    ax.set_xlabel("time (s); documents start at %d" % SHIFT_AT)
    ax.set_ylabel("preemptions / 10 s")
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, alpha=0.3)
    fig.suptitle("examples/admission/shift.sq at %g requests/s: short chat answers, then long "
                 "documents from t = %d (means over seeds %s)"
                 % (RATE, SHIFT_AT, ", ".join(map(str, SEEDS))))
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    jobs = {(b, wm, pat, s) for b, _ in BOUNDS for wm in (0, WATERMARK) for pat, _ in QUEUES
            for s in SEEDS}
    jobs |= {(1, wm, pat, s) for wm in SWEEP for pat, _ in QUEUES for s in SEEDS}
    # the slowest (the declared maximum) first, so that the workers finish together
    jobs = sorted(jobs, key=lambda j: (j[0] != 0, j))
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    with ProcessPoolExecutor(workers) as ex:
        results = dict(ex.map(one, jobs))
    print(main_table(results))
    print()
    print(sweep_table(results))
    figure(results, Path(__file__).resolve().parent / "admission_tradeoff.png")


if __name__ == "__main__":
    main()
