"""``serq run --dump DIR``: the raw series behind the report as CSV.

* ``DIR/<observe>.csv``: header ``time,session,turn,value``, one row per
  sample after warm-up, in recording order;
* ``DIR/gauge/<gauge>.csv``: header ``time,value``, one row per change
  point (the whole run, warm-up included).

Floats are written with ``repr`` (they read back exactly), integers in
decimal.  Names are used as file names unchanged (a queue's observation
``Q.x`` gives ``Q.x.csv``).
"""
import os
from typing import Iterable, List, Mapping

from .._dataclass import dataclass, field


@dataclass
class ObserveSeries:
    """The samples of one observation, parallel lists."""
    times: List[float] = field(default_factory=list)
    sessions: List[int] = field(default_factory=list)
    turns: List[int] = field(default_factory=list)
    values: List[float] = field(default_factory=list)

    def add(self, t: float, session: int, turn: int, value: float) -> None:
        self.times.append(t)
        self.sessions.append(session)
        self.turns.append(turn)
        self.values.append(value)


@dataclass
class GaugeSeries:
    """The change points of one gauge."""
    times: List[float] = field(default_factory=list)
    values: List[float] = field(default_factory=list)


def _cell(x) -> str:
    if isinstance(x, float):
        return repr(x)
    return str(x)


def _write(path: str, header: str, rows: Iterable) -> None:
    from ..atomic import replacing
    with replacing(path, "w", newline="") as f:
        f.write(header + "\n")
        for row in rows:
            f.write(",".join(_cell(x) for x in row) + "\n")


def write_dump(directory: str, observes: Mapping[str, ObserveSeries],
               gauges: Mapping[str, GaugeSeries]) -> List[str]:
    """Write the CSV files (creating the directories); returns their paths.
    Each file is replaced whole (``serq.atomic``); a failure raises
    ``OutputError`` naming the file, the files before it written, it and
    the ones after it left as they were."""
    from ..errors import OutputError
    written: List[str] = []
    jobs = [(os.path.join(directory, name + ".csv"), "time,session,turn,value",
             zip(s.times, s.sessions, s.turns, s.values)) for name, s in observes.items()]
    gdir = os.path.join(directory, "gauge")
    jobs += [(os.path.join(gdir, name + ".csv"), "time,value", zip(g.times, g.values))
             for name, g in gauges.items()]
    for folder in [directory] + ([gdir] if gauges else []):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            why = e.strerror or str(e)
            if os.path.exists(folder) and not os.path.isdir(folder):
                why = "it is not a folder (--dump names a folder for the CSV files)"
            raise OutputError("cannot write the dump to %s: %s" % (folder, why))
    try:
        for path, header, rows in jobs:
            _write(path, header, rows)
            written.append(path)
    except OutputError as e:
        left = len(jobs) - len(written) - 1
        if left > 0:
            e.notes.append("the dump's %d file(s) after it were not written" % left)
        raise
    return written
