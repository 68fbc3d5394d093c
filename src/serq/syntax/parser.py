"""The parser core: tokens to the kernel AST, with every piece of sugar expanded.

Recursive descent over the serQ 0.1.3 grammar (feature map sections 1-3,
5.5, 5.8, 6).  This module holds the token cursor, errors and warnings, the
dispatch of top-level items, the ``workload``, ``session`` and ``server``
blocks with the splicing of the two-sided ``workload``/``server`` form, and
the checks made once the whole program is read; ``parse_program`` is the
entry point.  The rest of the grammar is in the mixins that make up
``Parser``: ``defs.py`` (``use``, ``def``, ``let``), ``declarations.py``
(pools, stages, ``share``, ``claim``, ``run``), ``expressions.py``,
``statements.py`` (serving forms lowered to ``run``), ``queues.py`` (queue
stations and relations) and ``calls.py`` (entry calls, expanded in place).
``def`` uses are expanded at the token level (see ``expand.py`` for the
helpers) and array sizes are folded.  Every error is a ``SyntaxError_``
with a span.
"""
import copy
import os
import sys
from typing import Dict, List, Optional, Tuple
from typing import Set as PySet

from ..depth import MAX_CHAIN
from ..errors import SerqWarning, Span, SyntaxError_
from . import ast
from ..ir.nodes import BUILTIN_ATTRS
from .calls import CallsMixin
from .declarations import DeclarationsMixin
from .defs import DefsMixin
from .expand import DefInfo, names_read
from .expressions import CMP, ExpressionsMixin
from .lexer import EOF, IDENT, NUMBER, PUNCT, STRING, Token, tokenize
from .queues import QueueMixin
from .statements import StatementsMixin, _Request

MAX_DEPTH = 200

#: Units of time a number may be written with by mistake, in seconds.
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
              "min": 60.0, "h": 3600.0}


def unit_error(number: Token, word: Token) -> Tuple[str, str]:
    """The message and help for a number followed by a word (``10ms``)."""
    msg = ("`%s%s`: a number carries no unit in serQ (this is the number %s followed by `%s`)"
           % (number.text, word.text, number.text, word.text))
    factor = TIME_UNITS.get(word.text)
    if factor is not None:
        seconds = "%.12g" % (number.value * factor)
        return msg, ("times are in seconds: write `%s` for %s %s" % (seconds, number.text, word.text))
    return msg, ("write the number alone: times are in seconds, sizes in the units the pool "
                 "counts (tokens, blocks, slots)")


class Parser(DefsMixin, DeclarationsMixin, ExpressionsMixin, StatementsMixin, QueueMixin, CallsMixin):
    """The core: tokens, errors, top-level items, the workload, session and
    server, and the checks after the parse; the grammar of definitions,
    declarations, expressions, statements, queues and entry calls lives in
    the mixins."""


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
        # operator chains: each Binary's depth (kept with the node, so an id
        # is never another's), and the deepest read here (expressions.py)
        self.heights: Dict[int, Tuple[ast.Expr, int]] = {}
        self.chain_bound = MAX_CHAIN
        self.ntokens = 0  # the program's token stream, as the reference counts it
        self.defs: Dict[str, DefInfo] = {}
        self.def_order: List[str] = []
        self.libraries_read = set()
        # the files being read, the program first: a `use` of one is a cycle
        self.reading = [] if from_text or file.startswith("<") else [os.path.normpath(file)]
        self.stages: Dict[str, Tuple[str, Optional[int]]] = {}
        self.stage_order: List[str] = []
        self.let_values: Dict[str, Optional[float]] = {}
        self.let_deps: Dict[str, List[str]] = {}
        self.let_spans: Dict[str, Span] = {}
        self.array_lets: List[str] = []
        self.array_let_use: Dict[str, Tuple[str, Span]] = {}
        self.checking_def = False  # parsing a def body where it is declared
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

    # ------------------------------------------------------------ errors

    def error(self, msg: str, tok: Optional[Token] = None, help: Optional[str] = None,
              span: Optional[Span] = None) -> SyntaxError_:
        if tok is None and span is None:
            tok = self.peek()
        if span is None:
            glued = self.number_before(tok)
            if glued is not None:
                # `cost 10ms`: whatever was expected, the word glued to the
                # number is the mistake (located at the word, where 0.1.3's
                # error is)
                msg, help = unit_error(glued, tok)
            span = tok.span()
        src = tok.src if tok is not None and tok.src is not None else self.text
        return SyntaxError_(msg, span, help=help, notes=self.use_notes[::-1], source=src)

    def number_before(self, tok: Token) -> Optional[Token]:
        """The number written directly before the word ``tok`` (``10ms``,
        the lexer's `10` and `ms`), if there is one."""
        if tok.kind != IDENT:
            return None
        for i in (self.pos, self.pos - 1, self.pos + 1):
            if 0 < i < len(self.toks) and self.toks[i] is tok:
                prev = self.toks[i - 1]
                if prev.kind == NUMBER and prev.file == tok.file and prev.line == tok.line \
                        and prev.col + len(prev.text) == tok.col:
                    return prev
                return None
        return None

    # ------------------------------------------------------------ tokens

    def defer(self, e: SyntaxError_) -> None:
        if self.deferred is None:
            self.deferred = e

    def warn(self, msg: str, tok: Token, help: Optional[str] = None) -> None:
        """A hazard serQ 0.1.3 accepts: compiled as 0.1.3 compiles it, and
        reported as a warning (``ast.Program.warnings``)."""
        src = tok.src if tok.src is not None else self.text
        self.prog.warnings.append(SerqWarning(msg, tok.span(), help=help,
                                              notes=self.use_notes[::-1], source=src,
                                              phase="syntax"))

    def _once(self, seen: Dict[str, Token], key: str, tok: Token, owner: str) -> None:
        if key in seen:
            # serQ 0.1.3 keeps the last silently: so does serq, with a warning
            first = seen[key]
            self.warn("`%s` is given twice in %s: this one replaces the one at %d:%d"
                      % (key, owner, first.line, first.col), tok,
                      help="keep one `%s`" % key)
        seen[key] = tok

    # The token helpers run for every token several times: they index the
    # list directly (the list always ends with its EOF, and reading past it
    # reads the EOF).

    def peek(self, k: int = 0) -> Token:
        try:
            return self.toks[self.pos + k]
        except IndexError:
            return self.toks[-1]

    def next(self) -> Token:
        pos = self.pos
        toks = self.toks
        if pos < len(toks) - 1:
            self.pos = pos + 1
            return toks[pos]
        return toks[pos] if pos < len(toks) else toks[-1]

    def at(self, text: str, k: int = 0) -> bool:
        try:
            t = self.toks[self.pos + k]
        except IndexError:
            t = self.toks[-1]
        return t.text == text and (t.kind == PUNCT or t.kind == IDENT)

    def at_word(self, word: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == IDENT and t.text == word

    def accept(self, text: str) -> Optional[Token]:
        try:
            t = self.toks[self.pos]
        except IndexError:
            t = self.toks[-1]
        if t.text == text and (t.kind == PUNCT or t.kind == IDENT):
            return self.next()
        return None

    def expect(self, text: str, help: Optional[str] = None) -> Token:
        t = self.peek()
        if t.text == text and (t.kind == PUNCT or t.kind == IDENT):
            return self.next()
        if help is None and text == ";" and t.kind == PUNCT and t.text in CMP:
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
        self.ntokens = len(self.toks) - 1
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
        """The names the program declares at top level, and each queue's
        pools (a queue may be named above its declaration)."""
        depth = 0
        queue: Optional[str] = None  # the queue whose braces we are in
        for i, t in enumerate(toks):
            if t.kind == PUNCT and t.text == "{":
                depth += 1
            elif t.kind == PUNCT and t.text == "}":
                depth = max(0, depth - 1)
                if depth == 0:
                    queue = None
            elif depth == 0 and t.kind == IDENT and t.text in ("pool", "stage", "let", "queue") \
                    and i + 1 < len(toks) and toks[i + 1].kind == IDENT:
                self.program_names.setdefault(toks[i + 1].text, t.text)
                if t.text == "queue":
                    queue = toks[i + 1].text
                    self.queue_pools_ahead.setdefault(queue, set())
            elif depth == 1 and queue is not None and t.kind == IDENT and t.text == "pool" \
                    and i + 1 < len(toks) and toks[i + 1].kind == IDENT:
                self.queue_pools_ahead[queue].add(toks[i + 1].text)

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
        self.check_member_refs()
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
        prog.session = self.resolve_calls(prog.session)
        hidden = [h for h, _ in prog.workload.hidden] if prog.workload is not None else []
        self.check_entry_reads(hidden)
        self.check_read_bindings(prog)
        prog.array_lets = list(self.array_lets)
        prog.expr_defs = [n for n in self.def_order if not self.defs[n].is_block]
        for name in self.sets:
            if name in self.array_lets:
                direct, at = self.array_let_use[name]
                raise SyntaxError_("the `let` override `%s` affects an array size resolved during parsing"
                                   % direct, at, source=self.text,
                                   help="change the `let` in the program instead")
        for name in self.defs_override:
            if name not in self.defs:
                known = ", ".join(prog.expr_defs) or "none"
                shown = "%s=%s" % (name, self.defs_override[name])
                raise SyntaxError_("`--def %s`: the program has no definition `%s`" % (name, name),
                                   Span("--def", 1, 1, len(name)),
                                   help="the expression definitions are: %s" % known, source=shown)

    def check_read_bindings(self, prog: ast.Program) -> None:
        """An `at admission` binding the body reads is an attribute set at the
        top of that body. Several holds may bind (and read) the same name: it
        is one attribute. But no other statement may set it, it is not a
        built-in, and nothing outside the bodies of the holds that bind it
        reads it. The first hold (in program order) that breaks the first
        rule is reported, then likewise for the second."""
        wl = prog.workload
        blocks = ([wl.init, wl.turn] if wl is not None else []) + [prog.session]
        sets, every = ast.sets_and_holds(blocks)  # sets: other than by a binding
        holds = [h for h in every if getattr(h, "read_bindings", None)]
        if not holds:
            return
        for h in holds:
            for name, span, src in h.read_bindings:
                if name in BUILTIN_ATTRS or name in sets:
                    raise SyntaxError_(
                        "the body reads `%s`, which is also an attribute the %s sets: the body would "
                        "not say which it means" % (name, "scheduler" if name in BUILTIN_ATTRS else "program"),
                        span, help="rename the binding", source=src)
        free: PySet[str] = set()
        for b in blocks:
            for st in b:
                names_read(st, free)
        for h in holds:
            for name, span, src in h.read_bindings:
                if name in free:
                    raise SyntaxError_(
                        "`%s` is read outside the body of the hold that binds it" % name, span,
                        help="a header's binding is the header's and its body's; name a value the "
                        "rest of the program reads with `set`", source=src)

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
            if w == "session" and w in seen:
                raise self.error("a second `session` in the workload (the first is at %d:%d)"
                                 % (seen[w].line, seen[w].col), k,
                                 help="a workload has one client session")
            if w in ("arrive", "init", "turn", "trace", "session"):
                self._once(seen, w, k, "the workload")
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
                    # a run is pointed at by its stage, as the reference does
                    at = bad.stages[0].span if isinstance(bad, ast.Run) else bad.span
                    self.defer(SyntaxError_("%s: workload blocks may only `set` and `observe`" % w, at,
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

def _first_not_set_observe(stmts):
    for s in stmts:
        if not isinstance(s, (ast.Set, ast.Observe)):
            return s
    return None


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
