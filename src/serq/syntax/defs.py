"""``use``, ``def`` and ``let``: libraries read in place, definitions kept
as token lists and expanded where used, constants folded, and array sizes
(``[N]``) resolved from numbers and earlier ``let``s."""
import os
from typing import Dict, List, Optional, Tuple

from .. import library
from ..depth import MAX_CHAIN, MAX_LET_CHAIN
from ..errors import SerqWarning, Span, SyntaxError_
from ..inputfile import InputFileError, describe_limit, read_bytes
from . import ast
from .expand import DefInfo, LANGUAGE_WORDS, RETIRED, STATE_FUNCS, fold_const
from .lexer import EOF, IDENT, PUNCT, STRING, Token, tokenize

# The reference keeps the program as one token stream, into which libraries
# and def uses are spliced; the stream (without its end) may hold at most
# MAX_TOKENS tokens.  A `use` of a library not yet read is refused when the
# stream plus the library passes it (the `use` statement itself still
# counted); a def use when the stream after the splice passes it, an
# expression def's expansion counting two more tokens (it is parenthesised).
MAX_TOKENS = 99_999
USE_TOKENS = 3  # `use "PATH" ;`
# serQ 0.1.3's largest array (`pool kv[N]`, `stage gpu[N]`).
MAX_FAMILY = 10000
# A library is read whole, at most this many bytes (as a program file is).
MAX_LIBRARY = 8 * 1024 * 1024


def _integer_digits(v: float) -> str:
    """A whole number as the reference prints it: the shortest digits that
    read back as ``v``, then zeros (9e135 is 9 and 135 zeros)."""
    from decimal import Decimal
    return "{:f}".format(Decimal(repr(float(v))).to_integral_value())


class DefsMixin:
    """Definitions, libraries, constants and array sizes for ``Parser``."""

    # ------------------------------------------------------------ use / def / let

    def parse_use(self, prog: ast.Program) -> None:
        kw = self.next()
        st = self.peek()
        if st.kind != STRING:
            raise self.error("expected a path string after `use`, found %s" % st.describe(), st)
        self.next()
        self.expect(";")
        text_program = self.from_text and kw.file == self.file
        if text_program:
            base: Optional[str] = None
        else:
            base = os.path.dirname(kw.file) if kw.file and not kw.file.startswith("<") else "."
        if "\0" in st.text:
            raise self.error("`use \"%s\"`: the path holds a NUL byte (\\0), which no file name "
                             "can" % st.text.replace("\0", "\\0"), st,
                             help="remove the NUL byte from the path")
        found, looked = library.resolve(st.text, base)
        if found is None:
            raise self.use_not_found(st.text, kw, looked, text_program)
        path = found
        if path in self.reading:
            # serQ 0.1.3 reads each file once: the `use` that closes a cycle
            # reads nothing
            chain = self.reading[self.reading.index(path):] + [path]
            self.warn("`use \"%s\"` is a cycle (%s): it reads nothing, as the file is already "
                      "being read" % (st.text, " uses ".join(os.path.basename(f) for f in chain)),
                      kw, help="remove this `use`; a file whose definitions two files share "
                               "belongs in a library of its own")
            self.ntokens -= USE_TOKENS
            return
        if path in self.libraries_read:
            self.ntokens -= USE_TOKENS
            return
        self.libraries_read.add(path)
        try:
            raw = read_bytes(path, MAX_LIBRARY)
        except InputFileError as e:
            raise self.error("cannot read `%s`: %s" % (st.text, e.reason), kw,
                             help="a library is a serQ program file of at most %s"
                             % describe_limit(MAX_LIBRARY) if e.too_big else None)
        lib_text = raw.decode("utf-8", errors="replace")
        lib_toks = tokenize(lib_text, path)
        if self.ntokens + len(lib_toks) - 1 > MAX_TOKENS:
            raise self.error("the libraries make the program longer than %d tokens" % MAX_TOKENS, kw,
                             help="a program with its libraries holds at most %d tokens; split it or "
                                  "drop unused definitions" % MAX_TOKENS)
        self.ntokens += len(lib_toks) - 1 - USE_TOKENS
        saved = (self.toks, self.pos)
        self.toks, self.pos = lib_toks, 0
        self.reading.append(path)
        try:
            self.items_top(prog, library=True)
        finally:
            self.toks, self.pos = saved
            self.reading.pop()

    def use_not_found(self, name: str, kw: Token, looked: List[Tuple[str, str]],
                      text_program: bool) -> SyntaxError_:
        """The error of a `use` whose file is in none of the places looked."""
        if text_program:
            msg = ('`use "%s"` finds no library: this program was given as text, so it has no '
                   'folder to read `%s` from, and neither SERQ_PATH nor serq\'s installed '
                   'libraries hold it' % (name, name))
            help = ("compile the program from a file, put the library in a folder of SERQ_PATH, "
                    "or paste the library's definitions into the program")
        else:
            msg = "cannot read `%s`: no such file in any place a `use` looks" % name
            help = ("put the file next to the program (the path is relative to the folder of the "
                    "file that holds the `use`), add its folder to SERQ_PATH, or name an "
                    "installed library")
        installed = library.installed_libraries()
        if installed:
            help += " (installed: %s)" % ", ".join("`%s`" % n for n in installed)
        err = self.error(msg, kw, help=help)
        err.notes[:0] = ["looked for %s (%s)" % (os.path.abspath(path), where) for path, where in looked]
        return err

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
        shadowing: List[Token] = []  # parameters named like a let, pool or stage
        if not self.at(")"):
            while True:
                p = self.expect_ident("a parameter name")
                if p.text in LANGUAGE_WORDS or p.text in RETIRED:
                    raise self.error("`%s` is a word of the language" % p.text, p)
                if p.text in self.program_names:
                    shadowing.append(p)
                if any(q.text == p.text for q in params):
                    raise self.error("parameter `%s` is named twice" % p.text, p)
                params.append(p)
                if not self.accept(","):
                    break
        self.expect(")")
        if shadowing:
            self.warn_shadowing(n, shadowing)
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
                        # counted, not matched by kind, as in 0.1.3
                        if not stack:
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
                # 0.1.3 counts brackets of every kind (not matching kinds):
                # the closer that brings the count to 0 ends the body if it
                # is `}`, and is unmatched otherwise, an error here, before
                # anything after
                if t.kind == PUNCT and t.text in "([{":
                    stack.append(t.text)
                elif t.kind == PUNCT and t.text in ")]}":
                    stack.pop()
                    if not stack:
                        if t.text != "}":
                            raise self.error("unmatched `%s`" % t.text, t)
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
        if body and not any(t.file.startswith("--def") for t in body):
            self.check_body(self.defs[n])

    def warn_shadowing(self, name: str, params: List[Token]) -> None:
        """One warning for a definition's parameters that shadow a program
        name: as in serQ 0.1.3, in the body each such name is the argument."""
        def one(p: Token) -> str:
            return "the %s `%s`" % (self.program_names[p.text], p.text)
        if len(params) == 1:
            what = "parameter `%s` of `%s` shadows %s" % (params[0].text, name, one(params[0]))
        else:
            what = "parameters %s of `%s` shadow %s" % (
                ", ".join("`%s`" % p.text for p in params), name, ", ".join(one(p) for p in params))
        self.warn("%s: in the body, each is the argument" % what if len(params) > 1 else
                  "%s: in the body, `%s` is the argument" % (what, params[0].text), params[0],
                  help="harmless where every use passes the same name; rename the parameter%s if "
                       "the body means the program's" % ("s" if len(params) > 1 else ""))

    def check_body(self, info: DefInfo) -> None:
        """Parse a definition's body where it is declared, so a syntax error
        in an unused one is reported too (the reference parses a body only
        where it is used: a divergence, diverge/def_unused_*).  Only the
        syntax is checked: the parse expands no def, leaves what a name
        means (stages, queues, the block the body will stand in) to the
        uses, drops the AST and keeps nothing it records."""
        end = info.body[-1]
        eof = Token(EOF, "", end.line, end.col + len(end.text), 0.0, None, end.file, end.src)
        saved = (self.toks, self.pos, self.ntokens, self.deferred, self.depth, self.context,
                 list(self.requests))
        self.toks, self.pos = list(info.body) + [eof], 0
        self.checking_def = True
        found = None
        try:
            if info.is_block:
                while self.peek().kind != EOF:
                    self.parse_stmt([])
            else:
                self.parse_expr()
                if self.peek().kind != EOF:
                    t = self.peek()
                    raise self.error("unexpected %s in the body of `%s`" % (t.describe(), info.name), t)
        except SyntaxError_ as e:
            found = e
        finally:
            (self.toks, self.pos, self.ntokens, self.deferred, self.depth, self.context,
             self.requests) = saved
            self.checking_def = False
        if found is not None:
            # serQ 0.1.3 parses a body only where it is used: an unused def
            # with a broken body compiles, so here it is a warning (a use of
            # the def still fails, at the use, as in 0.1.3)
            self.prog.warnings.append(SerqWarning(
                "the body of `%s` does not parse (%s); it compiles only because a body is read "
                "where the definition is used, and a use of `%s` would fail"
                % (info.name, found.message, info.name), found.span,
                help="fix the body, or remove the definition", notes=found.notes,
                source=found.source, phase="syntax"))

    def parse_let(self, prog: ast.Program) -> None:
        self.next()
        name = self.expect_ident("a constant name")
        self.expect("=")
        self.chain_bound = MAX_LET_CHAIN  # folded to a number: deeper than IR goes
        try:
            e = self.parse_expr()
        finally:
            self.chain_bound = MAX_CHAIN
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
        if val != val or val in (float("inf"), float("-inf")) or not (val >= 1 and val == int(val)):
            raise self.error("array size must be a positive integer, found %s" % fmt_num(val), start)
        if val > MAX_FAMILY:
            # the reference's bound (a member is a pool or a stage with its own state)
            raise self.error("array size %s is more than a family holds (%d): every member is a "
                             "pool or stage of its own" % (_integer_digits(val), MAX_FAMILY),
                             start)
        for d in deps:
            for x in [d] + self.let_deps.get(d, []):
                if x not in self.array_lets:
                    self.array_lets.append(x)
                    # the reference names the `let` the size reads, at the size
                    self.array_let_use[x] = (d, start.span())
        return int(val)


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
        """The tokens a use expands to (the use's `;` taken for a statement
        def), once the program, with them in place of the use, still fits."""
        start = self.pos - 1  # the name
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
        if statement:
            self.expect(";")
            grown = len(out)
        else:
            grown = len(out) + 2
        self.ntokens += grown - (self.pos - start)
        if self.ntokens > MAX_TOKENS:
            raise self.error("with `%s` expanded the program passes %d tokens" % (info.name, MAX_TOKENS),
                             name_tok, help="a program with its definitions expanded holds at most %d "
                                            "tokens; use the definitions less often or make them shorter"
                                            % MAX_TOKENS)
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
        e = self.run_expansion(toks, name_tok, info, self.parse_expr)
        if any(t.file.startswith("--def") for t in info.body):
            # a `--def` body parsed; what the linker finds wrong in it is
            # reported at the def's name in the program, as the reference does
            _respan(e, info.tok)
        return e

    def expand_stmt_def(self, info: DefInfo, out: list) -> None:
        name_tok = self.next()
        toks = self.build_expansion(info, name_tok, statement=True)

        def body():
            while self.peek().kind != EOF:
                self.parse_stmt(out)
        self.run_expansion(toks, name_tok, info, body)


def fmt_num(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e16:
        return str(int(v))
    return repr(v)


def _respan(node, tok: Token) -> None:
    """Move every span of an override's body (file ``--def …``) to ``tok``."""
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, list):
            stack.extend(x)
            continue
        if not hasattr(x, "__dataclass_fields__"):
            continue
        sp = getattr(x, "span", None)
        if isinstance(sp, Span) and sp.file.startswith("--def"):
            x.span = Span(tok.file, tok.line, tok.col, sp.length)
        for f in x.__dataclass_fields__:
            if f != "span":
                stack.append(getattr(x, f))
