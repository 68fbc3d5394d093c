"""The parser: tokens to the kernel AST, with every piece of sugar expanded.

Recursive descent over the serQ 0.1.3 grammar (feature map sections 1-3,
5.5, 5.8, 6).  ``def`` uses are expanded at the token level (see
``expand.py`` for the helpers), the two-sided ``workload``/``server`` form
is spliced, serving forms are lowered to ``run``, and array sizes are
folded.  Every error is a ``SyntaxError_`` with a span.
"""
import copy
import os
import sys
from typing import Dict, List, Optional, Tuple

from ..errors import Span, SyntaxError_
from . import ast
from .lexer import EOF, IDENT, NUMBER, PUNCT, STRING, Token, tokenize
from .queues import QTransfer, QueueMixin
from .expand import (DefInfo, LANGUAGE_WORDS, RETIRED, STATE_FUNCS, fold_const,
                     names_read, subst_expr, subst_stmts)

MAX_DEPTH = 200
MAX_EXPANSION = 100_000

_CMP = ("<", "<=", ">", ">=", "==", "!=")


class _Request:
    """Placeholder for ``request;`` until the server is spliced in."""

    def __init__(self, span: Span, gateway: Optional[str] = None):
        self.span = span
        self.gateway = gateway


class Parser(QueueMixin):
    def __init__(self, text: str, file: str, defs_override: Optional[Dict[str, str]],
                 sets: Optional[Dict[str, object]], from_text: bool):
        self.text = text
        self.file = file
        self.defs_override = dict(defs_override or {})
        self.sets = dict(sets or {})
        self.from_text = from_text
        self.toks: List[Token] = []
        self.pos = 0
        self.depth = 0
        self.expanded = 0
        self.defs: Dict[str, DefInfo] = {}
        self.def_order: List[str] = []
        self.libraries_read = set()
        self.stages: Dict[str, Tuple[str, Optional[int]]] = {}
        self.stage_order: List[str] = []
        self.let_values: Dict[str, Optional[float]] = {}
        self.let_deps: Dict[str, List[str]] = {}
        self.let_spans: Dict[str, Span] = {}
        self.array_lets: List[str] = []
        self.program_names: Dict[str, str] = {}  # pool/stage/let names of the whole program
        self.context = "session"  # session | client | server | workload | entry
        self.in_fork = 0
        self.use_notes: List[str] = []
        self.requests: List[_Request] = []
        # checks the reference makes after the whole text parsed: the first
        # such error is raised once parsing succeeded
        self.deferred: Optional[SyntaxError_] = None
        self.init_queues()
        self.queue_order: List[str] = []
        self.entry_uses: list = []

    # ------------------------------------------------------------ errors

    def error(self, msg: str, tok: Optional[Token] = None, help: Optional[str] = None,
              span: Optional[Span] = None) -> SyntaxError_:
        if tok is None and span is None:
            tok = self.peek()
        if span is None:
            span = tok.span()
        src = tok.src if tok is not None and tok.src is not None else self.text
        return SyntaxError_(msg, span, help=help, notes=list(self.use_notes), source=src)

    # ------------------------------------------------------------ tokens

    def defer(self, e: SyntaxError_) -> None:
        if self.deferred is None:
            self.deferred = e

    def peek(self, k: int = 0) -> Token:
        i = self.pos + k
        if i < len(self.toks):
            return self.toks[i]
        return self.toks[-1]

    def next(self) -> Token:
        t = self.peek()
        if self.pos < len(self.toks) - 1:
            self.pos += 1
        return t

    def at(self, text: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind in (PUNCT, IDENT) and t.text == text

    def at_word(self, word: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == IDENT and t.text == word

    def accept(self, text: str) -> Optional[Token]:
        if self.at(text):
            return self.next()
        return None

    def expect(self, text: str, help: Optional[str] = None) -> Token:
        t = self.peek()
        if t.kind in (PUNCT, IDENT) and t.text == text:
            return self.next()
        if help is None and text == ";" and t.kind == PUNCT and t.text in _CMP:
            help = "comparisons do not chain: parenthesise one side"
        elif help is None and text == ";":
            help = "every simple statement and option ends with `;`"
        raise self.error("expected `%s`, found %s" % (text, t.describe()), t, help)

    def expect_ident(self, what: str = "a name") -> Token:
        t = self.peek()
        if t.kind != IDENT:
            raise self.error("expected %s, found %s" % (what, t.describe()), t)
        return self.next()

    def enter(self, tok: Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error("nesting is deeper than %d levels" % MAX_DEPTH, tok,
                             help="split the expression or block with `let`, `set` or `def`")

    def leave(self) -> None:
        self.depth -= 1

    # ------------------------------------------------------------ program

    def parse(self) -> ast.Program:
        self.toks = tokenize(self.text, self.file)
        self.prescan(self.toks)
        prog = ast.Program(file=self.file, source=self.text)
        self.prog = prog
        self.run_seen: Optional[Token] = None
        self.workload_tok: Optional[Token] = None
        self.server_tok: Optional[Token] = None
        self.server_body: Optional[list] = None
        self.top_session_tok: Optional[Token] = None
        self.client_session_tok: Optional[Token] = None
        self.client_session: Optional[list] = None
        self.share_tok: Optional[Token] = None
        self.items_top(prog, library=False)
        if self.deferred is not None:
            raise self.deferred
        self.finish(prog)
        return prog

    def prescan(self, toks: List[Token]) -> None:
        depth = 0
        for i, t in enumerate(toks):
            if t.kind == PUNCT and t.text == "{":
                depth += 1
            elif t.kind == PUNCT and t.text == "}":
                depth = max(0, depth - 1)
            elif depth == 0 and t.kind == IDENT and t.text in ("pool", "stage", "let", "queue") \
                    and i + 1 < len(toks) and toks[i + 1].kind == IDENT:
                self.program_names.setdefault(toks[i + 1].text, t.text)

    def items_top(self, prog: ast.Program, library: bool) -> None:
        while self.peek().kind != EOF:
            t = self.peek()
            if t.kind != IDENT:
                raise self.error("unexpected %s at top level" % t.describe(), t,
                                 help="a program is a list of items: let, def, use, pool, stage, "
                                      "queue, share, workload, session, server, gauge, claim, run")
            w = t.text
            if library and w not in ("def", "use"):
                raise self.error("a library holds definitions: found `%s` where `def` or `use` goes"
                                 % w, t)
            if w == "def":
                self.parse_def()
            elif w == "use":
                self.parse_use(prog)
            elif w == "let":
                self.parse_let(prog)
            elif w == "pool":
                prog.items.append(self.parse_pool())
            elif w == "stage":
                prog.items.append(self.parse_stage())
            elif w == "share":
                self.parse_share(prog)
            elif w == "workload":
                self.parse_workload(prog)
            elif w == "session":
                self.parse_top_session(prog)
            elif w == "server":
                self.parse_server()
            elif w == "gauge":
                self.next()
                name = self.expect_ident("a gauge name")
                self.expect("=")
                e = self.parse_expr()
                self.expect(";")
                prog.items.append(ast.GaugeDecl(name.text, e, name.span()))
            elif w == "claim":
                prog.items.append(self.parse_claim())
            elif w == "run":
                self.parse_run_block(prog)
            elif w == "queue":
                self.parse_queue(prog)
            elif self.peek(1).kind == IDENT and self.peek(1).text in ("pull", "push"):
                self.parse_relation(prog)
            else:
                raise self.error("unexpected `%s` at top level" % w, t,
                                 help="a program is a list of items: let, def, use, pool, stage, "
                                      "queue, share, workload, session, server, gauge, claim, run")

    def finish(self, prog: ast.Program) -> None:
        eof = self.peek()
        if self.client_session is not None and self.top_session_tok is not None:
            raise self.error("a program has one session: inside `workload` or at top level, not both",
                             eof, help="keep one of the two `session` blocks")
        if self.server_tok is not None:
            if self.client_session is None:
                raise self.error("`server` needs a `session` inside `workload` that says `request;`",
                                 self.server_tok)
            if not any(r.gateway is None for r in self.requests):
                raise self.error("`server` is never requested: the workload's session has no `request;`",
                                 self.server_tok, help="write `request;` where the client waits for the server")
        if self.client_session is not None:
            if not self.requests:
                raise self.error("a `session` inside `workload` is written against a `server` block; "
                                 "name a gateway with `request NAME;`, or write `session` at top level",
                                 self.client_session_tok)
            plain = [r for r in self.requests if r.gateway is None]
            if self.server_tok is None and plain:
                r = plain[0]
                raise self.error("`request;` needs a `server` block; name a gateway with `request NAME;`",
                                 span=r.span)
            if self.server_tok is not None or plain:
                prog.session = self.splice(self.client_session)
            else:
                prog.session = self.client_session
            prog.session_span = self.client_session_tok.span()
        hidden = [h for h, _ in prog.workload.hidden] if prog.workload is not None else []
        self.check_entry_reads(hidden)
        prog.array_lets = list(self.array_lets)
        prog.expr_defs = [n for n in self.def_order if not self.defs[n].is_block]
        for name in self.sets:
            if name in self.array_lets:
                raise SyntaxError_("the `let` override `%s` affects an array size resolved during parsing"
                                   % name, self.let_spans.get(name), source=self.text,
                                   help="change the `let` in the program instead")
        for name in self.defs_override:
            if name not in self.defs:
                known = ", ".join(prog.expr_defs) or "none"
                shown = "%s=%s" % (name, self.defs_override[name])
                raise SyntaxError_("`--def %s`: the program has no definition `%s`" % (name, name),
                                   Span("--def", 1, 1, len(name)),
                                   help="the expression definitions are: %s" % known, source=shown)

    requests: List[_Request] = []

    def splice(self, stmts: list) -> list:
        out = []
        for s in stmts:
            if isinstance(s, _Request):
                out.extend(copy.deepcopy(self.server_body))
                continue
            if isinstance(s, ast.Hold):
                s.body = self.splice(s.body)
            elif isinstance(s, ast.Branch):
                s.then = self.splice(s.then)
                s.other = self.splice(s.other)
            elif isinstance(s, (ast.Loop, ast.Fork)):
                s.body = self.splice(s.body)
            out.append(s)
        return out

    # ------------------------------------------------------------ use / def / let

    def parse_use(self, prog: ast.Program) -> None:
        kw = self.next()
        st = self.peek()
        if st.kind != STRING:
            raise self.error("expected a path string after `use`, found %s" % st.describe(), st)
        self.next()
        self.expect(";")
        if self.from_text and kw.file == self.file:
            raise self.error('`use "%s"` reads a file next to the program, and this program was given as text'
                             % st.text, kw, help="compile the program from a file, or paste the "
                                                 "library's definitions into the program")
        base = os.path.dirname(kw.file) if kw.file and not kw.file.startswith("<") else "."
        path = os.path.normpath(os.path.join(base, st.text))
        if path in self.libraries_read:
            return
        self.libraries_read.add(path)
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
            lib_text = raw.decode("utf-8", errors="replace")
        except OSError as e:
            raise self.error("cannot read `%s`: %s" % (st.text, e.strerror or e), kw)
        lib_toks = tokenize(lib_text, path)
        saved = (self.toks, self.pos)
        self.toks, self.pos = lib_toks, 0
        try:
            self.items_top(prog, library=True)
        finally:
            self.toks, self.pos = saved

    def parse_def(self) -> None:
        self.next()
        name = self.expect_ident("a definition name")
        n = name.text
        if n in LANGUAGE_WORDS or n in RETIRED:
            raise self.error("`%s` is a word of the language" % n, name,
                             help="choose another name for the definition")
        if n in self.program_names:
            self.defer(self.error("`%s` is defined, and is also a %s" % (n, self.program_names[n]), name,
                                  help="rename one of them"))
        if n in self.defs:
            raise self.error("`%s` is defined twice" % n, name, help="rename or remove one definition")
        self.expect("(")
        params: List[Token] = []
        if not self.at(")"):
            while True:
                p = self.expect_ident("a parameter name")
                if p.text in LANGUAGE_WORDS or p.text in RETIRED:
                    raise self.error("`%s` is a word of the language" % p.text, p)
                if p.text in self.program_names:
                    raise self.error("`%s` is a parameter, and is also a %s"
                                     % (p.text, self.program_names[p.text]), p)
                if any(q.text == p.text for q in params):
                    raise self.error("parameter `%s` is named twice" % p.text, p)
                params.append(p)
                if not self.accept(","):
                    break
        self.expect(")")
        body: List[Token] = []
        if self.accept("="):
            is_block = False
            stack: List[str] = []
            while True:
                t = self.peek()
                if t.kind == EOF:
                    raise self.error("`def %s` is not closed" % n, name,
                                     help="end an expression definition with `;`")
                if t.kind == PUNCT:
                    if t.text in "([{":
                        stack.append(t.text)
                    elif t.text in ")]}":
                        if not stack or "([{"[")]}".index(t.text)] != stack[-1]:
                            raise self.error("unmatched `%s`" % t.text, t)
                        stack.pop()
                    elif t.text == ";" and not stack:
                        break
                body.append(self.next())
            self.expect(";")
            if n in self.defs_override:
                body = tokenize(self.defs_override[n], "--def %s" % n)[:-1]
        elif self.at("{"):
            is_block = True
            self.next()
            stack = ["{"]
            while True:
                t = self.peek()
                if t.kind == EOF:
                    raise self.error("`def %s` is not closed" % n, name, help="close the body with `}`")
                if t.kind == PUNCT and t.text == "{":
                    stack.append(t.text)
                elif t.kind == PUNCT and t.text == "}":
                    stack.pop()
                    if not stack:
                        self.next()
                        break
                body.append(self.next())
            if n in self.defs_override:
                raise SyntaxError_("`def %s` is statements; an override replaces the body of an "
                                   "expression definition" % n, name.span(), source=name.src)
        else:
            t = self.peek()
            raise self.error("expected `=` or `{` after the parameters of `%s`, found %s"
                             % (n, t.describe()), t)
        pnames = [p.text for p in params]
        # a parameter the body assigns or binds
        for i, t in enumerate(body):
            if t.kind != IDENT or t.text not in pnames:
                continue
            prev = body[i - 1] if i > 0 else None
            nxt = body[i + 1] if i + 1 < len(body) else None
            if (prev is not None and prev.kind == IDENT and prev.text in ("set", "choose")) or \
                    (nxt is not None and nxt.kind == PUNCT and nxt.text == "=" and is_block):
                raise self.error("`%s` is a parameter, and the body names with it what it assigns or binds"
                                 % t.text, name, help="rename the parameter")
        # an earlier definition uses this one
        for other in self.def_order:
            for t in self.defs[other].body:
                if t.kind == IDENT and t.text == n:
                    raise self.error("`%s` uses `%s`, which is defined after it: a definition uses the "
                                     "ones before it" % (other, n), name,
                                     help="move `def %s` above `def %s`" % (n, other))
        self.defs[n] = DefInfo(n, pnames, body, is_block, name)
        self.def_order.append(n)

    def parse_let(self, prog: ast.Program) -> None:
        self.next()
        name = self.expect_ident("a constant name")
        self.expect("=")
        e = self.parse_expr()
        self.expect(";")
        prog.items.append(ast.Let(name.text, e, name.span()))
        self.let_spans[name.text] = name.span()
        deps: List[str] = []
        val = fold_const(e, self.let_values, deps)
        self.let_values[name.text] = val
        full = []
        for d in deps:
            if d not in full:
                full.append(d)
            for dd in self.let_deps.get(d, []):
                if dd not in full:
                    full.append(dd)
        self.let_deps[name.text] = full

    # ------------------------------------------------------------ arrays

    def parse_array_size(self) -> Optional[int]:
        if not self.accept("["):
            return None
        start = self.peek()
        e = self.parse_expr()
        self.expect("]")
        deps: List[str] = []
        val = fold_const(e, self.let_values, deps)
        if val is None:
            raise self.error("array size must be a positive integer or a `let` constant that is one", start)
        if not (val >= 1 and val == int(val)) or val != val or val in (float("inf"),):
            raise self.error("array size must be a positive integer, found %s" % _fmt(val), start)
        for d in deps:
            for x in [d] + self.let_deps.get(d, []):
                if x not in self.array_lets:
                    self.array_lets.append(x)
        return int(val)

    # ------------------------------------------------------------ pools

    def parse_ref(self, what: str = "a pool or stage name") -> ast.Name:
        t = self.expect_ident(what)
        name = t.text
        index = None
        if self.at("["):
            self.next()
            index = self.parse_expr()
            self.expect("]")
        if self.at(".") and self.peek(1).kind == IDENT:
            self.next()
            attr = self.next().text
            q = self.queues.get(name)
            if index is not None and q is not None and attr in q.pools:
                return ast.Name(name + "." + attr, t.span(), index)
            if index is not None:
                raise self.error("`%s[…].%s` reads the request's attribute, which is no member's: write `%s.%s`"
                                 % (name, attr, name, attr), t)
            name = name + "." + attr
            if index is None and self.at("["):
                self.next()
                index = self.parse_expr()
                self.expect("]")
        return ast.Name(name, t.span(), index)

    def parse_keys(self) -> List[ast.Expr]:
        self.expect("(")
        keys = [self.parse_expr()]
        while self.accept(","):
            keys.append(self.parse_expr())
        self.expect(")")
        return keys

    def paren_expr(self) -> ast.Expr:
        self.expect("(")
        e = self.parse_expr()
        self.expect(")")
        return e

    def _once(self, seen: Dict[str, Token], key: str, tok: Token, owner: str) -> None:
        if key in seen:
            first = seen[key]
            raise self.error("`%s` is given twice in %s" % (key, owner), tok,
                             help="keep one `%s` (the first is at %d:%d)" % (key, first.line, first.col))
        seen[key] = tok

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
            if w in ("cap", "block", "evict", "preempt", "queue", "admit", "spill", "reserve"):
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
            elif w == "admit":
                self.expect("via")
                decl.admit_via = self.parse_ref("a stage name")
            elif w == "spill":
                to = self.parse_ref("a pool name")
                self.expect("via")
                via = self.parse_ref("a stage name")
                work = self.paren_expr()
                self.expect("when")
                when = self.paren_expr()
                decl.spill = ast.Spill(to, via, work, when, t.span())
            elif w == "reserve":
                self.expect("held")
                decl.reserve_held = True
            else:
                raise self.error("unknown pool option `%s`" % w, self.peek(),
                                 help="a pool takes cap, block, evict, preempt, queue, admit via, "
                                      "spill, reserve held")
            self.expect(";")
        self.next()
        return decl

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
            if w == "budget":
                opts.budget = self.parse_expr()
            elif w == "cost":
                cost = self.parse_expr()
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
        close = self.next()
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
            raise self.error("a second `run` block (the first is at %d:%d)"
                             % (self.run_seen.line, self.run_seen.col), t,
                             help="merge the settings into one `run { … }` block")
        self.run_seen = t
        self.expect("{")
        seen: Dict[str, Token] = {}
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

    # ------------------------------------------------------------ workload / session / server

    def parse_workload(self, prog: ast.Program) -> None:
        t = self.next()
        if self.workload_tok is not None:
            raise self.error("duplicate workload", self.peek(), help="a program has one `workload`; merge them")
        self.workload_tok = t
        wl = ast.Workload(t.span())
        self.expect("{")
        seen: Dict[str, Token] = {}
        while not self.at("}"):
            k = self.peek()
            if k.kind != IDENT:
                raise self.error("expected a workload item, found %s" % k.describe(), k)
            w = k.text
            if w in ("arrive", "init", "turn", "trace", "session"):
                self._once(seen, w, k, "one workload")
            self.next()
            if w == "arrive":
                kind = self.expect_ident("an arrival process")
                if kind.text in ("poisson", "renewal", "closed", "batch"):
                    arg = self.paren_expr()
                    wl.arrive = ast.Arrive(kind.text, arg, kind.span())
                elif kind.text == "none":
                    wl.arrive = ast.Arrive("none", None, kind.span())
                else:
                    raise self.error("expected `none`, found `%s`" % kind.text, kind,
                                     help="arrivals are poisson(rate), renewal(gap), closed(n), "
                                          "batch(n) or none")
                self.expect(";")
            elif w == "trace":
                s = self.peek()
                if s.kind != STRING:
                    raise self.error("expected a path string after `trace`, found %s" % s.describe(), s)
                self.next()
                wl.trace = s.text
                wl.trace_span = s.span()
                if self.accept("ordered"):
                    wl.trace_ordered = True
                self.expect(";")
            elif w in ("init", "turn"):
                body = self.parse_block("workload")
                bad = _first_not_set_observe(body)
                if bad is not None:
                    self.defer(SyntaxError_("%s: workload blocks may only `set` and `observe`" % w, bad.span,
                                            help="move the statement into the session", source=self.text))
                if w == "init":
                    wl.init = body
                else:
                    wl.turn = body
            elif w == "session":
                self.client_session_tok = k
                self.requests = []
                self.client_session = self.parse_block("client")
            elif w == "hidden":
                while True:
                    h = self.expect_ident("an attribute name")
                    wl.hidden.append((h.text, h.span()))
                    if not self.accept(","):
                        break
                self.expect(";")
            else:
                raise self.error("unknown workload item `%s`" % w, k,
                                 help="a workload takes arrive, trace, init, turn, session, hidden")
        self.next()
        prog.workload = wl

    def parse_top_session(self, prog: ast.Program) -> None:
        t = self.next()
        if self.top_session_tok is not None:
            raise self.error("duplicate session", self.peek())
        self.top_session_tok = t
        prog.session = self.parse_block("session")
        prog.session_span = t.span()

    def parse_server(self) -> None:
        t = self.next()
        if self.server_tok is not None:
            raise self.error("duplicate server", t)
        self.server_tok = t
        self.server_body = self.parse_block("server")

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
        if nxt.kind == PUNCT and nxt.text == "(" and w not in (
                "branch", "hold", "loop", "fork", "tool", "prefill", "decode", "transfer"):
            info = self.defs.get(w)
            if info is not None:
                if not info.is_block:
                    raise self.error("`%s` is an expression (`def %s(…) = …;`), not statements" % (w, w), t)
                self.expand_stmt_def(info, out)
                return
        if w in self.queues and nxt.kind == PUNCT and nxt.text in ("[", ".") and not (
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
            if self.context in ("server", "entry"):
                raise self.error("`turn` is the session's: the next turn is the workload's decision, "
                                 "not the server's", t)
            self.expect(";")
            out.append(ast.Turn(sp))
        elif w == "end":
            self.next()
            if self.context == "server":
                raise self.error("`end` is the session's: a server answers a request and the session "
                                 "decides when to end", t)
            if self.context == "entry":
                raise self.error("`end` is the session's: a server is done with a request when its block is, "
                                 "and whether the session goes on is the workload's", t)
            self.expect(";")
            out.append(ast.End(sp))
        elif w == "join":
            self.next()
            self.expect(";")
            out.append(ast.Join(sp))
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
        elif w == "mark" and self.context == "entry":
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
        if self.at("at"):
            self.next()
            self.expect("admission")
            self.expect("(")
            while True:
                b = self.expect_ident("a binding name")
                self.expect("=")
                e = self.parse_expr()
                if _draws(e):
                    raise self.error("`%s` draws a sample: an `at admission` binding is substituted, so a name "
                                     "used twice would draw twice" % b.text, self.peek(),
                                     help="sample into an attribute with `set` above the hold")
                env = {n: v for n, v, _ in bindings}
                e = subst_expr(e, env)
                bindings.append((b.text, e, b.span()))
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
                live = _live(v) if n in read else None
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
        return hold

    # ------------------------------------------------------------ serving forms

    def resolve_role(self, tok: Token, role: str) -> str:
        names = ("link", "transfer") if role == "transfer" else (role,)
        found = [n for n in self.stage_order if n in names]
        if not found and role in ("prefill", "decode"):
            found = [n for n in self.stage_order if self.stages[n][0] == "step"]
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

    def parse_serving(self, out: list) -> None:
        t = self.next()
        role = t.text
        sp = t.span()
        stages: List[ast.Name] = []
        if role == "transfer" and self.context == "entry" and not self.at("[") and not self.at("on"):
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
                if ref.name not in self.stages:
                    raise self.error("`%s on %s`: no stage `%s` is declared above" % (role, ref.name, ref.name),
                                     span=ref.span)
                stages.append(ref)
                if role != "transfer" or not self.accept(","):
                    break
        else:
            stages = [ast.Name(self.resolve_role(t, role), sp)]
        if role == "transfer":
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

    # ------------------------------------------------------------ def expansion

    def split_args(self, open_tok: Token) -> List[List[Token]]:
        """After ``(``: the argument token lists up to the matching ``)``."""
        args: List[List[Token]] = []
        cur: List[Token] = []
        depth = 0
        if self.at(")"):
            self.next()
            return args
        while True:
            t = self.peek()
            if t.kind == EOF:
                raise self.error("expected `)`, found end of input", t,
                                 help="the call opened at %d:%d is not closed" % (open_tok.line, open_tok.col))
            if t.kind == PUNCT and t.text in "([{":
                depth += 1
            elif t.kind == PUNCT and t.text in ")]}":
                if depth == 0:
                    if t.text != ")":
                        raise self.error("expected `)`, found %s" % t.describe(), t)
                    self.next()
                    args.append(cur)
                    return args
                depth -= 1
            elif t.kind == PUNCT and t.text == "," and depth == 0:
                self.next()
                args.append(cur)
                cur = []
                continue
            cur.append(self.next())

    def build_expansion(self, info: DefInfo, name_tok: Token, statement: bool) -> List[Token]:
        open_ = self.expect("(")
        args = self.split_args(open_)
        if len(args) != len(info.params):
            raise self.error("`%s` takes %d argument(s), got %d" % (info.name, len(info.params), len(args)),
                             name_tok)
        for p, a in zip(info.params, args):
            if not a:
                raise self.error("expected an expression for `%s`, found `)`" % p, name_tok)
            reads = sum(1 for t in info.body if t.kind == IDENT and t.text == p)
            if any(t.kind == PUNCT and t.text == "~" for t in a) and reads > 1:
                raise self.error("the argument for `%s` draws, and `%s` reads `%s` %d times: it would draw %d "
                                 "times" % (p, info.name, p, reads, reads), name_tok,
                                 help="`set` the draw into an attribute first and pass the attribute")
            if statement:
                for i, t in enumerate(a):
                    live = t.kind == IDENT and (t.text == "now" or (
                        t.text in STATE_FUNCS and i + 1 < len(a) and a[i + 1].text == "("))
                    if live:
                        what = "now" if t.text == "now" else "%s(…)" % t.text
                        self.defer(self.error(
                            "the argument for `%s` of `%s` reads `%s`, which changes while statements run: "
                            "the body would read it where it reads the parameter, not here"
                            % (p, info.name, what), name_tok,
                            help="`set` the value into an attribute first and pass the attribute"))
                        break
        env: Dict[str, List[Token]] = {}
        for p, a in zip(info.params, args):
            if len(a) == 1 and a[0].kind == IDENT:
                env[p] = a
            else:
                lp = Token(PUNCT, "(", a[0].line, a[0].col, 0.0, None, a[0].file, a[0].src)
                last = a[-1]
                rp = Token(PUNCT, ")", last.line, last.col + len(last.text), 0.0, None, last.file, last.src)
                env[p] = [lp] + a + [rp]
        out: List[Token] = []
        for t in info.body:
            if t.kind == IDENT and t.text in env:
                out.extend(env[t.text])
            else:
                out.append(t)
        self.expanded += len(out)
        if self.expanded > MAX_EXPANSION:
            raise self.error("expanding `%s` passes %d tokens: definitions call each other too often"
                             % (info.name, MAX_EXPANSION), name_tok)
        return out

    def run_expansion(self, toks: List[Token], name_tok: Token, info: DefInfo, fn):
        end_tok = self.toks[self.pos - 1] if self.pos > 0 else name_tok
        if toks and toks[-1].file.startswith("--def"):
            last = toks[-1]  # an override's body: point just after it
            eof = Token(EOF, "", last.line, last.col + len(last.text), 0.0, None, last.file, last.src)
        else:  # like the reference: the use site's closing parenthesis
            eof = Token(EOF, "", end_tok.line, end_tok.col, 0.0, None, end_tok.file, end_tok.src)
        saved = (self.toks, self.pos)
        self.toks, self.pos = toks + [eof], 0
        note = "in the expansion of `%s` used at %s:%d:%d" % (info.name, name_tok.file, name_tok.line, name_tok.col)
        self.use_notes.append(note)
        self.enter(name_tok)
        try:
            result = fn()
            if self.peek().kind != EOF:
                t = self.peek()
                raise self.error("unexpected %s in the body of `%s`" % (t.describe(), info.name), t)
        finally:
            self.use_notes.pop()
            self.toks, self.pos = saved
        self.leave()
        return result

    def expand_expr_def(self, info: DefInfo) -> ast.Expr:
        name_tok = self.next()
        toks = self.build_expansion(info, name_tok, statement=False)
        return self.run_expansion(toks, name_tok, info, self.parse_expr)

    def expand_stmt_def(self, info: DefInfo, out: list) -> None:
        name_tok = self.next()
        toks = self.build_expansion(info, name_tok, statement=True)
        self.expect(";")

        def body():
            while self.peek().kind != EOF:
                self.parse_stmt(out)
        self.run_expansion(toks, name_tok, info, body)

    # ------------------------------------------------------------ expressions

    def parse_expr(self) -> ast.Expr:
        t = self.peek()
        self.enter(t)
        test = self.parse_or()
        if self.at("?"):
            q = self.next()
            then = self.parse_expr()
            self.expect(":")
            other = self.parse_expr()
            test = ast.Cond(test, then, other, q.span())
        self.leave()
        return test

    def parse_or(self) -> ast.Expr:
        left = self.parse_and()
        while self.at("||"):
            op = self.next()
            left = ast.Binary("||", left, self.parse_and(), op.span())
        return left

    def parse_and(self) -> ast.Expr:
        left = self.parse_cmp()
        while self.at("&&"):
            op = self.next()
            left = ast.Binary("&&", left, self.parse_cmp(), op.span())
        return left

    def parse_cmp(self) -> ast.Expr:
        left = self.parse_add()
        t = self.peek()
        if t.kind == PUNCT and t.text in _CMP:
            self.next()
            left = ast.Binary(t.text, left, self.parse_add(), t.span())
        return left

    def parse_add(self) -> ast.Expr:
        left = self.parse_mul()
        while self.at("+") or self.at("-"):
            op = self.next()
            left = ast.Binary(op.text, left, self.parse_mul(), op.span())
        return left

    def parse_mul(self) -> ast.Expr:
        left = self.parse_unary()
        while self.at("*") or self.at("/"):
            op = self.next()
            left = ast.Binary(op.text, left, self.parse_unary(), op.span())
        return left

    def parse_unary(self) -> ast.Expr:
        t = self.peek()
        if t.kind == PUNCT and t.text in ("-", "!"):
            self.next()
            self.enter(t)
            operand = self.parse_unary()
            self.leave()
            return ast.Unary(t.text, operand, t.span())
        return self.parse_power()

    def parse_power(self) -> ast.Expr:
        base = self.parse_primary()
        if self.at("^"):
            op = self.next()
            self.enter(op)
            right = self.parse_unary()
            self.leave()
            return ast.Binary("^", base, right, op.span())
        return base

    def parse_args(self) -> List[ast.Expr]:
        self.expect("(")
        args: List[ast.Expr] = []
        if not self.at(")"):
            args.append(self.parse_expr())
            while self.accept(","):
                args.append(self.parse_expr())
        self.expect(")")
        return args

    def parse_primary(self) -> ast.Expr:
        t = self.peek()
        if t.kind == NUMBER:
            self.next()
            return ast.Num(t.value, t.span())
        if t.kind == PUNCT and t.text == "(":
            self.next()
            e = self.parse_expr()
            self.expect(")")
            return e
        if t.kind == PUNCT and t.text == "~":
            self.next()
            d = self.expect_ident("a distribution name")
            return ast.Draw(d.text, self.parse_args(), t.span())
        if t.kind == IDENT:
            w = t.text
            if w in ("max", "min", "sum") and self.peek(1).kind == IDENT and self.at("in", 2):
                self.next()
                var = self.next()
                self.next()
                c = self.peek()
                if c.kind == NUMBER:
                    self.next()
                    count = ast.Num(c.value, c.span())
                elif c.kind == IDENT:
                    self.next()
                    count = ast.Name(c.text, c.span())
                elif c.kind == PUNCT and c.text == "(":
                    count = self.paren_expr()
                else:
                    raise self.error("expected a count (a number, a `let` or a parenthesised constant), "
                                     "found %s" % c.describe(), c)
                body = self.paren_expr()
                return ast.Agg(w, var.text, count, body, t.span())
            if self.at("(", 1):
                info = self.defs.get(w)
                if info is not None:
                    if info.is_block:
                        raise self.error("`%s` is statements (`def %s(…) { … }`), not an expression" % (w, w), t)
                    return self.expand_expr_def(info)
                self.next()
                return ast.Call(w, self.parse_args(), t.span())
            if w in RETIRED and w not in ("admit",):
                raise self.error("`%s` is a retired word and names nothing: %s" % (w, RETIRED[w]), t)
            return self.parse_ref()
        raise self.error("expected an expression, found %s" % t.describe(), t)


def _draws(e) -> bool:
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ast.Draw):
            return True
        stack.extend(_children(x))
    return False


def _live(e) -> Optional[str]:
    """What live state (clock, pool/stage query) an expression reads, if any."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ast.Call) and x.func in STATE_FUNCS:
            return "%s(…)" % x.func
        if isinstance(x, ast.Name) and x.name == "now":
            return "now"
        stack.extend(_children(x))
    return None


def _children(x) -> list:
    if isinstance(x, ast.Name):
        return [x.index] if x.index is not None else []
    if isinstance(x, ast.Unary):
        return [x.operand]
    if isinstance(x, ast.Binary):
        return [x.left, x.right]
    if isinstance(x, ast.Cond):
        return [x.test, x.then, x.other]
    if isinstance(x, (ast.Call, ast.Draw)):
        return list(x.args)
    if isinstance(x, ast.Agg):
        return [x.count, x.body]
    return []


def _first_not_set_observe(stmts):
    for s in stmts:
        if not isinstance(s, (ast.Set, ast.Observe)):
            return s
    return None


def _fmt(v: float) -> str:
    if v == int(v) and abs(v) < 1e16:
        return str(int(v))
    return repr(v)


def parse_program(text: str, file: str = "<text>", *, defs: Optional[Dict[str, str]] = None,
                  sets: Optional[Dict[str, object]] = None, from_text: bool = False) -> ast.Program:
    """Parse ``text`` into a kernel ``ast.Program`` with all sugar expanded."""
    p = Parser(text, file, defs, sets, from_text)
    old_limit = sys.getrecursionlimit()
    # MAX_DEPTH levels of nesting take about 12 frames each
    sys.setrecursionlimit(max(old_limit, MAX_DEPTH * 20 + 1000))
    try:
        return p.parse()
    except SyntaxError_:
        raise
    except RecursionError:
        t = p.peek() if p.toks else None
        span = t.span() if t is not None else Span(file, 1, 1)
        raise SyntaxError_("the program nests too deeply", span, source=text)
    finally:
        sys.setrecursionlimit(old_limit)
