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


def test_several_keys_compare_as_lists_of_total_keys():
    """``keys_less`` (choose by several keys, compiled and interpreted)
    orders key lists exactly as comparing their ``total_key`` lists does:
    NaN equal to NaN and after every number, -0 before +0, the first key
    that differs deciding."""
    from serq.sim.pools import keys_less

    rnd = random.Random(11)
    for _ in range(20000):
        n = rnd.randint(1, 3)
        a = [rnd.choice(VALUES) for _ in range(n)]
        b = [rnd.choice(VALUES) for _ in range(n)]
        want = [total_key(x) for x in a] < [total_key(y) for y in b]
        assert keys_less(a, b) == want, (a, b)
    assert total_key(-0.0) < total_key(0.0) and total_key(-1.0) < total_key(-0.0)
    assert total_key(float("inf")) < total_key(float("nan")) == total_key(-float("nan"))
