"""Public traces -> the trace CSV a workload replays
(``session,turn,new,out,think[,forced]``, see ``serq/tracefile.py``).

Three layouts:

* ``timeline``: the whole trace as the turns of one corpus session, in
  arrival order: ``new`` the prompt tokens, ``out`` the output tokens,
  ``think`` the seconds until the next request arrives (0 after the last).
  One session that starts a request at each turn without waiting for it
  (``fork``) and then waits ``think`` replays the arrival times exactly
  (docs/cookbook.md, "Replaying a public trace").  The default for the
  timestamped formats, and for ShareGPT with ``rate``.
* ``requests``: one corpus session per request (sessions numbered from 0),
  one turn each, ``think`` 0: for a program that makes its own arrivals
  (``arrive poisson(...)`` with ``trace "..." ordered``).
* ``conversations`` (ShareGPT): one corpus session per conversation, one
  turn per exchange, ``think`` the constant ``think``.  The default for
  ShareGPT without ``rate``.

With ``timeline``, ShareGPT (which has no times) takes the first exchange
of each conversation, as serving benchmarks do, and draws the gaps between
requests from a Poisson stream of ``rate`` requests a second seeded by
``seed`` (``serq.Rng``, so the same seed gives the same file everywhere).

Mooncake's shared prefix (``Request.shared``) is written as the sixth
column, ``forced``, which serQ leaves to the program: ``timeline`` and
``requests`` layouts of Mooncake have it, the others write five columns.

Windows and scaling, in order: ``start``/``duration`` keep the requests
whose time, in seconds after the trace's first request, is in ``[start,
start + duration)``; ``limit`` keeps the first ``limit`` of those; then
every gap is multiplied by ``scale`` (0.5 replays twice as fast).
"""
import math
from typing import Iterable, List, Optional, TextIO, Tuple

from ..errors import UsageError
from ..sim.rng import Rng
from . import readers
from .readers import Request

FORMATS = ("sharegpt", "burstgpt", "azure", "azure2023", "azure2024", "mooncake")
LAYOUTS = ("timeline", "requests", "conversations")


class Options(object):
    """What ``serq trace convert`` takes (see ``convert``)."""

    def __init__(self, format: str, layout: Optional[str] = None, limit: Optional[int] = None,
                 start: float = 0.0, duration: Optional[float] = None, scale: float = 1.0,
                 rate: Optional[float] = None, seed: int = 1, think: float = 0.0,
                 tokenizer: str = "chars4", block_tokens: int = 512):
        if format not in FORMATS:
            raise UsageError("unknown trace format `%s`; one of %s" % (format, ", ".join(FORMATS)))
        if layout is None:
            layout = "conversations" if format == "sharegpt" and rate is None else "timeline"
        if layout not in LAYOUTS:
            raise UsageError("unknown layout `%s`; one of %s" % (layout, ", ".join(LAYOUTS)))
        if layout == "conversations" and format != "sharegpt":
            raise UsageError("the conversations layout is ShareGPT's; a %s trace has single "
                             "requests (use timeline or requests)" % format)
        if format == "sharegpt" and layout != "conversations" and rate is None:
            raise UsageError("ShareGPT has no arrival times: give `--rate R` (requests a "
                             "second) for the %s layout" % layout)
        if rate is not None and format != "sharegpt":
            raise UsageError("`--rate` draws arrival times for ShareGPT; a %s trace has its own"
                             % format)
        for name, v, ok in (("scale", scale, scale > 0), ("start", start, start >= 0),
                            ("duration", duration, duration is None or duration > 0),
                            ("rate", rate, rate is None or rate > 0),
                            ("think", think, think >= 0)):
            if v is not None and (v != v or v == math.inf or not ok):
                raise UsageError("`--%s %s` is not a finite %s number"
                                 % (name, v, "non-negative" if name in ("start", "think")
                                    else "positive"))
        if layout == "conversations" and (start or duration is not None):
            raise UsageError("ShareGPT conversations have no times: `--start` and `--duration` "
                             "window a timeline (give `--rate R`); `--limit` keeps the first "
                             "conversations")
        if limit is not None and limit < 1:
            raise UsageError("`--limit` is at least 1")
        if tokenizer not in readers.TOKENIZERS:
            raise UsageError("unknown tokenizer `%s`; one of %s"
                             % (tokenizer, ", ".join(readers.TOKENIZERS)))
        self.format, self.layout, self.limit = format, layout, limit
        self.start, self.duration, self.scale = start, duration, scale
        self.rate, self.seed, self.think = rate, seed, think
        self.tokenizer, self.block_tokens = tokenizer, block_tokens


class Summary(object):
    def __init__(self, sessions: int, requests: int, span: float):
        self.sessions, self.requests, self.span = sessions, requests, span

    def __str__(self) -> str:
        return "%d request(s) in %d session(s), spanning %s s" % (
            self.requests, self.sessions, fmt(self.span))


def fmt(x: float) -> str:
    """A number as the CSV writes it: integers without a fraction, times to
    the nanosecond without trailing zeros."""
    if float(x).is_integer():
        return str(int(x))
    return ("%.9f" % x).rstrip("0").rstrip(".")


def _requests(path: str, o: Options) -> List[Request]:
    if o.format == "sharegpt":
        convs = readers.read_sharegpt(path, o.tokenizer)
        rng = Rng(o.seed)
        reqs, t = [], 0.0
        for conv in convs:
            new, out = conv[0]
            reqs.append(Request(t, new, out))
            t += -math.log(1.0 - rng.random_f64()) / o.rate
        return reqs
    if o.format == "burstgpt":
        it = readers.read_burstgpt(path)
    elif o.format == "mooncake":
        it = readers.read_mooncake(path, o.block_tokens)
    else:
        it = readers.read_azure(path)
    reqs = list(it)
    # Traces are written in time order; a few are not, so sort (stably).
    reqs.sort(key=lambda r: r.time)
    return reqs


def _window(reqs: List[Request], o: Options) -> List[Request]:
    if not reqs:
        return reqs
    t0 = reqs[0].time
    lo = o.start
    hi = math.inf if o.duration is None else o.start + o.duration
    kept = [r for r in reqs if lo <= r.time - t0 < hi]
    if o.limit is not None:
        kept = kept[:o.limit]
    return kept


def convert(path: str, out: TextIO, o: Options) -> Summary:
    """Read ``path`` in ``o.format`` and write the trace CSV to ``out``."""
    rows: List[Tuple] = []
    sixth = o.format == "mooncake"
    if o.layout == "conversations":
        convs = readers.read_sharegpt(path, o.tokenizer)
        if o.limit is not None:
            convs = convs[:o.limit]
        for sid, conv in enumerate(convs):
            for k, (new, ans) in enumerate(conv, 1):
                rows.append((sid, k, new, ans, o.think * o.scale))
        summary = Summary(len(convs), len(rows), 0.0)
        sixth = False
    else:
        reqs = _window(_requests(path, o), o)
        for i, r in enumerate(reqs):
            if o.layout == "timeline":
                gap = (reqs[i + 1].time - r.time) * o.scale if i + 1 < len(reqs) else 0.0
                row = (0, i + 1, r.new, r.out, gap)
            else:
                row = (i, 1, r.new, r.out, 0)
            rows.append(row + ((r.shared,) if sixth else ()))
        span = (reqs[-1].time - reqs[0].time) * o.scale if reqs else 0.0
        summary = Summary(1 if o.layout == "timeline" and reqs else len(reqs), len(reqs), span)
    if not rows:
        raise UsageError("%s: no request to write (the window or the file is empty)" % path)
    out.write("# serq trace convert --format %s --layout %s: %s\n" % (o.format, o.layout, path))
    out.write("session,turn,new,out,think%s\n" % (",forced" if sixth else ""))
    for row in rows:
        out.write(",".join(fmt(x) for x in row) + "\n")
    return summary


def convert_file(path: str, output: Optional[str], o: Options, stdout: TextIO) -> Summary:
    """``convert`` to the file ``output`` (or ``stdout`` for None or ``-``);
    the file is written only when the whole trace converted."""
    if output in (None, "-"):
        return convert(path, stdout, o)
    import io
    buf = io.StringIO()
    summary = convert(path, buf, o)
    from ..atomic import write_text
    write_text(output, buf.getvalue())
    return summary


__all__ = ["Options", "Summary", "convert", "convert_file", "FORMATS", "LAYOUTS"]
