#!/usr/bin/env python3
"""Regenerate the expected outputs of the front-end conformance corpus.

Runs under CPython with the reference implementation ``pyserq`` 0.1.3
installed.  For every ``*.sq`` directly inside ``valid/``, ``invalid/``, ``diverge/`` and ``warn/``
(libraries in ``*/lib/`` and data in ``*/data/`` are not
programs) it reads the optional ``// serq-args: …`` header line, compiles the
program with ``pyserq.compile(path=…)`` and writes

* ``valid/NAME.ir.json``   - ``Program.to_json()`` verbatim plus ``\\n``;
* ``invalid/NAME.err``     - the reference's ``ValueError`` text verbatim
                              (no trailing newline is added);
* ``diverge/NAME.ir.json`` - as for valid programs: proof that the reference
                              accepts what serq must refuse.

It fails loudly (exit status 1, with a list) when a valid or diverge
program is refused, when an invalid program is accepted, or when an
invalid program fails with anything other than ``ValueError``.

Header syntax (one line, anywhere before the first non-comment line,
split with ``shlex`` so values with spaces can be quoted)::

    // serq-args: --set lam=0.8 --set "C=B / 3" --def svc=~exp(2)
    //            --seed 5 --horizon 100 --warmup 10 --arrivals 50
    //            --trace data/x.csv

(only one line in practice; shown wrapped here).  ``--set`` and ``--def``
may repeat; their values are passed to pyserq as strings.  ``--seed`` and
``--arrivals`` are passed as ``int``, ``--horizon``/``--warmup`` as
``float``.

Working directory: every compile runs with the current directory set to
the directory of the program file, and the program is passed as its bare
file name (``path="NAME.sq"``) so that messages naming a library read
``lib/x.sq:L:C`` rather than an absolute path (``valid/``, ``invalid/`` or
``diverge/``).  ``use`` and a ``trace`` written in the program resolve
relative to the program file anyway; the cwd only matters for the
``--trace`` override, which pyserq reads relative to the current
directory.  So ``--trace data/x.csv`` in ``valid/foo.sq`` means
``valid/data/x.csv``.  The script itself may be run from any directory.

Programs too large to commit (``big_*.sq``, about 100 000 tokens each) are
written by ``generate_big.py`` first; only their outputs are committed.

Usage: ``python3 tests/programs/regen.py [--check]``; with ``--check``
nothing is written, and the script reports outputs that differ from the
committed ones.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pyserq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from corpus import header_kwargs  # noqa: E402  (tests/corpus.py)
from generate_big import write_all as write_big  # noqa: E402  (next to this file)

HERE = Path(__file__).resolve().parent
KINDS = ("valid", "invalid", "diverge", "warn")


def parse_header(text: str) -> dict:
    """Return the keyword arguments for pyserq.compile from the header (the
    same reader the tests use, so the two cannot drift apart)."""
    try:
        return header_kwargs(text)
    except ValueError as e:
        raise SystemExit(str(e))


def compile_one(path: Path):
    """Compile one program; return (ir_json or None, error text or None)."""
    kwargs = parse_header(path.read_text())
    old = os.getcwd()
    os.chdir(path.parent)  # cwd = the program's directory (for --trace)
    try:
        prog = pyserq.compile(path=path.name, **kwargs)
        return prog.to_json(), None
    except ValueError as e:
        return None, str(e)
    finally:
        os.chdir(old)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    problems: list[str] = []
    changed: list[str] = []
    counts = {}
    write_big()  # the programs too large to commit (generate_big.py)
    for kind in KINDS:
        d = HERE / kind
        progs = sorted(d.glob("*.sq"))
        counts[kind] = len(progs)
        for path in progs:
            try:
                ir, err = compile_one(path)
            except Exception as e:  # TypeError, OverflowError, ...
                problems.append(f"{kind}/{path.name}: {type(e).__name__}: {e}")
                continue
            if kind == "invalid":
                if err is None:
                    problems.append(f"invalid/{path.name}: the reference ACCEPTS it")
                    continue
                out, content = path.with_suffix(".err"), err
            else:
                if ir is None:
                    first = err.splitlines()[0] if err else ""
                    problems.append(f"{kind}/{path.name}: the reference REFUSES it: {first}")
                    continue
                out, content = path.with_suffix(".ir.json"), ir + "\n"
            old = out.read_text() if out.exists() else None
            if old != content:
                changed.append(str(out.relative_to(HERE)))
                if not check:
                    out.write_text(content)
        # outputs whose program is gone
        for stale in list(d.glob("*.ir.json")) + list(d.glob("*.err")):
            stem = stale.name.split(".")[0]
            if not (d / f"{stem}.sq").exists():
                changed.append(f"{stale.relative_to(HERE)} (stale)")
                if not check:
                    stale.unlink()
    print(f"pyserq {pyserq.__version__}: " +
          ", ".join(f"{k} {n}" for k, n in counts.items()))
    if changed:
        print(("differ: " if check else "written: ") + str(len(changed)))
        if check:
            for c in changed:
                print("  " + c)
    if problems:
        print("FAILED:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    return 1 if (check and changed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
