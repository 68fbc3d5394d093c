"""The long fuzz run of issues 8 and 19: 100,000 cases through the whole
pipeline, 10,000 random pool and step programs under
``--check-invariants``, and 3,600 runs of the real command line.

    python bench/fuzz.py [--cases 100000] [--invariants 10000] [--cli 3600]
                         [--workers N] [--limit 20] [--seed 0] [--json FILE]

Cases (tests/grammar_programs.py, tests/fuzz_cases.py):

* ``grammar``: nine in ten, a program drawn from the grammar (valid or nearly
  valid) with ``RandomChoices(seed + i)``, run to at most 2000 events;
* ``example``: one in ten, a token mutation of an examples/*.sq program
  (round robin), compiled from a copy of examples/ and lib/ so its `use`
  still resolves, run to at most 500 events;
* ``invariants``: tests/pool_programs.py and tests/step_programs.py
  programs (alternately) with every pool invariant checked after every
  event, to at most 5000 events.

Each case has a wall-clock limit (SIGALRM in the worker; the parent also
gives up on a worker silent for three limits).  Every case must end in a
located syntax or link error, a run-time error naming its time, or a
report; anything else (a traceback, an unlocated error, a hang, an
invariant broken) is listed with the seed that reproduces it:

    python -c "import sys; sys.path[:0] = ['tests', 'src']; \\
        from grammar_programs import *; print(program(RandomChoices(SEED)))"

A command-line case is reproduced with

    python -c "import sys; sys.path[:0] = ['tests', 'src']; \\
        from cli_fuzz_cases import cli_case; print(cli_case('cli-input', SEED))"

Exit status 0 when no case failed.
"""
import argparse
import collections
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "src")]

from fuzz_cases import Failure, bounded, example_sources, run_case  # noqa: E402
import cli_fuzz_cases  # noqa: E402
import grammar_programs  # noqa: E402
import pool_programs  # noqa: E402
import step_programs  # noqa: E402

EXAMPLES = example_sources(ROOT)
_tree = None  # the worker's copy of examples/ and lib/
_trace = os.path.join(ROOT, "tests", "programs", "warn", "data", "two.csv")


def _init(parent=None):
    global _tree
    _tree = tempfile.mkdtemp(prefix="serq-fuzz-", dir=parent)
    cli_fuzz_cases.PARENT[0] = parent
    shutil.copytree(os.path.join(ROOT, "examples"), os.path.join(_tree, "examples"))
    shutil.copytree(os.path.join(ROOT, "lib"), os.path.join(_tree, "lib"))


def case(args):
    """One case: (family, seed, outcome, detail)."""
    family, seed, limit = args
    try:
        if family.startswith("cli-"):
            out = cli_fuzz_cases.cli_case(family, seed)
        elif family == "grammar":
            text = grammar_programs.program(grammar_programs.RandomChoices(seed), _trace)
            out = bounded(limit, run_case, text, 2000)
        elif family == "example":
            path, source = EXAMPLES[seed % len(EXAMPLES)]
            text = grammar_programs.mutate(grammar_programs.RandomChoices(seed), source)
            target = os.path.join(_tree, os.path.relpath(path, ROOT))
            mutant = os.path.join(os.path.dirname(target), "mutant_%d.sq" % os.getpid())
            out = bounded(limit, run_case, text, 500, mutant)
        else:
            mod = pool_programs if seed % 2 else step_programs
            out = bounded(limit, run_case, mod.program(seed), 5000, None, True)
        return family, seed, out, None
    except Failure as f:
        return family, seed, "FAIL " + f.kind, f.detail[:3000]


CLI_SHARES = (("cli-signal", 0.06), ("cli-limits", 0.07), ("cli-output", 0.35),
              ("cli-input", 0.52))


def plan(n_cases, n_invariants, seed, limit, n_cli=0):
    # the command line's cases first: the slowest, and the quick in-process
    # ones then fill the workers up to the end
    counts = [(fam, int(round(share * n_cli))) for fam, share in CLI_SHARES]
    counts[-1] = (counts[-1][0], n_cli - sum(n for _, n in counts[:-1]))
    longest = max(n for _, n in counts) if counts else 0
    for i in range(longest):
        for fam, n in counts:
            if i < n:
                yield (fam, seed + i, limit)
    for i in range(n_cases):
        yield ("example" if i % 10 == 9 else "grammar", seed + i, limit)
    for i in range(n_invariants):
        yield ("invariants", seed + i, limit)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=100000)
    ap.add_argument("--invariants", type=int, default=10000)
    ap.add_argument("--cli", type=int, default=3600, help="command-line cases")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--limit", type=float, default=20.0, help="seconds per case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="FILE", help="write the counts and failures as JSON")
    a = ap.parse_args(argv)
    counts = collections.defaultdict(collections.Counter)
    failures = []
    t0 = time.monotonic()
    total = a.cases + a.invariants + a.cli
    done = 0
    parent = tempfile.mkdtemp(prefix="serq-fuzz-run-")  # the workers' folders, removed at the end
    pool = multiprocessing.Pool(a.workers, initializer=_init, initargs=(parent,))
    silent = max(3 * a.limit + 60, 300)  # a command-line case may take 2 minutes
    stuck = False
    try:
        it = pool.imap_unordered(case, plan(a.cases, a.invariants, a.seed, a.limit, a.cli))
        while True:
            try:
                family, seed, out, detail = it.next(timeout=silent)
            except StopIteration:
                break
            except multiprocessing.TimeoutError:
                failures.append(("?", -1, "FAIL worker stuck", "no result for %s s"
                                 % silent))
                stuck = True
                break
            counts[family][out] += 1
            if detail is not None:
                failures.append((family, seed, out, detail))
            done += 1
            if done % 5000 == 0:
                sys.stderr.write("%d/%d cases, %.0f s, %d failure(s)\n"
                                 % (done, total, time.monotonic() - t0, len(failures)))
    finally:
        if stuck:
            pool.terminate()
        else:
            pool.close()
        pool.join()
        cli_fuzz_cases.remove_tree(parent)
    wall = time.monotonic() - t0
    print("serq fuzz: %d case(s) in %.0f s on %d worker(s), seed %d, %s s per case at most"
          % (done, wall, a.workers, a.seed, a.limit))
    print()
    outcomes = sorted({o for c in counts.values() for o in c})
    print("| family | cases | " + " | ".join(outcomes) + " |")
    print("|---|---|" + "---|" * len(outcomes))
    for fam in ("grammar", "example", "invariants") + cli_fuzz_cases.FAMILIES:
        c = counts.get(fam)
        if c:
            print("| %s | %d | %s |" % (fam, sum(c.values()),
                                        " | ".join(str(c.get(o, 0)) for o in outcomes)))
    print("| all | %d | %s |" % (done, " | ".join(
        str(sum(c.get(o, 0) for c in counts.values())) for o in outcomes)))
    print()
    print("%d failure(s)" % len(failures))
    seen = set()
    for fam, seed, out, detail in sorted(failures):
        key = (out, detail.splitlines()[0] if detail else "")
        first = key not in seen
        seen.add(key)
        print("- %s seed %d: %s%s" % (fam, seed, out, "" if not first else
                                      "\n    " + "\n    ".join(detail.splitlines()[:12])))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cases": done, "seconds": round(wall), "workers": a.workers,
                       "seed": a.seed, "counts": {k: dict(v) for k, v in counts.items()},
                       "failures": [list(x) for x in failures]}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
