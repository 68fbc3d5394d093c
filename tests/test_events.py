"""The event heap (sim/events.py): ``push_event`` and ``pop_event`` keep the
very layout heapq keeps with (time, seq, fn, arg) tuples, so that the heap
holds the same event at every index, and pop events in (time, seq) order."""
import heapq
import random

from serq.sim.events import Event, pop_event, push_event


def _layout(heap):
    return [(e.t, e.seq) for e in heap]


def _tuples(heap):
    return [(t, s) for t, s, _, _ in heap]


def test_the_layout_and_the_order_are_heapq_s():
    g = random.Random(5)
    for _ in range(200):
        objects, tuples = [], []
        seq = 0
        popped_o, popped_t = [], []
        # (few distinct times, so that ties on the time are common)
        times = [g.choice([0.0, 1.0, 2.5, g.uniform(0, 3)]) for _ in range(6)]
        for _ in range(g.randrange(1, 120)):
            if objects and g.random() < 0.45:
                first = min(_layout(objects))
                e = pop_event(objects)
                assert (e.t, e.seq) == first
                t = heapq.heappop(tuples)
                popped_o.append((e.t, e.seq))
                popped_t.append((t[0], t[1]))
            else:
                seq += 1
                t = g.choice(times) + g.choice([0.0, 0.0, g.random()])
                push_event(objects, Event(t, seq, None, seq))
                heapq.heappush(tuples, (t, seq, None, seq))
            assert _layout(objects) == _tuples(tuples)
        while objects:
            e = pop_event(objects)
            t = heapq.heappop(tuples)
            popped_o.append((e.t, e.seq))
            popped_t.append((t[0], t[1]))
        assert popped_o == popped_t
        assert tuples == []


def test_an_event_keeps_its_fields_and_is_the_one_pushed():
    heap = []
    a = Event(2.0, 1, len, "a")
    b = Event(1.0, 2, str, "b")
    push_event(heap, a)
    push_event(heap, b)
    assert pop_event(heap) is b
    first = pop_event(heap)
    assert first is a and (first.t, first.seq, first.fn, first.arg) == (2.0, 1, len, "a")
    assert heap == []
