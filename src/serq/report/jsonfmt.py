"""``report_json``: the report as pyserq 0.1.3's compact one-line JSON.

Numbers (checked byte for byte against pyserq):

* ``None``, NaN and infinities are ``null``;
* a float is written in plain positional notation with the shortest
  round-trip digits (Python's ``repr`` digits, never an exponent) and no
  fractional part when it has none: ``100``, ``-0``, ``0.30000000000000004``,
  ``100000000000000000000`` for 1e20, ``0.0000001`` for 1e-7; when the value
  lies exactly halfway between the two closest shortest candidates, the one
  further from zero (Rust's ``Display``; ``repr`` and the IR's ryu take the
  even one): 671.82208251953125 is ``671.8220825195313``;
* count fields (``int``) are written as integers, booleans as
  ``true``/``false``;
* no spaces; keys in the order of :mod:`serq.report.model`.
"""
import math
import re
from typing import List

from .model import Report


def format_float(x: float) -> str:
    """A float as pyserq writes it (``null`` for NaN and infinities)."""
    if not math.isfinite(x):
        return "null"
    r = repr(float(x))
    if "e" not in r:
        if r.endswith(".0"):  # (a whole number: its ".0" dropped)
            return r[:-2]
        if len(r) <= 16 or x.as_integer_ratio()[1] > _NO_TIE:
            # (positional already, and no tie to move: at most 15 digits,
            # or more decimals in x than a tie of 17 digits could have;
            # most of a report's numbers)
            return r
    sign = ""
    if r[0] == "-":
        sign, r = "-", r[1:]
    mant, _, exp = r.partition("e")
    ip, _, fp = mant.partition(".")
    digits = ip + fp
    point = len(ip) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    if not digits:
        return sign + "0"
    if len(digits) >= 16:  # (a tie needs about 16 digits: a float has 15.95)
        digits, point = _tie_away(abs(x), digits, point)
    if point <= 0:
        return sign + "0." + "0" * (-point) + digits
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return sign + digits[:point] + "." + digits[point:]


#: A float ``p / q`` (``q`` a power of two, ``2 ** s``) has exactly ``s``
#: decimals, and ``p * 5 ** s`` as its significant digits.  A tie between
#: two shortest candidates (at most 17 digits) is a value of at most 18
#: significant digits, so ``5 ** s < 10 ** 18`` and ``q < 2 ** 26``.
_NO_TIE = 2 ** 26


def _tie_away(x: float, digits: str, point: int):
    """``digits`` (shortest, round half to even) moved one unit away from
    zero when ``x`` is exactly halfway between it and the next candidate
    above, as Rust's shortest formatting rounds such ties."""
    d = int(digits)
    k = point - len(digits)  # the last digit's power of ten
    p, q = x.as_integer_ratio()
    if k >= 0:
        twice = 2 * (p - d * 10 ** k * q)
        unit = 10 ** k * q
    else:
        twice = 2 * (p * 10 ** -k - d * q)
        unit = q
    if twice != unit:
        return digits, point
    up = str(d + 1)
    if len(up) > len(digits):  # 99…95 → 10…0
        point += 1
    return up.rstrip("0"), point


#: What a JSON string escapes: a quote, a backslash, a control character.
_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def _str(s: str) -> str:
    if _ESCAPED.search(s) is None:  # (a name, a key: nothing to escape)
        return '"' + s + '"'
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch < " ":
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                        "\t": "\\t"}.get(ch, "\\u%04x" % ord(ch)))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(v) -> str:
    t = type(v)  # (the common cases first, by their exact type)
    if t is float:
        return format_float(v)
    if t is int:
        return str(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, str):
        return _str(v)
    raise TypeError("no JSON form for %r" % (v,))


#: Keys as JSON strings, each escaped once (a report writes the same
#: field names in every row).
_KEYS = {}


def _key(k: str) -> str:
    q = _KEYS.get(k)
    if q is None:
        q = _str(k) + ":"
        if len(_KEYS) < 4096:  # (programs' own names too: not without bound)
            _KEYS[k] = q
    return q


def _object(pairs) -> str:
    return "{" + ",".join(_key(k) + v for k, v in pairs) + "}"


#: Each row class's fields with their keys as JSON text (``_row``).
_ROW_KEYS = {}


def _row(row) -> str:
    fields = _ROW_KEYS.get(type(row))
    if fields is None:
        fields = _ROW_KEYS[type(row)] = tuple((k, _str(k) + ":") for k in row.JSON_FIELDS)
    parts = []
    for k, key in fields:
        v = getattr(row, k)
        if k == "over_cap" and v is not None:
            parts.append(key + _object([("queue", _str(v[0])), ("need", format_float(float(v[1])))]))
        else:
            parts.append(key + _value(v))
    return "{" + ",".join(parts) + "}"


def report_json(report: Report, extended=None) -> str:
    """The compact JSON text of a report (no trailing newline).

    ``extended`` (serq's own, not the reference's): a list of ``(key,
    json_text)`` pairs written as one last key ``"extended": {key: …}``
    after every reference field, which stay byte-identical; ``None`` (the
    default) writes exactly the reference's JSON."""
    pairs: List = [(k, _value(getattr(report, k))) for k in Report.SCALAR_FIELDS]
    pairs.append(("observes", _object((name, _row(o)) for name, o in report.observes.items())))
    pairs.append(("gauges", _object((name, _row(g)) for name, g in report.gauges.items())))
    if report.claims is not None:
        pairs.append(("claims", "[" + ",".join(_row(c) for c in report.claims) + "]"))
    pairs.append(("stages", "[" + ",".join(_row(s) for s in report.stages) + "]"))
    pairs.append(("pools", "[" + ",".join(_row(p) for p in report.pools) + "]"))
    if extended is not None:
        pairs.append(("extended", _object(extended)))
    return _object(pairs)


def _quantile_pairs(qs) -> List:
    from .quantiles import QUANTILES
    return [(name.replace(".", "_"), _value(q)) for (_, name), q in zip(QUANTILES, qs)]


def extras_json(report: Report) -> List:
    """serq's own measures of a report as ``(key, json_text)`` pairs for
    ``--json --extended``: ``observes`` (each observation's ``unit``, ``null``
    for the program's units, and ``p50 p90 p99 p99_9``), ``stages`` (per
    member: ``name``, ``index``, and for a step stage ``decode_tokens``,
    ``tokens_per_s`` and ``itl_p50 itl_p90 itl_p99 itl_p99_9``, null
    otherwise) and ``rates`` (report/model.py ``Rates``).  Empty for a
    report built without extras."""
    if report.rates is None:
        return []
    obs = []
    for name, o in report.observes.items():
        obs.append((name, _object([("unit", _value(o.unit))]
                                  + _quantile_pairs(o.quantiles or [None] * 4))))
    span = report.rates.span
    stages = []
    for s in report.stages:
        tokens = s.decode_tokens
        rate = None if tokens is None or span <= 0 else tokens / span
        stages.append(_object(
            [("name", _value(s.name)), ("index", _value(s.index)),
             ("decode_tokens", _value(tokens)), ("tokens_per_s", _value(rate))]
            + [("itl_" + k, v) for k, v in _quantile_pairs(s.itl_quantiles or [None] * 4)]))
    rt = report.rates
    rates = _object([("span", _value(rt.span)), ("sessions_per_s", _value(rt.sessions)),
                     ("turns_per_s", _value(rt.turns)), ("requests_per_s", _value(rt.requests)),
                     ("generated_tokens", _value(rt.decode_tokens)),
                     ("generated_tokens_per_s", _value(rt.tokens))])
    return [("observes", _object(obs)), ("stages", "[" + ",".join(stages) + "]"),
            ("rates", rates)]
