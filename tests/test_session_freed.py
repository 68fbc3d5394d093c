"""An ended session is freed when it ends (Simulator.finish): the cache
entries it leaves in its pools stop naming it, so that its random stream,
its generator and its attribute list do not stay alive until the entries
are evicted.  The entries of an ended session read their snapshot either
way, so reports do not change (tests/test_conformance_reports.py)."""
import gc
from pathlib import Path

from serq.compiler import compile_program
from serq.runner import simulate

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "chat_prefix_reuse.sq"


def _ended_sessions(sim):  # (sim: held while the sweep runs)
    """The ended sessions that objects still reach, after a sweep."""
    gc.collect()
    return [o for o in gc.get_objects()
            if type(o).__name__ == "Session" and type(o).__module__ == "serq.sim.session"
            and not o.alive]


def test_ended_sessions_are_not_kept_by_their_cache_entries():
    before = {id(s) for s in _ended_sessions(None)}  # (other tests' simulators)
    sim = simulate(compile_program(str(EXAMPLE), horizon=300.0, warmup=30.0))
    kv = [p for p in sim.pools if p.name == "kv"][0]
    entries = list(kv.entries.values())
    assert kv.stats.evicted_entries > 0  # (the cache filled and evicted)
    # Entries of ended conversations are still cached, and name no session:
    ended = [e for e in entries if e.session is None]
    assert len(ended) > 100
    assert all(e.session.alive for e in entries if e.session is not None)
    assert all(e.snapshot is not None for e in ended)
    assert sum(1 for s in sim.spawned if s.alive) > 0
    # No ended session is reachable but through the simulator's list of the
    # sessions it spawned, which it compacts once half of them have ended.
    spawned = {id(s) for s in sim.spawned}
    assert [s for s in _ended_sessions(sim) if id(s) not in spawned and id(s) not in before] == []
