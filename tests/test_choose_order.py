"""``choose … by (one key)`` compares floats directly (session._choose_one);
it must pick what ordering every member by Rust's ``total_cmp``
(``pools.total_key``) and taking the first least picks: NaN after every
number, -0 before +0, ties to the first member."""
import random

from serq.sim.pools import total_key
from serq.sim.session import _choose_one

VALUES = [0.0, -0.0, 1.0, -1.0, float("nan"), float("inf"), -float("inf"), 2.0]


def test_one_key_choice_is_total_cmp_order():
    rnd = random.Random(7)
    for _ in range(5000):
        n = rnd.randint(1, 6)
        xs = [rnd.choice(VALUES) for _ in range(n)]
        a = [0.0]
        got = _choose_one(None, a, 0, lambda s: xs[int(a[0])], n)
        keys = [total_key(x) for x in xs]
        assert got == float(min(range(n), key=lambda j: (keys[j], j))), xs
