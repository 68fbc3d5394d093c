"""IR <-> JSON, in the shape of serQ 0.1.3's IR version 11.

``dumps`` writes the text ``serq ir`` prints: two-space indentation, keys in
the reference's order, floats always with a fraction (``1000.0``), infinite
numbers as the strings ``"inf"``/``"-inf"`` where the IR reads a number
(``Num``, ``cap``).  ``loads`` reads it back, checking shapes and types and
raising ``IRError`` (a ``LinkError``) with the JSON path of the bad part.
"""
import json as _json
import math
from typing import Any, Dict, List, Optional

from ..errors import LinkError, Span
from . import nodes as ir


class IRError(LinkError):
    """The IR text is not a well-formed version-11 program."""

# ------------------------------------------------------------------ output


def _num(x: float) -> Any:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def expr_obj(e: ir.Expr) -> Any:
    t = type(e)
    if t is ir.Num:
        return {"Num": _num(e.value)}
    if t is ir.Attr:
        return {"Attr": e.slot}
    if t is ir.Ctx:
        return {"Ctx": e.var}
    if t is ir.Binary:
        return {"Binary": [e.op, expr_obj(e.left), expr_obj(e.right)]}
    if t is ir.Unary:
        return {"Unary": [e.op, expr_obj(e.operand)]}
    if t is ir.Call:
        return {"Call": [e.fun, [arg_obj(a) for a in e.args]]}
    if t is ir.Sample:
        return {"Sample": [e.dist, [expr_obj(a) for a in e.args]]}
    if t is ir.ExtSample:
        # serq's extension (docs/distributions.md): a tag serQ 0.1.3 refuses
        d: Dict[str, Any] = {"dist": e.dist, "args": [expr_obj(a) for a in e.args]}
        if e.values is not None:
            d["values"] = [float(v) for v in e.values]
            d["counts"] = [int(c) for c in (e.counts or [])]
        if e.source is not None:
            d["source"] = e.source
        if e.column is not None:
            d["column"] = e.column
        return {"ExtSample": d}
    if t is ir.Cond:
        return {"Cond": [expr_obj(e.test), expr_obj(e.then), expr_obj(e.other)]}
    if t is ir.Reg:
        return {"Reg": e.register}
    if t is ir.AggRef:
        return {"Agg": [e.kind, e.obs]}
    raise TypeError("not an IR expression: %r" % (e,))


def arg_obj(a: ir.Arg) -> Any:
    if type(a) is ir.ArgExpr:
        return {"Expr": expr_obj(a.expr)}
    if type(a) is ir.ArgPool:
        return {"Pool": ref_obj(a.ref)}
    return {"Stage": ref_obj(a.ref)}


def ref_obj(r: ir.Ref) -> Any:
    return {"base": r.base, "count": r.count,
            "index": None if r.index is None else expr_obj(r.index)}


def _opt(e: Optional[ir.Expr]) -> Any:
    return None if e is None else expr_obj(e)


def stmt_obj(s: ir.Stmt) -> Any:
    t = type(s)
    if t is ir.Set:
        return {"Set": [s.slot, expr_obj(s.value)]}
    if t is ir.Run:
        d = {"stage": ref_obj(s.stage), "mode": s.mode, "work": expr_obj(s.work),
             "growing": None if s.growing is None else ref_obj(s.growing)}
        if s.also:
            d["also"] = [ref_obj(r) for r in s.also]
        return {"Run": d}
    if t is ir.Hold:
        return {"Hold": {
            "pools": [[ref_obj(p.ref), expr_obj(p.units), _opt(p.reserve)] for p in s.pools],
            "reuse": _opt(s.reuse), "body": s.body, "cache": _opt(s.cache),
            "lease": None if s.lease is None else [ref_obj(s.lease[0]), expr_obj(s.lease[1])]}}
    if t is ir.Observe:
        return {"Observe": [s.obs, expr_obj(s.value)]}
    if t is ir.Branch:
        return {"Branch": [expr_obj(s.test), s.then, s.other]}
    if t is ir.Turn:
        return "Turn"
    if t is ir.End:
        return "End"
    if t is ir.Join:
        return "Join"
    if t is ir.Grow:
        return {"Grow": [ref_obj(s.ref), expr_obj(s.amount)]}
    if t is ir.Load:
        return {"Load": [ref_obj(s.ref), expr_obj(s.amount)]}
    if t is ir.Drop:
        return {"Drop": ref_obj(s.ref)}
    if t is ir.Release:
        return {"Release": ref_obj(s.ref)}
    if t is ir.Loop:
        return {"Loop": s.body}
    if t is ir.Fork:
        return {"Fork": s.body}
    if t is ir.Choose:
        return {"Choose": {"var": s.var, "count": expr_obj(s.count),
                           "key": [expr_obj(k) for k in s.key]}}
    raise TypeError("not an IR statement: %r" % (s,))


def iter_obj(s: ir.IStmt) -> Any:
    t = type(s)
    if t is ir.IServe:
        d = {}
        if s.only is not None:
            d["only"] = expr_obj(s.only)
        if s.by is not None:
            d["by"] = [expr_obj(k) for k in s.by]
        return {"Serve": d}
    if t is ir.IAdmit:
        d = {}
        if s.only is not None:
            d["only"] = expr_obj(s.only)
        if s.gate is not None:
            d["gate"] = expr_obj(s.gate)
        return {"Admit": d}
    if t is ir.IBranch:
        return {"Branch": [expr_obj(s.test), [iter_obj(x) for x in s.then],
                           [iter_obj(x) for x in s.other]]}
    return {"Set": [s.register, expr_obj(s.value)]}


def pool_obj(p: ir.Pool) -> Any:
    d = {"name": p.name}
    if p.index is not None:
        d["index"] = p.index
    d["cap"] = _num(p.cap)
    d["block"] = None if p.block is None else float(p.block)
    d["evict"] = "Lru" if p.evict is None else {"By": [expr_obj(k) for k in p.evict]}
    if p.preempt is None:
        d["preempt"] = "None"
    else:
        by = {"keys": [expr_obj(k) for k in p.preempt]}
        if p.preempt_tail:
            by["tail"] = True
        d["preempt"] = {"By": by}
    keys = None if p.queue is None else [expr_obj(k) for k in p.queue]
    if p.extended():
        # serq's admission extensions: the queue becomes an object, which
        # 0.1.3 refuses (it reads null or a list of keys) instead of
        # silently simulating another policy.
        q = {"keys": keys}
        if p.first_fit is not None:
            q["first_fit"] = {"within": p.first_fit.within, "age": _num(p.first_fit.age)}
        if p.watermark != 0.0:
            q["watermark"] = _num(p.watermark)
        d["queue"] = q
    else:
        d["queue"] = keys
    d["spill"] = None if p.spill is None else {
        "to": p.spill.to, "via": p.spill.via, "work": expr_obj(p.spill.work),
        "when": expr_obj(p.spill.when)}
    d["admit_via"] = p.admit_via
    if p.reserve_held:
        d["reserve_held"] = True
    return d


def stage_obj(s: ir.Stage) -> Any:
    d = {"name": s.name}
    if s.index is not None:
        d["index"] = s.index
    k = s.kind
    if type(k) is ir.Fifo:
        d["kind"] = {"Fifo": k.servers}
    elif type(k) is ir.Ps:
        d["kind"] = {"Ps": expr_obj(k.capacity)}
    elif type(k) is ir.Delay:
        d["kind"] = "Delay"
    else:
        step = {"budget": expr_obj(k.budget), "cost": expr_obj(k.cost),
                "chunk": expr_obj(k.chunk)}
        if k.granule is not None:
            step["granule"] = expr_obj(k.granule)
        step["serve"] = ("ExclusivePrefill" if k.serve == "ExclusivePrefill"
                         else {"By": [expr_obj(x) for x in k.serve]})
        step["memory"] = k.memory
        if k.iteration is not None:
            step["iteration"] = [iter_obj(x) for x in k.iteration]
        d["kind"] = {"Step": step}
    return d


def arrival_obj(a: ir.Arrival) -> Any:
    if a.kind == "None":
        return "None"
    if a.kind == "Poisson":
        return {"Poisson": float(a.value)}
    if a.kind == "Renewal":
        return {"Renewal": expr_obj(a.value)}
    if a.kind in ("Closed", "Batch"):
        return {a.kind: int(a.value)}
    return {"Sessions": a.value}


SLOT_KEYS = ("slot_cached", "slot_serial", "slot_turn", "slot_new", "slot_out",
             "slot_think", "slot_more", "slot_forced", "slot_computed")


def program_obj(p: ir.Program) -> Dict[str, Any]:
    d = {"version": p.version, "attrs": list(p.attrs), "observes": list(p.observes),
         "pools": [pool_obj(x) for x in p.pools],
         "stages": [stage_obj(x) for x in p.stages],
         "arrival": arrival_obj(p.arrival), "trace": p.trace,
         "trace_ordered": p.trace_ordered, "init": p.init, "turn": p.turn,
         "session": p.session,
         "blocks": [[stmt_obj(s) for s in b] for b in p.blocks],
         "horizon": float(p.horizon), "warmup": float(p.warmup), "seed": p.seed}
    if p.arrivals is not None:
        d["arrivals"] = p.arrivals
    for key, slot in zip(SLOT_KEYS, p.slots):
        d[key] = slot
    d["hidden"] = list(p.hidden)
    if p.share is not None:
        d["share"] = p.share
    if p.gauges:
        d["gauges"] = [{"name": g.name, "expr": expr_obj(g.expr)} for g in p.gauges]
    if p.claims:
        claims = []
        for c in p.claims:
            cd = {"name": c.name}
            if c.given is not None:
                cd["given"] = expr_obj(c.given)
            cd["kind"] = "AtEnd" if c.kind == "AtEnd" else {c.kind: c.stage}
            cd["expr"] = expr_obj(c.expr)
            claims.append(cd)
        d["claims"] = claims
    if p.registers:
        d["registers"] = [{"name": r.name, "stage": r.stage, "init": float(r.init)}
                          for r in p.registers]
    return d


def format_float(x: float) -> str:
    """A float as the reference's JSON writer prints it: shortest round-trip
    digits, always a fraction or an exponent, ``1e+16`` but ``1e-7``, and
    plain decimals down to ``0.00001``."""
    r = repr(float(x))
    if "e" not in r:
        return r if ("." in r or "n" in r) else r + ".0"
    mant, exp = r.split("e")
    e = int(exp)
    if e >= 0:
        return "%se+%d" % (mant, e)
    if e >= -5:
        digits = mant.replace(".", "").lstrip("-")
        sign = "-" if mant.startswith("-") else ""
        return "%s0.%s%s" % (sign, "0" * (-e - 1), digits)
    return "%se%d" % (mant, e)


def _write(obj: Any, indent: int, out: List[str]) -> None:
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, int):
        out.append(str(obj))
    elif isinstance(obj, float):
        out.append(format_float(obj))
    elif isinstance(obj, str):
        out.append(_json.dumps(obj, ensure_ascii=False))
    elif isinstance(obj, list):
        if not obj:
            out.append("[]")
            return
        pad = "  " * (indent + 1)
        out.append("[\n")
        for i, v in enumerate(obj):
            out.append(pad)
            _write(v, indent + 1, out)
            out.append(",\n" if i + 1 < len(obj) else "\n")
        out.append("  " * indent + "]")
    elif isinstance(obj, dict):
        if not obj:
            out.append("{}")
            return
        pad = "  " * (indent + 1)
        out.append("{\n")
        items = list(obj.items())
        for i, (k, v) in enumerate(items):
            out.append(pad)
            out.append(_json.dumps(k, ensure_ascii=False))
            out.append(": ")
            _write(v, indent + 1, out)
            out.append(",\n" if i + 1 < len(items) else "\n")
        out.append("  " * indent + "}")
    else:
        raise TypeError("cannot write %r as JSON" % (obj,))


def dumps(p: ir.Program) -> str:
    """The program as IR JSON text, as ``serq ir`` prints it (no trailing newline)."""
    out: List[str] = []
    _write(program_obj(p), 0, out)
    return "".join(out)

# ------------------------------------------------------------------- input


class _Reader:
    """Turns parsed JSON into IR nodes; every shape error names its path."""

    def __init__(self, strict: bool = False):
        self.path: List[str] = []
        # strict: serQ 0.1.3's IR only (no extension, no unknown field);
        # the objects read so far and the keys read from each
        self.strict = strict
        self.read = {}

    def fail(self, what: str) -> IRError:
        where = "".join(self.path) or "the top level"
        return IRError("IR: %s at %s" % (what, where),
                       help="the IR is what `serq ir` prints (version 11)")

    def mark(self, d, key):
        """Strict: ``key`` of object ``d`` is a field this reader knows."""
        if self.strict and isinstance(d, dict):
            seen = self.read.get(id(d))
            if seen is None:
                seen = self.read[id(d)] = (d, set(), "".join(self.path) or "the top level")
            seen[1].add(key)

    def at(self, key):
        self.path.append("[%d]" % key if isinstance(key, int) else ".%s" % key)

    def pop(self):
        self.path.pop()

    def field(self, d, key, fn, optional=False, default=None):
        if not isinstance(d, dict):
            raise self.fail("expected an object")
        self.mark(d, key)
        if key not in d:
            if optional:
                return default
            raise self.fail("missing field `%s`" % key)
        self.at(key)
        v = fn(d[key])
        self.pop()
        return v

    def items(self, v, fn):
        if not isinstance(v, list):
            raise self.fail("expected a list")
        out = []
        for i, x in enumerate(v):
            self.at(i)
            out.append(fn(x))
            self.pop()
        return out

    def integer(self, v):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise self.fail("expected a whole number, found %s" % _json.dumps(v))
        return v

    def opt_int(self, v):
        return None if v is None else self.integer(v)

    def number(self, v):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail("expected a number, found %s" % _json.dumps(v))
        return float(v)

    def num_or_inf(self, v):
        if v == "inf":
            return math.inf
        if v == "-inf":
            return -math.inf
        return self.number(v)

    def boolean(self, v):
        if not isinstance(v, bool):
            raise self.fail("expected true or false")
        return v

    def string(self, v):
        if not isinstance(v, str):
            raise self.fail("expected a string")
        return v

    def tag(self, v, names):
        if isinstance(v, str):
            if v in names:
                return v, None
        elif isinstance(v, dict) and len(v) == 1:
            (k, x), = v.items()
            if k in names:
                return k, x
        raise self.fail("expected one of %s" % ", ".join(names))

    def word(self, v, names):
        if v not in names:
            raise self.fail("expected one of %s, found %s" % (", ".join(names), _json.dumps(v)))
        return v

    def pair(self, v, n):
        if not isinstance(v, list) or len(v) != n:
            raise self.fail("expected a list of %d" % n)
        return v

    def expr(self, v) -> ir.Expr:
        k, x = self.tag(v, ("Num", "Attr", "Ctx", "Reg", "Sample", "Call", "Unary",
                            "Binary", "Cond", "Agg", "ExtSample"))
        self.at(k)
        try:
            if k == "ExtSample":
                return self.ext_sample(x)
            if k == "Num":
                return ir.Num(self.num_or_inf(x))
            if k == "Attr":
                return ir.Attr(self.integer(x))
            if k == "Ctx":
                return ir.Ctx(self.word(x, ir.CTX_VARS))
            if k == "Reg":
                return ir.Reg(self.integer(x))
            if k == "Sample":
                a = self.pair(x, 2)
                return ir.Sample(self.word(a[0], ir.DISTS), self.items(a[1], self.expr))
            if k == "Call":
                a = self.pair(x, 2)
                return ir.Call(self.word(a[0], ir.FUNS), self.items(a[1], self.arg))
            if k == "Unary":
                a = self.pair(x, 2)
                return ir.Unary(self.word(a[0], ir.UNOPS), self.expr(a[1]))
            if k == "Binary":
                a = self.pair(x, 3)
                return ir.Binary(self.word(a[0], ir.BINOPS), self.expr(a[1]), self.expr(a[2]))
            if k == "Cond":
                a = self.pair(x, 3)
                return ir.Cond(self.expr(a[0]), self.expr(a[1]), self.expr(a[2]))
            a = self.pair(x, 2)
            return ir.AggRef(self.word(a[0], ir.AGGS), self.integer(a[1]))
        finally:
            self.pop()

    def ext_sample(self, x) -> ir.ExtSample:
        """serq's extension draws: ``{"dist": …, "args": […]}``, and for
        ``Empirical`` its table (``values``, ``counts``) and ``source``."""
        if self.strict:
            dist = x.get("dist") if isinstance(x, dict) else None
            name = ("`~%s`" % dist.lower()) if isinstance(dist, str) else "a distribution"
            raise IRError("IR: %s (ExtSample) is serq's extension (not serQ 0.1.3), at %s"
                          % (name, "".join(self.path)),
                          help="`--strict` reads serQ 0.1.3's IR only: drop it to read "
                               "serq's extensions")
        e = ir.ExtSample(self.field(x, "dist", lambda v: self.word(v, ir.EXT_DISTS)),
                         self.field(x, "args", lambda v: self.items(v, self.expr)))
        e.values = self.field(x, "values", lambda v: self.items(v, self.number),
                              optional=True)
        e.counts = self.field(x, "counts", lambda v: self.items(v, self.integer),
                              optional=True)
        e.source = self.field(x, "source", self.string, optional=True)
        e.column = self.field(x, "column", self.string, optional=True)
        return e

    def opt_expr(self, v):
        return None if v is None else self.expr(v)

    def arg(self, v) -> ir.Arg:
        k, x = self.tag(v, ("Expr", "Pool", "Stage"))
        self.at(k)
        try:
            if k == "Expr":
                return ir.ArgExpr(self.expr(x))
            if k == "Pool":
                return ir.ArgPool(self.ref(x))
            return ir.ArgStage(self.ref(x))
        finally:
            self.pop()

    def ref(self, v) -> ir.Ref:
        return ir.Ref(self.field(v, "base", self.integer), self.field(v, "count", self.integer),
                      self.field(v, "index", self.opt_expr))

    def opt_ref(self, v):
        return None if v is None else self.ref(v)

    def stmt(self, v) -> ir.Stmt:
        k, x = self.tag(v, ("Turn", "End", "Join", "Set", "Observe", "Hold", "Grow", "Drop",
                            "Release", "Load", "Run", "Branch", "Loop", "Choose", "Fork"))
        if k == "Turn":
            return ir.Turn()
        if k == "End":
            return ir.End()
        if k == "Join":
            return ir.Join()
        self.at(k)
        try:
            if k == "Set":
                a = self.pair(x, 2)
                return ir.Set(self.integer(a[0]), self.expr(a[1]))
            if k == "Observe":
                a = self.pair(x, 2)
                return ir.Observe(self.integer(a[0]), self.expr(a[1]))
            if k == "Hold":
                def pool(p):
                    a = self.pair(p, 3)
                    return ir.HoldPool(self.ref(a[0]), self.expr(a[1]), self.opt_expr(a[2]))

                def lease(p):
                    if p is None:
                        return None
                    a = self.pair(p, 2)
                    return (self.ref(a[0]), self.expr(a[1]))
                return ir.Hold(self.field(x, "pools", lambda v: self.items(v, pool)),
                               self.field(x, "reuse", self.opt_expr),
                               self.field(x, "body", self.integer),
                               self.field(x, "cache", self.opt_expr),
                               self.field(x, "lease", lease))
            if k in ("Grow", "Load"):
                a = self.pair(x, 2)
                cls = ir.Grow if k == "Grow" else ir.Load
                return cls(self.ref(a[0]), self.expr(a[1]))
            if k == "Drop":
                return ir.Drop(self.ref(x))
            if k == "Release":
                return ir.Release(self.ref(x))
            if k == "Run":
                return ir.Run(self.field(x, "stage", self.ref),
                              self.field(x, "mode", lambda v: self.word(v, ir.MODES)),
                              self.field(x, "work", self.expr),
                              self.field(x, "growing", self.opt_ref),
                              self.field(x, "also", lambda v: self.items(v, self.ref),
                                         optional=True, default=[]))
            if k == "Branch":
                a = self.pair(x, 3)
                return ir.Branch(self.expr(a[0]), self.integer(a[1]), self.integer(a[2]))
            if k == "Loop":
                return ir.Loop(self.integer(x))
            if k == "Fork":
                return ir.Fork(self.integer(x))
            return ir.Choose(self.field(x, "var", self.integer),
                             self.field(x, "count", self.expr),
                             self.field(x, "key", lambda v: self.items(v, self.expr)))
        finally:
            self.pop()

    def istmt(self, v) -> ir.IStmt:
        k, x = self.tag(v, ("Serve", "Admit", "Branch", "Set"))
        self.at(k)
        try:
            if k == "Serve":
                return ir.IServe(self.field(x, "only", self.opt_expr, optional=True),
                                 self.field(x, "by", lambda v: self.items(v, self.expr),
                                            optional=True))
            if k == "Admit":
                return ir.IAdmit(self.field(x, "only", self.opt_expr, optional=True),
                                 self.field(x, "gate", self.opt_expr, optional=True))
            if k == "Branch":
                a = self.pair(x, 3)
                return ir.IBranch(self.expr(a[0]), self.items(a[1], self.istmt),
                                  self.items(a[2], self.istmt))
            a = self.pair(x, 2)
            return ir.ISet(self.integer(a[0]), self.expr(a[1]))
        finally:
            self.pop()

    def pool(self, v) -> ir.Pool:
        p = ir.Pool(self.field(v, "name", self.string))
        p.index = self.field(v, "index", self.opt_int, optional=True)
        p.cap = self.field(v, "cap", self.num_or_inf)
        p.block = self.field(v, "block", lambda x: None if x is None else self.number(x))

        def evict(x):
            k, a = self.tag(x, ("Lru", "By"))
            return None if k == "Lru" else self.items(a, self.expr)
        p.evict = self.field(v, "evict", evict)

        def preempt(x):
            k, a = self.tag(x, ("None", "By"))
            if k == "None":
                return None
            p.preempt_tail = self.field(a, "tail", self.boolean, optional=True, default=False)
            return self.field(a, "keys", lambda ks: self.items(ks, self.expr))
        p.preempt = self.field(v, "preempt", preempt)
        p.queue = self.field(v, "queue", lambda x: self.queue(p, x))

        def spill(x):
            if x is None:
                return None
            return ir.Spill(self.field(x, "to", self.integer), self.field(x, "via", self.integer),
                            self.field(x, "work", self.expr), self.field(x, "when", self.expr))
        p.spill = self.field(v, "spill", spill)
        p.admit_via = self.field(v, "admit_via", self.opt_int)
        p.reserve_held = self.field(v, "reserve_held", self.boolean, optional=True, default=False)
        return p

    def queue(self, p: ir.Pool, x):
        """A pool's queue: null (FIFO), a list of keys, or serq's extended
        form ``{"keys": …, "first_fit": {…}, "watermark": W}``."""
        if not isinstance(x, dict):
            return None if x is None else self.items(x, self.expr)
        if self.strict:
            used = [n for k, n in (("first_fit", "first-fit admission"),
                                   ("watermark", "the pool watermark")) if k in x]
            raise IRError("IR: %s, serq's extension (not serQ 0.1.3), at %s"
                          % (" and ".join(used) or "an extended queue", "".join(self.path)),
                          help="`--strict` reads serQ 0.1.3's IR only: drop it to read "
                               "serq's extensions")

        def first_fit(f):
            if f is None:
                return None
            within = self.field(f, "within", self.opt_int)
            if within == 0:
                raise self.fail("first fit within 0 holds")
            return ir.FirstFit(within, self.field(f, "age", self.time))
        p.first_fit = self.field(x, "first_fit", first_fit, optional=True)
        p.watermark = self.field(x, "watermark", self.time, optional=True, default=0.0)
        if p.watermark > 0 and not p.watermark < p.cap:
            raise self.fail("a watermark of %s in a pool of %s: nothing would be admitted"
                            % (_json.dumps(x.get("watermark")), _json.dumps(_num(p.cap))))
        return self.field(x, "keys", lambda k: None if k is None else self.items(k, self.expr))

    def time(self, v):
        """A number of zero or more, or "inf"."""
        t = self.num_or_inf(v)
        if not t >= 0:
            raise self.fail("expected a number of zero or more, found %s" % _json.dumps(v))
        return t

    def unknown_fields(self):
        """Strict: a field this reader does not know (serQ 0.1.3 ignores it,
        serq's strict mode refuses it)."""
        for d, keys, where in self.read.values():
            extra = sorted(k for k in d if k not in keys)
            if extra:
                raise IRError("IR: unknown field `%s` at %s" % (extra[0], where),
                              help="serQ 0.1.3's IR (version 11) has no such field; without "
                                   "--strict it is ignored")

    def stage(self, v) -> ir.Stage:
        name = self.field(v, "name", self.string)
        index = self.field(v, "index", self.opt_int, optional=True)

        def kind(x):
            k, a = self.tag(x, ("Fifo", "Ps", "Delay", "Step"))
            self.at(k)
            try:
                if k == "Fifo":
                    return ir.Fifo(self.integer(a))
                if k == "Ps":
                    return ir.Ps(self.expr(a))
                if k == "Delay":
                    return ir.Delay()

                def serve(s):
                    t, keys = self.tag(s, ("By", "ExclusivePrefill"))
                    return "ExclusivePrefill" if t == "ExclusivePrefill" else self.items(keys, self.expr)
                return ir.Step(self.field(a, "budget", self.expr), self.field(a, "cost", self.expr),
                               self.field(a, "chunk", self.expr),
                               self.field(a, "granule", self.expr, optional=True),
                               self.field(a, "serve", serve),
                               self.field(a, "memory", self.opt_int),
                               self.field(a, "iteration", lambda b: self.items(b, self.istmt),
                                          optional=True))
            finally:
                self.pop()
        return ir.Stage(name, self.field(v, "kind", kind), index)

    def arrival(self, v) -> ir.Arrival:
        k, x = self.tag(v, ("None", "Poisson", "Renewal", "Closed", "Batch", "Sessions"))
        self.at(k)
        try:
            if k == "None":
                return ir.Arrival("None")
            if k == "Poisson":
                return ir.Arrival(k, self.number(x))
            if k == "Renewal":
                return ir.Arrival(k, self.expr(x))
            if k in ("Closed", "Batch"):
                return ir.Arrival(k, self.integer(x))
            if not isinstance(x, list):
                raise self.fail("expected a list of sessions")
            return ir.Arrival(k, x)
        finally:
            self.pop()

    def program(self, d) -> ir.Program:
        if not isinstance(d, dict):
            raise self.fail("expected an object")
        self.mark(d, "version")
        version = d.get("version")
        if version != 11:
            raise IRError("IR version %s (this interpreter reads 11)" % _json.dumps(version),
                          help="write the IR with `serq ir` of serq for serQ 0.1.3")
        p = ir.Program(
            attrs=self.field(d, "attrs", lambda v: self.items(v, self.string)),
            observes=self.field(d, "observes", lambda v: self.items(v, self.string)),
            pools=self.field(d, "pools", lambda v: self.items(v, self.pool)),
            stages=self.field(d, "stages", lambda v: self.items(v, self.stage)),
            arrival=self.field(d, "arrival", self.arrival),
            blocks=self.field(d, "blocks", lambda v: self.items(
                v, lambda b: self.items(b, self.stmt))),
            horizon=self.field(d, "horizon", self.number))
        p.trace = self.field(d, "trace", lambda v: None if v is None else self.string(v))
        p.trace_ordered = self.field(d, "trace_ordered", self.boolean)
        p.init = self.field(d, "init", self.integer)
        p.turn = self.field(d, "turn", self.integer)
        p.session = self.field(d, "session", self.integer)
        p.warmup = self.field(d, "warmup", self.number)
        p.seed = self.field(d, "seed", self.integer)
        p.arrivals = self.field(d, "arrivals", self.integer, optional=True)
        p.slots = tuple(self.field(d, k, self.integer) for k in SLOT_KEYS)
        p.hidden = self.field(d, "hidden", lambda v: self.items(v, self.integer))
        p.share = self.field(d, "share", lambda v: self.word(v, ("MaxMin", "Bottleneck")),
                             optional=True)
        p.gauges = self.field(d, "gauges", lambda v: self.items(v, lambda g: ir.Gauge(
            self.field(g, "name", self.string), self.field(g, "expr", self.expr))),
            optional=True, default=[])

        def claim(c):
            self.mark(c, "kind")
            k, st = self.tag(c.get("kind") if isinstance(c, dict) else None,
                             ("AtEnd", "EveryIteration", "SomeIteration"))
            return ir.Claim(self.field(c, "name", self.string), k,
                            self.field(c, "expr", self.expr),
                            None if st is None else self.integer(st),
                            self.field(c, "given", self.expr, optional=True))
        p.claims = self.field(d, "claims", lambda v: self.items(v, claim), optional=True,
                              default=[])
        p.registers = self.field(d, "registers", lambda v: self.items(v, lambda r: ir.Register(
            self.field(r, "name", self.string), self.field(r, "stage", self.integer),
            self.field(r, "init", self.number))), optional=True, default=[])
        return p


def loads(text: str, strict: bool = False, file: Optional[str] = None) -> ir.Program:
    """Read IR JSON text.  Shape and type errors raise ``IRError``.  With
    ``strict``, only serQ 0.1.3's IR is read: serq's extensions and fields
    it does not know are refused (0.1.3 itself ignores unknown fields).
    ``file``: where the text comes from, for the place of a JSON error."""
    try:
        data = _json.loads(text)
    except ValueError as e:
        lineno, colno = getattr(e, "lineno", None), getattr(e, "colno", None)
        if file is not None and lineno is not None:
            raise IRError("IR: not JSON: %s" % getattr(e, "msg", e), Span(file, lineno, colno),
                          help="IR is the JSON `serq ir` prints; a program file is named "
                               "NAME.sq", source=text) from None
        raise IRError("IR: not JSON: %s" % e) from None
    except RecursionError:
        raise IRError("IR: nested too deeply to read") from None
    try:
        reader = _Reader(strict)
        prog = reader.program(data)
        if strict:
            reader.unknown_fields()
        return prog
    except RecursionError:
        raise IRError("IR: nested too deeply to read") from None
