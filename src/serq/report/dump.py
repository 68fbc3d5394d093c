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
    with open(path, "w", newline="") as f:
        f.write(header + "\n")
        for row in rows:
            f.write(",".join(_cell(x) for x in row) + "\n")


def write_dump(directory: str, observes: Mapping[str, ObserveSeries],
               gauges: Mapping[str, GaugeSeries]) -> List[str]:
    """Write the CSV files (creating the directories); returns their paths.
    ``OSError`` propagates (the CLI reports an unwritable output)."""
    os.makedirs(directory, exist_ok=True)
    written = []
    for name, s in observes.items():
        path = os.path.join(directory, name + ".csv")
        _write(path, "time,session,turn,value",
               zip(s.times, s.sessions, s.turns, s.values))
        written.append(path)
    if gauges:
        gdir = os.path.join(directory, "gauge")
        os.makedirs(gdir, exist_ok=True)
        for name, g in gauges.items():
            path = os.path.join(gdir, name + ".csv")
            _write(path, "time,value", zip(g.times, g.values))
            written.append(path)
    return written
