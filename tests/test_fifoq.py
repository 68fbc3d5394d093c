"""The first-in, first-out queue the compiled core uses where the
interpreted one uses a deque (sim/fifoq.py): every operation, in any
order, does what the deque's does, and a taken item is not kept."""
import gc
import weakref
from collections import deque

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from serq.sim.fifoq import FifoQueue


class Item(object):
    """Compares equal only to itself, as sessions and jobs do."""


class AgainstDeque(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.q = FifoQueue()
        self.d = deque()
        self.made = [Item() for _ in range(6)]

    @rule(k=st.integers(0, 5))
    def append(self, k):
        self.q.append(self.made[k])
        self.d.append(self.made[k])

    @rule()
    def popleft(self):
        if self.d:
            assert self.q.popleft() is self.d.popleft()
        else:
            with pytest.raises(IndexError):
                self.q.popleft()

    @rule(k=st.integers(0, 5))
    def remove(self, k):
        x = self.made[k]
        if x in self.d:
            self.d.remove(x)
            self.q.remove(x)
        else:
            with pytest.raises(ValueError):
                self.q.remove(x)

    @invariant()
    def same(self):
        assert bool(self.q) == bool(self.d)
        assert len(self.q) == len(self.d)
        assert [id(x) for x in self.q] == [id(x) for x in self.d]
        for x in self.made:
            assert (x in self.q) == (x in self.d)


TestAgainstDeque = AgainstDeque.TestCase
TestAgainstDeque.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


def test_a_taken_item_is_not_kept():
    q = FifoQueue()
    a, b = Item(), Item()
    q.append(a)
    q.append(b)
    ref = weakref.ref(a)
    assert q.popleft() is a
    del a
    gc.collect()
    assert ref() is None  # (b is still queued; a's slot was cleared)
    assert q.popleft() is b and not q


def test_the_list_is_kept_when_the_queue_empties():
    q = FifoQueue()
    for _ in range(3):
        for k in range(5):
            q.append(Item())
        while q:
            q.popleft()
        assert q.head == q.tail == 0 and len(q.items) == 5
