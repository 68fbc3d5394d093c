"""ChaCha keys from seeds, as rand 0.9 derives them.

``substream_seed`` mixes a run's seed with three numbers (splitmix64 steps)
into the u64 that seeds a per-session stream; ``seed_key`` is rand_core's
``seed_from_u64``, eight PCG32 outputs as the key words.  ``_seed_key_fast``
is the same unrolled, and ``_key_s64``/``_sub_key_s64`` the same on signed
64-bit machine integers (PyPy's wrapping operations).  rng.py picks which
(``use_implementation``).
"""
from typing import TYPE_CHECKING, Any, Callable, Final, Tuple

from .rng_chacha import _M32, _M64, Key, Words16, chacha12_words

if TYPE_CHECKING:
    # machine integers where mypyc compiles this module (see the end)
    from mypy_extensions import i64


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
    for _i in range(8):
        state = (state * _PCG_MUL + _PCG_INC) & _M64
        x = (((state >> 18) ^ state) >> 27) & _M32
        rot = state >> 59
        key.append(((x >> rot) | (x << (32 - rot))) & _M32)
    return tuple(key)


_PCG_MUL: Final = 6364136223846793005
_PCG_INC: Final = 11634580027462260723
# their 32-bit halves, small integers (for the machine-integer version below)
_PCG_MUL_H: Final = 0x5851F42D
_PCG_MUL_L: Final = 0x4C957F2D
_PCG_INC_H: Final = 0xA17654E4
_PCG_INC_L: Final = 0x6FBE17F3


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
# Seeding on machine integers (mypyc)
#
# Where mypyc compiles this module, ``i64`` locals are machine integers, but
# a u64 does not fit one (and signed overflow is not defined in C), so each
# 64-bit value is kept as two 32-bit halves, high and low, and every
# intermediate result stays below 2**50: a product of 64-bit values modulo
# 2**64 is put together from products of 16-bit and 32-bit pieces.  The
# same code on Python's integers (interpreted) gives the same bits.

def _mul64(ah: "i64", al: "i64", bh: "i64", bl: "i64") -> "Tuple[i64, i64]":
    """``(ah:al) * (bh:bl)`` modulo 2**64, as its high and low halves."""
    p0: i64 = (al & 0xFFFF) * bl
    p1: i64 = (al >> 16) * bl
    s: i64 = p0 + ((p1 & 0xFFFF) << 16)  # al * bl modulo 2**32, and its carry above
    carry: i64 = (s >> 32) + (p1 >> 16)  # the high half of al * bl
    # ah * bl and al * bh modulo 2**32
    c1: i64 = (ah & 0xFFFF) * bl + ((((ah >> 16) * bl) & 0xFFFF) << 16)
    c2: i64 = (al & 0xFFFF) * bh + ((((al >> 16) * bh) & 0xFFFF) << 16)
    return (carry + (c1 & _M32) + (c2 & _M32)) & _M32, s & _M32


def _pcg_next(sh: "i64", sl: "i64") -> "Tuple[i64, i64, i64]":
    """PCG32 advanced once (``state * MUL + INC`` modulo 2**64, as halves)
    and its output (XSH-RR) for the new state: ``(sh, sl, word)``."""
    # state * MUL (``_mul64``, written out: eight of these make a key)
    bl: i64 = _PCG_MUL_L
    bh: i64 = _PCG_MUL_H
    p0: i64 = (sl & 0xFFFF) * bl
    p1: i64 = (sl >> 16) * bl
    s: i64 = p0 + ((p1 & 0xFFFF) << 16)
    carry: i64 = (s >> 32) + (p1 >> 16)
    c1: i64 = (sh & 0xFFFF) * bl + ((((sh >> 16) * bl) & 0xFFFF) << 16)
    c2: i64 = (sl & 0xFFFF) * bh + ((((sl >> 16) * bh) & 0xFFFF) << 16)
    mh: i64 = (carry + (c1 & _M32) + (c2 & _M32)) & _M32
    # + INC
    ml: i64 = (s & _M32) + _PCG_INC_L
    sh = (mh + _PCG_INC_H + (ml >> 32)) & _M32
    sl = ml & _M32
    # t = (s >> 18) ^ s; x = (t >> 27) & M32; the rotation is s >> 59
    th: i64 = (sh >> 18) ^ sh
    tl: i64 = (((sl >> 18) | (sh << 14)) & _M32) ^ sl
    x: i64 = ((tl >> 27) | (th << 5)) & _M32
    r: i64 = sh >> 27
    # (32 - r) & 31: for r = 0, x << 32 would leave the 64-bit integers
    return sh, sl, ((x >> r) | (x << ((32 - r) & 31))) & _M32


def _mix_step(xh: "i64", xl: "i64", v: int) -> "Tuple[i64, i64]":
    """One of ``substream_seed``'s three mixing steps on ``x`` (halves):
    ``x = splitmix64(x + golden + v)``."""
    vh: i64 = (v >> 32) & _M32
    vl: i64 = v & _M32
    # x = x + golden + v (golden = 0x9E3779B97F4A7C15)
    lo: i64 = xl + 0x7F4A7C15 + vl
    xh = (xh + 0x9E3779B9 + vh + (lo >> 32)) & _M32
    xl = lo & _M32
    # x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
    yh: i64 = xh ^ (xh >> 30)
    yl: i64 = xl ^ (((xl >> 30) | (xh << 2)) & _M32)
    xh, xl = _mul64(yh, yl, 0xBF58476D, 0x1CE4E5B9)
    # x = (x ^ (x >> 27)) * 0x94D049BB133111EB
    yh = xh ^ (xh >> 27)
    yl = xl ^ (((xl >> 27) | (xh << 5)) & _M32)
    xh, xl = _mul64(yh, yl, 0x94D049BB, 0x133111EB)
    # x ^= x >> 31
    return xh ^ (xh >> 31), xl ^ (((xl >> 31) | (xh << 1)) & _M32)


def native_first_block(seed: int, a: int, b: int, c: int) -> Words16:
    """``chacha12_block(seed_key(substream_seed(seed, a, b, c)), 0)`` on
    machine integers: a session stream's first block, computed at once.
    (The key's words stay in locals, not a list, which compiled would box
    each of them; the helpers' tuples of ``i64`` are returned unboxed; the
    words stay unboxed too, in a ``Words16``.)"""
    xh: i64 = (seed >> 32) & _M32
    xl: i64 = seed & _M32
    xh, xl = _mix_step(xh, xl, a)
    xh, xl = _mix_step(xh, xl, b)
    xh, xl = _mix_step(xh, xl, c)
    # seed_key: eight PCG32 outputs, the state advanced before each
    xh, xl, k0 = _pcg_next(xh, xl)
    xh, xl, k1 = _pcg_next(xh, xl)
    xh, xl, k2 = _pcg_next(xh, xl)
    xh, xl, k3 = _pcg_next(xh, xl)
    xh, xl, k4 = _pcg_next(xh, xl)
    xh, xl, k5 = _pcg_next(xh, xl)
    xh, xl, k6 = _pcg_next(xh, xl)
    xh, xl, k7 = _pcg_next(xh, xl)
    return chacha12_words(k0, k1, k2, k3, k4, k5, k6, k7, 0, 0)
