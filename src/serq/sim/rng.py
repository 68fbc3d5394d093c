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
The blocks are computed in rng_chacha.py, the keys from seeds in
rng_seed.py; this module chooses between their versions
(``use_implementation``) and is the generator and the run's streams.
"""
import operator
import sys
from typing import Any, Callable, Final, List, Optional, Sequence, Tuple

from .rng_chacha import (_M64, REFILL_BLOCKS, Key, Words16, _block_words16, _first_block_rows,
                         _first_block_scalar, _first_words16, _next_counter,
                         _refill_rows, _refill_scalar)
from .rng_seed import (_intop, _seed_key_fast, _seed_key_s64, _sub_key_rows, _sub_key_s64,
                       native_first_block, seed_key, substream_seed)

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

_TWO_M53: Final = 1.0 / 9007199254740992.0  # 2**-53
_TWO_M52: Final = 1.0 / 4503599627370496.0  # 2**-52
_EMPTY_RANGE: Final = "an empty or unbounded range"


# ---------------------------------------------------------------------------
# Which versions compute keys and blocks


class _Implementation(object):
    """The functions that compute keys and blocks (``use_implementation``)."""

    __slots__ = ("name", "first_block", "refill", "step", "seed_key", "sub_key",
                 "sub_first_block")

    def __init__(self) -> None:
        self.name = ""
        # (a Sequence[int], or a Words16: its words)
        self.first_block: Callable[[Key], Any] = _first_block_rows
        self.refill: Callable[[Key, int], Any] = _refill_rows
        self.step: int = REFILL_BLOCKS  # (blocks a refill computes)
        self.seed_key: Callable[[int], Key] = _seed_key_fast
        self.sub_key: Callable[[int, int, int, int], Key] = _sub_key_rows
        # A substream's first block straight from its arguments (no key
        # made), where that is the faster way (a Words16); None: sub_key, first_block.
        self.sub_first_block: Optional[Callable[[int, int, int, int], Any]] = None


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
    impl.step = REFILL_BLOCKS
    if name == "rows":
        impl.first_block, impl.refill = _first_block_rows, _refill_rows
        impl.seed_key, impl.sub_key = _seed_key_fast, _sub_key_rows
    elif name == "native":
        # blocks on 32-bit words, one at a time as a Words16 (read without
        # boxing: Rng.random_f64); keys and the batched setup on wide integers
        impl.first_block, impl.refill = _first_words16, _block_words16
        impl.step = 1
        impl.seed_key, impl.sub_key = _seed_key_fast, _sub_key_rows
        impl.sub_first_block = native_first_block
    elif name == "scalar":
        impl.first_block, impl.refill = _first_block_scalar, _refill_scalar
        if _intop is not None:
            impl.seed_key, impl.sub_key = _seed_key_s64, _sub_key_s64
        else:
            impl.seed_key, impl.sub_key = seed_key, _sub_key_rows
    else:
        raise ValueError("unknown implementation %r" % (name,))
    if name != "native":
        impl.sub_first_block = None
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
use_implementation("scalar" if sys.implementation.name != "cpython"
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
    A session stream's first block, made on machine integers (compiled core:
    ``native_first_block``), is a ``Words16``, read without boxing while
    the draw fits in it.  Nothing is computed until the first draw: not the key, and for a
    ``substream`` not even the seed (while ``_seed`` is None, ``_sub_*`` are
    its arguments: typed fields, not a tuple of boxed integers).
    """

    __slots__ = ("_seed", "_sub_seed", "_sub_a", "_sub_b", "_sub_c", "_key", "_buf", "_i",
                 "_counter", "_ext")

    def __init__(self, seed: Any, a: int = 0, b: int = 0, c: int = 0, sub: bool = False
                 ) -> None:
        # ``sub`` (``_deferred``, rng_batch): ``substream(seed, a, b, c)``,
        # its seed mixed on first use; otherwise ``seed_from_u64(seed)``.
        self._seed: Optional[int] = None if sub else _u64_arg(seed, "seed")
        self._sub_seed: int = seed if sub else 0
        self._sub_a: int = a
        self._sub_b: int = b
        self._sub_c: int = c
        self._key: Optional[Key] = None
        self._buf: Sequence[int] = ()
        self._i = 0
        self._counter = 0
        # the companion streams of serq's extension laws, made on first use
        self._ext: Optional[List[Optional["Rng"]]] = None

    @classmethod
    def _deferred(cls, sub: Tuple[int, int, int, int]) -> "Rng":
        """A generator seeded with ``substream_seed(*sub)``, computed lazily."""
        return cls(sub[0], sub[1], sub[2], sub[3], True)

    @property
    def seed(self) -> int:
        """The u64 given to ``seed_from_u64``."""
        seed = self._seed
        if seed is None:
            seed = self._seed = substream_seed(self._sub_seed, self._sub_a, self._sub_b,
                                               self._sub_c)
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

    def _derive_key(self) -> Key:
        """The key, worked out again from the seed: not kept with the first
        block, since most streams (a session's) never need a second one and
        the key's eight words are a third of a live session's memory.  A
        stream that refills keeps it (``_next_words``)."""
        seed = self._seed
        if seed is None:
            return _IMPL.sub_key(self._sub_seed, self._sub_a, self._sub_b, self._sub_c)
        return _IMPL.seed_key(seed)

    def _next_words(self) -> Sequence[int]:
        """Replace the buffer by its unconsumed tail followed by the next
        block(s); returns the new buffer (``_i`` is reset to 0)."""
        key = self._key
        buf = self._buf
        tail = buf[self._i:] if self._i < len(buf) else ()
        first = _IMPL.sub_first_block
        words: Sequence[int]
        if self._counter == 0 and key is None and self._seed is None and first is not None:
            # a substream's first block straight from its arguments
            words = first(self._sub_seed, self._sub_a, self._sub_b, self._sub_c)
            self._counter = 1
        else:
            if key is None:
                key = self._derive_key()
            if self._counter == 0:
                words = _IMPL.first_block(key)
                self._counter = 1
            else:
                self._key = key
                words = _IMPL.refill(key, self._counter)
                self._counter = _next_counter(self._counter, _IMPL.step)
        if tail:
            words = tuple(tail) + tuple(words)
        self._buf = words
        self._i = 0
        return words

    # -- raw draws -----------------------------------------------------------

    def next_u32(self) -> int:
        """The next 32-bit word."""
        i = self._i
        b = self._buf
        if isinstance(b, Words16):  # (a block, unboxed)
            w: Words16 = b  # (typed: a native call)
            if i < 16:
                self._i = i + 1
                return w.word(i)
            self._next_words()  # (used up: no IndexError raised)
            self._i = 1
            return self._buf[0]
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
        if isinstance(b, Words16):
            w: Words16 = b
            if i < 15:
                self._i = i + 2
                return w.u64(i)
            b = self._next_words()  # (the last word and the next block, or the next block)
            self._i = 2
            return (b[1] << 32) | b[0]
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
        if isinstance(b, Words16):
            w: Words16 = b
            if i < 15:
                self._i = i + 2
                return w.f64(i)
            b = self._next_words()  # (the last word and the next block, or the next block)
            self._i = 2
            if isinstance(b, Words16):
                w = b
                return w.f64(0)
            return ((b[1] << 21) | (b[0] >> 11)) * 1.1102230246251565e-16
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
