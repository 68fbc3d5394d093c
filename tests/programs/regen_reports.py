#!/usr/bin/env python3
"""Regenerate the expected reports of the simulator conformance suite.

For every program in ``valid/`` and ``sim/`` that the reference (pyserq
0.1.3) runs, at each seed of ``SEEDS`` (far apart: sessions' streams are
seeded additively, so neighbouring seeds are nearly the same run), write
``reports/<kind>/NAME.<seed>.json``: ``pyserq.run(...).json()`` verbatim.
Programs are compiled with the header's overrides (tests/corpus.py) and the
seed override, from the program's own directory, as regen.py does.

Usage: python3 tests/programs/regen_reports.py [--check]
"""
import os
import sys
from pathlib import Path

import pyserq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from corpus import header_kwargs, in_dir  # noqa: E402

SEEDS = (1, 10000019, 987654321001)
KINDS = ("valid", "sim", "pools", "steps", "warn")


def expected_path(kind, program, seed):
    return HERE / "reports" / kind / ("%s.%d.json" % (program.stem, seed))


def main(argv):
    check = "--check" in argv
    written = differ = failed = 0
    for kind in KINDS:
        (HERE / "reports" / kind).mkdir(parents=True, exist_ok=True)
        for program in sorted((HERE / kind).glob("*.sq")):
            kwargs = header_kwargs(program.read_text())
            for seed in SEEDS:
                kwargs["seed"] = seed
                with in_dir(program.parent):
                    try:
                        text = pyserq.run(pyserq.compile(path=program.name, **kwargs)).json()
                    except ValueError:
                        failed += 1
                        continue
                out = expected_path(kind, program, seed)
                if check:
                    if not out.exists() or out.read_text() != text + "\n":
                        differ += 1
                        print("differs:", out)
                    continue
                out.write_text(text + "\n")
                written += 1
    print("written %d, differing %d, not run by the reference %d" % (written, differ, failed))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
