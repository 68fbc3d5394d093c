"""Random streams, bit-identical to serQ 0.1.3 (``pyserq.Rng``).

serQ draws every random number from rand 0.9's ``StdRng`` created with
``SeedableRng::seed_from_u64``.  That generator is ChaCha with 12 rounds
(rand_chacha), keyed by eight PCG32 outputs of the 64-bit seed (rand_core's
``seed_from_u64``), with a 64-bit block counter starting at 0 and a zero
stream id.  The generator is, observably, one continuous stream of 32-bit
words, block after block:

* ``next_u32`` is the next word;
* ``next_u64`` is the next two words, the first one the low half (also when
  the pair straddles rand_chacha's four-block buffer);
* ``random_f64`` is ``(next_u64 >> 11) * 2**-53``;
* ``range_u32``/``range_u64`` are ``random_range(low..=high)``: one widening
  multiply of a full-width draw by the range size, plus one more draw when the
  low half of the product lands in the biased zone (rand 0.9's variant of
  Canon's method); a full-width range is a plain draw;
* ``range_f64`` is ``((next_u64 >> 12) * 2**-52) * (high - low) + low``.

Since each ChaCha block depends only on the key and its counter, this module
generates blocks when they are first needed (a stream nobody draws from costs
only an object; the key is derived on the first draw), one block first and
then four at a time, without changing any value.

Which stream a simulation draw reads (section 7.3 of the feature map):
``arrival_stream`` (``seed``), ``machine_stream``, ``evict_stream``,
``trace_stream`` (``seed`` xor a constant) and, per session, ``substream``
for the workload, statement and fork-leg streams.  The per-session streams of
consecutive serials can be set up many at once, with the same draws, by
rng_batch.py (which builds on this module):
``statement_streams``/``workload_streams`` (lists), ``StatementStreams(seed)``
and ``WorkloadStreams(seed)`` (``get(serial)``, batches filled ahead), all on
``substreams``/``Substreams``.  serq's extension laws (sim/xdist.py) draw
from companions of these streams (``Rng.extension``), never from them.

On CPython the blocks are computed with whole-row arithmetic on wide integers
(the four columns of the ChaCha state packed into 64-bit lanes of one
integer, the way SIMD implementations do it); on other interpreters (PyPy) a
plain unrolled 32-bit version, which their JIT compiles well.  Both are
checked against each other and against ``pyserq.Rng`` in tests/test_rng.py.
"""
import operator
import platform
import struct
from typing import TYPE_CHECKING, Any, Callable, Final, List, Optional, Sequence, Tuple

if TYPE_CHECKING:
    # Only in annotations of local variables (never evaluated at run time):
    # machine integers where mypyc compiles this module, ints elsewhere.
    from mypy_extensions import i64

__all__ = [
    "Rng",
    "substream",
    "substream_seed",
    "arrival_stream",
    "machine_stream",
    "evict_stream",
    "trace_stream",
    "workload_stream",
    "statement_stream",
    "leg_stream",
    "ARRIVAL_SEED_XOR",
    "MACHINE_SEED_XOR",
    "EVICT_SEED_XOR",
    "TRACE_SEED_XOR",
    "WORKLOAD_KIND",
    "STATEMENT_KIND",
    "LEG_KIND",
    "EXTENSION_TAG",
    "EXTENSION_LAWS",
]

#: Stream seeds: the run's ``seed`` xor these constants.
ARRIVAL_SEED_XOR: Final = 0x0000000000000000
MACHINE_SEED_XOR: Final = 0x5851F42D4C957F2D
EVICT_SEED_XOR: Final = 0x2545F4914F6CDD1D
TRACE_SEED_XOR: Final = 0x6A09E667F3BCC908

#: The last ``substream`` argument: which per-session stream.
WORKLOAD_KIND: Final = 1
STATEMENT_KIND: Final = 2
LEG_KIND: Final = 3

#: ``Rng.extension``: the tag ("serq" in ASCII) and the number of laws.
EXTENSION_TAG: Final = 0x73657271
EXTENSION_LAWS: Final = 4

_M32: Final = 0xFFFFFFFF
_M64: Final = 0xFFFFFFFFFFFFFFFF
_TWO_M53: Final = 1.0 / 9007199254740992.0  # 2**-53
_TWO_M52: Final = 1.0 / 4503599627370496.0  # 2**-52
_EMPTY_RANGE: Final = "an empty or unbounded range"

# "expand 32-byte k"
_C0: Final = 0x61707865
_C1: Final = 0x3320646E
_C2: Final = 0x79622D32
_C3: Final = 0x6B206574

#: A ChaCha key: eight 32-bit words.
Key = Tuple[int, ...]


# ---------------------------------------------------------------------------
# Seeding


def substream_seed(seed: int, a: int, b: int, c: int) -> int:
    """The u64 that seeds ``substream(seed, a, b, c)`` (splitmix64 steps)."""
    x = seed & _M64
    for v in (a, b, c):
        x = (x + 0x9E3779B97F4A7C15 + v) & _M64
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
        x ^= x >> 31
    return x


def seed_key(seed: int) -> Key:
    """rand_core's ``seed_from_u64``: eight PCG32 (XSH-RR) outputs as key words.

    The PCG state is advanced before each output; the outputs are taken
    little-endian, which makes each one exactly one 32-bit key word.
    """
    state = seed
    key = []
    for _ in range(8):
        state = (state * _PCG_MUL + _PCG_INC) & _M64
        x = (((state >> 18) ^ state) >> 27) & _M32
        rot = state >> 59
        key.append(((x >> rot) | (x << (32 - rot))) & _M32)
    return tuple(key)


_PCG_MUL: Final = 6364136223846793005
_PCG_INC: Final = 11634580027462260723


def _seed_key_fast(s: int, A: int = _PCG_MUL, C: int = _PCG_INC, M: int = _M64,
                   W: int = _M32) -> Key:
    """``seed_key`` with the loop unrolled (the hot path of a fresh stream)."""
    s = (s * A + C) & M; x = (((s >> 18) ^ s) >> 27) & W; r = s >> 59
    k0 = ((x >> r) | (x << (32 - r))) & W
    s = (s * A + C) & M; x = (((s >> 18) ^ s) >> 27) & W; r = s >> 59
    k1 = ((x >> r) | (x << (32 - r))) & W
    s = (s * A + C) & M; x = (((s >> 18) ^ s) >> 27) & W; r = s >> 59
    k2 = ((x >> r) | (x << (32 - r))) & W
    s = (s * A + C) & M; x = (((s >> 18) ^ s) >> 27) & W; r = s >> 59
    k3 = ((x >> r) | (x << (32 - r))) & W
    s = (s * A + C) & M; x = (((s >> 18) ^ s) >> 27) & W; r = s >> 59
    k4 = ((x >> r) | (x << (32 - r))) & W
    s = (s * A + C) & M; x = (((s >> 18) ^ s) >> 27) & W; r = s >> 59
    k5 = ((x >> r) | (x << (32 - r))) & W
    s = (s * A + C) & M; x = (((s >> 18) ^ s) >> 27) & W; r = s >> 59
    k6 = ((x >> r) | (x << (32 - r))) & W
    s = (s * A + C) & M; x = (((s >> 18) ^ s) >> 27) & W; r = s >> 59
    k7 = ((x >> r) | (x << (32 - r))) & W
    return (k0, k1, k2, k3, k4, k5, k6, k7)


# Seeding on machine integers (PyPy).  PyPy's ints are 64-bit signed machine
# words until a result overflows; u64 arithmetic with ``& _M64`` keeps them
# as slow big integers.  The same steps on signed 64-bit values with PyPy's
# wrapping operations (``__pypy__.intop``) give the same bits at machine
# speed.  Elsewhere the operations are emulated (for the tests).

_MAX_S64: Final = (1 << 63) - 1


def _as_s64(v: int) -> int:
    """The signed 64-bit integer with the bits of ``v`` modulo 2**64."""
    if 0 <= v <= _MAX_S64:
        return v
    v &= _M64
    return int(v - (1 << 64)) if v > _MAX_S64 else int(v)


def _pypy_intop() -> Any:
    try:
        from __pypy__ import intop  # type: ignore[import-not-found]
    except ImportError:
        return None
    return intop


_intop: Any = _pypy_intop()


def _emulated_add(a: int, b: int) -> int:
    return _as_s64(a + b)


def _emulated_mul(a: int, b: int) -> int:
    return _as_s64(a * b)


def _emulated_ushr(a: int, n: int) -> int:
    return (a & _M64) >> n


_Op = Callable[[int, int], int]
_wrap_add: _Op = _emulated_add if _intop is None else _intop.int_add
_wrap_mul: _Op = _emulated_mul if _intop is None else _intop.int_mul
_ushr: _Op = _emulated_ushr if _intop is None else _intop.uint_rshift


def _key_s64(s: int, add: _Op = _wrap_add, mul: _Op = _wrap_mul, shr: _Op = _ushr,
             W: int = _M32) -> Key:
    """``seed_key`` of the seed whose signed 64-bit form is ``s``."""
    A = _as_s64(_PCG_MUL)
    C = _as_s64(_PCG_INC)
    key = []
    for _ in (0, 1, 2, 3, 4, 5, 6, 7):
        s = add(mul(s, A), C)
        x = shr(shr(s, 18) ^ s, 27) & W
        r = shr(s, 59)
        # (32 - r) & 31: x << 32 would leave the machine integers when r is 0
        key.append(((x >> r) | (x << ((32 - r) & 31))) & W)
    return tuple(key)


def _sub_key_s64(seed: int, a: int, b: int, c: int, add: _Op = _wrap_add,
                 mul: _Op = _wrap_mul, shr: _Op = _ushr) -> Key:
    """``seed_key(substream_seed(seed, a, b, c))`` on signed 64-bit values."""
    x = _as_s64(seed)
    g = _as_s64(0x9E3779B97F4A7C15)
    m1 = _as_s64(0xBF58476D1CE4E5B9)
    m2 = _as_s64(0x94D049BB133111EB)
    for v in (a, b, c):
        x = add(add(x, g), _as_s64(v))
        x = mul(x ^ shr(x, 30), m1)
        x = mul(x ^ shr(x, 27), m2)
        x ^= shr(x, 31)
    return _key_s64(x)


def _seed_key_s64(seed: int) -> Key:
    return _key_s64(_as_s64(seed))


def _sub_key_rows(seed: int, a: int, b: int, c: int) -> Key:
    return _seed_key_fast(substream_seed(seed, a, b, c))


# ---------------------------------------------------------------------------
# ChaCha12 blocks: plain 32-bit version


def chacha12_block(key: Key, counter: int) -> List[int]:
    """One ChaCha12 block (16 words) for ``key`` (8 words) at ``counter``.

    The state is the four constants, the key, the 64-bit counter (low word
    first) and a zero 64-bit stream id.  The quarter-rounds are written out;
    ``x_i`` is word ``i`` of the working state.  The words are ``i64``
    (machine integers where mypyc compiles this): every value stays below
    2**48, so the arithmetic is the same as on Python's integers.
    """
    M: i64 = _M32
    k0: i64 = key[0]
    k1: i64 = key[1]
    k2: i64 = key[2]
    k3: i64 = key[3]
    k4: i64 = key[4]
    k5: i64 = key[5]
    k6: i64 = key[6]
    k7: i64 = key[7]
    n0: i64 = counter & _M32
    n1: i64 = (counter >> 32) & _M32
    x0: i64 = _C0
    x1: i64 = _C1
    x2: i64 = _C2
    x3: i64 = _C3
    x4: i64 = k0
    x5: i64 = k1
    x6: i64 = k2
    x7: i64 = k3
    x8: i64 = k4
    x9: i64 = k5
    x10: i64 = k6
    x11: i64 = k7
    x12: i64 = n0
    x13: i64 = n1
    x14: i64 = 0
    x15: i64 = 0
    for _ in range(6):
        # column round: (0,4,8,12) (1,5,9,13) (2,6,10,14) (3,7,11,15)
        x0 = (x0 + x4) & M; x12 ^= x0; x12 = ((x12 << 16) & M) | (x12 >> 16)
        x8 = (x8 + x12) & M; x4 ^= x8; x4 = ((x4 << 12) & M) | (x4 >> 20)
        x0 = (x0 + x4) & M; x12 ^= x0; x12 = ((x12 << 8) & M) | (x12 >> 24)
        x8 = (x8 + x12) & M; x4 ^= x8; x4 = ((x4 << 7) & M) | (x4 >> 25)
        x1 = (x1 + x5) & M; x13 ^= x1; x13 = ((x13 << 16) & M) | (x13 >> 16)
        x9 = (x9 + x13) & M; x5 ^= x9; x5 = ((x5 << 12) & M) | (x5 >> 20)
        x1 = (x1 + x5) & M; x13 ^= x1; x13 = ((x13 << 8) & M) | (x13 >> 24)
        x9 = (x9 + x13) & M; x5 ^= x9; x5 = ((x5 << 7) & M) | (x5 >> 25)
        x2 = (x2 + x6) & M; x14 ^= x2; x14 = ((x14 << 16) & M) | (x14 >> 16)
        x10 = (x10 + x14) & M; x6 ^= x10; x6 = ((x6 << 12) & M) | (x6 >> 20)
        x2 = (x2 + x6) & M; x14 ^= x2; x14 = ((x14 << 8) & M) | (x14 >> 24)
        x10 = (x10 + x14) & M; x6 ^= x10; x6 = ((x6 << 7) & M) | (x6 >> 25)
        x3 = (x3 + x7) & M; x15 ^= x3; x15 = ((x15 << 16) & M) | (x15 >> 16)
        x11 = (x11 + x15) & M; x7 ^= x11; x7 = ((x7 << 12) & M) | (x7 >> 20)
        x3 = (x3 + x7) & M; x15 ^= x3; x15 = ((x15 << 8) & M) | (x15 >> 24)
        x11 = (x11 + x15) & M; x7 ^= x11; x7 = ((x7 << 7) & M) | (x7 >> 25)
        # diagonal round: (0,5,10,15) (1,6,11,12) (2,7,8,13) (3,4,9,14)
        x0 = (x0 + x5) & M; x15 ^= x0; x15 = ((x15 << 16) & M) | (x15 >> 16)
        x10 = (x10 + x15) & M; x5 ^= x10; x5 = ((x5 << 12) & M) | (x5 >> 20)
        x0 = (x0 + x5) & M; x15 ^= x0; x15 = ((x15 << 8) & M) | (x15 >> 24)
        x10 = (x10 + x15) & M; x5 ^= x10; x5 = ((x5 << 7) & M) | (x5 >> 25)
        x1 = (x1 + x6) & M; x12 ^= x1; x12 = ((x12 << 16) & M) | (x12 >> 16)
        x11 = (x11 + x12) & M; x6 ^= x11; x6 = ((x6 << 12) & M) | (x6 >> 20)
        x1 = (x1 + x6) & M; x12 ^= x1; x12 = ((x12 << 8) & M) | (x12 >> 24)
        x11 = (x11 + x12) & M; x6 ^= x11; x6 = ((x6 << 7) & M) | (x6 >> 25)
        x2 = (x2 + x7) & M; x13 ^= x2; x13 = ((x13 << 16) & M) | (x13 >> 16)
        x8 = (x8 + x13) & M; x7 ^= x8; x7 = ((x7 << 12) & M) | (x7 >> 20)
        x2 = (x2 + x7) & M; x13 ^= x2; x13 = ((x13 << 8) & M) | (x13 >> 24)
        x8 = (x8 + x13) & M; x7 ^= x8; x7 = ((x7 << 7) & M) | (x7 >> 25)
        x3 = (x3 + x4) & M; x14 ^= x3; x14 = ((x14 << 16) & M) | (x14 >> 16)
        x9 = (x9 + x14) & M; x4 ^= x9; x4 = ((x4 << 12) & M) | (x4 >> 20)
        x3 = (x3 + x4) & M; x14 ^= x3; x14 = ((x14 << 8) & M) | (x14 >> 24)
        x9 = (x9 + x14) & M; x4 ^= x9; x4 = ((x4 << 7) & M) | (x4 >> 25)
    return [
        (x0 + _C0) & M, (x1 + _C1) & M, (x2 + _C2) & M, (x3 + _C3) & M,
        (x4 + k0) & M, (x5 + k1) & M, (x6 + k2) & M, (x7 + k3) & M,
        (x8 + k4) & M, (x9 + k5) & M, (x10 + k6) & M, (x11 + k7) & M,
        (x12 + n0) & M, (x13 + n1) & M, x14, x15,
    ]


def _blocks_scalar(key: Key, counter: int, n: int) -> List[int]:
    """``n`` consecutive blocks, concatenated (plain version)."""
    out: List[int] = []
    for j in range(n):
        c = counter + j
        if c > _M64:  # (not ``& _M64``: see _next_counter)
            c -= 1 << 64
        out += chacha12_block(key, c)
    return out


# ---------------------------------------------------------------------------
# ChaCha12 blocks: whole-row version
#
# Each row of the 4x4 state (a = words 0-3, b = 4-7, c = 8-11, d = 12-15)
# becomes one integer whose 64-bit lanes hold 32-bit words; with n blocks at
# once, lane ``col * n + j`` holds column ``col`` of block ``j``.  A column
# round is then one quarter-round on (a, b, c, d) lane-wise; the diagonal
# round is the same after rotating the columns of b, c, d by 1, 2, 3.  The
# upper 32 bits of each lane absorb carries and shifted-out bits and are
# masked off.  A lane's word is rotated left by r with one multiplication:
# ``x * (2**32 + 1)`` puts a copy of the (clean, 32-bit) word above itself in
# the lane, so ``>> (32 - r)`` leaves the rotated word in the low 32 bits; the
# mask removes the rest.  Lanes must be at least 57 bits wide for the bits a
# right shift brings down from the next lane to land above bit 31.

_LANE: Final = 64
_DUP: Final = (1 << 32) + 1


class _RowShape(object):
    """Masks and shifts for ``n`` blocks computed at once."""

    __slots__ = ("n", "col", "mask", "full", "spread", "a0")

    def __init__(self, n: int) -> None:
        self.n = n
        self.col = n * _LANE  # bits per column group
        lanes = 4 * n
        self.full = (1 << (_LANE * lanes)) - 1
        self.mask = sum(_M32 << (_LANE * i) for i in range(lanes))
        self.spread = sum(1 << (_LANE * j) for j in range(n))
        col = self.col
        self.a0 = (_C0 | (_C1 << col) | (_C2 << 2 * col) | (_C3 << 3 * col)) * self.spread


def _make_row_blocks(n: int) -> Callable[[Key, int], Sequence[int]]:
    shape = _RowShape(n)
    nbytes = n * 4 * _LANE // 8
    _unpack_lanes = struct.Struct("<%dQ" % (16 * n)).unpack
    _block_major = operator.itemgetter(*[
        row * 4 * n + col * n + j for j in range(n) for row in range(4) for col in range(4)])

    def blocks(key: Key, counter: int, _s: _RowShape = shape, _lane: int = _LANE,
               _m32: int = _M32, _m64: int = _M64, K: int = _DUP) -> Sequence[int]:
        """``n`` consecutive blocks from ``counter``, concatenated (row version),
        as a tuple."""
        n = _s.n
        S = _s.col
        S2 = S + S
        S3 = S2 + S
        M = _s.mask
        F = _s.full
        R = _s.spread
        k0, k1, k2, k3, k4, k5, k6, k7 = key
        A0 = _s.a0
        B0 = (k0 | (k1 << S) | (k2 << S2) | (k3 << S3)) * R
        C0 = (k4 | (k5 << S) | (k6 << S2) | (k7 << S3)) * R
        D0 = 0
        for j in range(n):
            cj = (counter + j) & _m64
            D0 |= ((cj & _m32) << (_lane * j)) | ((cj >> 32) << (_lane * j + S))
        a = A0
        b = B0
        c = C0
        d = D0
        for _ in (0, 1, 2, 3, 4, 5):
            a = (a + b) & M; d = (((d ^ a) * K) >> 16) & M
            c = (c + d) & M; b = (((b ^ c) * K) >> 20) & M
            a = (a + b) & M; d = (((d ^ a) * K) >> 24) & M
            c = (c + d) & M; b = (((b ^ c) * K) >> 25) & M
            b = (b >> S) | ((b << S3) & F)
            c = (c >> S2) | ((c << S2) & F)
            d = (d >> S3) | ((d << S) & F)
            a = (a + b) & M; d = (((d ^ a) * K) >> 16) & M
            c = (c + d) & M; b = (((b ^ c) * K) >> 20) & M
            a = (a + b) & M; d = (((d ^ a) * K) >> 24) & M
            c = (c + d) & M; b = (((b ^ c) * K) >> 25) & M
            b = (b >> S3) | ((b << S) & F)
            c = (c >> S2) | ((c << S2) & F)
            d = (d >> S) | ((d << S3) & F)
        # Lanes to words with C-level helpers: the rows' bytes as 64-bit
        # lanes (row-major, then column, then block), reordered block-major.
        lanes = _unpack_lanes(b"".join([
            ((a + A0) & M).to_bytes(nbytes, "little"),
            ((b + B0) & M).to_bytes(nbytes, "little"),
            ((c + C0) & M).to_bytes(nbytes, "little"),
            ((d + D0) & M).to_bytes(nbytes, "little"),
        ]))
        return _block_major(lanes)

    return blocks


_A0_ONE: Final = _C0 | (_C1 << 64) | (_C2 << 128) | (_C3 << 192)


def _one_row_block(key: Key, counter: int, _m32: int = _M32, _m64: int = _M64,
                   A0: int = _A0_ONE, K: int = _DUP) -> List[int]:
    """One block, row version specialised for a single block (the hot path
    of a fresh stream: lanes are 64 bits, columns 64 bits apart)."""
    M = 0x00000000FFFFFFFF00000000FFFFFFFF00000000FFFFFFFF00000000FFFFFFFF
    F = (1 << 256) - 1
    k0, k1, k2, k3, k4, k5, k6, k7 = key
    B0 = k0 | (k1 << 64) | (k2 << 128) | (k3 << 192)
    C0 = k4 | (k5 << 64) | (k6 << 128) | (k7 << 192)
    counter &= _m64
    D0 = (counter & _m32) | ((counter >> 32) << 64)
    a = A0
    b = B0
    c = C0
    d = D0
    for _ in (0, 1, 2, 3, 4, 5):
        a = (a + b) & M; d = (((d ^ a) * K) >> 16) & M
        c = (c + d) & M; b = (((b ^ c) * K) >> 20) & M
        a = (a + b) & M; d = (((d ^ a) * K) >> 24) & M
        c = (c + d) & M; b = (((b ^ c) * K) >> 25) & M
        b = (b >> 64) | ((b << 192) & F)
        c = (c >> 128) | ((c << 128) & F)
        d = (d >> 192) | ((d << 64) & F)
        a = (a + b) & M; d = (((d ^ a) * K) >> 16) & M
        c = (c + d) & M; b = (((b ^ c) * K) >> 20) & M
        a = (a + b) & M; d = (((d ^ a) * K) >> 24) & M
        c = (c + d) & M; b = (((b ^ c) * K) >> 25) & M
        b = (b >> 192) | ((b << 64) & F)
        c = (c >> 128) | ((c << 128) & F)
        d = (d >> 64) | ((d << 192) & F)
    a += A0
    b += B0
    c += C0
    d += D0
    return [
        a & _m32, (a >> 64) & _m32, (a >> 128) & _m32, (a >> 192) & _m32,
        b & _m32, (b >> 64) & _m32, (b >> 128) & _m32, (b >> 192) & _m32,
        c & _m32, (c >> 64) & _m32, (c >> 128) & _m32, (c >> 192) & _m32,
        d & _m32, (d >> 64) & _m32, (d >> 128) & _m32, (d >> 192) & _m32,
    ]


_four_row_blocks = _make_row_blocks(4)

#: Blocks computed by a refill after the first one.
REFILL_BLOCKS: Final = 4


def _first_block_scalar(key: Key) -> Sequence[int]:
    return chacha12_block(key, 0)


def _refill_scalar(key: Key, counter: int) -> Sequence[int]:
    return _blocks_scalar(key, counter, REFILL_BLOCKS)


def _first_block_rows(key: Key) -> Sequence[int]:
    return _one_row_block(key, 0)


def _refill_rows(key: Key, counter: int) -> Sequence[int]:
    return _four_row_blocks(key, counter)


def _next_counter(counter: int) -> int:
    """``counter + REFILL_BLOCKS`` modulo 2**64.

    Written without ``& _M64``: on PyPy, 2**64 - 1 is a big integer, and a
    result computed with one stays a (slow) big integer object even when it
    is small, which would make every later ChaCha operation slow.  For the
    same reason the plain version derives keys on signed 64-bit machine
    integers there (``_key_s64``).
    """
    counter += REFILL_BLOCKS
    if counter > _M64:
        counter -= 1 << 64
    return counter


class _Implementation(object):
    """The functions that compute keys and blocks (``use_implementation``)."""

    __slots__ = ("name", "first_block", "refill", "seed_key", "sub_key")

    def __init__(self) -> None:
        self.name = ""
        self.first_block: Callable[[Key], Sequence[int]] = _first_block_rows
        self.refill: Callable[[Key, int], Sequence[int]] = _refill_rows
        self.seed_key: Callable[[int], Key] = _seed_key_fast
        self.sub_key: Callable[[int, int, int, int], Key] = _sub_key_rows


_IMPL: Final = _Implementation()


def use_implementation(name: str) -> str:
    """Select how blocks are computed: ``"rows"`` (wide integers, fastest on
    interpreted CPython), ``"scalar"`` (32-bit words, for PyPy) or
    ``"native"`` (the blocks on 32-bit words, machine integers where mypyc
    compiles this module; the rest, and the batched setup of session
    streams, as ``"rows"``).  Results are the same; this exists for
    benchmarks and tests.  Returns the previous name."""
    impl = _IMPL
    previous = impl.name
    if name == "rows":
        impl.first_block, impl.refill = _first_block_rows, _refill_rows
        impl.seed_key, impl.sub_key = _seed_key_fast, _sub_key_rows
    elif name == "native":
        # blocks on 32-bit words, keys and the batched setup on wide integers
        impl.first_block, impl.refill = _first_block_scalar, _refill_scalar
        impl.seed_key, impl.sub_key = _seed_key_fast, _sub_key_rows
    elif name == "scalar":
        impl.first_block, impl.refill = _first_block_scalar, _refill_scalar
        if _intop is not None:
            impl.seed_key, impl.sub_key = _seed_key_s64, _sub_key_s64
        else:
            impl.seed_key, impl.sub_key = seed_key, _sub_key_rows
    else:
        raise ValueError("unknown implementation %r" % (name,))
    impl.name = name
    return previous


def implementation() -> str:
    """The name ``use_implementation`` selected last."""
    return _IMPL.name


def _compiled() -> bool:
    """Whether this module runs compiled (mypyc): its file is not a ``.py``."""
    return not __file__.endswith(".py")


# Wide integers are fastest interpreted on CPython; 32-bit words on PyPy's
# JIT; where mypyc compiles them to machine integers, the blocks.
use_implementation("scalar" if platform.python_implementation() != "CPython"
                   else "native" if _compiled() else "rows")


# ---------------------------------------------------------------------------
# The generator


def _u64_arg(value: Any, what: str) -> int:
    value = operator.index(value)
    if value < 0 or value > _M64:
        raise OverflowError("%s out of range for u64: %d" % (what, value))
    return value


class Rng(object):
    """rand 0.9 ``StdRng::seed_from_u64(seed)``, same methods as ``pyserq.Rng``.

    ``_buf`` holds the words of the blocks generated so far that are not yet
    consumed, from ``_i`` on; ``_counter`` is the next block to generate.
    Nothing is computed until the first draw: not the key, and for a
    ``substream`` not even the seed (``_sub`` keeps its arguments).
    """

    __slots__ = ("_seed", "_sub", "_key", "_buf", "_i", "_counter", "_ext")

    def __init__(self, seed: Optional[int], _sub: Optional[Tuple[int, int, int, int]] = None
                 ) -> None:
        # ``_sub`` is for ``_deferred`` only: seed None, mixed on first draw.
        self._seed: Optional[int] = None if _sub is not None else _u64_arg(seed, "seed")
        self._sub = _sub
        self._key: Optional[Key] = None
        self._buf: Sequence[int] = ()
        self._i = 0
        self._counter = 0
        # the companion streams of serq's extension laws, made on first use
        self._ext: Optional[List[Optional["Rng"]]] = None

    @classmethod
    def _deferred(cls, sub: Tuple[int, int, int, int]) -> "Rng":
        """A generator seeded with ``substream_seed(*sub)``, computed lazily."""
        return cls(None, sub)

    @property
    def seed(self) -> int:
        """The u64 given to ``seed_from_u64``."""
        seed = self._seed
        if seed is None:
            sub = self._sub
            assert sub is not None
            seed = self._seed = substream_seed(sub[0], sub[1], sub[2], sub[3])
        return seed

    def __repr__(self) -> str:
        return "Rng(%d)" % (self.seed,)

    def position(self) -> Tuple[Optional[Key], Sequence[int], int, int, Any]:
        """Where the stream stands, for ``rewind`` (its companions too)."""
        ext = self._ext
        where: Any = None if ext is None else tuple(
            [None if r is None else r.position() for r in ext])
        return self._key, self._buf, self._i, self._counter, where

    def rewind(self, position: Tuple[Optional[Key], Sequence[int], int, int, Any]) -> None:
        """Back to a ``position``: the draws since are drawn again (also
        those of the companion streams; one made since starts afresh)."""
        self._key, self._buf, self._i, self._counter, where = position
        ext = self._ext
        if where is None or ext is None:
            self._ext = None
            return
        for law in range(len(ext)):
            r = ext[law]
            if r is not None:
                if where[law] is None:
                    ext[law] = None
                else:
                    r.rewind(where[law])

    def extension(self, law: int) -> "Rng":
        """The companion stream of extension law ``law`` (sim/xdist.py):
        ``substream(self.seed, EXTENSION_TAG, law, 0)``, made on first use.
        Drawing from it leaves this stream where it is."""
        ext = self._ext
        if ext is None:
            made: List[Optional[Rng]] = [None] * EXTENSION_LAWS
            self._ext = made
            ext = made
        r = ext[law]
        if r is None:
            r = Rng._deferred((self.seed, EXTENSION_TAG, law, 0))
            ext[law] = r
        return r

    # -- buffer management ---------------------------------------------------

    def _next_words(self) -> Sequence[int]:
        """Replace the buffer by its unconsumed tail followed by the next
        block(s); returns the new buffer (``_i`` is reset to 0)."""
        key = self._key
        tail = self._buf[self._i:]
        if key is None:
            # Worked out again from the seed, not kept with the first block:
            # most streams (a session's) never need a second one, and the
            # key's eight words are a third of a live session's memory.
            # A stream that refills keeps it.
            seed = self._seed
            if seed is None:
                sub = self._sub
                assert sub is not None
                key = _IMPL.sub_key(sub[0], sub[1], sub[2], sub[3])
            else:
                key = _IMPL.seed_key(seed)
        if self._counter == 0:
            words = _IMPL.first_block(key)
            self._counter = 1
        else:
            self._key = key
            words = _IMPL.refill(key, self._counter)
            self._counter = _next_counter(self._counter)
        if tail:
            words = tuple(tail) + tuple(words)
        self._buf = words
        self._i = 0
        return words

    # -- raw draws -----------------------------------------------------------

    def next_u32(self) -> int:
        """The next 32-bit word."""
        i = self._i
        try:
            v = self._buf[i]
        except IndexError:
            self._next_words()
            i = 0
            v = self._buf[0]
        self._i = i + 1
        return v

    def next_u64(self) -> int:
        """The next two words, the first as the low half."""
        i = self._i
        b = self._buf
        try:
            v = (b[i + 1] << 32) | b[i]
        except IndexError:
            b = self._next_words()
            i = 0
            v = (b[1] << 32) | b[0]
        self._i = i + 2
        return v

    def random_f64(self) -> float:
        """``random::<f64>()``: ``(next_u64 >> 11) * 2**-53``, in [0, 1)."""
        i = self._i
        b = self._buf
        try:
            v = ((b[i + 1] << 21) | (b[i] >> 11)) * 1.1102230246251565e-16
        except IndexError:
            b = self._next_words()
            i = 0
            v = ((b[1] << 21) | (b[0] >> 11)) * 1.1102230246251565e-16
        self._i = i + 2
        return v

    # -- ranges --------------------------------------------------------------

    def range_u32(self, low: Any, high: Any) -> int:
        """``random_range(low..=high)`` over ``u32``."""
        return _canon_range(self.next_u32, 32, low, high,
                            "out of range integral type conversion attempted")

    def range_u64(self, low: Any, high: Any) -> int:
        """``random_range(low..=high)`` over ``u64``."""
        return _canon_range(self.next_u64, 64, low, high, "int too big to convert")

    def range_f64(self, low: Any, high: Any) -> float:
        """``random_range(low..=high)`` over ``f64``:
        ``((next_u64 >> 12) * 2**-52) * (high - low) + low``."""
        lo = float(low)
        hi = float(high)
        scale = hi - lo
        # Rejects NaN, infinities, low > high and an overflowing width.
        if not (lo <= hi and -_INF < lo and hi < _INF and scale < _INF):
            raise ValueError(_EMPTY_RANGE)
        return ((self.next_u64() >> 12) * _TWO_M52) * scale + lo


_INF: Final = float("inf")


def _canon_range(draw: Callable[[], int], bits: int, low: Any, high: Any,
                 overflow_message: str) -> int:
    """``random_range(low..=high)`` over an unsigned ``bits``-bit integer
    drawn by ``draw``: one widening multiply, and Canon's correction (one
    more product, carrying into the result) when the low half is too close
    to wrapping.  The error messages are pyserq's for each width."""
    mask = (1 << bits) - 1
    lo = operator.index(low)
    hi = operator.index(high)
    if lo < 0 or lo > mask or hi < 0 or hi > mask:
        raise OverflowError(overflow_message)
    if lo > hi:
        raise ValueError(_EMPTY_RANGE)
    size = hi - lo + 1
    if size > mask:
        return draw()
    m = draw() * size
    if (m & mask) > (1 << bits) - size:
        if (m & mask) + ((draw() * size) >> bits) > mask:
            return lo + (m >> bits) + 1
    return lo + (m >> bits)


# ---------------------------------------------------------------------------
# Streams of a run


def substream(seed: int, a: int, b: int, c: int) -> Rng:
    """The generator of ``substream(seed, a, b, c)`` (seed mixed on first draw)."""
    return Rng._deferred((seed, a, b, c))


def arrival_stream(seed: int) -> Rng:
    """Poisson gaps and renewal gap draws."""
    return Rng(seed ^ ARRIVAL_SEED_XOR)


def machine_stream(seed: int) -> Rng:
    """Draws with no session: step ``budget``/``chunk``/``cost``, ``ps`` capacity."""
    return Rng(seed ^ MACHINE_SEED_XOR)


def evict_stream(seed: int) -> Rng:
    """Eviction keys and spill clauses."""
    return Rng(seed ^ EVICT_SEED_XOR)


def trace_stream(seed: int) -> Rng:
    """Unordered trace replay: which trace session comes next."""
    return Rng(seed ^ TRACE_SEED_XOR)


def workload_stream(seed: int, serial: int, turns_taken: int) -> Rng:
    """``init``/``turn`` blocks of session ``serial``; re-created at each ``turn;``."""
    return Rng._deferred((seed, serial, turns_taken, WORKLOAD_KIND))


def statement_stream(seed: int, serial: int) -> Rng:
    """Every draw in the statements of session ``serial``."""
    return Rng._deferred((seed, serial, 0, STATEMENT_KIND))


def leg_stream(seed: int, serial: int, fork_index: int) -> Rng:
    """Draws in fork leg ``fork_index`` (0, 1, ...) of session ``serial``."""
    return Rng._deferred((seed, serial, fork_index, LEG_KIND))
