"""Grammar programs moved to tiny and huge magnitudes, for the differential.

``program(c)`` draws a *valid* program of ``tests/grammar_programs.py``
and rescales it: every duration by a time scale T (the work of a plain
`run`, step costs, think and transfer times, leases, link latencies,
spill writes, renewal gaps, the horizon and the warm-up; Poisson rates by
1/T) and every pool size by a unit scale U (caps, blocks, hold units,
reserves, reuses, cache extents, grows, loads, transfer sizes); half the
programs also get a token scale K (step prefills, budgets, chunks,
granules and claims on tokens; decodes too when K <= 1, as a decode takes
one token an iteration; a cost reads tokens / K), so a pool of huge or
tiny units grows by tokens of another scale.

The scales run from subnormals (5e-324) through 1e-300 .. 1e-12 to 1e12 ..
1e300, with values one ulp off a power of ten or off the smallest normal
float, and now and then a site gets a scale of its own (a duration far
below the others: `now + d == now`) — the magnitudes where a tolerance, a
formatting rule or a loop counted in horizon/duration ratios shows.  A
program stays small: the horizon moves with T, so the number of events is
about the unscaled program's; a finite workload (a batch, or none, and no
loop) sometimes gets a horizon up to 1e300 times longer, past its last
event.

Used by ``bench/differential.py --magnitudes``.
"""
import math
import re

from grammar_programs import Gen

# near float boundaries: subnormals, the smallest normal and its
# neighbours, one ulp off 1e-300
SPECIAL_TINY = [5e-324, 1e-320, 4.9406564584124654e-322, 2.2250738585072009e-308,
                2.2250738585072014e-308, 2.2250738585072019e-308, 1e-310,
                1.0000000000000002e-300, 9.999999999999999e-301]
SPECIAL_HUGE = [1e300, 1.7976931348623157e306, 9.999999999999999e299, 2.0 ** 1000,
                4.4942328371557893e307]


def scale(c):
    """A scale: 1 sometimes, mostly tiny (1e-300 .. 1e-12), sometimes
    huge, subnormal or one ulp off a power of ten."""
    r = c.integer(0, 11)
    if r == 0:
        return 1.0
    if r <= 5:
        x = 10.0 ** -c.integer(12, 300)
    elif r == 6:
        x = 10.0 ** c.integer(12, 300)
    elif r == 7:
        return c.pick(SPECIAL_TINY)
    elif r == 8:
        return c.pick(SPECIAL_HUGE)
    elif r == 9:
        x = 10.0 ** -c.integer(301, 323)  # subnormal
    elif r == 10:
        x = 10.0 ** c.integer(-16, 16)
    else:
        x = c.pick([1e-12, 1e-9, 1e-6, 1e12, 2.0 ** -52, 2.0 ** 53])
    if c.chance(0.25):
        x = math.nextafter(x, c.pick([0.0, math.inf]))
    return x


def num(x):
    """``x`` as program text (shortest round trip; ``inf`` is a word)."""
    return "inf" if x == math.inf else repr(x)


class _Site(object):
    """Rescales one program: the scales and how each site gets its own."""

    def __init__(self, c, text):
        self.c = c
        self.T = scale(c)
        self.U = scale(c) if c.chance(0.6) else 1.0
        self.K = scale(c) if c.chance(0.5) else 1.0
        # a duration far below the others reaches `now + d == now`; in a
        # closed or looping program it would multiply the events instead
        self.lo = -3 if ("closed(" in text or "loop {" in text) else -20
        # a finite workload (a batch, or none) may also run far past its
        # last event: time averages over a horizon 1e300 times its work
        finite = ("batch(" in text or "arrive none" in text) and "loop {" not in text
        self.H = 10.0 ** c.integer(1, 300) if finite and c.chance(0.3) else 1.0

    def time(self):
        c = self.c
        if c.chance(0.15):
            return self.T * 10.0 ** c.integer(self.lo, 16)
        return self.T

    def units(self):
        return self.U * 10.0 ** self.c.integer(-3, 3) if self.c.chance(0.1) else self.U


def _skip_ref(text, i):
    """Past a name and its ``[index]`` (balanced) from ``i``."""
    m = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*").match(text, i)
    if not m:
        return i
    i = m.end()
    if i < len(text) and text[i] == "[":
        depth = 0
        while i < len(text):
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
    return i


def _close(text, i):
    """The index just past the parenthesis that closes the one at ``i``."""
    depth = 0
    while i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
        if depth == 0:
            return i
    return -1


def _wrap(text, pattern, factor, refs=0, declaration_ok=True):
    """Multiply the parenthesised argument after each match of ``pattern``
    (past ``refs`` references, ``a, b`` counting as one) by ``factor()``;
    a match whose next thing is not ``(`` is left alone, and so is a
    declaration (``transfer (n) { … }``)."""
    out, pos = [], 0
    for m in re.finditer(pattern, text):
        if m.start() < pos:
            continue
        i = m.end()
        for _ in range(refs):
            i = _skip_ref(text, i)
            while text.startswith(", ", i):
                i = _skip_ref(text, i + 2)
        if not text.startswith(" (", i):
            continue
        j = _close(text, i + 1)
        if j < 0 or (not declaration_ok and text[j:].lstrip().startswith("{")):
            continue
        out.append(text[pos:i + 1])
        out.append("((%s) * %s)" % (text[i + 2:j - 1], num(factor())))
        pos = j
    out.append(text[pos:])
    return "".join(out)


def _sub(text, pattern, fn):
    return re.sub(pattern, lambda m: fn(m), text)


def rescale(c, text):
    s = _Site(c, text)
    # durations
    text = _wrap(text, r"\brun ", s.time, refs=1)          # plain runs (a step run is skipped)
    text = _wrap(text, r"\blease ", s.time, refs=1)
    text = _wrap(text, r"(?<!\.)\btransfer", s.time,      # a transfer's time (not an entry call)
                 declaration_ok=False)
    text = _wrap(text, r"\btransfer on ", s.time, refs=1)
    text = _wrap(text, r"\bspill \w+ via ", s.time, refs=1)
    per_token = "(\\1 / %s)" % num(s.K) if s.K != 1.0 else "\\1"
    text = _sub(text, r"\bcost ([^;]+);", lambda m: "cost (%s) * %s;" % (
        re.sub(r"\b(tokens|prefilled)\b", per_token, m.group(1)), num(s.time())))
    text = _sub(text, r"\blatency ([^;\s]+)",
                lambda m: "latency (%s) * %s" % (m.group(1), num(s.time())))
    text = _sub(text, r"\bnow < (\d+)", lambda m: "now < %s" % num(float(m.group(1)) * s.T))
    text = _sub(text, r"\bpoisson\(([^;]*)\);",
                lambda m: "poisson((%s) / %s);" % (m.group(1), num(s.T)))
    text = _sub(text, r"\brenewal\(([^;]*)\);",
                lambda m: "renewal((%s) * %s);" % (m.group(1), num(s.T)))
    text = _sub(text, r"\bhorizon ([\d.]+);",
                lambda m: "horizon %s;" % num(min(float(m.group(1)) * s.T * s.H, 1e308)))
    text = _sub(text, r"\bwarmup ([\d.]+);", lambda m: "warmup %s;" % num(float(m.group(1)) * s.T))
    # sizes
    text = _sub(text, r"\b(cap|block) ([^;]+);",
                lambda m: "%s (%s) * %s;" % (m.group(1), m.group(2), num(s.units())))
    for kw in (r"\bhold ", r"\bgrow ", r"\bload ", r"\bto "):
        text = _wrap(text, kw, s.units, refs=1)
    for kw in (r"\breserve", r"\breuse", r"\bcache"):
        text = _wrap(text, kw, s.units)
    # tokens
    if s.K != 1.0:
        modes = "prefill|decode" if s.K <= 1.0 else "prefill"
        text = _wrap(text, r"\brun [A-Za-z_][\w.]*(\[[^\]]*\])? (%s)" % modes, lambda: s.K)
        text = _sub(text, r"\b(budget|chunk|granule) ([^;]+);",
                    lambda m: "%s (%s) * %s;" % (m.group(1), m.group(2), num(s.K)))
        text = _sub(text, r"\btokens <= (\d+)", lambda m: "tokens <= %s" % num(float(m.group(1)) * s.K))
    return "// time scale %s, unit scale %s, token scale %s, horizon factor %s\n%s" % (
        num(s.T), num(s.U), num(s.K), num(s.H), text)


def program(c, trace=None):
    """A valid grammar program, rescaled."""
    g = Gen(c, trace)
    g.nearly = False
    return rescale(c, g.write())


if __name__ == "__main__":  # print a few, to read
    import sys
    from grammar_programs import RandomChoices
    for seed in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        print("// seed %d" % seed)
        print(program(RandomChoices(seed)))
