"""Queue entry calls: ``Q[i].verb (args) [from S[k]] [to P (n)];`` (or
``request Q;`` for a gateway) is parsed into a placeholder,
``PendingCall``, where it stands, and expanded once the whole program is
read, when every queue is known, wherever it is declared.  The expansion
copies the called entry's statements in place, renaming the queue's names
to member ``i``'s (``_Lower``):

- a bare ``Q`` (and ``Q.nic``, ``Q.latency``) is ``Q[i]``, a pool ``p`` is
  ``Q.p[i]``, ``self`` is ``i``;
- an attribute the entry sets (``set``, ``choose``, ``mark``, an ``at
  admission`` binding) is the request's attribute ``Q.x`` (a gateway's route
  sets the session's own attributes);
- a parameter is replaced by its argument;

and lowering each ``transfer`` of the entry, over the relation if there is
one (see ``queues.py``).  The calls an entry makes are expanded in turn; a
call of an entry still being expanded closes a cycle, an error.

The mixin below is part of ``Parser``; it uses the parser's tokens and
errors and the queues that ``QueueMixin`` declared.
"""
import copy
from typing import Dict, List, Optional, Tuple

from ..errors import Span, SyntaxError_
from . import ast
from .expressions import draws
from .lexer import Token
from .queues import Entry, QTransfer, QueueInfo, _collect_sets


class PendingCall:
    """An entry call (``Q[i].verb (args) [from R] [to P (n)];``, or
    ``request Q;`` for a gateway), as parsed: expanded once the whole
    program is read (``CallsMixin.resolve_calls``), when every queue is
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


class CallsMixin:
    """Queue entry calls for ``Parser``."""

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
