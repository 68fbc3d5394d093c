"""Start-up: the CPU time of `serq run` and `serq check` on a one-event
program, against pyserq 0.1.3 doing the same, each in a fresh process.

    python bench/startup.py [--repeat N] [--no-bytecode] [--imports K]

Every command runs ``N`` times (default 21), the commands taking turns so
that a busy spell of the machine falls on all of them; a run's time is its
process's user + system CPU time (``getrusage(RUSAGE_CHILDREN)``), which a
machine shared with other work inflates far less than wall time.  Prints
the median and the lowest of each, and serq's median over pyserq's.

    serq run     the `serq` command: `python -c "from serq.cli import main; ..." run FILE`
    serq check   the same, `check FILE`
    pyserq run   python -c "import pyserq; pyserq.run(pyserq.compile(path=FILE))"
    pyserq check python -c "import pyserq; pyserq.compile(path=FILE)"
    python       python -c pass: the interpreter's own start-up, in every figure above

Bytecode: by default serq's compiled bytecode is cached, as an installed
package's is (pip compiles it): ``PYTHONPYCACHEPREFIX`` points at a fresh
directory that a first, untimed run of every command fills, so the figures
neither depend on nor write the source tree's ``__pycache__``.
``--no-bytecode`` times the other case, a source tree without
``__pycache__`` under ``PYTHONDONTWRITEBYTECODE=1``: every process compiles
every serq module it imports (a copy of the sources is timed; the standard
library keeps its own cached bytecode).

``--src DIR`` times the serq in DIR (another checkout's ``src``, e.g. an
older commit's from ``git worktree add``) instead of this one's.

``--imports K`` also prints serq run's K most expensive imports (``python -X
importtime``, each module's lowest self time over the runs, in ms).
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

PROGRAM = """stage d : delay;
workload { arrive batch(1); }
session { run d (1); }
run { horizon 10; }
"""

SERQ = "import sys; from serq.cli import main; sys.exit(main(sys.argv[1:]))"


def commands(python: str, path: str):
    return [
        ("serq run", [python, "-c", SERQ, "run", path]),
        ("serq check", [python, "-c", SERQ, "check", path]),
        ("pyserq run", [python, "-c", "import pyserq; pyserq.run(pyserq.compile(path=%r))"
                        % path]),
        ("pyserq check", [python, "-c", "import pyserq; pyserq.compile(path=%r)" % path]),
        ("python", [python, "-c", "pass"]),
    ]


def cpu_time(cmd, env) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_profile(cmd, env, repeat: int, top: int):
    """(self ms, cumulative ms, depth, module) of the `top` largest self times."""
    selfs, cums, depth = {}, {}, {}
    for _ in range(repeat):
        r = subprocess.run([cmd[0], "-X", "importtime"] + cmd[1:], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           check=True)
        for line in r.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            own, cum, name = line[len("import time:"):].split("|")
            key = name.strip()
            selfs[key] = min(selfs.get(key, 1e12), int(own))
            cums[key] = min(cums.get(key, 1e12), int(cum))
            depth[key] = (len(name) - len(name.lstrip()) - 1) // 2
    rows = sorted(selfs, key=lambda m: -selfs[m])[:top]
    return [(selfs[m] / 1000, cums[m] / 1000, depth[m], m) for m in rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=21, help="runs of each command (default 21)")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="no cached bytecode: every process compiles every module")
    ap.add_argument("--imports", type=int, default=0, metavar="K",
                    help="also print serq run's K most expensive imports")
    ap.add_argument("--python", default=sys.executable, help="the interpreter (default: this one)")
    ap.add_argument("--src", default=str(SRC), metavar="DIR",
                    help="serq's source directory (default: this checkout's src)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "one.sq")
        with open(path, "w") as f:
            f.write(PROGRAM)
        env = dict(os.environ)
        src = os.path.abspath(args.src)
        if args.no_bytecode:
            src = os.path.join(tmp, "src")
            shutil.copytree(os.path.abspath(args.src), src,
                            ignore=shutil.ignore_patterns("__pycache__"))
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env.pop("PYTHONPYCACHEPREFIX", None)
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
        env["PYTHONPATH"] = os.pathsep.join([src] + [p for p in (env.get("PYTHONPATH"),) if p])
        cmds = commands(args.python, path)
        for _name, cmd in cmds:  # untimed: fills the bytecode cache (if any)
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
        times = {name: [] for name, _cmd in cmds}
        for _ in range(args.repeat):
            for name, cmd in cmds:
                times[name].append(cpu_time(cmd, env))
        med = {name: statistics.median(ts) for name, ts in times.items()}

        cache = "serq's bytecode not cached" if args.no_bytecode else "bytecode cached"
        print("start-up CPU time (user + sys), %d runs each, %s:" % (args.repeat, cache))
        print("%-13s %9s %9s" % ("", "median s", "lowest s"))
        for name, ts in times.items():
            print("%-13s %9.3f %9.3f" % (name, med[name], min(ts)))
        for what in ("run", "check"):
            print("serq %s / pyserq %s: %.1f" % (what, what,
                                                 med["serq " + what] / med["pyserq " + what]))
        if args.imports:
            print("\nserq run's largest imports (-X importtime, lowest of %d runs):"
                  % args.repeat)
            print("%8s %8s  %s" % ("self ms", "cum ms", "module"))
            for own, cum, depth, name in import_profile(cmds[0][1], env, args.repeat,
                                                         args.imports):
                print("%8.1f %8.1f  %s%s" % (own, cum, "  " * depth, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
