"""The front-end conformance corpus (tests/programs): finding programs and
reading their ``// serq-args:`` header (the syntax regen.py documents)."""
import os
import shlex
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, List

PROGRAMS = Path(__file__).resolve().parent / "programs"
HEADER = "serq-args:"


def programs(kind: str, big: bool = False) -> List[Path]:
    """The programs of ``kind``; with ``big``, also the generated ones of
    about 100 000 tokens (``big_*.sq``, written first by
    ``programs/generate_big.py``), which are slow to compile and to fuzz."""
    if big:
        sys.path.insert(0, str(PROGRAMS))
        try:
            from generate_big import write_all
        finally:
            sys.path.remove(str(PROGRAMS))
        write_all()
    return sorted(p for p in (PROGRAMS / kind).glob("*.sq") if big or not p.name.startswith("big_"))


def header_kwargs(text: str) -> Dict[str, object]:
    """Keyword arguments for ``compile_program`` from the header line."""
    kwargs: Dict[str, object] = {}
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if not s.startswith("//"):
            break
        body = s[2:].strip()
        if not body.startswith(HEADER):
            continue
        toks = shlex.split(body[len(HEADER):])
        if len(toks) % 2:
            raise ValueError("serq-args: `%s` needs a value" % toks[-1])
        for opt, val in zip(toks[::2], toks[1::2]):
            if opt in ("--set", "--def"):
                name, _, expr = val.partition("=")
                kwargs.setdefault("sets" if opt == "--set" else "defs", {})[name] = expr
            elif opt in ("--seed", "--arrivals"):
                kwargs[opt[2:]] = int(val)
            elif opt in ("--horizon", "--warmup"):
                kwargs[opt[2:]] = float(val)
            elif opt == "--trace":
                kwargs["trace"] = val
            else:
                raise ValueError("serq-args: unknown option %s" % opt)
    return kwargs


@contextmanager
def in_dir(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)
