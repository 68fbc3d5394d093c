"""Queue stations and relations: parse-time sugar over pools, stages,
attributes and statements (feature map 1.10, 1.11, 3.17, 11.6).

A ``queue Q[N] : ROLE, … { pool …; serve KIND; nic KIND; ENTRY … }`` adds
the pool families ``Q.p``, the stage family ``Q`` (its ``serve``), ``Q.nic``
and, for a link with a ``latency``, the delay family ``Q.latency``.  Its
entries are parsed once, where the queue stands, into kernel statements
over the queue's own names, and checked to read only their own; a call of
an entry (``Q[i].verb (args);``, or ``request Q;`` for a gateway) copies
them in place, renamed to the called member's names (``calls.py``).

A relation ``R pull S`` / ``S push R`` fixes the program's ``share``; in
``R``'s ``from S`` entries a call then turns ``transfer (X) from S to p
(n);`` into a wait on the relation's latency stage, one flow over both
NICs, ``load`` and ``release`` of the pool the source leased.

Besides the mixin, this module holds the records of what was declared:
``QueueInfo``, ``Entry``, ``Relation``, and ``QTransfer`` (an entry's
``transfer`` until it is called).  The mixin below is part of ``Parser``;
it uses the parser's tokens, errors and statement grammar.
"""
from typing import Dict, List, Optional, Set, Tuple

from ..errors import SyntaxError_
from . import ast
from .expand import STATE_FUNCS, fold_const
from .expressions import children
from .lexer import IDENT, Token

ROLES = ("gateway", "prefill", "decode", "link")
ROLE_ENTRY = {"gateway": "route", "prefill": "prefill", "decode": "decode", "link": "transfer"}
# words a serving form or a role stands for: no queue is named so (a serving
# form without `on` resolves to a stage named after its role)
SERVING_WORDS = frozenset(("prefill", "decode", "tool", "transfer", "link", "gateway"))
ENTRY_PARAMS = {"route": 0, "prefill": 1, "decode": 1, "transfer": 1}

# names an entry body may read besides its own: the context variables, the
# clock, ``cached`` and ``inf``
# what an entry's hold header (units, `reserve`, `reuse`) may read besides
# its parameters and the `let`s above it: these context names (most of
# which a header then cannot read: the linker says why), as the reference;
# `now`, `position`, `admitted`, `preempted`, `demand`, `served` and
# `arrived` are not among them
_HEADER_CONTEXT = frozenset("""waited size age last waiting present residents decoders kv_decode
kv_prefill tokens prefilled attention decoding admission remaining cached computed inf self""".split())
# an entry's body also reads the clock
_CONTEXT = _HEADER_CONTEXT | {"now"}


class QTransfer:
    """``transfer (X) from S to p (n);`` inside an entry, without ``on``:
    lowered at the call, where the relation (if any) is known."""

    def __init__(self, work, src: ast.Name, dst: ast.Name, amount, tok: Token):
        self.work = work
        self.src = src
        self.dst = dst
        self.amount = amount
        self.tok = tok
        self.span = tok.span()


class Entry:
    def __init__(self, verb: Token, params: List[str], src: Optional[Token], body: list):
        self.verb = verb
        self.params = params
        self.src = src
        self.body = body


class QueueInfo:
    def __init__(self, tok: Token, name: Token, size: Optional[int], roles: List[str]):
        self.tok = tok
        self.name = name.text
        self.name_tok = name
        self.size = size
        self.roles = roles
        self.pools: List[str] = []
        self.serve: Optional[str] = None
        self.nic = False
        self.latency = None  # a link's fixed wait before each transfer
        self.entries: List[Entry] = []

    def entry(self, verb: str, src: Optional[str]) -> Optional[Entry]:
        for e in self.entries:
            if e.verb.text == verb and (e.src.text if e.src is not None else None) == src:
                return e
        return None

    def leased_pool(self) -> Optional[str]:
        for e in self.entries:
            found = _find_lease(e.body)
            if found is not None:
                return found
        return None


class Relation:
    def __init__(self, kind: str, left: str, right: str, latency, tok: Token):
        self.kind = kind
        self.latency = latency
        self.tok = tok
        if kind == "pull":  # READER pull SOURCE
            self.reader, self.source, self.poster = left, right, left
        else:  # POSTER push TARGET
            self.reader, self.source, self.poster = right, left, left


def _find_lease(stmts) -> Optional[str]:
    for s in stmts:
        if isinstance(s, ast.Hold):
            if s.lease is not None:
                return s.lease.ref.name
            r = _find_lease(s.body)
            if r is not None:
                return r
        for f in ("then", "other", "body"):
            inner = getattr(s, f, None)
            if isinstance(inner, list) and not isinstance(s, ast.Hold):
                r = _find_lease(inner)
                if r is not None:
                    return r
    return None


class QueueMixin:
    """Queue stations and relations for ``Parser``."""

    # ------------------------------------------------------------ declarations

    def init_queues(self) -> None:
        self.queues: Dict[str, QueueInfo] = {}
        self.relations: List[Relation] = []
        self.cur_queue: Optional[QueueInfo] = None
        # each queue's pool names, read ahead of the parse (parser.prescan)
        self.queue_pools_ahead: Dict[str, Set[str]] = {}
        # `Q[i].p` where a pool or stage is named: (queue, pool, token, notes)
        self.member_refs: List[tuple] = []
        # the entries being expanded by resolve_calls: (queue, verb)
        self.resolving: List[Tuple[str, Optional[str]]] = []

    def parse_queue(self, prog: ast.Program) -> None:
        kw = self.next()
        name = self.expect_ident("a queue name")
        if name.text in SERVING_WORDS:
            raise self.error("`%s` is a serving word; a queue needs another name" % name.text, name)
        size = self.parse_array_size()
        roles: List[str] = []
        if self.accept(":"):
            while True:
                r = self.expect_ident("a role")
                if r.text not in ROLES:
                    raise self.error("unknown role `%s`: a queue plays gateway, prefill, decode or link" % r.text, r)
                if r.text in roles:
                    raise self.error("role `%s` twice" % r.text, r)
                roles.append(r.text)
                if not self.accept(","):
                    break
        q = QueueInfo(kw, name, size, roles)
        qn = name.text
        self.expect("{")
        while not self.at("}"):
            t = self.peek()
            if t.kind != IDENT:
                raise self.error("expected a pool, `serve`, `nic` or an entry in queue `%s`, found %s"
                                 % (qn, t.describe()), t)
            w = t.text
            if w == "pool":
                if q.serve is not None or q.nic or q.entries:
                    raise self.error("queue `%s` declares its pools first, above its `serve` and entries" % qn, t)
                decl = self.parse_pool()
                q.pools.append(decl.name)
                decl.name = "%s.%s" % (qn, decl.name)
                decl.size = size
                prog.items.append(decl)
            elif w == "serve":
                if q.entries:
                    raise self.error("queue `%s` declares its `serve` above its entries" % qn, t)
                if q.serve is not None:
                    raise self.error("queue `%s` has two `serve` lines" % qn, t)
                self.next()
                decl = self.parse_stage_kind(name, qn, size)
                q.serve = decl.kind
                latency = None
                if self.at("latency"):
                    lt = self.next()
                    latency = self.parse_expr()
                    if "link" not in roles:
                        raise self.error("`latency` on a `serve` is a link's fixed wait: queue `%s` does not "
                                         "play `link`" % qn, lt)
                self.end_stage_kind(decl)
                self._queue_stage_names(q, decl)
                prog.items.append(decl)
                self.register_stage(qn, decl.kind, size)
                if latency is not None:
                    q.latency = self.const_latency(latency, lt)
                    lat = ast.StageDecl(qn + ".latency", size, "delay", name.span())
                    prog.items.append(lat)
                    self.register_stage(lat.name, "delay", size)
            elif w == "nic":
                if q.entries:
                    raise self.error("queue `%s` declares its `nic` above its entries" % qn, t)
                self.next()
                decl = self.parse_stage_kind(name, qn + ".nic", size)
                self.end_stage_kind(decl)
                q.nic = True
                prog.items.append(decl)
                self.register_stage(decl.name, decl.kind, size)
            elif w in ENTRY_PARAMS:
                q.entries.append(self.parse_entry(q))
            else:
                raise self.error("expected a pool, `serve`, `nic` or an entry in queue `%s`, found `%s`"
                                 % (qn, w), t)
        self.next()
        self.accept(";")
        if q.latency is not None and q.entry("transfer", None) is not None:
            raise self.error("queue `%s` has a `transfer` entry and a `latency`: a called link's time is its "
                             "entry's; write the latency in the entry body" % qn, kw)
        for role in roles:
            verb = ROLE_ENTRY[role]
            if role != "link" and q.entry(verb, None) is None:
                raise self.error("queue `%s` plays `%s` and has no `%s` entry" % (qn, role, verb), kw)
        for e in q.entries:
            if e.src is None:
                continue
            sq = self.queues.get(e.src.text)
            if sq is None:
                raise self.error("`from %s`: no queue `%s` is declared above" % (e.src.text, e.src.text), e.src)
            if sq.leased_pool() is None:
                # serQ 0.1.3 checks only calls (a call is refused, below):
                # an entry never called compiles, with a warning
                self.warn("`from %s`: no entry of `%s` leases a pool, so this entry has nothing "
                          "to take, and a call of it is an error" % (sq.name, sq.name), e.src,
                          help="lease the pool in `%s`'s entries: `hold … { … } lease POOL (t);`"
                               % sq.name)
        self.queues[qn] = q
        self.queue_order.append(qn)

    def _queue_stage_names(self, q: QueueInfo, decl: ast.StageDecl) -> None:
        """Own pool names in the serve stage's options become ``Q.p``."""
        if decl.step is not None and decl.step.memory is not None and decl.step.memory.name in q.pools:
            decl.step.memory.name = "%s.%s" % (q.name, decl.step.memory.name)

    def parse_entry(self, q: QueueInfo) -> Entry:
        verb = self.next()
        v = verb.text
        allowed = [ROLE_ENTRY[r] for r in q.roles]
        if v not in allowed:
            raise self.error("queue `%s` does not play `%s`: its entries are %s"
                             % (q.name, {e: r for r, e in ROLE_ENTRY.items()}[v],
                                ", ".join("`%s`" % a for a in allowed) or "none"), verb)
        params: List[str] = []
        if self.at("("):
            self.next()
            if not self.at(")"):
                while True:
                    p = self.expect_ident("a parameter name")
                    if p.text in params:
                        raise self.error("parameter `%s` is named twice" % p.text, p)
                    params.append(p.text)
                    if not self.accept(","):
                        break
            self.expect(")")
        if len(params) != ENTRY_PARAMS[v]:
            raise self.error("the `%s` entry takes %d parameter(s), found %d" % (v, ENTRY_PARAMS[v], len(params)),
                             verb)
        src = None
        if self.at("from"):
            self.next()
            src = self.expect_ident("a queue name")
            if v != "decode":
                raise self.error("`from` belongs to a `decode` entry", src)
        if q.entry(v, src.text if src is not None else None) is not None:
            raise self.error("queue `%s` has two `%s` entries" % (q.name, v), verb)
        saved = self.cur_queue
        self.cur_queue = q
        try:
            body = self.parse_block("entry")
        finally:
            self.cur_queue = saved
        entry = Entry(verb, params, src, body)
        if v != "route":  # the gateway is the server: it reads the session
            self.check_entry_headers(q, entry)
        return entry

    def check_entry_headers(self, q: QueueInfo, entry: Entry) -> None:
        """An entry's hold headers (units, `reserve`, `reuse`, with the
        `at admission` bindings substituted) read only the entry's
        parameters, constants declared above and the pools and stage in a
        query (`used(kv)`); checked as soon as the entry is parsed, as the
        reference does.  A name of another queue (`D.x`) is left to the
        body's rule (check_entry_reads)."""
        allowed = set(entry.params) | _HEADER_CONTEXT
        if entry.src is not None:
            allowed.add(entry.src.text)  # how it may be read is the linker's
        for s in ast.walk(entry.body):
            if not isinstance(s, ast.Hold):
                continue
            exprs = []
            for hp in s.pools:
                exprs.append(hp.ref.index)
                exprs.append(hp.units)
                exprs.append(hp.reserve)
            exprs.append(s.reuse)
            for e in exprs:
                bad = _header_read(e, allowed, self.let_values)
                if bad is not None:
                    raise self.error("`%s.%s`: the header reads `%s`; an entry's header sees its parameters, "
                                     "constants and the queue's pools and stage" % (q.name, entry.verb.text, bad),
                                     entry.verb, help="pass `%s` as a parameter, or read it in the body" % bad)

    def parse_relation(self, prog: ast.Program) -> None:
        left = self.next()
        kind = self.next()
        right = self.expect_ident("a queue name")
        for t in (left, right):
            q = self.queues.get(t.text)
            if q is None:
                raise self.error("`%s %s %s`: no queue `%s` is declared above" % (left.text, kind.text, right.text,
                                                                                  t.text), t)
            if not q.nic:
                raise self.error("`%s %s %s`: queue `%s` has no `nic`" % (left.text, kind.text, right.text, t.text),
                                 t, help="declare `nic ps(…);` in queue `%s`" % t.text)
        latency = None
        if self.at("latency"):
            lt = self.next()
            latency = self.const_latency(self.parse_expr(), lt)
        self.expect("share")
        p = self.expect_ident("`maxmin` or `bottleneck`")
        if p.text not in ("maxmin", "bottleneck"):
            raise self.error("expected `maxmin` or `bottleneck`, found `%s`" % p.text, p)
        self.expect(";")
        rel = Relation(kind.text, left.text, right.text, latency, left)
        for other in self.relations:
            if other.reader == rel.reader and other.source == rel.source:
                raise self.error("`%s` takes the KV from `%s` already: one relation per reader"
                                 % (rel.reader, rel.source), left)
        if latency is not None:
            owner = rel.reader if kind.text == "pull" else rel.poster
            size = self.queues[owner].size
            decl = ast.StageDecl(owner + ".nic.latency", size, "delay", left.span())
            prog.items.append(decl)
            self.register_stage(decl.name, "delay", size)
        if self.share_tok is None:
            self.share_tok = left
            self.share_policy = p.text
            prog.items.append(ast.ShareDecl(p.text, left.span()))
        elif getattr(self, "share_policy", p.text) != p.text:
            raise self.error("two relations with different `share` policies: a program shares its links "
                             "one way", p)
        self.relations.append(rel)

    def const_latency(self, e, tok: Token):
        val = fold_const(e, self.let_values, [])
        if val is None:
            raise self.error("`latency` is a number or a constant expression over `let`s", tok)
        return ast.Num(val, tok.span())

    # ------------------------------------------------------------ checks

    def check_pool_outside(self, ref: ast.Name, what: str) -> None:
        """A queue's own pool is held only by the queue's entries."""
        if "." not in ref.name or self.checking_def:
            return
        qn, p = ref.name.split(".", 1)
        if p not in self.queue_pools_ahead.get(qn, ()):  # a queue may be declared below
            return
        raise self.error("`%s %s`: `%s` is a pool of queue `%s`, and only `%s`'s entries hold it; call one "
                         "(`%s.verb (…)`)" % (what, ref.name, p, qn, qn, qn), span=ref.span)

    def check_member_refs(self) -> None:
        """``Q[i].p`` names a pool of member ``i``: ``p`` must be one of
        queue ``Q``'s pools (a name that is no queue is the linker's)."""
        for qn, attr, tok, notes in self.member_refs:
            q = self.queues.get(qn)
            if q is not None and attr not in q.pools:
                raise SyntaxError_("`%s[…].%s` reads the request's attribute, which is no member's: write `%s.%s`"
                                   % (qn, attr, qn, attr), tok.span(), notes=notes[::-1],
                                   source=tok.src if tok.src is not None else self.text)

    def check_entry_reads(self, hidden: List[str]) -> None:
        """An entry sees its own: its parameters, the queue's pools and stage,
        constants, the context and the request's ``hidden`` attributes."""
        for qn in self.queue_order:
            q = self.queues[qn]
            if "gateway" in q.roles and all(e.verb.text == "route" for e in q.entries):
                continue
            for e in q.entries:
                if e.verb.text == "route":
                    continue
                own = set(e.params) | set(q.pools) | {qn, qn + ".nic", qn + ".latency"}
                if e.src is not None:
                    own.add(e.src.text)
                sets: set = set()
                _collect_sets(e.body, sets)
                own |= sets
                reads: List[str] = []
                _collect_reads(e.body, reads, frozenset())
                for n in reads:
                    if n in own or n in _CONTEXT or n in self.let_values or n in hidden:
                        continue
                    label = "%s.%s" % (qn, e.verb.text)
                    if "." in n and n.split(".", 1)[0] in self.queues:
                        raise self.error("`%s` reads `%s`, another queue's: an entry sees its own; the gateway "
                                         "reads across queues and passes what an entry needs" % (label, n), e.verb)
                    raise self.error("`%s` reads `%s`, a session attribute set outside the queue: an entry sees "
                                     "its parameters, the queue's pools, the context and the request's `hidden` "
                                     "attributes; pass `%s` as a parameter or `mark` a moment for the caller to "
                                     "read" % (label, n, n), e.verb)


def _header_read(e, allowed, lets) -> Optional[str]:
    """The first name ``e`` reads as a value that is not ``allowed``, not a
    `let` and not another queue's; a pool or stage named in a query is no
    such read."""
    if e is None:
        return None
    stack = [(e, frozenset())]
    while stack:
        x, bound = stack.pop()
        if isinstance(x, ast.Name):
            n = x.name
            if n not in bound and n not in allowed and n not in lets and "." not in n:
                return n
            if x.index is not None:
                stack.append((x.index, bound))
        elif isinstance(x, ast.Call) and x.func in STATE_FUNCS:
            for a in reversed(x.args):
                if isinstance(a, ast.Name):
                    if a.index is not None:
                        stack.append((a.index, bound))
                else:
                    stack.append((a, bound))
        elif isinstance(x, ast.Agg):
            stack.append((x.body, bound | {x.var}))
            stack.append((x.count, bound))
        else:
            for c in reversed(children(x)):
                stack.append((c, bound))
    return None


def _collect_sets(stmts, out: set) -> None:
    for s in stmts:
        if isinstance(s, ast.Set):
            out.add(s.name)
        elif isinstance(s, ast.Choose):
            out.add(s.var)
        for f in ("body", "then", "other"):
            inner = getattr(s, f, None)
            if isinstance(inner, list):
                _collect_sets(inner, out)


def _expr_reads(e, out: List[str], bound) -> None:
    if e is None:
        return
    if isinstance(e, ast.Name):
        if e.name not in bound:
            out.append(e.name)
        _expr_reads(e.index, out, bound)
    elif isinstance(e, ast.Unary):
        _expr_reads(e.operand, out, bound)
    elif isinstance(e, ast.Binary):
        _expr_reads(e.left, out, bound)
        _expr_reads(e.right, out, bound)
    elif isinstance(e, ast.Cond):
        for x in (e.test, e.then, e.other):
            _expr_reads(x, out, bound)
    elif isinstance(e, (ast.Call, ast.Draw)):
        for a in e.args:
            _expr_reads(a, out, bound)
    elif isinstance(e, ast.Agg):
        _expr_reads(e.count, out, bound)
        _expr_reads(e.body, out, bound | {e.var})


def _collect_reads(stmts, out: List[str], bound) -> None:
    for s in stmts:
        for f in ("value", "amount", "work", "count", "test", "reuse", "cache", "ref", "growing"):
            v = getattr(s, f, None)
            if v is not None and not isinstance(v, list):
                _expr_reads(v, out, bound)
        if isinstance(s, QTransfer):
            _expr_reads(s.dst, out, bound)
            _expr_reads(s.src, out, bound)
        if isinstance(s, ast.Run):
            for st in s.stages:  # the stage an entry runs on may be any, its index is a read
                _expr_reads(st.index, out, bound)
        if isinstance(s, ast.Choose):
            for k in s.keys:
                _expr_reads(k, out, bound)
        if isinstance(s, ast.Hold):
            for hp in s.pools:
                for x in (hp.ref, hp.units, hp.reserve):
                    _expr_reads(x, out, bound)
            if s.lease is not None:
                _expr_reads(s.lease.ref, out, bound)
                _expr_reads(s.lease.time, out, bound)
        for f in ("body", "then", "other"):
            inner = getattr(s, f, None)
            if isinstance(inner, list):
                _collect_reads(inner, out, bound)
