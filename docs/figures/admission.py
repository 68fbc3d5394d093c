"""The figure and the table of docs/admission.md.

    pip install -e '.[docs]'
    python docs/figures/admission.py          # a few minutes on two cores

Runs the four programs of examples/admission over a sweep of the arrival
rate (seed 1, horizon 600 s, warm-up 60 s, as written in the programs),
prints the table of docs/admission.md (Markdown) and writes
docs/figures/admission.png: five panels against the load, and a sixth with
the preemptions over time when the answers get longer halfway
(``shift_at = 300``).
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

POLICIES = [("declared_max", "declared maximum"), ("current_need", "current need"),
            ("growth_allowance", "growth allowance (256)"), ("watermark", "watermark (2048)")]
RATES = [2, 3, 4, 5, 6]
KV_TOKENS = 32768
SHIFT_RATE = 4
SHIFT_AT = 300


def one(job):
    policy, rate, shift = job
    sets = {"rate": str(rate)}
    if shift is not None:
        sets["shift_at"] = str(shift)
    sim = simulate(compile_program(str(ROOT / "examples" / "admission" / (policy + ".sq")),
                                   sets=sets))
    rep = build_report(sim)
    (adm,) = admission_rows(sim)
    span = sim.end - sim.prog.warmup
    resp = rep.observes["response"]
    return dict(policy=policy, rate=rate, shift=shift, throughput=resp.count / span,
                response=resp.mean, p99=resp.p99, used=rep.pools[0].mean_used,
                queue=rep.pools[0].mean_queue, blocked=adm.blocked_fraction,
                attempts=adm.blocked_attempts, reserved=adm.mean_reserved,
                preemptions=adm.preemptions, per_min=60 * adm.preemptions / span,
                storm=adm.storm_peak, window=adm.storm_window, storm_at=adm.storm_at,
                times=adm.preemption_times, stuck=rep.pools[0].stuck)


def table(results):
    lines = ["| policy | rate (1/s) | throughput (1/s) | mean response (s) | p99 (s) "
             "| blocked time | mean reserved (tokens) | preemptions | storm (in 5.4 s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for policy, label in POLICIES:
        for r in sorted(results, key=lambda r: r["rate"]):
            if r["policy"] == policy and r["shift"] is None:
                lines.append("| %s | %g | %.2f | %.1f | %.1f | %.3f | %.0f | %d | %d |" % (
                    label, r["rate"], r["throughput"], r["response"], r["p99"],
                    r["blocked"], r["reserved"], r["preemptions"], r["storm"]))
    return "\n".join(lines)


def figure(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    style = {"declared_max": ("tab:blue", "o"), "current_need": ("tab:red", "s"),
             "growth_allowance": ("tab:green", "^"), "watermark": ("tab:purple", "D")}
    fig, axes = plt.subplots(2, 3, figsize=(14, 8.2))
    panels = [
        ("throughput", "completed requests / s", "Throughput", False),
        ("response", "mean response time (s)", "Mean response time", True),
        ("blocked", "fraction of time", "Head-of-line blocking", False),
        ("reserved", "share of the pool", "Reserved, not yet written", False),
        ("per_min", "preemptions / minute", "Preemptions", False),
    ]
    for ax, (key, ylabel, title, log) in zip(axes.flat, panels):
        for policy, label in POLICIES:
            rs = [r for r in results if r["policy"] == policy and r["shift"] is None]
            ys = [r[key] / KV_TOKENS if key == "reserved" else r[key] for r in rs]
            c, m = style[policy]
            ax.plot([r["rate"] for r in rs], ys, marker=m, color=c, label=label)
        if key == "throughput":
            ax.plot(RATES, RATES, color="grey", linestyle=":", label="offered load")
        ax.set_title(title)
        ax.set_xlabel("arrival rate (requests / s)")
        ax.set_ylabel(ylabel)
        ax.set_xticks(RATES)
        if log:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    axes.flat[0].legend(fontsize=8, loc="upper left")
    ax = axes.flat[5]
    bins = [60 + 10 * i for i in range(55)]
    for policy, label in POLICIES:
        rs = [r for r in results if r["policy"] == policy and r["shift"] is not None]
        c, _ = style[policy]
        if not rs or not rs[0]["times"]:
            ax.plot([], [], color=c, label="%s: no preemption" % label)
            continue
        ax.hist(rs[0]["times"], bins=bins, histtype="step", color=c, linewidth=1.5,
                label="%s: peak %d in %.1f s" % (label, rs[0]["storm"], rs[0]["window"]))
    ax.axvline(SHIFT_AT, color="grey", linestyle=":")
    ax.set_title("Answers get longer at t = %d (rate %d)" % (SHIFT_AT, SHIFT_RATE))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("preemptions / 10 s")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, alpha=0.3)
    fig.suptitle("One chat workload, four admission policies (KV pool of %d tokens)"
                 % KV_TOKENS)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    jobs = [(p, r, None) for p, _ in POLICIES for r in RATES]
    jobs += [(p, SHIFT_RATE, SHIFT_AT) for p, _ in POLICIES]
    # the slowest first, so that two workers finish together
    jobs.sort(key=lambda j: (j[0] != "declared_max", -j[1]))
    with ProcessPoolExecutor(2) as ex:
        results = list(ex.map(one, jobs))
    print(table(results))
    print()
    for r in results:
        if r["shift"] is not None:
            print("shift at %d, rate %d, %s: %d preemptions, storm %d in %.1f s from %s, "
                  "mean response %.1f s, stuck %d" % (
                      r["shift"], r["rate"], r["policy"], r["preemptions"], r["storm"],
                      r["window"], r["storm_at"], r["response"], r["stuck"]))
    figure(results, Path(__file__).resolve().parent / "admission.png")


if __name__ == "__main__":
    main()
