"""Expressions (feature map section 2): precedence climbing from ``?:``
down to primaries, references ``kv[j]``, ``D[j].kv``, ``Q.x`` and draws;
an expression ``def`` is expanded where it is used."""
from typing import List, Optional, Tuple

from ..depth import MAX_LET_CHAIN
from . import ast
from ..errors import Span
from .expand import EXT_DISTS, RETIRED, STATE_FUNCS
from .lexer import IDENT, NUMBER, PUNCT, STRING

CMP = ("<", "<=", ">", ">=", "==", "!=")
_PREC = {"||": 1, "&&": 2, "+": 4, "-": 4, "*": 5, "/": 5}
_PREC.update((c, 3) for c in CMP)


class ExpressionsMixin:
    """The expression grammar of ``Parser``."""

    def parse_ref(self, what: str = "a pool or stage name", where: str = "ref") -> ast.Name:
        """A name, ``X[i]``, ``Q.x`` or a member's pool ``Q[i].p``.  As in
        the reference, ``Q[i].p`` is a reference only where a pool or stage
        is named: a statement's pool or stage, or an argument of a function
        that is the name and nothing else (``holders(D[j].kv)``); the pool
        must be one of the queue's (checked once the whole program is read:
        the queue may be declared further down).  ``where`` is ``ref`` for a
        statement's pool or stage, ``arg`` for the first token of a
        function's argument, ``value`` elsewhere, where ``Q[i].x`` would
        read the request's attribute ``Q.x``, which no member has.  No index
        follows ``Q.x``."""
        t = self.expect_ident(what)
        name = t.text
        index = None
        if self.at("["):
            self.next()
            index = self.parse_expr()
            self.expect("]")
        if self.at(".") and self.peek(1).kind == IDENT:
            self.next()
            at = self.next()
            attr = at.text
            if index is not None and not self.checking_def:
                if where == "value" or where == "arg" and not (self.at(")") or self.at(",")):
                    raise self.error("`%s[…].%s` reads the request's attribute, which is no member's: write "
                                     "`%s.%s`" % (name, attr, name, attr), t)
                self.member_refs.append((name, attr, at, list(self.use_notes)))
            name = name + "." + attr
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


    # ------------------------------------------------------------ expressions

    def parse_expr(self) -> ast.Expr:
        t = self.peek()
        self.enter(t)
        test = self.parse_binary(1)
        if self.at("?"):
            q = self.next()
            then = self.parse_expr()
            self.expect(":")
            other = self.parse_expr()
            test = ast.Cond(test, then, other, q.span())
        self.leave()
        return test

    def parse_or(self) -> ast.Expr:
        return self.parse_binary(1)

    def parse_binary(self, min_prec: int) -> ast.Expr:
        """Binary operators by precedence climbing: ``||`` < ``&&`` <
        comparisons < ``+ -`` < ``* /``, all left-associative, and a
        comparison does not chain (``a < b < c`` stops before the second
        ``<``, where the caller reports what it expected)."""
        left = self.parse_unary()
        ceiling = 5  # the loosest operator this level may still apply
        while True:
            t = self.peek()
            if t.kind != PUNCT:
                return left
            prec = _PREC.get(t.text)
            if prec is None or prec < min_prec or prec > ceiling:
                return left
            self.next()
            right = self.parse_binary(prec + 1) if prec < 5 else self.parse_unary()
            height = max(self._height(left), self._height(right)) + 1
            left = ast.Binary(t.text, left, right, t.span())
            if height > 1:
                self.heights[id(left)] = (left, height)
                if height > self.chain_bound:
                    raise self.error("the expression is %d operators deep, more than the %d serq "
                                     "reads%s" % (height, self.chain_bound,
                                                  " in a `let`" if self.chain_bound == MAX_LET_CHAIN
                                                  else ""), t,
                                     help="split it into parts with `let`, `set` or `def` (a sum "
                                          "of many terms: `sum i in N (…)`)")
            ceiling = 2 if prec == 3 else prec

    def _height(self, e: ast.Expr) -> int:
        """A parsed operator chain's depth (1 for an operand, as far as a
        chain of ``Binary`` nodes goes)."""
        if type(e) is not ast.Binary:
            return 0
        known = self.heights.get(id(e))
        return known[1] if known is not None and known[0] is e else 1

    def parse_unary(self) -> ast.Expr:
        t = self.peek()
        if t.kind == PUNCT and (t.text == "-" or t.text == "!"):
            self.next()
            self.enter(t)
            operand = self.parse_unary()
            self.leave()
            return ast.Unary(t.text, operand, t.span())
        return self.parse_power(t)

    def parse_power(self, first=None) -> ast.Expr:
        """A primary and an optional ``^``; ``first`` is the current token
        when the caller has it at hand."""
        if first is None:
            first = self.peek()
        base = self.parse_primary()
        op = self.peek()
        if op.text != "^" or op.kind != PUNCT:
            return base
        if first.kind == PUNCT and first.text == "~":
            # As in the reference, a draw binds like a prefix operator: it is
            # no base of `^` unless parenthesised.
            raise self.error("a draw is not the base of `^`", op,
                             help="parenthesise the draw: `(~%s(…)) ^ …`" % base.dist)
        self.next()
        self.enter(op)
        right = self.parse_unary()
        self.leave()
        return ast.Binary("^", base, right, op.span())

    def parse_args(self) -> List[ast.Expr]:
        self.expect("(")
        args: List[ast.Expr] = []
        if not self.at(")"):
            args.append(self.parse_expr())
            while self.accept(","):
                args.append(self.parse_expr())
        self.expect(")")
        return args

    def parse_strings(self, name) -> List[Tuple[str, Span]]:
        """``("FILE.csv")`` or ``("FILE.csv", "COLUMN")``: serq's
        ``~empirical`` arguments."""
        self.expect("(")
        out: List[Tuple[str, Span]] = []
        while True:
            t = self.peek()
            if t.kind != STRING:
                what = "a file name" if not out else "a column name"
                raise self.error("`~empirical` reads %s string here, found %s"
                                 % (what, t.describe()), t,
                                 help='write `~empirical("lengths.csv")`, or '
                                      '`~empirical("lengths.csv", "COLUMN")` for one column '
                                      "of a file with a header")
            self.next()
            out.append((t.text, t.span()))
            if len(out) == 2 or not self.accept(","):
                break
        self.expect(")")
        return out

    def parse_call_args(self) -> List[ast.Expr]:
        """A function's arguments; ``arg_tok`` is the first token of the
        argument being read (a member's pool may stand there alone)."""
        self.expect("(")
        args: List[ast.Expr] = []
        saved = getattr(self, "arg_tok", None)
        try:
            if not self.at(")"):
                while True:
                    self.arg_tok = self.peek()
                    args.append(self.parse_expr())
                    if not self.accept(","):
                        break
        finally:
            self.arg_tok = saved
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
            if d.text in EXT_DISTS:
                if not self.checking_def:  # (a definition counts where it is used)
                    self.prog.extensions.append(("the distribution `~%s`" % d.text, d.span()))
                if d.text == "empirical":
                    return ast.Draw(d.text, [], d.span(), self.parse_strings(d))
            return ast.Draw(d.text, self.parse_args(), d.span())  # the reference points at the name
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
                if info is not None and not self.checking_def:  # a body's own check expands nothing
                    if info.is_block:
                        raise self.error("`%s` is statements (`def %s(…) { … }`), not an expression" % (w, w), t)
                    return self.expand_expr_def(info)
                self.next()
                return ast.Call(w, self.parse_call_args(), t.span())
            if w in RETIRED and w not in ("admit",):
                raise self.error("`%s` is a retired word and names nothing: %s" % (w, RETIRED[w]), t)
            return self.parse_ref(where="arg" if t is getattr(self, "arg_tok", None) else "value")
        raise self.error("expected an expression, found %s" % t.describe(), t)



def draws(e) -> bool:
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ast.Draw):
            return True
        stack.extend(children(x))
    return False


def live_state(e) -> Optional[str]:
    """What live state (clock, pool/stage query) an expression reads, if any."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ast.Call) and x.func in STATE_FUNCS:
            return "%s(…)" % x.func
        if isinstance(x, ast.Name) and x.name == "now":
            return "now"
        stack.extend(children(x))
    return None


def children(x) -> list:
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
