"""serq/floatvec.py: the vectors of floats the time averages keep their
event times and gaps in are librt's where the core is compiled and lists
where it runs interpreted, and hold the same floats either way."""
import struct

import serq
from serq.floatvec import append, compiled_core, vec


def test_the_vectors_follow_the_core_that_runs():
    assert compiled_core() == (serq.core() == "compiled (mypyc)")
    v = vec[float]()
    if compiled_core():
        assert not isinstance(v, list) and "vec" in type(v).__name__
    else:
        assert isinstance(v, list)


def test_append_returns_the_vector_with_each_float_bit_for_bit():
    xs = [0.0, -0.0, 1e-300, 0.1 + 0.2, 3.5, float("inf"), 2.0 ** 60 + 0.5]
    v = vec[float]()
    for i, x in enumerate(xs):
        v = append(v, x)
        assert len(v) == i + 1
        assert struct.pack("<d", v[-1]) == struct.pack("<d", x)
    assert [struct.pack("<d", v[i]) for i in range(len(v))] == [struct.pack("<d", x) for x in xs]
    w = vec[float](xs)
    assert [w[i] for i in range(len(w))] == [v[i] for i in range(len(v))]
