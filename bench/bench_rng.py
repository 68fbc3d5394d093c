"""Benchmark serq.sim.rng against pyserq.Rng (a script, not a test).

    python bench/bench_rng.py [--quick]

Prints, for each block implementation usable here (``rows`` on CPython,
``scalar`` everywhere) and for pyserq when installed:

* stream setup: µs per ``substream(seed, serial, 0, 2)`` followed by its
  first ``random_f64`` (what a new session costs), and per ``substream``
  never drawn from;
* batched stream setup: the same with ``StatementStreams(seed).get(serial)``
  for serials in order (batches of up to ``BATCH_MAX``), and per stream of
  ``statement_streams(seed, first, BATCH_MAX)``, each then drawn once;
  (pyserq also without the Python mixing: ``pyserq.Rng(seed)``);
* throughput of a long stream: random_f64, next_u32, range_u32(0, 9),
  range_f64(0, 1), and ``dist.exp`` in millions of draws per second.

pyserq has no ``substream``; its setup is timed as
``pyserq.Rng(substream_seed(...))``, the mixing done in Python.
"""
import os
import platform
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from serq.sim import dist  # noqa: E402
from serq.sim import rng as R  # noqa: E402
from serq.sim import rng_batch as B  # noqa: E402

try:
    import pyserq
except ImportError:  # PyPy
    pyserq = None

QUICK = "--quick" in sys.argv
SEED = 0x0123456789ABCDEF


def best(fn, number, repeat=5):
    """Best time per call of ``fn`` (seconds)."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def setup_costs(make):
    """µs per new stream + first draw, and per new stream never drawn."""
    n = 2000 if QUICK else 20000
    serial = [0]

    def fresh_and_draw():
        serial[0] += 1
        make(serial[0]).random_f64()

    def fresh_only():
        serial[0] += 1
        make(serial[0])

    return best(fresh_and_draw, n) * 1e6, best(fresh_only, n) * 1e6


def batched_costs():
    """µs per stream + first draw: ``StatementStreams.get``, ``statement_streams``."""
    n = 4096 if QUICK else 32768
    src = B.StatementStreams(SEED)
    serial = [0]

    def get_and_draw():
        serial[0] += 1
        src.get(serial[0]).random_f64()

    k = B.BATCH_MAX

    def batch_and_draw():
        serial[0] += k
        for rng in B.statement_streams(SEED, serial[0], k):
            rng.random_f64()

    return best(get_and_draw, n) * 1e6, best(batch_and_draw, max(1, n // k)) / k * 1e6


def throughput(rng):
    """Millions of draws per second on one long stream."""
    n = 20000 if QUICK else 200000
    f64, u32 = rng.random_f64, rng.next_u32
    ops = [
        ("random_f64", f64),
        ("next_u32", u32),
        ("range_u32(0,9)", lambda: rng.range_u32(0, 9)),
        ("range_f64(0,1)", lambda: rng.range_f64(0.0, 1.0)),
        ("dist.exp(1)", lambda: dist.exp(rng, 1.0)),
    ]
    return [(name, 1e-6 / best(fn, n, repeat=3)) for name, fn in ops]


def main():
    print("%s %s on %s" % (platform.python_implementation(), platform.python_version(), platform.machine()))
    results = {}
    batched = {}
    impls = ["rows", "scalar"] if platform.python_implementation() == "CPython" else ["scalar", "rows"]
    for impl in impls:
        previous = R.use_implementation(impl)
        setup, idle = setup_costs(lambda s: R.substream(SEED, s, 0, 2))
        batched[impl] = batched_costs()
        rates = throughput(R.Rng(SEED))
        R.use_implementation(previous)
        results[impl] = (setup, idle, rates)
    if pyserq is not None:
        setup, idle = setup_costs(lambda s: pyserq.Rng(R.substream_seed(SEED, s, 0, 2)))
        results["pyserq"] = (setup, idle, throughput(pyserq.Rng(SEED)))
        setup, idle = setup_costs(lambda s: pyserq.Rng(SEED + s))
        results["pyserq (no mix)"] = (setup, idle, [])
    for label, (setup, idle, rates) in results.items():
        print("%-16s setup+first f64 %8.2f us   unused stream %6.2f us" % (label, setup, idle))
        if label in batched:
            print("%-16s   batched: StatementStreams.get+first f64 %6.2f us, "
                  "statement_streams(.., %d)+first f64 %6.2f us per stream"
                  % ("", batched[label][0], B.BATCH_MAX, batched[label][1]))
        for name, rate in rates:
            print("%-16s   %-16s %8.3f M draws/s" % ("", name, rate))
    if pyserq is not None:
        ours = R.implementation()
        print("\nratio pyserq/serq (%s): setup %.0fx" % (ours, results[ours][0] / results["pyserq"][0]), end="")
        for (name, a), (_, b) in zip(results[ours][2], results["pyserq"][2]):
            print(", %s %.0fx" % (name, b / a), end="")
        print()


if __name__ == "__main__":
    main()
