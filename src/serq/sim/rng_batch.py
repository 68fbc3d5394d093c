"""Batched setup of session streams: the first ChaCha12 block of many
sessions at once (see the comment below), bit-identical to ``rng``'s one
by one.  (This module builds on ``rng``, the scalar generator.)"""
import struct
from typing import Any, Callable, Dict, Final, List, Optional, Sequence, Tuple

from . import rng as _core
from .rng import STATEMENT_KIND, WORKLOAD_KIND, Rng, substream
from .rng_chacha import _C0, _C1, _C2, _C3, _M32, _M64
from .rng_seed import _PCG_INC, _PCG_MUL, native_first_block

# ---------------------------------------------------------------------------
# Batched setup of session streams
#
# Every arriving session gets a statement stream (and, when the workload has
# an ``init`` block, a workload stream) and nearly always draws from it, so
# the seed mixing, the key and the first block -- everything ``Rng`` does on
# its first draw -- are most of what random numbers cost a simulation.  The
# serials come in order, so ``statement_streams``/``StatementStreams`` (and
# the workload versions) do that work for k sessions at once, SIMD-style, on
# wide integers whose lanes hold one session each (lane j: serial first + j):
#
# * the splitmix64 mixing and the PCG32 states: 64-bit values in 128-bit
#   lanes, so that a product by a 64-bit constant stays inside its lane;
#   masked back to 64 bits after each step;
# * PCG32's output rotation, by an amount that differs per lane: the 32-bit
#   word doubled into a 64-bit lane (``t | t << 32``) is shifted right by 1,
#   2, 4, 8 and 16 in the lanes where that bit of the amount is set (a lane
#   mask selects the shifted or the unshifted value); bits the shifts bring
#   in from the next lane stay above bit 32 - 1 + (64 - 32 - 31) = 32;
# * ChaCha12: state word i of the k blocks is one integer of k 32-bit lanes.
#   An addition modulo 2**32 per lane adds the low 31 bits of each lane
#   (no carry leaves a lane) and sets bit 31 with an xor; a rotation is two
#   shifts and two masks.
#
# Lanes change width through bytes (``to_bytes``, a strided memoryview,
# ``from_bytes``) and are read out with ``struct``: flat tuples, word-major
# (word i of lane j at ``i * k + j``), so a stream's words are ``[j::k]``.
# A batched stream then holds its seed, its key and its first block, exactly
# what ``Rng`` would have computed on its first draw; what follows is the
# ordinary four-block refill.
#
# On PyPy the same functions compute the streams one by one with the plain
# code (``use_implementation("scalar")``), which its JIT makes faster than
# wide integers.

_GOLDEN: Final = 0x9E3779B97F4A7C15
_MIX1: Final = 0xBF58476D1CE4E5B9
_MIX2: Final = 0x94D049BB133111EB

#: Largest batch (lanes per wide integer); ``StatementStreams`` starts with
#: ``BATCH_FIRST`` and doubles up to it, so a short run computes few unused
#: streams.
BATCH_MAX: Final = 512
BATCH_FIRST: Final = 16
#: ``substreams`` sets up fewer streams than this one by one.
BATCH_MIN: Final = 4


def _spread(value: int, lanes: int, width: int) -> int:
    """``value`` (below ``2 ** width``) in each of ``lanes`` lanes of
    ``width`` bits (a multiple of 8), built from bytes: a sum of shifted
    ones costs time quadratic in the lanes (a large batch once took more
    than the run)."""
    return int.from_bytes(value.to_bytes(width // 8, "little") * lanes, "little")


class _BatchShape(object):
    """Constants for a batch of ``k`` streams."""

    __slots__ = ("k", "ones128", "iota", "w64", "inc", "ones8", "m32x8",
                 "L", "H", "U16", "D16", "U12", "D12", "U8", "D8", "U7", "D7",
                 "consts", "seeds", "keys", "words")

    def __init__(self, k: int) -> None:
        self.k = k
        self.ones128 = _spread(1, k, 128)
        self.iota = int.from_bytes(b"".join([j.to_bytes(16, "little") for j in range(k)]),
                                   "little")
        self.w64 = self.ones128 * _M64
        self.inc = self.ones128 * _PCG_INC
        self.ones8 = _spread(1, 8 * k, 64)
        self.m32x8 = self.ones8 * _M32
        ones = _spread(1, k, 32)
        self.L = ones * 0x7FFFFFFF
        self.H = ones * 0x80000000
        self.U16 = ones * ((_M32 << 16) & _M32)
        self.D16 = ones * ((1 << 16) - 1)
        self.U12 = ones * ((_M32 << 12) & _M32)
        self.D12 = ones * ((1 << 12) - 1)
        self.U8 = ones * ((_M32 << 8) & _M32)
        self.D8 = ones * ((1 << 8) - 1)
        self.U7 = ones * ((_M32 << 7) & _M32)
        self.D7 = ones * ((1 << 7) - 1)
        self.consts = (ones * _C0, ones * _C1, ones * _C2, ones * _C3)
        self.seeds: Callable[[bytes], Tuple[int, ...]] = struct.Struct("<%dQ" % k).unpack
        self.keys: Callable[[bytes], Tuple[int, ...]] = struct.Struct("<%dI" % (8 * k)).unpack
        self.words: Callable[[bytes], Tuple[int, ...]] = struct.Struct("<%dI" % (16 * k)).unpack


_BATCH_SHAPES: Dict[int, _BatchShape] = {}


def _batch_shape(k: int) -> _BatchShape:
    shape = _BATCH_SHAPES.get(k)
    if shape is None:
        shape = _BATCH_SHAPES[k] = _BatchShape(k)
    return shape


def _narrow(value: int, nbytes: int, code: Any) -> bytes:
    """The low halves of the lanes of ``value`` (``nbytes`` long), as bytes:
    ``code`` "Q" takes 128-bit lanes to 64, "I" 64-bit lanes to 32."""
    return memoryview(value.to_bytes(nbytes, "little")).cast(code)[::2].tobytes()


def _wide_keys(seed: int, first: int, b: int, c: int, sh: _BatchShape
               ) -> Tuple[Tuple[int, ...], bytes]:
    """Seeds and keys of ``substream(seed, first + j, b, c)`` for the ``k``
    lanes of ``sh``: the seeds as a tuple, the keys as bytes (32-bit words,
    word-major)."""
    k = sh.k
    W = sh.w64
    ones = sh.ones128
    # substream_seed: three splitmix64 steps, adding first + j, b, c.
    x = (ones * ((seed + _GOLDEN + first) & _M64) + sh.iota) & W
    v: Optional[int]
    for v in (b, c, None):
        x = (((x ^ (x >> 30)) & W) * _MIX1) & W
        x = (((x ^ (x >> 27)) & W) * _MIX2) & W
        x = (x ^ (x >> 31)) & W
        if v is not None:
            x = (x + ones * ((_GOLDEN + v) & _M64)) & W
    nbytes = 16 * k
    seeds = sh.seeds(_narrow(x, nbytes, "Q"))
    # seed_key: eight PCG32 steps; the xorshifted words and the rotations.
    words: List[bytes] = []
    rots: List[bytes] = []
    inc = sh.inc
    for _i in range(8):
        x = (x * _PCG_MUL + inc) & W
        words.append((((x >> 18) ^ x) >> 27).to_bytes(nbytes, "little"))
        rots.append((x >> 59).to_bytes(nbytes, "little"))
    t = int.from_bytes(memoryview(b"".join(words)).cast("Q")[::2].tobytes(), "little") & sh.m32x8
    r = int.from_bytes(memoryview(b"".join(rots)).cast("Q")[::2].tobytes(), "little")
    t |= t << 32
    ones = sh.ones8
    for bit in (0, 1, 2, 3, 4):
        m = (r >> bit) & ones
        t ^= (t ^ (t >> (1 << bit))) & ((m << 64) - m)
    return seeds, _narrow(t, 64 * k, "I")


def _wide_first_blocks(key_bytes: bytes, sh: _BatchShape) -> Tuple[int, ...]:
    """Block 0 of the ``k`` keys in ``key_bytes``: a flat tuple of ``16 * k``
    words, word-major."""
    n = 4 * sh.k
    k0, k1, k2, k3, k4, k5, k6, k7 = [
        int.from_bytes(key_bytes[n * i:n * (i + 1)], "little") for i in range(8)]
    L = sh.L
    H = sh.H
    U16 = sh.U16
    D16 = sh.D16
    U12 = sh.U12
    D12 = sh.D12
    U8 = sh.U8
    D8 = sh.D8
    U7 = sh.U7
    D7 = sh.D7
    c0, c1, c2, c3 = sh.consts
    x0, x1, x2, x3 = c0, c1, c2, c3
    x4, x5, x6, x7, x8, x9, x10, x11 = k0, k1, k2, k3, k4, k5, k6, k7
    x12 = x13 = x14 = x15 = 0  # counter 0, stream 0
    for _ in (0, 1, 2, 3, 4, 5):
        # column round: (0,4,8,12) (1,5,9,13) (2,6,10,14) (3,7,11,15)
        t = x0 ^ x4; x0 = ((x0 & L) + (x4 & L)) ^ (t & H)
        t = x12 ^ x0; x12 = ((t << 16) & U16) | ((t >> 16) & D16)
        t = x8 ^ x12; x8 = ((x8 & L) + (x12 & L)) ^ (t & H)
        t = x4 ^ x8; x4 = ((t << 12) & U12) | ((t >> 20) & D12)
        t = x0 ^ x4; x0 = ((x0 & L) + (x4 & L)) ^ (t & H)
        t = x12 ^ x0; x12 = ((t << 8) & U8) | ((t >> 24) & D8)
        t = x8 ^ x12; x8 = ((x8 & L) + (x12 & L)) ^ (t & H)
        t = x4 ^ x8; x4 = ((t << 7) & U7) | ((t >> 25) & D7)
        t = x1 ^ x5; x1 = ((x1 & L) + (x5 & L)) ^ (t & H)
        t = x13 ^ x1; x13 = ((t << 16) & U16) | ((t >> 16) & D16)
        t = x9 ^ x13; x9 = ((x9 & L) + (x13 & L)) ^ (t & H)
        t = x5 ^ x9; x5 = ((t << 12) & U12) | ((t >> 20) & D12)
        t = x1 ^ x5; x1 = ((x1 & L) + (x5 & L)) ^ (t & H)
        t = x13 ^ x1; x13 = ((t << 8) & U8) | ((t >> 24) & D8)
        t = x9 ^ x13; x9 = ((x9 & L) + (x13 & L)) ^ (t & H)
        t = x5 ^ x9; x5 = ((t << 7) & U7) | ((t >> 25) & D7)
        t = x2 ^ x6; x2 = ((x2 & L) + (x6 & L)) ^ (t & H)
        t = x14 ^ x2; x14 = ((t << 16) & U16) | ((t >> 16) & D16)
        t = x10 ^ x14; x10 = ((x10 & L) + (x14 & L)) ^ (t & H)
        t = x6 ^ x10; x6 = ((t << 12) & U12) | ((t >> 20) & D12)
        t = x2 ^ x6; x2 = ((x2 & L) + (x6 & L)) ^ (t & H)
        t = x14 ^ x2; x14 = ((t << 8) & U8) | ((t >> 24) & D8)
        t = x10 ^ x14; x10 = ((x10 & L) + (x14 & L)) ^ (t & H)
        t = x6 ^ x10; x6 = ((t << 7) & U7) | ((t >> 25) & D7)
        t = x3 ^ x7; x3 = ((x3 & L) + (x7 & L)) ^ (t & H)
        t = x15 ^ x3; x15 = ((t << 16) & U16) | ((t >> 16) & D16)
        t = x11 ^ x15; x11 = ((x11 & L) + (x15 & L)) ^ (t & H)
        t = x7 ^ x11; x7 = ((t << 12) & U12) | ((t >> 20) & D12)
        t = x3 ^ x7; x3 = ((x3 & L) + (x7 & L)) ^ (t & H)
        t = x15 ^ x3; x15 = ((t << 8) & U8) | ((t >> 24) & D8)
        t = x11 ^ x15; x11 = ((x11 & L) + (x15 & L)) ^ (t & H)
        t = x7 ^ x11; x7 = ((t << 7) & U7) | ((t >> 25) & D7)
        # diagonal round: (0,5,10,15) (1,6,11,12) (2,7,8,13) (3,4,9,14)
        t = x0 ^ x5; x0 = ((x0 & L) + (x5 & L)) ^ (t & H)
        t = x15 ^ x0; x15 = ((t << 16) & U16) | ((t >> 16) & D16)
        t = x10 ^ x15; x10 = ((x10 & L) + (x15 & L)) ^ (t & H)
        t = x5 ^ x10; x5 = ((t << 12) & U12) | ((t >> 20) & D12)
        t = x0 ^ x5; x0 = ((x0 & L) + (x5 & L)) ^ (t & H)
        t = x15 ^ x0; x15 = ((t << 8) & U8) | ((t >> 24) & D8)
        t = x10 ^ x15; x10 = ((x10 & L) + (x15 & L)) ^ (t & H)
        t = x5 ^ x10; x5 = ((t << 7) & U7) | ((t >> 25) & D7)
        t = x1 ^ x6; x1 = ((x1 & L) + (x6 & L)) ^ (t & H)
        t = x12 ^ x1; x12 = ((t << 16) & U16) | ((t >> 16) & D16)
        t = x11 ^ x12; x11 = ((x11 & L) + (x12 & L)) ^ (t & H)
        t = x6 ^ x11; x6 = ((t << 12) & U12) | ((t >> 20) & D12)
        t = x1 ^ x6; x1 = ((x1 & L) + (x6 & L)) ^ (t & H)
        t = x12 ^ x1; x12 = ((t << 8) & U8) | ((t >> 24) & D8)
        t = x11 ^ x12; x11 = ((x11 & L) + (x12 & L)) ^ (t & H)
        t = x6 ^ x11; x6 = ((t << 7) & U7) | ((t >> 25) & D7)
        t = x2 ^ x7; x2 = ((x2 & L) + (x7 & L)) ^ (t & H)
        t = x13 ^ x2; x13 = ((t << 16) & U16) | ((t >> 16) & D16)
        t = x8 ^ x13; x8 = ((x8 & L) + (x13 & L)) ^ (t & H)
        t = x7 ^ x8; x7 = ((t << 12) & U12) | ((t >> 20) & D12)
        t = x2 ^ x7; x2 = ((x2 & L) + (x7 & L)) ^ (t & H)
        t = x13 ^ x2; x13 = ((t << 8) & U8) | ((t >> 24) & D8)
        t = x8 ^ x13; x8 = ((x8 & L) + (x13 & L)) ^ (t & H)
        t = x7 ^ x8; x7 = ((t << 7) & U7) | ((t >> 25) & D7)
        t = x3 ^ x4; x3 = ((x3 & L) + (x4 & L)) ^ (t & H)
        t = x14 ^ x3; x14 = ((t << 16) & U16) | ((t >> 16) & D16)
        t = x9 ^ x14; x9 = ((x9 & L) + (x14 & L)) ^ (t & H)
        t = x4 ^ x9; x4 = ((t << 12) & U12) | ((t >> 20) & D12)
        t = x3 ^ x4; x3 = ((x3 & L) + (x4 & L)) ^ (t & H)
        t = x14 ^ x3; x14 = ((t << 8) & U8) | ((t >> 24) & D8)
        t = x9 ^ x14; x9 = ((x9 & L) + (x14 & L)) ^ (t & H)
        t = x4 ^ x9; x4 = ((t << 7) & U7) | ((t >> 25) & D7)
    out: List[bytes] = []
    for v, w in ((x0, c0), (x1, c1), (x2, c2), (x3, c3), (x4, k0), (x5, k1), (x6, k2),
                 (x7, k3), (x8, k4), (x9, k5), (x10, k6), (x11, k7)):
        out.append((((v & L) + (w & L)) ^ ((v ^ w) & H)).to_bytes(n, "little"))
    for v in (x12, x13, x14, x15):
        out.append(v.to_bytes(n, "little"))
    return sh.words(b"".join(out))


def _wide_batch(seed: int, first: int, k: int, b: int, c: int
                ) -> Tuple[Tuple[int, ...], Tuple[int, ...], Tuple[int, ...]]:
    """``(seeds, keys, words)`` of ``substream(seed, first + j, b, c)`` for
    ``j < k``: flat tuples, word-major (a stream's key is ``keys[j::k]``)."""
    sh = _batch_shape(k)
    seeds, key_bytes = _wide_keys(seed, first, b, c, sh)
    return seeds, sh.keys(key_bytes), _wide_first_blocks(key_bytes, sh)


def _wide_starts(seed: int, first: int, k: int, b: int, c: int
                 ) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """``_wide_batch`` without the keys, which a stream does not keep
    (Rng._next_words works its key out again if it refills)."""
    sh = _batch_shape(k)
    seeds, key_bytes = _wide_keys(seed, first, b, c, sh)
    return seeds, _wide_first_blocks(key_bytes, sh)


def _prepared(seed: int, words: Sequence[int]) -> Rng:
    """A generator that has drawn nothing, its first block given (its key
    is worked out again from the seed if it refills: Rng._next_words)."""
    self = Rng(seed)
    self._buf = words
    self._counter = 1
    return self


def substreams(seed: int, first: int, count: int, b: int, c: int) -> List[Rng]:
    """``[substream(seed, first + j, b, c) for j in range(count)]``, their
    first blocks computed together (see above); the same draws."""
    out: List[Rng] = []
    if (_core.implementation() == "scalar" or _core._IMPL.sub_first_block is not None
            or count < BATCH_MIN):
        # (with a first block from the arguments, ``substream``'s own is
        # the cheaper)
        for a in range(first, first + count):
            out.append(substream(seed, a, b, c))
        return out
    while count > 0:
        k = BATCH_MAX if count > BATCH_MAX else count
        seeds, words = _wide_starts(seed, first, k, b, c)
        for j in range(k):
            out.append(_prepared(seeds[j], words[j::k]))
        first += k
        count -= k
    return out


def statement_streams(seed: int, first_serial: int, count: int) -> List[Rng]:
    """``[statement_stream(seed, first_serial + i) for i in range(count)]``,
    set up in batches."""
    return substreams(seed, first_serial, count, 0, STATEMENT_KIND)


def workload_streams(seed: int, first_serial: int, count: int, turns_taken: int = 0
                     ) -> List[Rng]:
    """``[workload_stream(seed, first_serial + i, turns_taken) for i in
    range(count)]``, set up in batches."""
    return substreams(seed, first_serial, count, turns_taken, WORKLOAD_KIND)


class Substreams(object):
    """``get(a)`` is a new ``substream(seed, a, b, c)`` -- the same draws --
    whose setup was done in a batch with the next ones: asked for ``a``
    outside the current batch, it computes ``a``, ``a + 1``, ... at once,
    ``BATCH_FIRST`` streams the first time, twice as many each next time up
    to ``BATCH_MAX``.  Made for increasing ``a`` (each ``get`` is then O(1)
    amortised); any order gives the right streams.  Each call returns a
    fresh generator, also for an ``a`` asked before.
    """

    __slots__ = ("seed", "b", "c", "_first", "_k", "_size", "_seeds", "_words", "_one",
                 "_native")

    def __init__(self, seed: int, b: int, c: int) -> None:
        self.seed = seed
        self.b = b
        self.c = c
        self._first = 0
        self._k = 0
        self._size = BATCH_FIRST
        self._seeds: Tuple[int, ...] = ()
        self._words: Tuple[int, ...] = ()
        # Where the implementation computes a substream's first block from
        # its arguments (compiled: machine integers), that is cheaper than
        # its share of a batch on wide integers.
        self._one: Optional[Callable[[int, int, int, int], Any]] = \
            _core._IMPL.sub_first_block
        # (that function is rng_seed's, on machine integers: called as
        # itself, compiled it is a C call, not a Python one)
        self._native: bool = self._one is native_first_block

    def get(self, a: int) -> Rng:
        """A new generator for ``substream(seed, a, b, c)``."""
        one = self._one
        if one is not None:
            seed = self.seed
            b = self.b
            c = self.c
            r = Rng(seed, a, b, c, True)  # (the seed, and the key of a refill, on demand)
            words: Any = native_first_block(seed, a, b, c) if self._native else \
                one(seed, a, b, c)
            r._buf = words  # (a Words16: a read-only sequence of the words)
            r._counter = 1
            return r
        j = a - self._first
        k = self._k
        if not 0 <= j < k:
            if _core.implementation() == "scalar":
                return Rng._deferred((self.seed, a, self.b, self.c))
            k = self._fill(a)
            j = 0
        # _prepared(...), inlined
        r = Rng(self._seeds[j])
        r._buf = self._words[j::k]  # (the key: Rng._next_words, if it refills)
        r._counter = 1
        return r

    def _fill(self, a: int) -> int:
        k = self._size
        self._seeds, self._words = _wide_starts(self.seed, a, k, self.b, self.c)
        self._first = a
        self._k = k
        if k < BATCH_MAX:
            self._size = min(2 * k, BATCH_MAX)
        return k


class StatementStreams(Substreams):
    """``get(serial)`` is ``statement_stream(seed, serial)``, set up in batches."""

    __slots__ = ()

    def __init__(self, seed: int) -> None:
        Substreams.__init__(self, seed, 0, STATEMENT_KIND)


class WorkloadStreams(Substreams):
    """``get(serial)`` is ``workload_stream(seed, serial, turns_taken)``
    (``init`` blocks: ``turns_taken`` 0), set up in batches."""

    __slots__ = ()

    def __init__(self, seed: int, turns_taken: int = 0) -> None:
        Substreams.__init__(self, seed, turns_taken, WORKLOAD_KIND)
