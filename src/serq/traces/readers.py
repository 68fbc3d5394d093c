"""Readers of public LLM-serving traces, each yielding plain records.

* ``sharegpt``: a JSON list of conversations, each an object whose
  ``"conversations"`` is a list of ``{"from": ..., "value": ...}``
  messages.  ``human``/``user`` messages are prompts; ``gpt``,
  ``chatgpt``, ``assistant``, ``bard``, ``bing`` and ``model`` are replies;
  ``system`` messages are skipped.  A prompt with its reply is one
  exchange; prompts written in a row count as one, and a last prompt
  without reply is dropped.  Token counts are estimated (``tokens``).
* ``burstgpt``: CSV with the header ``Timestamp,Model,Request tokens,
  Response tokens,Total tokens,Log Type``; ``Timestamp`` in seconds.
* ``azure``: the Azure LLM inference traces of 2023 and 2024, CSV with
  the header ``TIMESTAMP,ContextTokens,GeneratedTokens``; the timestamp is
  ``YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM|Z]`` (2023 writes seven
  fraction digits, 2024 six and an offset).
* ``mooncake``: JSON lines ``{"timestamp": ms, "input_length": n,
  "output_length": n, "hash_ids": [...]}``; each hash id names one block
  of the prompt, and a block's id stands for the whole prefix up to it.

Every problem is a ``TraceError`` at the file and line (a CSV row, a
JSON line; for ShareGPT a JSON syntax error's line or the failing entry's
path, e.g. ``[12].conversations[3].from``).
"""
import csv
import json
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from ..errors import Span
from ..inputfile import InputFileError, read_bytes
from ..tracefile import TraceError

REPLY = ("gpt", "chatgpt", "assistant", "bard", "bing", "model")
PROMPT = ("human", "user")
TOKENIZERS = ("chars4", "words")


class Request(NamedTuple):
    """One request of a timestamped trace: when it arrived (seconds in the
    trace's clock), its prompt and output tokens, and the leading prompt
    tokens an earlier request of the trace already had (Mooncake only)."""
    time: float
    new: int
    out: int
    shared: int = 0
    line: int = 0


def fail(path: str, line: int, message: str, text: Optional[str] = None, col: int = 1,
         length: int = 1, help: Optional[str] = None) -> TraceError:
    source = None if text is None else "\n" * (line - 1) + text
    return TraceError(message, Span(path, line, col, length),
                      help=help, source=source)


def estimate_tokens(text: str, tokenizer: str) -> int:
    """A token count without a model's tokenizer: ``chars4`` (the default)
    is one token per four characters, rounded up; ``words`` one token per
    whitespace-separated word.  Never below 1 for a message."""
    if tokenizer == "words":
        n = len(text.split())
    else:
        n = (len(text) + 3) // 4
    return max(1, n)


#: The largest public trace file read (ShareGPT's JSON is about 650 MB).
MAX_INPUT = 2 * 1024 * 1024 * 1024


def _open_text(path: str) -> str:
    try:
        data = read_bytes(path, MAX_INPUT)
    except InputFileError as e:
        raise TraceError("cannot read %s: %s" % (path.replace("\0", "\\0"), e.reason)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TraceError("%s is not UTF-8 text" % path, Span(path, line, 1)) from None


# ----------------------------------------------------------------- ShareGPT

def read_sharegpt(path: str, tokenizer: str = "chars4") -> List[List[Tuple[int, int]]]:
    """The conversations, each a list of exchanges ``(prompt tokens, reply
    tokens)``; conversations with no exchange are left out."""
    text = _open_text(path)
    try:
        data = json.loads(text)
    except ValueError as e:
        lineno = getattr(e, "lineno", 1)
        line = text.split("\n")[lineno - 1] if text else ""
        raise fail(path, lineno, "not JSON: %s" % getattr(e, "msg", e), line,
                   getattr(e, "colno", 1), help="ShareGPT is a JSON list of "
                   "{\"conversations\": [{\"from\": ..., \"value\": ...}, ...]}") from None
    if not isinstance(data, list):
        raise TraceError("%s: expected a JSON list of conversations" % path, Span(path, 1, 1))
    out = []
    for i, conv in enumerate(data):
        where = "[%d]" % i
        msgs = conv.get("conversations") if isinstance(conv, dict) else None
        if not isinstance(msgs, list):
            raise TraceError("%s: %s: expected an object with a \"conversations\" list"
                             % (path, where), Span(path, 1, 1))
        exchanges = []
        prompt = 0
        for j, m in enumerate(msgs):
            at = "%s.conversations[%d]" % (where, j)
            if not isinstance(m, dict) or not isinstance(m.get("value"), str) \
                    or not isinstance(m.get("from"), str):
                raise TraceError("%s: %s: expected {\"from\": \"human\"|\"gpt\", \"value\": "
                                 "text}" % (path, at), Span(path, 1, 1))
            who = m["from"].lower()
            if who == "system":
                continue
            n = estimate_tokens(m["value"], tokenizer)
            if who in PROMPT:
                prompt += n
            elif who in REPLY:
                if prompt:
                    exchanges.append((prompt, n))
                    prompt = 0
            else:
                raise TraceError("%s: %s.from: unknown speaker %s" % (path, at,
                                                                     json.dumps(m["from"])),
                                 Span(path, 1, 1), help="a message is from one of %s, or "
                                 "system" % ", ".join(PROMPT + REPLY))
        if exchanges:
            out.append(exchanges)
    return out


# ----------------------------------------------------------------- CSV formats

def _csv_rows(path: str, columns: Tuple[str, ...], what: str) -> Iterator[Tuple[int, str, Dict]]:
    """(line number, line text, row by column) for each data row, after
    checking the header names every column (in any order, extra allowed)."""
    text = _open_text(path)
    lines = text.splitlines()
    reader = csv.reader(lines)
    header = None
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            # a field past csv's limit (128 KiB), a NUL byte, a quote left open
            lineno = max(1, reader.line_num)
            raise fail(path, lineno, "not CSV that serq reads: %s" % e,
                       (lines[lineno - 1] if lineno - 1 < len(lines) else "")[:120],
                       help="each field of %s is a short text or a number" % what) from None
        lineno = reader.line_num
        raw = lines[lineno - 1] if lineno - 1 < len(lines) else ""
        if not row or not "".join(row).strip():
            continue
        if header is None:
            header = [c.strip() for c in row]
            missing = [c for c in columns if c not in header]
            if missing:
                raise fail(path, lineno, "the header is not %s's: no column %s" % (
                    what, ", ".join("`%s`" % c for c in missing)), raw,
                    help="the header names %s" % ", ".join(columns))
            continue
        if len(row) != len(header):
            raise fail(path, lineno, "expected %d fields, got %d" % (len(header), len(row)),
                       raw, length=max(1, len(raw)))
        yield lineno, raw, dict(zip(header, row))
    if header is None:
        raise TraceError("%s: empty trace" % path, Span(path, 1, 1), help="the header names %s"
                         % ", ".join(columns))


def _col(raw: str, value: str) -> int:
    i = raw.find(value)
    return i + 1 if i >= 0 else 1


def _count(path, lineno, raw, row, column) -> int:
    v = row[column].strip()
    try:
        f = float(v)
    except ValueError:
        f = math.nan
    if not (f >= 0 and f < math.inf and f == int(f)):
        raise fail(path, lineno, "%s: `%s` is not a token count" % (column, v), raw,
                   _col(raw, row[column]), max(1, len(row[column])),
                   help="a whole number of tokens, 0 or more")
    return int(f)


def read_burstgpt(path: str) -> Iterator[Request]:
    cols = ("Timestamp", "Request tokens", "Response tokens")
    for lineno, raw, row in _csv_rows(path, cols, "BurstGPT"):
        t = row["Timestamp"].strip()
        try:
            ts = float(t)
        except ValueError:
            ts = math.nan
        if not (ts >= 0 and ts < math.inf):
            raise fail(path, lineno, "Timestamp: `%s` is not a time in seconds" % t, raw,
                       _col(raw, row["Timestamp"]), max(1, len(t)))
        yield Request(ts, _count(path, lineno, raw, row, "Request tokens"),
                      _count(path, lineno, raw, row, "Response tokens"), line=lineno)


_STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(\.\d+)?"
                    r"(Z|[+-]\d{2}:?\d{2})?$")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def parse_timestamp(text: str) -> Optional[Tuple[int, float]]:
    """``(whole seconds since 1970, fraction of a second)`` (UTC; a stamp
    without an offset is read as UTC) of ``YYYY-MM-DD
    HH:MM:SS[.fraction][Z|+HH:MM]``, any number of fraction digits;
    ``None`` if it is not one.  The two parts stay apart so that gaps keep
    their sub-microsecond digits (a float of 1.7e9 seconds does not)."""
    m = _STAMP.match(text.strip())
    if not m:
        return None
    y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
    try:
        base = datetime(y, mo, d, h, mi, s, tzinfo=timezone.utc)
    except ValueError:
        return None
    off = m.group(8)
    if off and off != "Z":
        sign = -1 if off[0] == "-" else 1
        digits = off[1:].replace(":", "")
        base -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    frac = float(m.group(7)) if m.group(7) else 0.0
    return (base - _EPOCH).days * 86400 + (base - _EPOCH).seconds, frac


def read_azure(path: str) -> Iterator[Request]:
    cols = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
    origin = None
    for lineno, raw, row in _csv_rows(path, cols, "Azure LLM inference"):
        stamp = parse_timestamp(row["TIMESTAMP"])
        if stamp is None:
            raise fail(path, lineno, "TIMESTAMP: `%s` is not a date and time"
                       % row["TIMESTAMP"], raw, _col(raw, row["TIMESTAMP"]),
                       max(1, len(row["TIMESTAMP"])),
                       help="write YYYY-MM-DD HH:MM:SS[.fraction][+00:00]")
        if origin is None:
            origin = stamp[0]
        # Seconds after the first row's whole second.
        yield Request((stamp[0] - origin) + stamp[1], _count(path, lineno, raw, row, "ContextTokens"),
                      _count(path, lineno, raw, row, "GeneratedTokens"), line=lineno)


# ----------------------------------------------------------------- Mooncake

def read_mooncake(path: str, block_tokens: int = 512) -> Iterator[Request]:
    """``shared`` is the prompt's leading blocks whose hash ids an earlier
    request of the file had, times ``block_tokens`` (at most the prompt)."""
    seen = set()
    text = _open_text(path)
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as e:
            raise fail(path, lineno, "not JSON: %s" % getattr(e, "msg", e), raw,
                       getattr(e, "colno", 1)) from None
        if not isinstance(obj, dict):
            raise fail(path, lineno, "expected a JSON object", raw)
        for key in ("timestamp", "input_length", "output_length"):
            v = obj.get(key)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 \
                and v < math.inf and (key == "timestamp" or v == int(v))
            if not ok:
                raise fail(path, lineno, "`%s` is %s; expected %s" % (
                    key, "missing" if v is None else json.dumps(v),
                    "a time in milliseconds" if key == "timestamp" else "a token count"),
                    raw, _col(raw, '"%s"' % key),
                    help="a Mooncake line is {\"timestamp\": ms, \"input_length\": n, "
                    "\"output_length\": n, \"hash_ids\": [...]}")
        ids = obj.get("hash_ids", [])
        if not isinstance(ids, list):
            raise fail(path, lineno, "`hash_ids` is not a list", raw, _col(raw, '"hash_ids"'))
        k = 0
        while k < len(ids) and _key(ids[k]) in seen:
            k += 1
        seen.update(_key(x) for x in ids)
        n_in = int(obj["input_length"])
        yield Request(obj["timestamp"] / 1000.0, n_in, int(obj["output_length"]),
                      min(n_in, k * block_tokens), lineno)


def _key(x):
    return json.dumps(x) if isinstance(x, (list, dict)) else x
