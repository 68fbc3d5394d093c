"""Statements: the session program -> the IR's block arena.

Blocks are numbered in pre-order, as the reference numbers them: a block
takes the next index when it is entered, then its statements' nested blocks
take theirs in statement order (a hold's body, a branch's then and else, a
loop's or a fork's body).
"""
from __future__ import annotations

import math
from typing import List, Optional

from .._dataclass import dataclass, field
from ..errors import LinkError
from ..ir import nodes as ir
from ..syntax import ast
from . import consts
from .exprs import ExprLinker
from .scope import moment


@dataclass
class HoldFrame:
    refs: List[ir.Ref]
    cache: bool
    lease: Optional[ir.Ref]


@dataclass
class Where:
    """The static context of a statement."""
    holds: List[HoldFrame] = field(default_factory=list)
    in_fork: bool = False
    no_cache: str = ""  # the pool of the innermost hold, when that hold has no `cache`


def _round_up(need: float, block: Optional[float]) -> float:
    """``need`` in whole blocks, as the simulator (and 0.1.3) rounds it:
    ``ceil(need / block) * block`` (not ``need // block``, whose exact
    quotient can differ from the rounded one: 9.9 in blocks of 0.3 is 9.9,
    not 10.2)."""
    if not block or math.isinf(need):
        return need
    q = need / block
    return math.ceil(q) * block if math.isfinite(q) else q * block


def _const(e: ast.Expr, lets) -> Optional[float]:
    if type(e) is ast.Draw and e.dist == "det" and len(e.args) == 1:
        e = e.args[0]
    try:
        return consts.fold(e, lets)
    except consts.NotConstant:
        return None
    except LinkError:
        return None


class BlockLinker:
    def __init__(self, ex: ExprLinker, blocks: List[List[ir.Stmt]], pool_caps: List[tuple]):
        self.ex = ex
        self.pool_caps = pool_caps  # (cap, block) per pool member
        self.pending_release: List[tuple] = []  # (ref, statement, enclosing hold refs)
        self.spans = {}  # (block, statement) -> where the statement stands
        self.scope = ex.scope
        self.blocks = blocks
        self.session_m = moment("Session", "a session statement")
        self.leased: List[ir.Ref] = []  # every pool reference some hold leases
        self.forks = []
        self.joins = []
        self.shared_runs: List[tuple] = []  # (Run ast, ir.Run)

    # ------------------------------------------------------------------ blocks

    def block(self, stmts: List[ast.Stmt], where: Where) -> int:
        index = len(self.blocks)
        self.blocks.append([])
        out = []
        for i, s in enumerate(stmts):
            self.spans[(index, i)] = anchor(s)
            out.append(self.stmt(s, where))
        self.blocks[index] = out
        return index

    def stmt(self, s: ast.Stmt, where: Where) -> ir.Stmt:
        t = type(s)
        m = self._m(where)
        if t is ast.Set:
            return ir.Set(self.scope.attr(s.name), self.ex.expr(s.value, m))
        if t is ast.Observe:
            return ir.Observe(self.scope.observe(s.name), self.ex.expr(s.value, m))
        if t is ast.Run:
            return self.run(s, where)
        if t is ast.Hold:
            return self.hold(s, where)
        if t is ast.Branch:
            return self.branch(s, where)
        if t is ast.Turn:
            if where.in_fork:
                self.scope.defer(LinkError("`turn` in a fork leg: a leg does not take turns", s.span,
                                help="take the turn in the session, after the `join`"))
            return ir.Turn()
        if t is ast.End:
            if where.in_fork:
                self.scope.defer(LinkError("`end` in a fork leg: a leg ends when its block runs out",
                                s.span, help="leave the leg's block instead"))
            return ir.End()
        if t is ast.Loop:
            if not lets_time_pass(s.body, self.scope.lets):
                self.scope.defer(LinkError("a `loop` must let time pass on every path through its body: "
                                "reach a `run` of positive work, a `hold` whose body does, or "
                                "`end`", s.span,
                                help="put a `run` on every path, or leave with `end`"))
            return ir.Loop(self.block(s.body, where))
        if t is ast.Choose:
            slot = self.scope.attr(s.var)
            cm = m.replace(nospan=True)
            n = _const(s.count, self.scope.lets)
            if n is not None and not (n >= 0 and float(n).is_integer()):
                self.scope.defer(LinkError("`choose %s in (%s)`: the count is %s, not a whole "
                                           "number" % (s.var, _fmt(n), _fmt(n)), s.span,
                                           help="choose among a whole number of candidates"))
            return ir.Choose(slot, self.ex.expr(s.count, cm), [self.ex.expr(k, cm) for k in s.keys])
        if t is ast.Fork:
            if where.in_fork:
                self.scope.defer(LinkError("`fork` in a fork leg: legs do not fork", s.span))
            for frame in where.holds:
                for ref in frame.refs:
                    if self._may_preempt(ref):
                        self.scope.defer(LinkError("`fork` inside a hold on a pool that may preempt: the "
                                        "hold runs again from its start and forks a second leg",
                                        s.span))
            self.forks.append(s)
            return ir.Fork(self.block(s.body, Where(holds=[], in_fork=True)))
        if t is ast.Join:
            if where.in_fork:
                self.scope.defer(LinkError("`join` in a fork leg: only the session joins its legs", s.span))
            self.joins.append(s)
            return ir.Join()
        if t in (ast.Grow, ast.Load):
            ref = self.ex.ref(s.ref, "p", m)
            word = "grow" if t is ast.Grow else "load"
            self._inside_hold(ref, s, word, where)
            amount = self.ex.expr(s.amount, m.replace(anchor=s.ref.span))
            self._amount(s.amount, "`%s %s`" % (word, s.ref.name), s.ref.span)
            return (ir.Grow if t is ast.Grow else ir.Load)(ref, amount)
        if t is ast.Drop:
            return ir.Drop(self.ex.ref(s.ref, "p", m))
        if t is ast.Release:
            ref = self.ex.ref(s.ref, "p", m)
            self._stable_member(ref, s.ref, "release", where)
            self.pending_release.append((ref, s, [f.refs for f in where.holds]))
            return ir.Release(ref)
        raise LinkError("unexpected statement", getattr(s, "span", None))

    def finish(self) -> None:
        """Checks that need the whole session (releases of leases)."""
        for ref, s, frames in self.pending_release:
            if any(ref == r for refs in frames for r in refs):
                continue
            if any(ref == r for r in self.leased):
                continue
            self.scope.defer(LinkError("`release %s` outside a hold of `%s`, and no hold leases it"
                            % (s.ref.name, s.ref.name), s.ref.span,
                            help="write `release` inside the hold, or lease the pool with "
                            "`lease %s (t)` after the hold" % s.ref.name))

    # --------------------------------------------------------------- helpers

    def _m(self, where: Where):
        if where.no_cache:
            return self.session_m.replace(no_cache_hold=where.no_cache)
        return self.session_m

    def _may_preempt(self, ref: ir.Ref) -> bool:
        decl = self.ex.pool_decl(ref)
        return decl.preempt is not None

    def _member_rules(self, s: ast.Hold, refs: List[ir.Ref], where: Where) -> None:
        """0.1.3 refuses a hold whose member may differ between the moments
        it is read: a preemptible pool's index that reads what moves (it is
        read again at each re-admission), or an index reading an attribute
        that the hold's body sets."""
        names = {slot: "`%s`" % n for n, slot in self.scope.attr_slots.items()
                 if n in ("cached", "computed")}
        body_sets = None
        for hp, ref in zip(s.pools, refs):
            if ref.index is None or type(ref.index) is ir.Num:
                continue
            label = "`hold %s[…]`" % hp.ref.name
            # its own pools, then the enclosing holds' (their re-admission
            # runs this hold again)
            preempter = None
            for r, n in list(zip(refs, s.pools)) + [
                    (r, None) for f in reversed(where.holds) for r in f.refs]:
                if self._may_preempt(r):
                    preempter = n.ref.name if n is not None else self.ex.pool_decl(r).name
                    break
            if preempter is not None and _moves(ref.index, True, names):
                self.scope.defer(LinkError(
                    "%s: `%s` may preempt it, and it is admitted anew and reads the index again, "
                    "which reads the state, the clock, a draw, or the `cached` and `computed` that "
                    "admission and preemption set" % (label, preempter), s.pools[0].ref.span,
                    help="name the member in another attribute, set before the hold"))
                continue
            if body_sets is None:
                body_sets = set()
                _names_set(s.body, body_sets)
            read = set()
            _slots_read(ref.index, read)
            candidates = sorted(n for n, slot in self.scope.attr_slots.items() if slot in read) \
                if "*" in body_sets else sorted(body_sets)
            for n in candidates:
                if self.scope.attr_slots.get(n) in read:
                    self.scope.defer(LinkError(
                        "%s: its body changes `%s`, which the index reads, so the member read at "
                        "admission, at a statement inside and after a preemption may differ"
                        % (label, n), s.pools[0].ref.span,
                        help="set the member's attribute before the hold"))
                    break

    def _stable_member(self, ref: ir.Ref, node, word: str, where: Where, at=None) -> None:
        """A pool statement inside the hold it acts on: when the hold's
        index reads what moves (the state, the clock, a draw), 0.1.3
        refuses it, as the two reads may name different members."""
        if ref.index is None or type(ref.index) is ir.Num:
            return
        for frame in reversed(where.holds):
            if any(ref == r for r in frame.refs):
                what = _moves(ref.index, False, {})
                if what:
                    self.scope.defer(LinkError(
                        "`%s %s[…]`: the hold's index reads %s, which moves between admission "
                        "and this statement, so the two may name different members"
                        % (word, node.name, what), at or node.span,
                        help="name the member in an attribute set before the hold"))
                return

    def _inside_hold(self, ref: ir.Ref, s, word: str, where: Where, stable=True) -> None:
        node = s.ref if hasattr(s, "ref") else s
        if stable:
            self._stable_member(ref, node, word, where)
        for frame in where.holds:
            if any(ref == r for r in frame.refs):
                return
        self.scope.defer(LinkError("`%s %s` outside a hold of `%s`: it acts on an enclosing hold's "
                        "allocation" % (word, node.name, node.name), node.span,
                        help="put it inside `hold %s (…) { … }`, naming the pool the same way"
                        % node.name))

    def _amount(self, e: ast.Expr, what: str, anchor, effect: Optional[str] = None) -> None:
        if type(e) is ast.Draw:
            return  # `~det(-1)` is a draw to 0.1.3: it fails when run, not here
        v = _const(e, self.scope.lets)
        if effect is not None and v is not None and (v < 0 or v != v):
            # 0.1.3 runs it: it acts as 0 would (a NaN too: `inf * 0`)
            self.scope.warn("%s: %s is %s, and %s" % (
                what, _fmt(v), "negative" if v < 0 else "not a number", effect), anchor,
                help="write 0, or a positive amount")
            return
        if v is not None and (v != v or v < 0):
            self.scope.defer(LinkError("%s: an amount of units, tokens or seconds is a number, and "
                                       "not negative; this one is %s" % (what, _fmt(v)), anchor))

    # ------------------------------------------------------------ statements

    def run(self, s: ast.Run, where: Where) -> ir.Run:
        m = self._m(where).replace(anchor=s.stages[0].span)
        refs = [self.ex.ref(n, "s", m) for n in s.stages]
        first = refs[0]
        kinds = self.scope.stage_kinds[first.base:first.base + first.count]
        is_step = kinds[0] == "step"
        name = s.stages[0].name
        if len(refs) == 1:
            if s.mode != "plain" and not is_step:
                self.scope.defer(LinkError("`prefill`/`decode` are required on a step stage and not allowed "
                                "elsewhere: `%s` is a %s stage" % (name, kinds[0]), s.stages[0].span,
                                help="write `run %s (work)`" % name))
            if s.mode == "plain" and is_step:
                self.scope.defer(LinkError("`prefill`/`decode` are required on a step stage and not allowed "
                                "elsewhere: `%s` is a step stage" % name, s.stages[0].span,
                                help="write `run %s prefill (tokens)` or `run %s decode (tokens)`"
                                % (name, name)))
        growing = None
        if s.growing is not None:
            if not is_step or len(refs) > 1:
                self.scope.defer(LinkError("`growing` needs a step stage", s.stages[0].span))
            growing = self.ex.ref(s.growing, "p", m)
            self._stable_member(growing, s.growing, "growing", where, at=s.stages[0].span)
            self._inside_hold(growing, s.growing, "growing", where, stable=False)
        work = self.ex.expr(s.work, m)
        self._amount(s.work, "`run %s`" % name, s.stages[0].span)
        if _const(s.work, self.scope.lets) == float("inf"):
            self.scope.defer(LinkError("`run %s (inf)`: a job of infinite work never finishes, and "
                                       "its session never goes on" % name, s.stages[0].span,
                                       help="give the run a finite amount of work"))
        out = ir.Run(first, {"plain": "Plain", "prefill": "Prefill", "decode": "Decode"}[s.mode],
                     work, growing, refs[1:])
        if len(refs) > 1:
            seen = set()
            for n, r in zip(s.stages, refs):
                if r.base in seen:
                    self.scope.defer(LinkError("stage `%s` is named twice in one run" % n.name, n.span))
                seen.add(r.base)
        self.shared_runs.append((s, out))
        return out

    def hold(self, s: ast.Hold, where: Where) -> ir.Hold:
        pools = []
        refs = []
        for hp in s.pools:
            ref = self.ex.ref(hp.ref, "p", self.session_m)
            for r in refs:
                if r.base == ref.base and r.index == ref.index:
                    self.scope.defer(LinkError("a hold takes `%s` twice; hold it once, with the units (and "
                                    "any reserve) added" % hp.ref.name, s.pools[0].ref.span))
            refs.append(ref)
        self._member_rules(s, refs, where)
        admit_stage = self._admit_stage(refs[0])
        anchor = s.pools[0].ref.span
        am = moment("Admit", "a hold's header", stage=admit_stage, anchor=anchor)
        for hp, ref in zip(s.pools, refs):
            units = self.ex.expr(hp.units, am.replace(name="a hold's units"))
            reserve = None
            if hp.reserve is not None:
                reserve = self.ex.expr(hp.reserve, am.replace(name="a hold's reserve"))
            self._amount(hp.units, "`hold %s`" % hp.ref.name, anchor)
            self._fit(hp, ref)
            if hp.reserve is not None:
                self._amount(hp.reserve, "`hold %s … reserve`" % hp.ref.name, anchor)
            pools.append(ir.HoldPool(ref, units, reserve))
        reuse = None
        if s.reuse is not None:
            if s.cache is None:
                self.scope.defer(LinkError("`reuse` on a hold on `%s` that has no `cache` clause: nothing is "
                                "reused without a cache" % s.pools[0].ref.name, s.reuse.span,
                                help="add `cache (…)` after the hold's body, or drop `reuse`"))
            reuse = self.ex.expr(s.reuse, am.replace(name="a hold's reuse"))
        lease = None
        lease_ref = None
        if s.lease is not None:
            lease_ref = self.ex.ref(s.lease.ref, "p", self.session_m)
            if not any(lease_ref == r for r in refs):
                self.scope.defer(LinkError("`lease %s`: the hold does not take that pool" % s.lease.ref.name,
                                anchor,
                                help="lease one of the hold's own pools, written as the hold "
                                "writes it"))
            self.leased.append(lease_ref)
        frame = HoldFrame(refs, s.cache is not None, lease_ref)
        inner = Where(holds=where.holds + [frame], in_fork=where.in_fork,
                      no_cache="" if s.cache is not None else s.pools[0].ref.name)
        body = self.block(s.body, inner)
        sm = self._m(where).replace(anchor=anchor)
        cache = None if s.cache is None else self.ex.expr(s.cache, sm)
        if s.cache is not None:
            self._amount(s.cache, "`cache`", anchor, "caches nothing")
        if s.lease is not None:
            lease = (lease_ref, self.ex.expr(s.lease.time, sm))
            self._amount(s.lease.time, "`lease %s`" % s.lease.ref.name, anchor,
                         "the lease ends as the hold does")
        return ir.Hold(pools, reuse, body, cache, lease)

    def _admit_stage(self, ref: ir.Ref) -> Optional[int]:
        decl = self.ex.pool_decl(ref)
        return self.scope.admit_stage.get(decl.name)

    def _fit(self, hp: ast.HoldPool, ref: ir.Ref) -> None:
        # Each constant part of the demand (the units, the reserve) is
        # checked alone, as 0.1.3 does: `hold p (prompt) reserve (4)` with
        # cap 3 can never fit whatever the prompt.
        units = _const(hp.units, self.scope.lets)
        reserve = _const(hp.reserve, self.scope.lets) if hp.reserve is not None else None
        parts = [x for x in (units, reserve) if x is not None]
        if not parts:
            return
        need = max(parts)
        if units is not None:
            label = "`hold %s (%s)`" % (hp.ref.name, _fmt(units))
        else:  # only the reserve is known
            label = "`hold %s … reserve (%s)`" % (hp.ref.name, _fmt(reserve))
        caps = self.scope_pool_caps(ref)
        if any(block == float("inf") for _, block, _ in caps):
            return  # `block inf` is refused at the pool
        fits = False
        for cap, block, wm in caps:
            rounded = _round_up(need, block)
            if rounded + wm <= cap:  # exact, as 0.1.3 checks it (no tolerance)
                fits = True
        if fits and need == float("inf"):
            # only a pool of cap inf holds it: 0.1.3 admits one such hold,
            # and its pool's `used` is NaN once it is given back
            self.scope.defer(LinkError(
                "%s: a hold of infinite units would take a whole pool of cap inf, and leave its "
                "`used` undefined (inf - inf) when given back" % label, hp.span,
                help="hold a finite number of units"))
            return
        if not fits:
            cap, block, wm = caps[0]
            rounded = _round_up(need, block)
            if wm and rounded <= cap:
                # serq's watermark: it fits the cap, not what admissions may use
                self.scope.defer(LinkError(
                    "%s can never be admitted: it needs %s unit(s) (%s in whole "
                    "blocks) and admissions leave the pool's watermark %s of its %s free" % (
                        label, _fmt(need), _fmt(rounded), _fmt(wm), _fmt(cap)),
                    hp.span, help="lower the pool's `watermark` or the request"))
                return
            self.scope.defer(LinkError("%s can never fit: it needs %s unit(s) (%s in whole "
                            "blocks) and the pool holds %s" % (
                                label, _fmt(need), _fmt(rounded), _fmt(cap)),
                            hp.span, help="raise the pool's `cap` or lower the request"))

    def scope_pool_caps(self, ref: ir.Ref):
        out = []
        for fam in self.scope.pools.values():
            if fam.base == ref.base:
                for i in range(fam.count):
                    out.append(self.pool_caps[fam.base + i])
        return out

    def branch(self, s: ast.Branch, where: Where) -> ir.Branch:
        t = s.test
        if type(t) is ast.Draw and t.dist == "bernoulli" and len(t.args) == 1:
            p = _const(t.args[0], self.scope.lets)
            if p is not None and not (0.0 <= p <= 1.0):
                self.scope.warn("`branch with (%s)`: a probability is between 0 and 1; this "
                                "branch is %s taken" % (_fmt(p), "always" if p > 1 else "never"),
                                t.args[0].span, help="write a probability from 0 to 1")
        v = _const(s.test, self.scope.lets)
        if v is not None and v not in (0.0, 1.0):
            if 0.0 < v < 1.0:
                self.scope.defer(LinkError("`branch (%s)`: a constant guard strictly between 0 and 1 is "
                                "always an error at run time" % _fmt(v), s.test.span,
                                help="a draw is written `branch with (%s)`" % _fmt(v)))
            self.scope.defer(LinkError("`branch (%s)`: the guard is %s, not 0 or 1" % (_fmt(v), _fmt(v)),
                            s.test.span, help="a test reads 1 or 0"))
        test = self.ex.expr(s.test, self._m(where))
        then = self.block(s.then, where)
        other = self.block(s.other, where)
        return ir.Branch(test, then, other)


def anchor(s: ast.Stmt):
    """Where a run-time error about a statement points: a run's stage, a
    hold's first pool, a pool statement's pool, else the statement."""
    t = type(s)
    if t is ast.Run:
        return s.stages[0].span
    if t is ast.Hold:
        return s.pools[0].ref.span
    if t in (ast.Grow, ast.Load, ast.Drop, ast.Release):
        return s.ref.span
    return s.span


def lets_time_pass(stmts: List[ast.Stmt], lets) -> bool:
    """True when every path through ``stmts`` reaches a ``run`` whose work is
    not a number <= 0, a ``hold`` whose body does, or ``end``.  As in 0.1.3,
    only a number (or a `let` naming one) counts as no work: `run s (0 * 1)`
    or `run s (0.5 * 5e-324)` (which is 0) let time pass as far as this check
    goes, and a loop that spins at one instant stops the run instead."""
    for s in stmts:
        t = type(s)
        if t is ast.End:
            return True
        if t is ast.Run:
            w = s.work
            v = None
            if type(w) is ast.Num:
                v = w.value
            elif type(w) is ast.Name and w.index is None and w.name in lets:
                v = lets[w.name]
            if v is None or v > 0:
                return True
        elif t is ast.Hold:
            if lets_time_pass(s.body, lets):
                return True
        elif t is ast.Branch:
            if lets_time_pass(s.then, lets) and lets_time_pass(s.other, lets):
                return True
        elif t is ast.Loop:
            return True
    return False


def _fmt(v) -> str:
    if v is None:
        return "?"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return repr(v)


def reads_state(e) -> Optional[str]:
    """The first live-state query an AST expression reads (for the stale-set lint)."""
    t = type(e)
    if t is ast.Call:
        if e.func in ("used", "free", "cachedin", "holders", "queued", "queue", "busy", "work",
                      "budget_left", "est_lambda", "est_rho", "est_wait", "price"):
            arg = e.args[0] if e.args else None
            return "%s(%s)" % (e.func, arg.name if type(arg) is ast.Name else "…")
        for a in e.args:
            r = reads_state(a)
            if r:
                return r
        return None
    if t is ast.Name:
        return "now" if e.name == "now" else None
    for child in ("left", "right", "operand", "test", "then", "other", "body"):
        c = getattr(e, child, None)
        if c is not None and not isinstance(c, list):
            r = reads_state(c)
            if r:
                return r
    return None


def _moves(e, admission: bool, names) -> Optional[str]:
    """What an IR index expression reads that may change between a hold's
    admission and a statement inside it (0.1.3's member rules): a pool or
    stage query, the clock, a draw; with ``admission``, also the `cached`
    and `computed` that admission and preemption set (``names``: their
    slots)."""
    t = type(e)
    if t is ir.Sample or t is ir.ExtSample:
        return "a draw"
    if t is ir.Ctx:
        return "the clock" if e.var == "Now" else None
    if t is ir.Attr:
        return names.get(e.slot) if admission else None
    if t is ir.Call:
        for a in e.args:
            if type(a) is not ir.ArgExpr:
                return "the state"
        for a in e.args:
            r = _moves(a.expr, admission, names)
            if r:
                return r
        return None
    if t is ir.Unary:
        return _moves(e.operand, admission, names)
    if t is ir.Binary:
        return _moves(e.left, admission, names) or _moves(e.right, admission, names)
    if t is ir.Cond:
        return (_moves(e.test, admission, names) or _moves(e.then, admission, names)
                or _moves(e.other, admission, names))
    return None


def _slots_read(e, out) -> None:
    t = type(e)
    if t is ir.Attr:
        out.add(e.slot)
    elif t is ir.Call:
        for a in e.args:
            if type(a) is ir.ArgExpr:
                _slots_read(a.expr, out)
    elif t is ir.Unary:
        _slots_read(e.operand, out)
    elif t is ir.Binary:
        _slots_read(e.left, out)
        _slots_read(e.right, out)
    elif t is ir.Cond:
        _slots_read(e.test, out)
        _slots_read(e.then, out)
        _slots_read(e.other, out)


def _names_set(stmts, out) -> None:
    """The attributes a block (and every block inside it) sets; `turn` sets
    them all ("*"), `choose` its variable."""
    for st in stmts:
        t = type(st)
        if t is ast.Set:
            out.add(st.name)
        elif t is ast.Turn:
            out.add("*")  # a turn changes every attribute, to 0.1.3 (`serial` too)
        elif t is ast.Choose:
            out.add(st.var)
        elif t is ast.Branch:
            _names_set(st.then, out)
            _names_set(st.other, out)
        elif t in (ast.Loop, ast.Hold):  # a fork leg's sets are its own
            _names_set(st.body, out)
