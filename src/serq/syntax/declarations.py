"""Declarations: ``pool`` with its options (first-fit admission among
them), ``stage`` with its kind, a step stage's options and its
``iteration`` body, and the ``share``, ``claim`` and ``run`` items.  A step
stage's ``budget`` and ``cost`` are also kept as written (``tokens_text``),
for ``serq draw``."""
import copy
from typing import Dict, List, Optional

from . import ast
from .lexer import EOF, IDENT, PUNCT, STRING, Token


class DeclarationsMixin:
    """The declaration grammar of ``Parser``: pools, stages, share, claims
    and run settings."""

    # ------------------------------------------------------------ pools

    def parse_bare_ref(self, what: str, follow: str) -> ast.Name:
        """A pool option's pool or stage (`admit via S`, `spill T via S`):
        a name, never a member (`S[0]`): 0.1.3's grammar has no index
        there, so the `[` is where it expects ``follow``."""
        if self.peek().kind == IDENT and self.peek(1).text == "[" and self.peek(1).kind == PUNCT:
            self.next()
            self.expect(follow, help="a pool option names a whole pool or stage, not a member")
        return self.parse_ref(what)

    def parse_pool(self) -> ast.PoolDecl:
        self.next()
        name = self.expect_ident("a pool name")
        size = self.parse_array_size()
        decl = ast.PoolDecl(name.text, size, name.span())
        self.expect("{")
        seen: Dict[str, Token] = {}
        owner = "pool `%s`" % name.text
        while not self.at("}"):
            t = self.peek()
            if t.kind != IDENT:
                raise self.error("expected a pool option, found %s" % t.describe(), t)
            w = t.text
            if w in ("cap", "block", "evict", "preempt", "queue", "admit", "spill", "reserve",
                     "watermark"):
                self._once(seen, w, t, owner)
            self.next()
            if w == "cap":
                decl.cap = self.parse_expr()
            elif w == "block":
                decl.block = self.parse_expr()
            elif w == "evict":
                if self.accept("lru"):
                    decl.evict = None
                else:
                    self.expect("by")
                    decl.evict = self.parse_keys()
            elif w == "preempt":
                if self.accept("none"):
                    decl.preempt = None
                elif self.accept("lifo"):
                    decl.preempt = [ast.Unary("-", ast.Name("admission", t.span()), t.span())]
                else:
                    self.expect("by")
                    decl.preempt = self.parse_keys()
                    if self.accept("requeue"):
                        if self.accept("tail"):
                            decl.preempt_tail = True
                        else:
                            self.expect("head")
            elif w == "queue":
                if self.accept("fifo"):
                    decl.queue = None
                else:
                    self.expect("by")
                    decl.queue = self.parse_keys()
                if self.at("first"):
                    decl.first_fit = self.parse_first_fit()
            elif w == "admit":
                self.expect("via")
                decl.admit_via = self.parse_bare_ref("a stage name", ";")
            elif w == "spill":
                to = self.parse_bare_ref("a pool name", "via")
                self.expect("via")
                via = self.parse_bare_ref("a stage name", "(")
                work = self.paren_expr()
                self.expect("when")
                when = self.paren_expr()
                decl.spill = ast.Spill(to, via, work, when, t.span())
            elif w == "reserve":
                self.expect("held")
                decl.reserve_held = True
            elif w == "watermark":
                decl.watermark = self.parse_expr()
                self.prog.extensions.append(("the pool watermark (`watermark`)", t.span()))
            else:
                raise self.error("unknown pool option `%s`" % w, self.peek(),
                                 help="a pool takes cap, block, evict, preempt, queue, admit via, "
                                      "spill, reserve held (and serq's watermark)")
            self.expect(";")
        self.next()
        return decl

    def parse_first_fit(self) -> ast.FirstFit:
        """``first fit [within (N)] [until waited (T)]`` (serq's extension)."""
        ft = self.next()
        self.expect("fit", help="first-fit admission is written `queue fifo first fit;`")
        ff = ast.FirstFit(ft.span())
        if self.accept("within"):
            ff.within = self.paren_expr()
        if self.accept("until"):
            self.expect("waited", help="the head's age bound is written `until waited (T)`")
            ff.age = self.paren_expr()
        self.prog.extensions.append(("first-fit admission (`first fit`)", ft.span()))
        return ff

    # ------------------------------------------------------------ stages

    def parse_stage(self) -> ast.StageDecl:
        self.next()
        name = self.expect_ident("a stage name")
        size = self.parse_array_size()
        self.expect(":")
        decl = self.parse_stage_kind(name, name.text, size)
        self.end_stage_kind(decl)
        self.register_stage(name.text, decl.kind, size)
        return decl

    def parse_stage_kind(self, name: Token, full: str, size: Optional[int]) -> ast.StageDecl:
        """``fifo [(c)]`` | ``ps (φ)`` | ``delay`` | ``step { … }``, without the ending `;`."""
        kt = self.expect_ident("a stage kind (fifo, ps, delay, step)")
        k = kt.text
        decl = ast.StageDecl(full, size, k, name.span())
        if k == "fifo":
            if self.at("("):
                decl.servers = self.paren_expr()
        elif k == "ps":
            decl.capacity = self.paren_expr()
        elif k == "delay":
            pass
        elif k == "step":
            decl.step = self.parse_step(name)
        else:
            raise self.error("unknown stage kind `%s`" % k, kt, help="a stage is fifo, ps, delay or step")
        return decl

    def end_stage_kind(self, decl: ast.StageDecl) -> None:
        if decl.kind == "step":
            self.accept(";")
        else:
            self.expect(";")

    def register_stage(self, name: str, kind: str, size: Optional[int]) -> None:
        self.stages[name] = (kind, size)
        self.stage_order.append(name)

    def note_surface(self, name: Token, what: str, start: int) -> None:
        """Keep an option's expression as written (before any `def` is
        expanded) for `serq draw`: ``prog.surface["stage NAME what"]``."""
        toks = self.toks[start:self.pos]
        if toks and len(toks) <= 400:
            self.prog.surface["stage %s %s" % (name.text, what)] = tokens_text(toks)

    def parse_step(self, name: Token) -> ast.StepOptions:
        self.expect("{")
        seen: Dict[str, Token] = {}
        owner = "step stage `%s`" % name.text
        cost = None
        opts = ast.StepOptions(cost=None)
        serve_tok = None
        only_tok = None
        iter_tok = None
        regs = set()
        while not self.at("}"):
            t = self.peek()
            if t.kind != IDENT:
                raise self.error("expected a step option, found %s" % t.describe(), t)
            w = t.text
            if w in ("budget", "cost", "chunk", "granule", "memory", "iteration"):
                self._once(seen, w, t, owner)
            self.next()
            if w == "serve" and serve_tok is not None:
                raise self.error("`serve` twice: a step stage serves its residents in one way", self.peek())
            start = self.pos
            if w == "budget":
                opts.budget = self.parse_expr()
                self.note_surface(name, w, start)
            elif w == "cost":
                cost = self.parse_expr()
                self.note_surface(name, w, start)
            elif w == "chunk":
                opts.chunk = self.parse_expr()
            elif w == "granule":
                opts.granule = self.parse_expr()
            elif w == "memory":
                opts.memory = self.parse_ref("a pool name")
            elif w == "state":
                r = self.expect_ident("a register name")
                if r.text in regs:
                    raise self.error("register `%s` is declared twice" % r.text, r)
                regs.add(r.text)
                self.expect("=")
                opts.registers.append(ast.Register(r.text, self.parse_expr(), r.span()))
            elif w == "serve":
                serve_tok = t
                if self.accept("exclusive"):
                    self.expect("prefill")
                    opts.serve = "exclusive"
                elif self.at("only"):
                    only_tok = self.next()
                    p = self.paren_expr()
                    order = self.parse_serve_order(t)
                    opts.serve = order if order is not None else []
                    sp = only_tok.span()
                    opts.iteration = [
                        ast.IServe(p, None, sp),
                        ast.IAdmit(copy.deepcopy(p),
                                   ast.Unary("!", ast.Name("preempted", sp), sp), sp)]
                else:
                    order = self.parse_serve_order(t)
                    if order is None:
                        raise self.error("expected `admission`, `by`, `decode first`, `exclusive prefill` "
                                         "or `only` after `serve`, found %s" % self.peek().describe(),
                                         self.peek())
                    opts.serve = order
            elif w == "iteration":
                iter_tok = t
                body = self.parse_iter_block()
                opts.iteration = body
                continue
            elif w in ("decode", "exclusive"):
                old = "decode first" if w == "decode" else "exclusive prefill"
                raise self.error("`%s;` is now `serve %s;`: a step stage serves its residents in one way"
                                 % (old, old), self.peek())
            else:
                raise self.error("unknown step option `%s`" % w, self.peek(),
                                 help="a step stage takes budget, cost, chunk, granule, serve, memory, "
                                      "state, iteration")
            self.expect(";")
        self.next()  # the closing `}`
        if iter_tok is not None and (only_tok is not None or opts.serve == "exclusive"):
            if only_tok is not None:
                self.defer(self.error("an `iteration` body with a stage-level `serve only`: the body says "
                                 "which residents it serves", iter_tok,
                                      help="write the `only` inside the body: `serve only (p); admit only (p);`"))
            else:
                self.defer(self.error("an `iteration` body with `serve exclusive prefill`: the rule takes back "
                                      "decodes already chosen, which a body cannot", iter_tok,
                                      help="drop one of the two"))
        if cost is None:
            raise self.error("a step stage needs `cost`", self.peek(),
                             help="add `cost EXPR;` to the step options of `%s`" % name.text)
        opts.cost = cost
        return opts

    def parse_serve_order(self, tok: Token) -> Optional[List[ast.Expr]]:
        """``admission`` | ``by (keys)`` | ``decode first``; None when absent."""
        if self.accept("admission"):
            return []
        if self.at("by"):
            self.next()
            return self.parse_keys()
        if self.at("decode") and self.at("first", 1):
            d = self.next()
            self.next()
            sp = d.span()
            return [ast.Cond(ast.Name("decoding", sp), ast.Num(0.0, sp), ast.Num(1.0, sp), sp)]
        return None

    def parse_iter_block(self) -> List[ast.IStmt]:
        open_ = self.expect("{")
        self.enter(open_)
        out: List[ast.IStmt] = []
        while not self.at("}"):
            t = self.peek()
            if t.kind == EOF:
                raise self.error("expected `}`, found end of input", t)
            w = t.text if t.kind == IDENT else None
            if w == "serve":
                self.next()
                only = None
                if self.accept("only"):
                    only = self.paren_expr()
                by = self.parse_serve_order(t)
                out.append(ast.IServe(only, by, t.span()))
                self.expect(";")
            elif w == "admit":
                self.next()
                only = gate = None
                if self.accept("only"):
                    only = self.paren_expr()
                if self.accept("while"):
                    gate = self.paren_expr()
                out.append(ast.IAdmit(only, gate, t.span()))
                self.expect(";")
            elif w == "branch":
                self.next()
                test = self.paren_expr()
                then = self.parse_iter_block()
                other: List[ast.IStmt] = []
                if self.accept("else"):
                    other = self.parse_iter_block()
                out.append(ast.IBranch(test, then, other, t.span()))
            elif w == "set":
                self.next()
                r = self.expect_ident("a register name")
                self.expect("=")
                out.append(ast.ISet(r.text, self.parse_expr(), r.span()))
                self.expect(";")
            else:
                raise self.error("expected `serve`, `admit`, `branch` or `set` in an iteration body, found %s"
                                 % t.describe(), t)
        self.next()
        self.leave()
        return out

    # ------------------------------------------------------------ share / claim / run

    def parse_share(self, prog: ast.Program) -> None:
        t = self.next()
        if self.share_tok is not None:
            raise self.error("`share` is given twice: the first is on line %d" % self.share_tok.line, t)
        self.share_tok = t
        p = self.expect_ident("`maxmin` or `bottleneck`")
        if p.text not in ("maxmin", "bottleneck"):
            raise self.error("expected `maxmin` or `bottleneck`, found `%s`" % p.text, p)
        self.expect(";")
        prog.items.append(ast.ShareDecl(p.text, t.span()))

    def parse_claim(self) -> ast.ClaimDecl:
        self.next()
        name = self.expect_ident("a claim name")
        given = None
        if self.accept("given"):
            given = self.paren_expr()
        self.expect(":")
        stage = None
        if self.accept("at"):
            self.expect("end")
            kind = "at_end"
        elif self.at("every") or self.at("some"):
            kind = self.next().text
            self.expect("iteration")
            self.expect("of")
            stage = self.parse_ref("a stage name")
        else:
            t = self.peek()
            raise self.error("expected `at end`, `every iteration of` or `some iteration of`, found %s"
                             % t.describe(), t)
        e = self.paren_expr()
        self.expect(";")
        return ast.ClaimDecl(name.text, given, kind, stage, e, name.span())

    def parse_run_block(self, prog: ast.Program) -> None:
        t = self.next()
        if self.run_seen is not None:
            # serQ 0.1.3 merges the blocks (a setting in both: the last wins)
            self.warn("a second `run` block: its settings are merged with those of the block "
                      "at %d:%d, a setting given in both taking this block's value"
                      % (self.run_seen.line, self.run_seen.col), t,
                      help="merge the settings into one `run { … }` block")
        else:
            self.run_seen = t
            self.run_seen_keys: Dict[str, Token] = {}
        self.expect("{")
        seen = self.run_seen_keys
        while not self.at("}"):
            k = self.expect_ident("a run option")
            e = self.parse_expr()
            self.expect(";")
            if k.text not in ("horizon", "warmup", "seed", "arrivals"):
                raise self.error("unknown run option `%s`" % k.text, self.peek(),
                                 help="a run block takes horizon, warmup, seed, arrivals")
            self._once(seen, k.text, k, "the `run` block")
            prog.items.append(ast.RunSetting(k.text, e, k.span()))
        self.next()


_TIGHT_AFTER = ("(", "[", "~", ".")
_TIGHT_BEFORE = (")", "]", ",", ".", "(", "[")
_OPERATORS = ("+", "-", "*", "/", "^", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "?", ":",
              "(", "[", ",", "!")


def tokens_text(toks: List[Token]) -> str:
    """Tokens as one line of program text, spaced as ``serq fmt`` spaces
    expressions (``f(a, b) * 2``, ``-x``, ``~exp(2)``)."""
    out: List[str] = []
    prev: Optional[Token] = None
    unary = False
    for t in toks:
        text = '"%s"' % t.text if t.kind == STRING else t.text
        tight = prev is None or unary or prev.text in _TIGHT_AFTER and prev.kind == PUNCT or \
            (t.kind == PUNCT and t.text in _TIGHT_BEFORE and
             not (t.text in ("(", "[") and prev.kind == PUNCT and prev.text not in (")", "]")))
        out.append(text if tight else " " + text)
        unary = t.kind == PUNCT and t.text in ("-", "!") and (
            prev is None or (prev.kind == PUNCT and prev.text in _OPERATORS))
        prev = t
    return "".join(out)
