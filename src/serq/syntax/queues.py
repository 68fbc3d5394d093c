"""Queue stations and relations: parse-time sugar over pools, stages,
attributes and statements (feature map 1.10, 1.11, 3.17, 11.6).

A ``queue Q[N] : ROLE, … { pool …; serve KIND; nic KIND; ENTRY … }`` adds
the pool families ``Q.p``, the stage family ``Q`` (its ``serve``), ``Q.nic``
and, for a link with a ``latency``, the delay family ``Q.latency``.  Its
entries are parsed once, where the queue stands, into kernel statements
over the queue's own names; a call ``Q[i].verb (args) [from S[k]] [to P
(n)];`` (or ``request Q;`` for a gateway) copies the entry's statements in
place, renaming the queue's names to member ``i``'s:

- a bare ``Q`` (and ``Q.nic``, ``Q.latency``) is ``Q[i]``, a pool ``p`` is
  ``Q.p[i]``, ``self`` is ``i``;
- an attribute the entry sets (``set``, ``choose``, ``mark``, an ``at
  admission`` binding) is the request's attribute ``Q.x`` (a gateway's route
  sets the session's own attributes);
- a parameter is replaced by its argument.

A relation ``R pull S`` / ``S push R`` fixes the program's ``share`` and, in
``R``'s ``from S`` entries, turns ``transfer (X) from S to p (n);`` into a
wait on the relation's latency stage, one flow over both NICs, ``load`` and
``release`` of the pool the source leased.

The mixin below is part of ``Parser``; it uses the parser's tokens, errors
and statement grammar.
"""
import copy
from typing import Dict, List, Optional, Set, Tuple

from ..errors import Span, SyntaxError_
from . import ast
from .expand import STATE_FUNCS, fold_const
from .expressions import children, draws
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


class PendingCall:
    """An entry call (``Q[i].verb (args) [from R] [to P (n)];``, or
    ``request Q;`` for a gateway), as parsed: expanded once the whole
    program is read (``QueueMixin.resolve_calls``), when every queue is
    known, wherever it is declared."""

    def __init__(self, qt: Token, idx: Optional[ast.Expr], verb: Optional[Token], args: List[ast.Expr],
                 src_ref: Optional[ast.Name], to: Optional[Tuple[ast.Name, ast.Expr]], notes: List[str]):
        self.qt = qt
        self.idx = idx
        self.verb = verb  # None: `request Q;`
        self.args = args
        self.src_ref = src_ref
        self.to = to  # (pool, amount) or None
        self.notes = notes
        self.span = qt.span()

    def call_exprs(self) -> List[ast.Expr]:
        """What the call reads where it stands (its index and arguments)."""
        out = [self.idx] + list(self.args) + [self.src_ref]
        if self.to is not None:
            out.extend(self.to)
        return [e for e in out if e is not None]


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
        # `decode … from S` entries of a queue S whose entries lease nothing,
        # reported after the calls are expanded
        self.from_no_lease: list = []
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

    # ------------------------------------------------------------ calls

    def parse_entry_call(self, out: list) -> None:
        """``Q[i].verb (args) [from S[k] | from POOL] [to POOL (n)];``"""
        qt = self.next()
        idx = None
        if self.at("["):
            self.next()
            idx = self.parse_expr()
            self.expect("]")
        self.expect(".")
        verb = self.expect_ident("an entry name")
        args = self.parse_args()
        src_ref = None
        if self.at("from"):
            self.next()
            src_ref = self.parse_ref("a queue or pool name")
        to = None
        if self.at("to"):
            self.next()
            dst = self.parse_ref("a pool name")
            to = (dst, self.paren_expr())
        self.expect(";")
        # expanded once the whole program is read, as the reference does (the
        # queue may be declared below; the call's errors come after the
        # syntax errors)
        out.append(PendingCall(qt, idx, verb, args, src_ref, to, list(self.use_notes)))

    def _cycle(self, call: PendingCall) -> SyntaxError_:
        label = call.qt.text if call.verb is None else "%s.%s" % (call.qt.text, call.verb.text)
        return self.error("`%s`: the entries call each other in a cycle" % label, call.qt)

    def expand_call(self, call: PendingCall, out: list) -> None:
        qt, idx, verb, args = call.qt, call.idx, call.verb, call.args
        if verb is None:
            self.expand_request(qt, out)
            return
        q = self.queues.get(qt.text)
        if q is None:  # the name looked like a queue's, but no queue took it
            raise self.error("unknown statement `%s`: no queue `%s` is declared" % (qt.text, qt.text), qt,
                             help="declare `queue %s { … }`; one written inside a `def`'s body (a `def … = …` "
                                  "missing its `;` runs on to the next `;`) declares nothing" % qt.text)
        src_q = None
        src_idx = None
        src_pool = None
        if call.src_ref is not None:
            ref = call.src_ref
            if ref.name in self.queues:
                src_q = self.queues[ref.name]
                src_idx = ref.index
            else:
                src_pool = ref
        to = call.to
        label = "%s.%s" % (q.name, verb.text)
        entry = q.entry(verb.text, src_q.name if src_q is not None else None)
        if entry is None and q.entry(verb.text, None) is None and \
                not any(e.verb.text == verb.text for e in q.entries):
            raise self.error("`%s`: queue `%s` has no such entry" % (label, q.name), qt)
        if entry is None:
            raise self.error("`%s from %s`: queue `%s` has no `%s` entry from `%s`"
                             % (label, src_q.name if src_q else "?", q.name, verb.text,
                                src_q.name if src_q else "?"), qt)
        if idx is None and q.size is not None:
            raise self.error("`%s`: `%s` is a family of %d; index it" % (label, q.name, q.size), qt,
                             help="call a member: `%s[i].%s (…)`" % (q.name, verb.text))
        if idx is not None and q.size is None:
            raise self.error("`%s[…].%s`: `%s` is one queue, not a family" % (q.name, verb.text, q.name), qt,
                             help="call it as `%s.%s (…)`" % (q.name, verb.text))
        if len(args) != len(entry.params):
            raise self.error("`%s` takes %d argument(s), got %d" % (label, len(entry.params), len(args)), qt)
        for p, a in zip(entry.params, args):
            if draws(a):
                raise self.error("`%s`: the argument for `%s` draws a sample; a parameter is substituted, so a "
                                 "name used twice would draw twice" % (label, p), qt,
                                 help="`set` the draw into an attribute first and pass the attribute")
        src_info = None
        if src_q is not None:
            leased = src_q.leased_pool()
            if leased is None:
                raise self.error("`from %s`: no entry of `%s` leases a pool, so it has nothing to take"
                                 % (src_q.name, src_q.name), qt)
            src_info = (src_q, src_idx, leased)
        self.expand_entry(q, entry, idx, dict(zip(entry.params, args)), src_info, qt, out)
        if src_pool is not None or to is not None:
            if to is not None:
                out.append(ast.Load(to[0], to[1], qt.span()))
            if src_pool is not None:
                out.append(ast.Release(src_pool, qt.span()))

    def resolve_calls(self, stmts: list) -> list:
        """Expand the entry calls in place (and the calls their entries make,
        depth first), now that every queue is known; a call to an entry being
        expanded closes a cycle."""
        out: list = []
        for s in stmts:
            if isinstance(s, PendingCall):
                key = (s.qt.text, s.verb.text if s.verb is not None else None)
                saved = self.use_notes
                self.use_notes = s.notes
                try:
                    if key in self.resolving:
                        raise self._cycle(s)
                    expanded: list = []
                    self.expand_call(s, expanded)
                finally:
                    self.use_notes = saved
                self.resolving.append(key)
                try:
                    out.extend(self.resolve_calls(expanded))
                finally:
                    self.resolving.pop()
                continue
            if isinstance(s, ast.Hold):
                s.body = self.resolve_calls(s.body)
            elif isinstance(s, ast.Branch):
                s.then = self.resolve_calls(s.then)
                s.other = self.resolve_calls(s.other)
            elif isinstance(s, (ast.Loop, ast.Fork)):
                s.body = self.resolve_calls(s.body)
            out.append(s)
        return out

    def expand_entry(self, q: QueueInfo, entry: Entry, idx, args: Dict[str, ast.Expr], src_info,
                     call_tok: Token, out: list) -> None:
        self.entry_uses.append((q, entry))
        lw = _Lower(self, q, entry, idx, args, src_info, call_tok)
        out.extend(lw.stmts(copy.deepcopy(entry.body)))

    def request_gateway(self, g: Token, out: list) -> None:
        """``request G;``: the gateway's route, expanded with the calls."""
        out.append(PendingCall(g, None, None, [], None, None, list(self.use_notes)))

    def expand_request(self, g: Token, out: list) -> None:
        q = self.queues.get(g.text)
        if q is None:
            raise self.error("`request %s`: no queue `%s` is declared" % (g.text, g.text), g,
                             help="declare `queue %s : gateway { route { … } }`, or write `request;`" % g.text)
        if "gateway" not in q.roles:
            raise self.error("`request %s`: queue `%s` does not play `gateway`" % (g.text, g.text), g,
                             help="declare `queue %s : gateway { route { … } }`, or write `request;`" % g.text)
        entry = q.entry("route", None)
        self.expand_entry(q, entry, None, {}, None, g, out)

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


class _Lower:
    """Rename one entry's statements to a member's names at a call."""

    def __init__(self, parser, q: QueueInfo, entry: Entry, idx, args, src_info, call_tok: Token):
        self.p = parser
        self.q = q
        self.entry = entry
        self.idx = idx
        self.args = args
        self.src_info = src_info  # (source queue, member index, leased pool) or None
        self.call_tok = call_tok
        self.gateway = entry.verb.text == "route"
        own: set = set()
        _collect_sets(entry.body, own)
        self.own_attrs = set() if self.gateway else own

    def member(self, span: Span):
        return copy.deepcopy(self.idx) if self.idx is not None else None

    def self_index(self, span: Span):
        if self.q.size is None:
            raise self.p.error("`self` inside queue `%s`, which is not a family" % self.q.name, self.call_tok)
        if self.idx is None:
            raise self.p.error("`self` inside queue `%s`: call a member, `%s[i].%s (…)`"
                               % (self.q.name, self.q.name, self.entry.verb.text), self.call_tok)
        return copy.deepcopy(self.idx)

    def expr(self, e, bound=frozenset()):
        if e is None:
            return None
        if isinstance(e, ast.Name):
            n = e.name
            if e.index is None and n not in bound:
                if n in self.args:
                    return copy.deepcopy(self.args[n])
                if n == "self":
                    return self.self_index(e.span)
                qn = self.q.name
                if n in (qn, qn + ".nic", qn + ".latency"):
                    return ast.Name(n, e.span, self.member(e.span))
                if n in self.q.pools:
                    return ast.Name("%s.%s" % (qn, n), e.span, self.member(e.span))
                if n in self.own_attrs:
                    return ast.Name("%s.%s" % (qn, n), e.span)
                if self.src_info is not None and n == self.src_info[0].name:
                    return copy.deepcopy(self.src_info[1]) if self.src_info[1] is not None else ast.Num(0.0, e.span)
                return e
            index = self.expr(e.index, bound)
            if n in self.q.pools:
                raise self.p.error("`%s[…]` inside queue `%s`: an own pool is the member's; write `%s`"
                                   % (n, self.q.name, n), self.call_tok)
            if n == self.q.name:
                raise self.p.error("`%s[…]` inside queue `%s`: the own stage is the member's; write `%s`"
                                   % (n, n, n), self.call_tok)
            return ast.Name(n, e.span, index)
        if isinstance(e, ast.Unary):
            return ast.Unary(e.op, self.expr(e.operand, bound), e.span)
        if isinstance(e, ast.Binary):
            return ast.Binary(e.op, self.expr(e.left, bound), self.expr(e.right, bound), e.span)
        if isinstance(e, ast.Cond):
            return ast.Cond(self.expr(e.test, bound), self.expr(e.then, bound), self.expr(e.other, bound), e.span)
        if isinstance(e, ast.Call):
            return ast.Call(e.func, [self.expr(a, bound) for a in e.args], e.span)
        if isinstance(e, ast.Draw):
            return ast.Draw(e.dist, [self.expr(a, bound) for a in e.args], e.span, e.strings)
        if isinstance(e, ast.Agg):
            return ast.Agg(e.kind, e.var, self.expr(e.count, bound), self.expr(e.body, bound | {e.var}), e.span)
        return e

    def attr(self, name: str) -> str:
        return "%s.%s" % (self.q.name, name) if name in self.own_attrs else name

    def src_pool(self, ref: ast.Name) -> ast.Name:
        """A pool reference; the ``from`` queue's name is the pool it leased."""
        if self.src_info is not None and ref.name == self.src_info[0].name and ref.index is None:
            sq, sidx, leased = self.src_info
            return ast.Name("%s.%s" % (sq.name, leased), ref.span, copy.deepcopy(sidx))
        return self.expr(ref)

    def stmts(self, stmts) -> list:
        out = []
        for s in stmts:
            self.stmt(s, out)
        return out

    def stmt(self, s, out: list) -> None:
        x = self.expr
        if isinstance(s, ast.Set):
            out.append(ast.Set(self.attr(s.name), x(s.value), s.span))
        elif isinstance(s, ast.Observe):
            out.append(ast.Observe(s.name, x(s.value), s.span))
        elif isinstance(s, ast.Choose):
            out.append(ast.Choose(self.attr(s.var), x(s.count), [x(k) for k in s.keys], s.span))
        elif isinstance(s, ast.Hold):
            for hp in s.pools:
                hp.ref = self.src_pool(hp.ref)
                hp.units = x(hp.units)
                hp.reserve = x(hp.reserve)
            s.reuse = x(s.reuse)
            s.cache = x(s.cache)
            if s.lease is not None:
                s.lease.ref = self.src_pool(s.lease.ref)
                s.lease.time = x(s.lease.time)
            if getattr(s, "bound_names", None):
                s.bound_names = [self.attr(n) for n in s.bound_names]
                s.read_bindings = [(self.attr(n), sp, src) for n, sp, src in s.read_bindings]
            s.body = self.stmts(s.body)
            out.append(s)
        elif isinstance(s, (ast.Grow, ast.Load)):
            out.append(type(s)(self.src_pool(s.ref), x(s.amount), s.span))
        elif isinstance(s, (ast.Drop, ast.Release)):
            out.append(type(s)(self.src_pool(s.ref), s.span))
        elif isinstance(s, ast.Run):
            out.append(ast.Run([x(st) for st in s.stages], s.mode, x(s.work),
                               self.src_pool(s.growing) if s.growing is not None else None, s.span))
        elif isinstance(s, ast.Branch):
            out.append(ast.Branch(x(s.test), self.stmts(s.then), self.stmts(s.other), s.span))
        elif isinstance(s, (ast.Loop, ast.Fork)):
            out.append(type(s)(self.stmts(s.body), s.span))
        elif isinstance(s, QTransfer):
            self.transfer(s, out)
        elif isinstance(s, PendingCall):
            to = None if s.to is None else (self.src_pool(s.to[0]), x(s.to[1]))
            out.append(PendingCall(s.qt, x(s.idx), s.verb, [x(a) for a in s.args],
                                   x(s.src_ref), to, s.notes))
        else:
            out.append(s)

    def transfer(self, s: QTransfer, out: list) -> None:
        sp = s.span
        rel = None
        if self.src_info is not None:
            for r in self.p.relations:
                if r.reader == self.q.name and r.source == self.src_info[0].name:
                    rel = r
                    break
        if rel is None:
            stage = ast.Name(self.p.resolve_role(s.tok, "transfer"), sp)
            out.append(ast.Run([stage], "plain", self.expr(s.work), None, sp))
        else:
            sq, sidx = self.src_info[0], self.src_info[1]
            if rel.latency is not None:
                if rel.kind == "pull":
                    lat = ast.Name(self.q.name + ".nic.latency", sp, self.member(sp))
                else:
                    lat = ast.Name(sq.name + ".nic.latency", sp, copy.deepcopy(sidx))
                out.append(ast.Run([lat], "plain", copy.deepcopy(rel.latency), None, sp))
            stages = [ast.Name(sq.name + ".nic", sp, copy.deepcopy(sidx)),
                      ast.Name(self.q.name + ".nic", sp, self.member(sp))]
            out.append(ast.Run(stages, "plain", self.expr(s.work), None, sp))
        out.append(ast.Load(self.src_pool(s.dst), self.expr(s.amount), sp))
        out.append(ast.Release(self.src_pool(s.src), sp))
