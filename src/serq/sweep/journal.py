"""The runs a sweep has finished, kept next to its output: ``OUT.runs``.

``serq sweep ... -o OUT`` appends each finished run's metrics to
``OUT.runs`` (JSON lines) as it finishes, so that a sweep stopped by
Ctrl-C, SIGTERM, a dead worker or a crash keeps what it computed: run again
with the same output, it takes the runs it finds there and runs only the
others.  When the whole table is written the journal is removed (unless it
also holds runs of another sweep, which are kept).

A run is recognised by its key: the SHA-256 of serq's version, the point's
compiled IR (every ``--set``, ``--def`` and run setting, and any library the
program uses, resolved) with the run's seed in it, the bytes of the trace
the program replays, if any, and the sweep's SLOs, if any.  A run of an edited program, another
point, another seed, a changed trace or another serq is not taken.  Values
are stored as Python's ``json`` writes floats (shortest repr, ``Infinity``
and ``NaN`` included), so a resumed table is byte for byte the table of an
uninterrupted sweep.

File format: a first line ``{"serq_sweep_runs": 1, "serq": VERSION}``, then
one object a line: ``{"key": ..., "point": [...], "seed": S, "metrics":
[[NAME, VALUE], ...]}``.  A line that does not parse (the last one, cut by
a kill) is skipped.
"""
import copy
import hashlib
import json
import os
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import OutputError, UsageError

SUFFIX = ".runs"
FORMAT = 1


def journal_path(output: str) -> str:
    return output + SUFFIX


def run_keys(progs: Sequence, seeds: Sequence[int], extra: str = ""
             ) -> Dict[Tuple[int, int], str]:
    """``(point index, seed)`` -> the run's key; ``extra`` is what else
    decides a run's metrics (the sweep's SLOs), hashed in when not empty."""
    from .. import __version__
    from ..ir.json import dumps
    trace_hashes: Dict[str, str] = {}
    keys = {}
    for i, prog in enumerate(progs):
        trace = ""
        if getattr(prog, "trace", None):
            path = prog.trace
            if path not in trace_hashes:
                h = hashlib.sha256()
                try:
                    with open(path, "rb") as f:
                        for block in iter(lambda: f.read(1 << 20), b""):
                            h.update(block)
                    trace_hashes[path] = h.hexdigest()
                except OSError:
                    trace_hashes[path] = "unreadable"
            trace = trace_hashes[path]
        for seed in seeds:
            p = copy.copy(prog)
            p.seed = seed
            h = hashlib.sha256()
            h.update(("serq %s\n" % __version__).encode("utf-8"))
            h.update(dumps(p).encode("utf-8"))
            h.update(("\ntrace %s\n" % trace).encode("utf-8"))
            if extra:
                h.update(("%s\n" % extra).encode("utf-8"))
            keys[(i, seed)] = h.hexdigest()
    return keys


class Journal(object):
    """``OUT.runs``: ``load()`` the runs kept there, ``add()`` one as it
    finishes, ``finish()`` when the table is complete."""

    def __init__(self, output: str):
        self.path = journal_path(output)
        self.file = None
        self.entries: Dict[str, List] = {}  # key -> metrics
        self.skipped = 0  # lines that did not parse
        self.error: Optional[OutputError] = None  # a failed write: no more are tried

    def load(self) -> Dict[str, List]:
        try:
            with open(self.path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError("cannot read %s (the runs of an interrupted sweep): %s"
                             % (self.path, getattr(e, "strerror", None) or e)) from None
        try:
            head = json.loads(lines[0])
        except ValueError:
            head = None
        if not (isinstance(head, dict) and head.get("serq_sweep_runs") == FORMAT):
            if lines == [""]:  # empty: cut before its first line
                return {}
            raise UsageError("%s is not the runs file of a serq sweep (its first line is not "
                             "serq's): move it away, or write the table elsewhere" % self.path)
        for line in lines[1:]:
            if not line:
                continue
            try:
                d = json.loads(line)
                key, metrics = d["key"], d["metrics"]
                if not isinstance(key, str) or not isinstance(metrics, list):
                    raise ValueError(key)
                self.entries[key] = [(str(m), None if v is None else float(v))
                                     for m, v in metrics]
            except (ValueError, KeyError, TypeError):
                self.skipped += 1
        return self.entries

    def add(self, key: str, point: Sequence, seed: int, metrics: List) -> None:
        """Append one finished run (flushed at once: a kill keeps it).  A
        failed write is kept in ``error`` and ends the journal, not the
        sweep."""
        self.entries[key] = list(metrics)
        if self.error is not None:
            return
        try:
            if self.file is None:
                new = not os.path.exists(self.path) or os.path.getsize(self.path) == 0
                self.file = open(self.path, "a", encoding="utf-8")
                if new:
                    from .. import __version__
                    self.file.write(json.dumps({"serq_sweep_runs": FORMAT,
                                                "serq": __version__}) + "\n")
            self.file.write(json.dumps({"key": key, "point": list(point), "seed": seed,
                                        "metrics": [[m, v] for m, v in metrics]}) + "\n")
            self.file.flush()
        except OSError as e:
            self.error = OutputError("cannot write %s (the finished runs, kept for a rerun to "
                                     "resume): %s" % (self.path, e.strerror or e))
            self.close()

    def close(self) -> None:
        if self.file is not None:
            try:
                self.file.close()
            except OSError:
                pass
            self.file = None

    def finish(self, keys: Sequence[str]) -> Optional[str]:
        """The table is written: remove the journal, unless it holds runs of
        another sweep (then a note saying so)."""
        self.close()
        others = len(set(self.entries) - set(keys))
        if others:
            return ("%s keeps %d run(s) of another sweep written to the same output; remove "
                    "it when they are not wanted" % (self.path, others))
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError as e:
            return "cannot remove %s: %s" % (self.path, e.strerror or e)
        return None
