"""``walk_in_order`` (sim/poolsim.py), the walk of the step stages that may
plan and of the pools to serve, against the walk it stands for: a list of
every member in index order, skipping non-members, where one that joins
during the walk is visited if its index is past the one being visited."""
import random

from serq.sim.poolsim import walk_in_order
from serq.sim.recorded import Recorded


def _member(k):
    r = Recorded()
    r.index = k
    return r


def _model(everyone, members, joins, stays):
    """The list walk: (visits in order, members left)."""
    members = set(members)
    visits = []
    for x in everyone:  # (in index order)
        if x not in members:
            continue
        visits.append(x.index)
        members |= joins.get(x.index, set())
        if not stays[x.index]:
            members.discard(x)
    return visits, members


def test_the_walk_visits_as_the_list_walk_does():
    g = random.Random(5)
    for _ in range(500):
        n = g.randrange(1, 12)
        indices = g.sample(range(40), n)
        everyone = sorted((_member(k) for k in indices), key=lambda r: r.index)
        members = {r for r in everyone if g.random() < 0.6}
        joins = {}
        for r in everyone:
            if g.random() < 0.3:
                joins[r.index] = {y for y in everyone if g.random() < 0.3}
        stays = {r.index: g.random() < 0.5 for r in everyone}
        want_visits, want_left = _model(everyone, members, joins, stays)
        got = []
        live = set(members)

        def visit(x):
            got.append(x.index)
            live.update(joins.get(x.index, set()))
            return stays[x.index]

        walk_in_order(live, visit)
        assert got == want_visits
        assert live == want_left
