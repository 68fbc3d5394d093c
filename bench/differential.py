"""serq against pyserq 0.1.3 over many programs: who accepts, who refuses,
and whether what both accept gives the same IR and the same report bytes.

    python bench/differential.py [--seeds 0:20000] [--magnitudes] [--corpus]
                                 [--workers N] [--limit 20] [--json FILE]
    python bench/differential.py --program SEED [--magnitudes]

Programs:

* ``--seeds LO:HI``: the grammar fuzzer's programs
  (``tests/grammar_programs.py``, ``RandomChoices(seed)``), valid or nearly
  valid, each with a small horizon;
* ``--seeds LO:HI --magnitudes``: the same grammar's valid programs with
  their durations and sizes moved to tiny and huge magnitudes
  (``tests/magnitude_programs.py``: time, unit and token scales from
  subnormals through 1e-300 and 1e-12 to 1e300, values one ulp off, a
  duration now and then far below the others);
* ``--corpus``: every program of ``tests/programs/*/`` (with its
  ``// serq-args:`` header) and of ``examples/``.

Each program is compiled by both; a program both compile is run by both
(each bounded by ``--limit`` seconds) and its IR JSON and report JSON
compared.  The outcome of a program is one of

* ``same``: both compile to the same IR and both runs give the same report
  bytes (or both runs fail);
* ``refused by both``;
* ``refused by serq alone``: listed by serq's message (with a seed), each
  of which must be a refusal ``docs/divergences.md`` gives with what 0.1.3
  does wrong;
* ``serq's run stops where 0.1.3 goes wrong``: serq's run fails with one of
  the run-time refusals of ``docs/divergences.md`` (``RUN_DIVERGENCES``)
  where pyserq's run reports;
* ``both run past the limit``: neither finishes within ``--limit`` s;
  ``serq runs past the limit, pyserq is slow too``: pyserq took more than
  ``limit / SLOWER`` s (serq's usual speed: the same events, run slower);
* ``refused by pyserq alone``, ``IR differs``, ``report differs``, ``run
  fails in one``, ``hang`` (pyserq ran past the limit, serq reported),
  ``serq runs past the limit, pyserq finishes`` (in less than ``limit /
  SLOWER`` s, with pyserq's time):
  findings to look at (the exit status is 1 when there is any).

``--program SEED`` prints the program of one seed (with ``--magnitudes``,
its rescaled form) and stops.  ``--json FILE`` keeps every program's row:
kind, seed or file, outcome, detail, warnings and the two runs' seconds.

serq's warnings are counted per message on programs both accept.
"""
import argparse
import collections
import json
import multiprocessing
import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "src")]

TRACE = os.path.join(ROOT, "tests", "programs", "warn", "data", "two.csv")
GOOD = ("same", "refused by both", "refused by serq alone", "pyserq hangs, serq's run fails",
        "serq's run stops where 0.1.3 goes wrong", "both run past the limit",
        "serq runs past the limit, pyserq is slow too")

# serq's interpreted core takes up to this many times pyserq's time for the
# same events (bench/RESULTS.md: 6 to 15 times compiled, 2 to 3 times more
# interpreted); a run past the limit where pyserq took more than
# limit / SLOWER is speed, not a loop that serq alone runs
SLOWER = 50

# serq's run-time refusals that docs/divergences.md lists, where 0.1.3's run
# goes on into a wrong state (its report shows it: a pool's `used` NaN)
RUN_DIVERGENCES = ("would leave its `used` undefined (inf - inf)",)


FAMILY = {"seed": "grammar", "mag": "magnitudes"}


def _first_line(text):
    return str(text).strip().splitlines()[0] if str(text).strip() else ""


def _shape(message):
    """A message with its names and numbers taken out, to group by."""
    m = re.sub(r"^.*?(error|warning): ", "", message)
    m = re.sub(r"`[^`]*`", "`_`", m)
    return re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", m)


def _reference_run(prog, limit):
    """pyserq's report JSON, or ``("fail", message)``, or ``None`` when it
    runs past ``limit`` seconds: run in a forked child, killed at the limit
    (a hung run holds a core and cannot be interrupted from Python).  Its
    run's wall time is in ``_reference_run.seconds``."""
    import select
    import signal
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, write the outcome, leave at once
        os.close(r)
        try:
            import pyserq
            try:
                out = ["report", pyserq.run(prog).json()]
            except Exception as e:  # the reference raises ValueError on a failed run
                out = ["fail", _first_line(e)]
            data = json.dumps(out).encode()
            while data:
                data = data[os.write(w, data):]
        finally:
            os._exit(0)
    os.close(w)
    started = time.monotonic()
    chunks, deadline = [], started + limit
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                return None
            b = os.read(r, 1 << 16)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    _reference_run.seconds = time.monotonic() - started
    kind, value = json.loads(b"".join(chunks).decode())
    return value if kind == "report" else ("fail", value)


def compare(text, path=None, kwargs=None, limit=20.0):
    """(outcome, detail, warnings) for one program's text (or file); the
    two runs' seconds, when both ran, in ``compare.seconds``."""
    import pyserq
    from fuzz_cases import Failure, bounded
    from serq.compiler import compile_program
    from serq.errors import RunError, SerqError
    from serq.ir.json import dumps
    from serq.report.jsonfmt import report_json
    from serq.runner import run_program
    kwargs = kwargs or {}
    try:
        if path is not None:
            ref = pyserq.compile(path=path, **kwargs)
        else:
            ref = pyserq.compile(source=text, **kwargs)
        ref_error = None
    except Exception as e:
        ref, ref_error = None, _first_line(e)
    try:
        if path is not None:
            ours = compile_program(path, **kwargs)
        else:
            ours = compile_program(source=text, **kwargs)
        our_error = None
    except SerqError as e:
        ours, our_error = None, _first_line(e.render())
    except RecursionError:
        ours, our_error = None, "the input nests too deeply"
    if ours is None and ref is None:
        return "refused by both", our_error, []
    if ours is None:
        return "refused by serq alone", our_error, []
    warnings = [_shape(_first_line(w.render())) for w in ours.warnings]
    if ref is None:
        return "refused by pyserq alone", ref_error, warnings
    if json.loads(dumps(ours)) != json.loads(ref.to_json()):
        return "IR differs", None, warnings
    started = time.monotonic()
    try:
        our_report = bounded(limit, lambda: report_json(run_program(ours)))
    except RunError as e:
        our_report = ("fail", _first_line(e.render()))
    except Failure as f:
        if _reference_run(ref, limit) is None:
            return "both run past the limit", "serq: " + f.detail, warnings
        detail = "serq: %s; pyserq: %.2f s" % (f.detail, _reference_run.seconds)
        if _reference_run.seconds * SLOWER >= limit:
            return "serq runs past the limit, pyserq is slow too", detail, warnings
        return "serq runs past the limit, pyserq finishes", detail, warnings
    ours_s = time.monotonic() - started
    ref_report = _reference_run(ref, limit)
    compare.seconds = (round(ours_s, 3), round(_reference_run.seconds, 3))
    if ref_report is None:
        if isinstance(our_report, tuple):
            return "pyserq hangs, serq's run fails", our_report[1], warnings
        return "hang", "pyserq ran past %s s, serq reported" % limit, warnings
    if isinstance(our_report, tuple) or isinstance(ref_report, tuple):
        if isinstance(our_report, tuple) and isinstance(ref_report, tuple):
            return "same", None, warnings
        if isinstance(our_report, tuple) and any(d in our_report[1] for d in RUN_DIVERGENCES):
            return "serq's run stops where 0.1.3 goes wrong", our_report[1], warnings
        return "run fails in one", "serq: %s | pyserq: %s" % (
            our_report[1] if isinstance(our_report, tuple) else "report",
            ref_report[1] if isinstance(ref_report, tuple) else "report"), warnings
    if our_report != ref_report:
        return "report differs", None, warnings
    return "same", None, warnings


def seed_program(kind, seed):
    """The program of a grammar seed: as drawn (``seed``) or rescaled to
    tiny and huge magnitudes (``mag``)."""
    import grammar_programs
    import magnitude_programs
    gen = magnitude_programs if kind == "mag" else grammar_programs
    return gen.program(grammar_programs.RandomChoices(seed), TRACE)


def case(job):
    kind, key, limit = job
    from corpus import header_kwargs, in_dir
    from pathlib import Path
    try:
        compare.seconds = None
        if kind in ("seed", "mag"):
            return (kind, key) + compare(seed_program(kind, key), limit=limit) + (compare.seconds,)
        p = Path(key)
        text = p.read_text()
        with in_dir(p.parent):
            return (kind, key) + compare(text, p.name, header_kwargs(text), limit) + \
                (compare.seconds,)
    except Exception as e:  # a failure of this harness or of serq: a finding
        import traceback
        return kind, key, "crash", "%s: %s %s" % (type(e).__name__, e,
                                                 traceback.format_exc(limit=-3)), [], None


def corpus_files():
    out = []
    for folder in sorted(os.listdir(os.path.join(ROOT, "tests", "programs"))):
        d = os.path.join(ROOT, "tests", "programs", folder)
        if os.path.isdir(d) and folder != "reports":
            out += sorted(os.path.join(d, f) for f in os.listdir(d)
                          if f.endswith(".sq") and not f.startswith("big_"))
    ex = os.path.join(ROOT, "examples")
    out += sorted(os.path.join(ex, f) for f in os.listdir(ex) if f.endswith(".sq"))
    return out


def group(path):
    parts = os.path.relpath(path, ROOT).split(os.sep)
    return parts[-2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default=None, help="LO:HI, grammar fuzzer seeds")
    ap.add_argument("--magnitudes", action="store_true",
                    help="with --seeds: valid programs at tiny and huge durations and sizes")
    ap.add_argument("--program", type=int, metavar="SEED",
                    help="print the program of one seed and stop")
    ap.add_argument("--corpus", action="store_true", help="tests/programs and examples")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--limit", type=float, default=20.0, help="seconds per run")
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args(argv)
    kind = "mag" if a.magnitudes else "seed"
    if a.program is not None:
        sys.stdout.write(seed_program(kind, a.program))
        return 0
    jobs = []
    if a.seeds:
        lo, _, hi = a.seeds.partition(":")
        jobs += [(kind, s, a.limit) for s in range(int(lo), int(hi))]
    if a.corpus:
        jobs += [("file", f, a.limit) for f in corpus_files()]
    if not jobs:
        ap.error("give --seeds LO:HI, --corpus or both")
    t0 = time.monotonic()
    counts = collections.defaultdict(collections.Counter)
    examples = collections.defaultdict(dict)  # outcome -> message shape -> (n, key, message)
    warned = collections.Counter()
    rows = []
    with multiprocessing.Pool(a.workers, maxtasksperchild=200) as pool:
        for n, (kind, key, outcome, detail, warnings, seconds) in enumerate(
                pool.imap_unordered(case, jobs, chunksize=4), 1):
            fam = FAMILY[kind] if kind in FAMILY else group(key)
            counts[fam][outcome] += 1
            for w in set(warnings):
                warned[w] += 1
            if outcome != "same":
                shape = _shape(detail or outcome)
                k, msg = (key if kind in FAMILY else os.path.relpath(key, ROOT)), detail
                got = examples[outcome].get(shape)
                examples[outcome][shape] = (1 + (got[0] if got else 0),
                                            got[1] if got else k, got[2] if got else msg)
            rows.append([kind, key if kind in FAMILY else os.path.relpath(key, ROOT), outcome,
                         detail, warnings, seconds])
            if n % 2000 == 0:
                sys.stderr.write("%d/%d programs, %.0f s\n" % (n, len(jobs), time.monotonic() - t0))
    wall = time.monotonic() - t0
    outcomes = sorted({o for c in counts.values() for o in c},
                      key=lambda o: (o not in GOOD, GOOD.index(o) if o in GOOD else 0, o))
    print("serq vs pyserq 0.1.3: %d program(s) in %.0f s on %d worker(s)\n"
          % (len(jobs), wall, a.workers))
    print("| programs | total | " + " | ".join(outcomes) + " |")
    print("|---|---|" + "---|" * len(outcomes))
    for fam in sorted(counts, key=lambda f: (f not in FAMILY.values(), f)):
        c = counts[fam]
        print("| %s | %d | %s |" % (fam, sum(c.values()),
                                    " | ".join(str(c.get(o, 0)) for o in outcomes)))
    for outcome in outcomes:
        if outcome in ("same", "refused by both"):
            continue
        print("\n%s, by message:" % outcome)
        for shape, (n, key, msg) in sorted(examples[outcome].items(), key=lambda x: -x[1][0]):
            print("- %d x %s (e.g. %s: %s)" % (n, shape[:150], key, (msg or "")[:200]))
    if warned:
        print("\nwarnings on programs both accept (programs warned):")
        for w, n in warned.most_common():
            print("- %d x %s" % (n, w[:150]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"programs": len(jobs), "seconds": round(wall),
                       "counts": {k: dict(v) for k, v in counts.items()}, "rows": rows}, f)
    bad = sum(c[o] for c in counts.values() for o in c if o not in GOOD)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
