"""ChaCha12 blocks, as rand_chacha computes them for rand 0.9's ``StdRng``.

A block is 16 32-bit words of the ChaCha state after 12 rounds, for a key
(eight words), a 64-bit block counter and a zero stream id.  Two versions
give the same words: a plain one on 32-bit words (``chacha12_block``,
``_blocks_scalar``; machine integers where mypyc compiles this module, and
what PyPy's JIT runs well) and a whole-row one on wide integers
(``_one_row_block``, ``_four_row_blocks``; fastest interpreted on CPython).
``_first_block_*`` and ``_refill_*`` are what a generator (rng.py) calls
for its first block and each refill of ``REFILL_BLOCKS`` blocks.
"""
import operator
import struct
from typing import TYPE_CHECKING, Any, Callable, Final, Iterator, List, Sequence, Tuple

if TYPE_CHECKING:
    # Only in annotations of local variables (never evaluated at run time):
    # machine integers where mypyc compiles this module, ints elsewhere.
    from mypy_extensions import i64

_M32: Final = 0xFFFFFFFF
_M64: Final = 0xFFFFFFFFFFFFFFFF

# "expand 32-byte k"
_C0: Final = 0x61707865
_C1: Final = 0x3320646E
_C2: Final = 0x79622D32
_C3: Final = 0x6B206574

#: A ChaCha key: eight 32-bit words.
Key = Tuple[int, ...]


class Words16(object):
    """One block's 16 words as attributes (integers unboxed where mypyc
    compiles this module, where a list would hold 16 boxed integers: a
    session's stream keeps its first block so, rng.py ``Rng._buf``).  A
    read-only sequence of the words; ``f64``/``u64`` read a pair at once."""

    __slots__ = ("w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7",
                 "w8", "w9", "w10", "w11", "w12", "w13", "w14", "w15")

    def __init__(self, w0: int, w1: int, w2: int, w3: int, w4: int, w5: int, w6: int,
                 w7: int, w8: int, w9: int, w10: int, w11: int, w12: int, w13: int,
                 w14: int, w15: int) -> None:
        self.w0 = w0
        self.w1 = w1
        self.w2 = w2
        self.w3 = w3
        self.w4 = w4
        self.w5 = w5
        self.w6 = w6
        self.w7 = w7
        self.w8 = w8
        self.w9 = w9
        self.w10 = w10
        self.w11 = w11
        self.w12 = w12
        self.w13 = w13
        self.w14 = w14
        self.w15 = w15

    def word(self, i: int) -> int:
        """Word ``i``, 0 <= i < 16 (a search on ``i``, not an index)."""
        if i < 8:
            if i < 4:
                if i < 2:
                    return self.w0 if i == 0 else self.w1
                return self.w2 if i == 2 else self.w3
            if i < 6:
                return self.w4 if i == 4 else self.w5
            return self.w6 if i == 6 else self.w7
        if i < 12:
            if i < 10:
                return self.w8 if i == 8 else self.w9
            return self.w10 if i == 10 else self.w11
        if i < 14:
            return self.w12 if i == 12 else self.w13
        return self.w14 if i == 14 else self.w15

    def u64(self, i: int) -> int:
        """Words ``i`` and ``i + 1`` as one u64, the first the low half."""
        return (self.word(i + 1) << 32) | self.word(i)

    def f64(self, i: int) -> float:
        """``random::<f64>()`` of the u64 at ``i``: its top 53 bits * 2**-53."""
        return ((self.word(i + 1) << 21) | (self.word(i) >> 11)) * 1.1102230246251565e-16

    def to_list(self) -> List[int]:
        return [self.w0, self.w1, self.w2, self.w3, self.w4, self.w5, self.w6, self.w7,
                self.w8, self.w9, self.w10, self.w11, self.w12, self.w13, self.w14, self.w15]

    def __len__(self) -> int:
        return 16

    def __iter__(self) -> Iterator[int]:
        return iter(self.to_list())

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, int) and -16 <= i < 16:
            return self.word(i if i >= 0 else i + 16)
        return self.to_list()[i]  # (a slice; or the list's IndexError)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Words16):
            return self.to_list() == other.to_list()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self.to_list()))


# ---------------------------------------------------------------------------
# ChaCha12 blocks: plain 32-bit version


def chacha12_block(key: Key, counter: int) -> List[int]:
    """One ChaCha12 block (16 words) for ``key`` (8 words) at ``counter``."""
    return chacha12_words(key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
                          counter & _M32, (counter >> 32) & _M32).to_list()


def chacha12_words(k0: "i64", k1: "i64", k2: "i64", k3: "i64", k4: "i64", k5: "i64",
                   k6: "i64", k7: "i64", n0: "i64", n1: "i64") -> "Words16":
    """The block of the key words ``k0``..``k7`` at the counter whose low
    and high words are ``n0`` and ``n1``.

    The state is the four constants, the key, the 64-bit counter (low word
    first) and a zero 64-bit stream id.  The quarter-rounds are written out;
    ``x_i`` is word ``i`` of the working state.  The words are ``i64``
    (machine integers where mypyc compiles this): every value stays below
    2**48, so the arithmetic is the same as on Python's integers.
    """
    M: i64 = _M32
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
    for _i in range(6):
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
    return Words16(
        (x0 + _C0) & M, (x1 + _C1) & M, (x2 + _C2) & M, (x3 + _C3) & M,
        (x4 + k0) & M, (x5 + k1) & M, (x6 + k2) & M, (x7 + k3) & M,
        (x8 + k4) & M, (x9 + k5) & M, (x10 + k6) & M, (x11 + k7) & M,
        (x12 + n0) & M, (x13 + n1) & M, x14, x15)


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


def _block_words16(key: Key, counter: int) -> Words16:
    """The block at ``counter``, unboxed: the first block and each refill
    where mypyc compiles this module (one block at a time; the words are
    the same stream, and a draw reads them without boxing)."""
    return chacha12_words(key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
                          counter & _M32, (counter >> 32) & _M32)


def _first_words16(key: Key) -> Words16:
    return _block_words16(key, 0)


def _next_counter(counter: int, step: int = REFILL_BLOCKS) -> int:
    """``counter + step`` (blocks of a refill) modulo 2**64.

    Written without ``& _M64``: on PyPy, 2**64 - 1 is a big integer, and a
    result computed with one stays a (slow) big integer object even when it
    is small, which would make every later ChaCha operation slow.  For the
    same reason the plain version derives keys on signed 64-bit machine
    integers there (``_key_s64``).
    """
    counter += step
    if counter > _M64:
        counter -= 1 << 64
    return counter
