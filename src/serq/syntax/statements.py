"""Statements (feature map section 3): blocks, ``hold`` with its ``at
admission`` bindings, serving forms lowered to ``run``/``load``/``release``,
statement ``def``s and queue entry calls expanded in place."""
import copy
from typing import Dict, List, Optional, Tuple

from ..errors import Span, SyntaxError_
from . import ast
from .expand import RETIRED, names_read, subst_expr
from .expressions import draws, live_state
from .lexer import EOF, IDENT, PUNCT, Token
from .queues import QTransfer


# the words a statement starts with (a def or a queue is named otherwise)
STMT_WORDS = frozenset(("set", "observe", "turn", "end", "join", "request", "hold", "grow", "load", "drop",
                        "release", "run", "branch", "loop", "fork", "choose", "prefill", "decode", "tool",
                        "transfer", "mark"))


class _Request:
    """Placeholder for ``request;`` until the server is spliced in."""

    def __init__(self, span: Span, gateway: Optional[str] = None):
        self.span = span
        self.gateway = gateway


class StatementsMixin:
    """The statement grammar of ``Parser``."""

    # ------------------------------------------------------------ statements

    def parse_block(self, context: Optional[str] = None) -> list:
        open_ = self.expect("{")
        self.enter(open_)
        saved = self.context
        if context is not None:
            self.context = context
        out: list = []
        try:
            while not self.at("}"):
                if self.peek().kind == EOF:
                    raise self.error("expected `}`, found end of input", self.peek(),
                                     help="the block opened at %d:%d is not closed" % (open_.line, open_.col))
                self.parse_stmt(out)
            self.next()
        finally:
            self.context = saved
        self.leave()
        return out

    def parse_stmt(self, out: list) -> None:
        t = self.peek()
        if t.kind != IDENT:
            raise self.error("expected a statement, found %s" % t.describe(), t)
        w = t.text
        sp = t.span()
        nxt = self.peek(1)
        if self.checking_def and w not in STMT_WORDS and w not in RETIRED and nxt.kind == PUNCT \
                and nxt.text in ("(", "[", "."):
            self.check_call()
            return
        if nxt.kind == PUNCT and nxt.text == "(" and w not in (
                "branch", "hold", "loop", "fork", "tool", "prefill", "decode", "transfer"):
            info = self.defs.get(w)
            if info is not None:
                if not info.is_block:
                    raise self.error("`%s` is an expression (`def %s(…) = …;`), not statements" % (w, w), t)
                self.expand_stmt_def(info, out)
                return
        if (w in self.queues or self.program_names.get(w) == "queue") and nxt.kind == PUNCT \
                and nxt.text in ("[", ".") and not (
                nxt.text == "." and self.peek(3).kind == PUNCT and self.peek(3).text == "=") :
            self.parse_entry_call(out)
            return
        if w == "set" or w == "observe":
            self.next()
            name = self.expect_ident("an attribute name")
            if name.text in RETIRED:
                raise self.error("`%s` is a retired word and names nothing: %s" % (name.text, RETIRED[name.text]),
                                 name)
            self.expect("=")
            e = self.parse_expr()
            self.expect(";")
            cls = ast.Set if w == "set" else ast.Observe
            out.append(cls(name.text, e, name.span()))
        elif w == "turn":
            self.next()
            if self.context in ("server", "entry") and not self.checking_def:
                raise self.error("`turn` is the session's: the next turn is the workload's decision, "
                                 "not the server's", t)
            self.expect(";")
            out.append(ast.Turn(sp))
        elif w == "end":
            self.next()
            if self.context == "server" and not self.checking_def:
                raise self.error("`end` is the session's: a server answers a request and the session "
                                 "decides when to end", t)
            if self.context == "entry" and not self.checking_def:
                raise self.error("`end` is the session's: a server is done with a request when its block is, "
                                 "and whether the session goes on is the workload's", t)
            self.expect(";")
            out.append(ast.End(sp))
        elif w == "join":
            self.next()
            self.expect(";")
            out.append(ast.Join(sp))
        elif w == "request" and self.checking_def:  # where it may stand is the use's question
            self.next()
            if self.peek().kind == IDENT:
                self.next()
            self.expect(";")
        elif w == "request":
            self.next()
            if self.context in ("server", "entry"):
                raise self.error("`request` is the session's: the server cannot request itself", t)
            if self.context != "client":
                raise self.error("`request` is a statement of the `session` inside `workload`", t)
            if self.peek().kind == IDENT:
                g = self.next()
                self.expect(";")
                self.requests.append(_Request(sp, g.text))
                self.request_gateway(g, out)
                return
            self.expect(";")
            r = _Request(sp)
            self.requests.append(r)
            out.append(r)
        elif w == "hold":
            out.append(self.parse_hold())
        elif w in ("grow", "load"):
            self.next()
            ref = self.parse_ref("a pool name")
            self.check_pool_outside(ref, w)
            amt = self.paren_expr()
            self.expect(";")
            out.append((ast.Grow if w == "grow" else ast.Load)(ref, amt, sp))
        elif w in ("drop", "release"):
            self.next()
            ref = self.parse_ref("a pool name")
            self.check_pool_outside(ref, w)
            self.expect(";")
            out.append((ast.Drop if w == "drop" else ast.Release)(ref, sp))
        elif w == "run":
            self.next()
            stages = [self.parse_ref("a stage name")]
            while self.accept(","):
                stages.append(self.parse_ref("a stage name"))
            mode = "plain"
            if self.at("prefill") or self.at("decode"):
                mode = self.next().text
            work = self.paren_expr()
            growing = None
            if self.accept("growing"):
                growing = self.parse_ref("a pool name")
            self.expect(";")
            out.append(ast.Run(stages, mode, work, growing, sp))
        elif w == "branch":
            self.next()
            if self.accept("with"):
                p = self.paren_expr()
                test = ast.Draw("bernoulli", [p], sp)
            else:
                test = self.paren_expr()
            then = self.parse_block()
            other = []
            if self.accept("else"):
                other = self.parse_block()
            out.append(ast.Branch(test, then, other, sp))
        elif w == "loop":
            self.next()
            out.append(ast.Loop(self.parse_block(), sp))
        elif w == "fork":
            self.next()
            out.append(ast.Fork(self.parse_block(), sp))
        elif w == "choose":
            self.next()
            v = self.expect_ident("an attribute name")
            self.expect("in")
            count = self.parse_expr()
            self.expect("by")
            keys = self.parse_keys()
            self.expect(";")
            out.append(ast.Choose(v.text, count, keys, v.span()))
        elif w in ("prefill", "decode", "tool", "transfer"):
            self.parse_serving(out)
        elif w == "mark" and (self.context == "entry" or self.checking_def):
            self.next()
            m = self.expect_ident("a moment name")
            self.expect(";")
            out.append(ast.Set(m.text, ast.Name("now", m.span()), m.span()))
        elif w == "mark":
            raise self.error("`mark` is a queue entry's statement: it names a moment the caller reads", t)
        elif w in RETIRED and w != "keep":
            raise self.error(RETIRED[w], t)
        else:
            raise self.error("unknown statement `%s`" % w, t,
                             help="statements: set, observe, turn, end, request, hold, grow, load, drop, "
                                  "release, run, prefill, decode, tool, transfer, branch, loop, choose, "
                                  "fork, join")

    def parse_hold(self) -> ast.Hold:
        t = self.next()
        sp = t.span()
        pools: List[ast.HoldPool] = []
        while True:
            ref = self.parse_ref("a pool name")
            self.check_pool_outside(ref, "hold")
            units = self.paren_expr()
            reserve = None
            if self.accept("reserve"):
                reserve = self.paren_expr()
            pools.append(ast.HoldPool(ref, units, reserve, ref.span))
            if not self.accept(","):
                break
        reuse = None
        if self.accept("reuse"):
            reuse = self.paren_expr()
        bindings: List[Tuple[str, ast.Expr, Span]] = []
        binding_src: Dict[str, Optional[str]] = {}
        if self.at("at"):
            self.next()
            self.expect("admission")
            self.expect("(")
            while True:
                b = self.expect_ident("a binding name")
                self.expect("=")
                e = self.parse_expr()
                if draws(e):
                    raise self.error("`%s` draws a sample: an `at admission` binding is substituted, so a name "
                                     "used twice would draw twice" % b.text, self.peek(),
                                     help="sample into an attribute with `set` above the hold")
                env = {n: v for n, v, _ in bindings}
                e = subst_expr(e, env)
                bindings.append((b.text, e, b.span()))
                binding_src.setdefault(b.text, b.src if b.src is not None else self.text)
                if not self.accept(","):
                    break
            self.expect(")")
        body = self.parse_block()
        cache = None
        if self.accept("cache"):
            cache = self.paren_expr()
        lease = None
        if self.at("lease"):
            lt = self.next()
            lref = self.parse_ref("a pool name")
            ltime = self.paren_expr()
            lease = ast.Lease(lref, ltime, lt.span())
        self.accept(";")
        if bindings:
            env = {n: v for n, v, _ in bindings}
            for hp in pools:
                hp.units = subst_expr(hp.units, env)
                if hp.reserve is not None:
                    hp.reserve = subst_expr(hp.reserve, env)
                if hp.ref.index is not None:
                    hp.ref.index = subst_expr(hp.ref.index, env)
            if reuse is not None:
                reuse = subst_expr(reuse, env)
            if cache is not None:
                cache = subst_expr(cache, env)
            if lease is not None:
                lease.time = subst_expr(lease.time, env)
            read = set()
            for s in body:
                names_read(s, read)
            for n, v, bsp in bindings:
                live = live_state(v) if n in read else None
                if live is not None:
                    self.defer(SyntaxError_("the body reads `%s`, and `%s` reads `%s`: the body sees a binding that "
                                       "reads only attributes and constants" % (n, n, live), bsp,
                                       help="`set` the value in the body instead", notes=list(self.use_notes),
                                       source=self.text if bsp.file == self.file else None))
            sets = [ast.Set(n, copy.deepcopy(v), bsp) for n, v, bsp in bindings if n in read]
            body = sets + body
        hold = ast.Hold(pools, reuse, body, cache, lease, sp)
        # names this hold binds: an enclosing hold's binding of the same
        # name is not what its body reads
        hold.bound_names = [n for n, _, _ in bindings]
        # the bindings the body reads, each now an attribute `set` at the top
        # of the body (in this order): (name, span of the binding, its source)
        hold.read_bindings = [(n, bsp, binding_src.get(n)) for n, _, bsp in bindings
                              if n in read] if bindings else []
        return hold

    # ------------------------------------------------------------ serving forms

    def check_call(self) -> None:
        """Where a statement def body is checked (declared, not used): a def
        use ``f(args);`` or a queue entry call ``Q[i].verb (args) [from R]
        [to P (n)];``, parsed for their syntax only (what they name is the
        use's question)."""
        self.next()
        if self.at("(") :
            self.parse_args()
        else:
            if self.accept("["):
                self.parse_expr()
                self.expect("]")
            self.expect(".")
            self.expect_ident("an entry name")
            self.parse_args()
            if self.accept("from"):
                self.parse_ref("a queue or pool name")
            if self.accept("to"):
                self.parse_ref("a pool name")
                self.paren_expr()
        self.expect(";")

    def resolve_role(self, tok: Token, role: str) -> str:
        if self.checking_def:  # the stages above the use decide
            return role
        names = ("link", "transfer") if role == "transfer" else (role,)
        q = self.cur_queue if self.context == "entry" else None
        if q is None:
            found = [n for n in self.stage_order if n in names]
            if not found and role in ("prefill", "decode"):
                found = [n for n in self.stage_order if self.stages[n][0] == "step"]
        else:
            # Inside a queue's entry (a gateway's route too) the step engine
            # is the queue's own stage: no other step stage plays a role
            # there, not even one named after it.
            found = [n for n in self.stage_order if n in names and self.stages[n][0] != "step"]
            if not found and role in ("prefill", "decode") and self.stages.get(q.name, ("",))[0] == "step":
                found = [q.name]
        if len(found) == 1:
            return found[0]
        if not found:
            if role == "transfer":
                hint = "name a stage `link` or `transfer`, or write `transfer on STAGE (...)`"
            elif role == "tool":
                hint = "name a stage `tool`, or write `tool on STAGE (...)`"
            else:
                hint = ("name a stage `%s` or declare a `step` engine, or write `%s on STAGE (...)`"
                        % (role, role))
            raise self.error("no stage declared above plays `%s`: %s" % (role, hint), tok)
        raise self.error("several stages play `%s` (%s): write `%s on STAGE (...)`"
                         % (role, ", ".join(found), role), tok)

    def parse_transfer_tail(self, t):
        """``(X) from P to Q (n);`` after a transfer's stage: (work, P, Q, n)."""
        work = self.paren_expr()
        if not self.at("from"):
            raise self.error("`transfer` without `from P to Q (n)`: a KV transfer leaves the lease (or "
                             "hold) on P and enters the hold on Q", t,
                             help="write `transfer (X) from P to Q (n);`")
        self.next()
        src = self.parse_ref("a pool name")
        self.expect("to")
        dst = self.parse_ref("a pool name")
        n = self.paren_expr()
        self.expect(";")
        return work, src, dst, n

    def parse_serving(self, out: list) -> None:
        t = self.next()
        role = t.text
        sp = t.span()
        stages: List[ast.Name] = []
        if role == "transfer" and self.context == "entry" and not self.at("[") and not self.at("on"):
            work, src, dst, n = self.parse_transfer_tail(t)
            out.append(QTransfer(work, src, dst, n, t))
            return
        if self.at("["):
            self.next()
            idx = self.parse_expr()
            self.expect("]")
            stages = [ast.Name(self.resolve_role(t, role), sp, idx)]
        elif self.at("on"):
            self.next()
            while True:
                ref = self.parse_ref("a stage name")
                if ref.name not in self.stages and not self.checking_def:
                    raise self.error("`%s on %s`: no stage `%s` is declared above" % (role, ref.name, ref.name),
                                     span=ref.span)
                stages.append(ref)
                if role != "transfer" or not self.accept(","):
                    break
        else:
            stages = [ast.Name(self.resolve_role(t, role), sp)]
        if role == "transfer":
            work, src, dst, n = self.parse_transfer_tail(t)
            q = self.queues.get(stages[0].name)
            if q is not None and q.latency is not None:
                lat = ast.Name(q.name + ".latency", sp, copy.deepcopy(stages[0].index))
                out.append(ast.Run([lat], "plain", copy.deepcopy(q.latency), None, sp))
            out.append(ast.Run(stages, "plain", work, None, sp))
            out.append(ast.Load(dst, n, sp))
            out.append(ast.Release(src, sp))
            return
        work = self.parse_expr()
        growing = None
        if role != "tool" and self.accept("growing"):
            growing = self.parse_ref("a pool name")
        self.expect(";")
        kind = self.stages.get(stages[0].name, ("", None))[0]
        mode = role if role in ("prefill", "decode") and kind == "step" else "plain"
        out.append(ast.Run(stages, mode, work, growing, sp))
