"""A hold names each pool once: where two of its references name the same
member (known only when the hold runs, as with a drawn or computed index),
the run stops at the hold with the member named (sim/holds.py, run_hold),
whichever two of the references they are."""
import pytest

from serq.compiler import compile_program
from serq.errors import RunError
from serq.runner import run_program

PROGRAM = """stage s : fifo(1);
pool p[2] { cap 16; }
pool q { cap 16; }
workload { arrive poisson(1); init { set k = 1; } }
session { hold %s { run s (1); } }
run { horizon 5; seed 3; }
"""


def _run(tmp_path, refs):
    path = tmp_path / "hold.sq"
    path.write_text(PROGRAM % refs)
    return path, run_program(compile_program(str(path)))


@pytest.mark.parametrize("refs, member", [
    ("p[k] (1), q (1), p[1] (1)", "p[1]"),  # the first and the third
    ("q (1), p[k] (1), p[1] (1)", "p[1]"),  # the second and the third
    ("p[k] (1), p[1] (1), q (1)", "p[1]"),  # the first two
    ("p[k - 1] (1), p[0] (2), p[k] (1), p[1] (1)", "p[0]"),  # the first pair found
])
def test_a_member_named_twice_stops_the_run_at_the_hold(tmp_path, refs, member):
    with pytest.raises(RunError) as e:
        _run(tmp_path, refs)
    path = tmp_path / "hold.sq"
    text = str(e.value)
    assert "two references name the same member, `%s`: a hold takes each pool once" % member \
        in text
    assert "in the `hold` statement at %s:5:16" % path in text


def test_distinct_members_run(tmp_path):
    # every session holds both members of p and q: each pool admits each
    _, report = _run(tmp_path, "p[k - 1] (1), q (1), p[k] (2)")
    counts = [(row.name, row.index, row.admissions) for row in report.pools]
    assert report.arrivals > 0
    assert counts == [("p", 0, report.arrivals), ("p", 1, report.arrivals),
                      ("q", None, report.arrivals)]
