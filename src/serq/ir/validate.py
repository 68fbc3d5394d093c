"""Checks an IR program that did not come from the text front end (IR JSON,
``serq.build``) before it runs: what the simulator relies on.

The linker already guarantees all of this for text programs; an IR read from
JSON or made in Python has only the shapes ``ir.json`` checks.  ``validate``
raises ``IRError`` at the first problem, naming where it is as a JSON path
(``blocks[2][0].Run.stage``) and, for a compiled program's statement, the
source line.  What it checks:

* run settings: a finite positive horizon, ``0 <= warmup < horizon``,
  ``arrivals`` at least 1; the arrival process's constants (a positive
  finite Poisson rate, 1 to 1 000 000 closed or batch sessions, a constant
  renewal gap above 0);
* every index in range: blocks, attribute slots (and the nine built-in
  slots, the hidden ones), observations, registers, pools, stages, and each
  pool or stage reference's family (``base`` to ``base + count - 1``, one
  name, members numbered 0 to ``count - 1``);
* the blocks reachable from ``init``, ``turn`` and ``session`` form a tree
  (no block is the body of two statements, none contains itself), and
  ``init`` and ``turn`` only set and observe;
* calls and draws have their arity and argument kinds (a pool where a pool
  is read, a stage where a stage is); serq's extension draws (``ExtSample``)
  also their constant parameters and ``~empirical``'s table (ir/laws.py);
* ``prefill`` and ``decode`` runs, ``growing`` and ``budget_left`` only on
  step stages; ``grow``, ``load``, ``release`` and ``growing`` only inside
  a hold of the same reference (``release`` also after a hold that
  leases it); a hold names each pool once and leases one
  of its own; multi-stage runs (``also``) only on processor-sharing
  stages, with ``share`` set exactly when there is one;
* constant amounts (work, units, growth, load) are not negative or NaN;
* pools: a cap that is not negative or NaN, a positive block, ``spill``
  and ``admit via`` naming existing pools and stages; step stages: a
  ``memory`` pool that exists, no iteration body with exclusive prefill;
  registers and per-iteration claims on step stages;
* names: no two attributes, observations or gauges share a name.

It does not repeat the linker's moment rules (which context variable an
expression may read where); an IR that breaks one runs with the value the
simulator has at hand, as the reference's IR input does.
"""
import math
from typing import List, Optional

from . import laws
from . import nodes as ir
from .json import IRError

# IR function -> argument kinds: e an expression, p a pool, s a stage.
FUN_ARGS = {
    "Min": "ee", "Max": "ee", "Abs": "e", "Floor": "e", "Ceil": "e", "Sqrt": "e",
    "Exp": "e", "Ln": "e", "Pow": "ee", "Queue": "s", "Busy": "s", "Work": "s",
    "Used": "p", "Free": "p", "CachedIn": "p", "Holders": "p", "Queued": "p",
    "Price": "see", "BudgetLeft": "s", "EstLambda": "s", "EstRho": "s", "EstWait": "s",
}
DIST_ARITY = {"Exp": 1, "Det": 1, "Uniform": 2, "Erlang": 2, "H2": 2, "Bernoulli": 1}
KIND_NAMES = {"e": "an expression", "p": "a pool", "s": "a stage"}
HELP = "the IR is what `serq ir` prints (version 11); a program made in Python: docs/api.md"


class _Checker(object):
    loose = False  # checking a block no statement reaches (``check``)

    def __init__(self, p: ir.Program):
        self.p = p
        self.where = ""
        self.stmt_at = None  # (block, index) of the statement being checked

    def fail(self, what: str, where: Optional[str] = None) -> IRError:
        at = where if where is not None else self.where
        span = self.p.spans.get(self.stmt_at) if self.stmt_at is not None else None
        return IRError("IR: %s at %s" % (what, at or "the top level"), span, help=HELP,
                       source=self.p.source)

    # ------------------------------------------------------------ helpers

    def index(self, i, n: int, what: str) -> None:
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < n:
            raise self.fail("%s %r out of range (there %s %d)"
                            % (what, i, "is" if n == 1 else "are", n))

    def family(self, ref: ir.Ref, kind: str) -> None:
        items = self.p.pools if kind == "p" else self.p.stages
        what = "pool" if kind == "p" else "stage"
        if ref.count < 1 or ref.base < 0 or ref.base + ref.count > len(items):
            raise self.fail("%s reference %d..%d out of range (the program has %d %ss)"
                            % (what, ref.base, ref.base + ref.count, len(items), what))
        first = items[ref.base]
        for k in range(ref.count):
            m = items[ref.base + k]
            if m.name != first.name or (ref.count > 1 and m.index != k):
                raise self.fail("%s reference %d..%d is not one family (member %d is `%s`)"
                                % (what, ref.base, ref.base + ref.count, ref.base + k, m.name))
        if ref.base > 0 and items[ref.base - 1].name == first.name:
            raise self.fail("%s reference starts inside the family `%s`" % (what, first.name))
        if ref.index is not None:
            self.expr(ref.index)

    def is_step(self, ref: ir.Ref) -> bool:
        return all(type(self.p.stages[ref.base + k].kind) is ir.Step for k in range(ref.count))

    def nonneg_const(self, e: ir.Expr, what: str) -> None:
        if type(e) is ir.Num and (e.value != e.value or e.value < 0):
            raise self.fail("%s is %r; it must not be negative or NaN" % (what, e.value))

    # -------------------------------------------------------- expressions

    def expr(self, e: ir.Expr) -> None:
        t = type(e)
        if t is ir.Num:
            if not isinstance(e.value, (int, float)):
                raise self.fail("a number is %r" % (e.value,))
        elif t is ir.Attr:
            self.index(e.slot, len(self.p.attrs), "attribute slot")
        elif t is ir.Reg:
            self.index(e.register, len(self.p.registers), "register")
        elif t is ir.AggRef:
            self.index(e.obs, len(self.p.observes), "observation")
            if e.kind not in ir.AGGS:
                raise self.fail("unknown aggregate %r" % e.kind)
        elif t is ir.Ctx:
            if e.var not in ir.CTX_VARS:
                raise self.fail("unknown context variable %r" % e.var)
        elif t is ir.Sample:
            if e.dist not in DIST_ARITY:
                raise self.fail("unknown distribution %r" % e.dist)
            if len(e.args) != DIST_ARITY[e.dist]:
                raise self.fail("~%s takes %d argument(s), not %d"
                                % (e.dist, DIST_ARITY[e.dist], len(e.args)))
            for a in e.args:
                self.expr(a)
        elif t is ir.ExtSample:
            self.ext_sample(e)
        elif t is ir.Call:
            kinds = FUN_ARGS.get(e.fun)
            if kinds is None:
                raise self.fail("unknown function %r" % e.fun)
            if len(e.args) != len(kinds):
                raise self.fail("%s takes %d argument(s), not %d"
                                % (e.fun, len(kinds), len(e.args)))
            for k, a in zip(kinds, e.args):
                got = {ir.ArgExpr: "e", ir.ArgPool: "p", ir.ArgStage: "s"}.get(type(a))
                if got != k:
                    raise self.fail("%s reads %s where it was given %s"
                                    % (e.fun, KIND_NAMES[k], KIND_NAMES.get(got, repr(a))))
                if k == "e":
                    self.expr(a.expr)
                else:
                    self.family(a.ref, k)
            if e.fun == "BudgetLeft" and not self.is_step(e.args[0].ref):
                raise self.fail("BudgetLeft reads a step stage")
        elif t is ir.Unary:
            if e.op not in ir.UNOPS:
                raise self.fail("unknown operator %r" % e.op)
            self.expr(e.operand)
        elif t is ir.Binary:
            if e.op not in ir.BINOPS:
                raise self.fail("unknown operator %r" % e.op)
            self.expr(e.left)
            self.expr(e.right)
        elif t is ir.Cond:
            self.expr(e.test)
            self.expr(e.then)
            self.expr(e.other)
        else:
            raise self.fail("not an expression: %r" % (e,))

    def ext_sample(self, e: ir.ExtSample) -> None:
        """serq's extension draws: arity, constant parameters, the table."""
        if e.dist not in ir.EXT_DISTS:
            raise self.fail("unknown distribution %r" % e.dist)
        law = e.dist.lower()
        if len(e.args) != laws.ARITY[law]:
            raise self.fail("~%s takes %d argument(s), not %d"
                            % (law, laws.ARITY[law], len(e.args)))
        for i, a in enumerate(e.args):
            self.expr(a)
            if type(a) is ir.Num:
                why = laws.problem(law, i, a.value)
                if why is not None:
                    raise self.fail("`%s`: %s" % (laws.SIGNATURE[law], why))
        if law == "empirical":
            if e.values is None or e.counts is None:
                raise self.fail("~empirical without its table (`values` and `counts`)")
            why = laws.table_problem(e.values, e.counts)
            if why is not None:
                raise self.fail("~empirical: %s" % why)
        elif e.values is not None or e.counts is not None:
            raise self.fail("~%s has no table (`values`, `counts` are ~empirical's)" % law)

    # --------------------------------------------------------- statements

    def block(self, b: int, holds: List[ir.Hold], only_set: bool) -> None:
        self.index(b, len(self.p.blocks), "block")
        if self.loose and (b in self.visiting or b in self.seen):
            return
        if b in self.visiting or b in self.seen:
            raise self.fail("block %d is the body of two statements (the blocks form a tree)"
                            % b)
        self.visiting.add(b)
        for i, s in enumerate(self.p.blocks[b]):
            self.stmt_at = (b, i)
            self.where = "blocks[%d][%d]" % (b, i)
            if only_set and type(s) not in (ir.Set, ir.Observe):
                raise self.fail("`init` and `turn` blocks only set and observe; found %s"
                                % type(s).__name__)
            self.stmt(s, holds, only_set)
        self.visiting.discard(b)
        self.seen.add(b)

    def held(self, ref: ir.Ref, holds: List[ir.Hold], what: str, lease: bool = False) -> None:
        if lease and ref in self.leased or self.loose:
            return  # a lease outlives its hold: the release may come later
        for h in reversed(holds):
            if any(hp.ref == ref for hp in h.pools):
                return
        raise self.fail("%s outside a hold of pool `%s`"
                        % (what, self.p.pools[ref.base].name))

    def stmt(self, s: ir.Stmt, holds: List[ir.Hold], only_set: bool) -> None:
        t = type(s)
        if t in (ir.Turn, ir.End, ir.Join):
            return
        if t is ir.Set:
            self.index(s.slot, len(self.p.attrs), "attribute slot")
            self.expr(s.value)
        elif t is ir.Observe:
            self.index(s.obs, len(self.p.observes), "observation")
            self.expr(s.value)
        elif t is ir.Run:
            self.family(s.stage, "s")
            self.expr(s.work)
            self.nonneg_const(s.work, "a run's work")
            step = self.is_step(s.stage)
            if s.mode not in ir.MODES:
                raise self.fail("unknown run mode %r" % s.mode)
            if s.mode != "Plain" and not step:
                raise self.fail("a %s run on `%s`, which is not a step stage"
                                % (s.mode.lower(), self.p.stages[s.stage.base].name))
            if s.growing is not None:
                if not step:
                    raise self.fail("`growing` on a run of a stage that is not a step stage")
                self.family(s.growing, "p")
                self.held(s.growing, holds, "`growing`")
            if s.also:
                for ref in [s.stage] + list(s.also):
                    self.family(ref, "s")
                    for k in range(ref.count):
                        st = self.p.stages[ref.base + k]
                        if type(st.kind) is not ir.Ps:
                            raise self.fail("a multi-stage run on `%s`, which is not a ps stage"
                                            % st.name)
                if s.mode != "Plain" or s.growing is not None:
                    raise self.fail("a multi-stage run is plain, without `growing`")
                bases = [s.stage.base] + [r.base for r in s.also]
                if len(set(bases)) != len(bases):
                    raise self.fail("a multi-stage run names a stage twice")
        elif t is ir.Hold:
            if not s.pools:
                raise self.fail("a hold of no pool")
            refs = []
            for hp in s.pools:
                self.family(hp.ref, "p")
                if hp.ref in refs:
                    raise self.fail("a hold names pool `%s` twice"
                                    % self.p.pools[hp.ref.base].name)
                refs.append(hp.ref)
                self.expr(hp.units)
                self.nonneg_const(hp.units, "a hold's units")
                if hp.reserve is not None:
                    self.expr(hp.reserve)
            if s.reuse is not None:
                self.expr(s.reuse)
            if s.cache is not None:
                self.expr(s.cache)
            if s.lease is not None:
                self.family(s.lease[0], "p")
                if s.lease[0] not in refs:
                    raise self.fail("a hold leases a pool it does not hold")
                self.expr(s.lease[1])
            where, at = self.where, self.stmt_at
            self.block(s.body, holds + [s], only_set)
            self.where, self.stmt_at = where, at
        elif t in (ir.Grow, ir.Load):
            self.family(s.ref, "p")
            self.expr(s.amount)
            self.nonneg_const(s.amount, "a %s amount" % t.__name__.lower())
            self.held(s.ref, holds, "`%s`" % t.__name__.lower())
        elif t in (ir.Drop, ir.Release):
            self.family(s.ref, "p")
            if t is ir.Release:
                self.held(s.ref, holds, "`release`", lease=True)
        elif t is ir.Branch:
            self.expr(s.test)
            where, at = self.where, self.stmt_at
            self.block(s.then, holds, only_set)
            self.where, self.stmt_at = where, at
            self.block(s.other, holds, only_set)
        elif t in (ir.Loop, ir.Fork):
            self.block(s.body, holds, only_set)
        elif t is ir.Choose:
            self.index(s.var, len(self.p.attrs), "attribute slot")
            self.expr(s.count)
            for k in s.key:
                self.expr(k)
        else:
            raise self.fail("not a statement: %r" % (s,))

    # ------------------------------------------------------------ program

    def settings(self) -> None:
        p = self.p
        if p.version != 11:
            raise self.fail("IR version %r (this interpreter reads 11)" % p.version)
        if not (isinstance(p.horizon, (int, float)) and 0 < p.horizon < math.inf):
            raise self.fail("the horizon is %r; it is a finite positive number" % p.horizon,
                            "horizon")
        if not (0 <= p.warmup < p.horizon):
            raise self.fail("need 0 <= warmup < horizon (warmup %r, horizon %r)"
                            % (p.warmup, p.horizon), "warmup")
        if not isinstance(p.seed, int) or not 0 <= p.seed < 2 ** 64:
            raise self.fail("the seed is a whole number from 0 to 2^64 - 1", "seed")
        if p.arrivals is not None and (not isinstance(p.arrivals, int) or p.arrivals < 1):
            raise self.fail("arrivals is %r; it is at least 1" % (p.arrivals,), "arrivals")
        a = p.arrival
        self.where = "arrival"
        if a.kind == "Poisson":
            if not (isinstance(a.value, (int, float)) and 0 < a.value < math.inf):
                raise self.fail("a Poisson rate of %r; it is positive and finite" % (a.value,))
        elif a.kind in ("Closed", "Batch"):
            if not isinstance(a.value, int) or not 1 <= a.value <= 1000000:
                raise self.fail("%s %r sessions; between 1 and 1000000" % (a.kind, a.value))
        elif a.kind == "Renewal":
            self.expr(a.value)
            if type(a.value) is ir.Num and not a.value.value > 0:
                raise self.fail("a constant renewal gap of %r; it is above 0" % a.value.value)
        elif a.kind not in ("None", "Sessions"):
            raise self.fail("unknown arrival process %r" % a.kind)
        n = len(p.attrs)
        for key, slot in zip(("slot_cached", "slot_serial", "slot_turn", "slot_new",
                              "slot_out", "slot_think", "slot_more", "slot_forced",
                              "slot_computed"), p.slots):
            self.where = key
            self.index(slot, n, "attribute slot")
        for i, h in enumerate(p.hidden):
            self.where = "hidden[%d]" % i
            self.index(h, n, "attribute slot")
        for what, names in (("attribute", p.attrs), ("observation", p.observes),
                            ("gauge", [g.name for g in p.gauges])):
            seen = set()
            for i, name in enumerate(names):
                if name in seen:
                    raise self.fail("two %ss named `%s`" % (what, name), "%ss[%d]" % (
                        what[:4] if what != "observation" else "observe", i))
                seen.add(name)

    def pools_and_stages(self) -> None:
        p = self.p
        for i, pool in enumerate(p.pools):
            self.where = "pools[%d]" % i
            if pool.cap != pool.cap or pool.cap < 0:
                raise self.fail("cap %r; it is a number from 0 to inf" % pool.cap)
            if pool.block is not None and not (0 < pool.block < math.inf):
                raise self.fail("block %r; it is a positive number" % pool.block)
            for keys in (pool.evict, pool.preempt, pool.queue):
                for k in keys or ():
                    self.expr(k)
            if pool.spill is not None:
                self.index(pool.spill.to, len(p.pools), "spill pool")
                self.index(pool.spill.via, len(p.stages), "spill stage")
                self.expr(pool.spill.work)
                self.expr(pool.spill.when)
            if pool.admit_via is not None:
                self.index(pool.admit_via, len(p.stages), "admit-via stage")
        for i, st in enumerate(p.stages):
            self.where = "stages[%d]" % i
            k = st.kind
            if type(k) is ir.Fifo:
                if not isinstance(k.servers, int) or k.servers < 1:
                    raise self.fail("a fifo stage of %r servers; at least 1" % (k.servers,))
            elif type(k) is ir.Ps:
                self.expr(k.capacity)
            elif type(k) is ir.Step:
                for e in (k.budget, k.cost, k.chunk):
                    self.expr(e)
                if k.granule is not None:
                    self.expr(k.granule)
                if k.memory is not None:
                    self.index(k.memory, len(p.pools), "memory pool")
                if k.serve != "ExclusivePrefill":
                    for e in k.serve:
                        self.expr(e)
                elif k.iteration is not None:
                    raise self.fail("exclusive prefill with an iteration body")
                for s in k.iteration or ():
                    self.istmt(s)
            elif type(k) is not ir.Delay:
                raise self.fail("not a stage kind: %r" % (k,))
        for i, r in enumerate(p.registers):
            self.where = "registers[%d]" % i
            self.index(r.stage, len(p.stages), "register stage")
            if type(p.stages[r.stage].kind) is not ir.Step:
                raise self.fail("register `%s` on a stage that is not a step stage" % r.name)

    def istmt(self, s: ir.IStmt) -> None:
        t = type(s)
        if t is ir.IServe:
            if s.only is not None:
                self.expr(s.only)
            for e in s.by or ():
                self.expr(e)
        elif t is ir.IAdmit:
            for e in (s.only, s.gate):
                if e is not None:
                    self.expr(e)
        elif t is ir.IBranch:
            self.expr(s.test)
            for x in list(s.then) + list(s.other):
                self.istmt(x)
        elif t is ir.ISet:
            self.index(s.register, len(self.p.registers), "register")
            self.expr(s.value)
        else:
            raise self.fail("not an iteration statement: %r" % (s,))

    def check(self) -> None:
        p = self.p
        self.settings()
        self.pools_and_stages()
        self.visiting, self.seen = set(), set()
        self.leased = [s.lease[0] for b in p.blocks for s in b
                       if type(s) is ir.Hold and s.lease is not None]
        for key, b in (("init", p.init), ("turn", p.turn), ("session", p.session)):
            self.where, self.stmt_at = key, None
            self.block(b, [], key != "session")
        # A block no statement reaches is still compiled (and 0.1.3 checks
        # it too): its indices and references must hold; the tree and hold
        # rules are the reachable blocks' (nothing runs this one).
        self.loose = True
        for b in range(len(p.blocks)):
            if b not in self.seen:
                self.where, self.stmt_at = "blocks[%d]" % b, None
                self.block(b, [], False)
        self.loose = False
        self.stmt_at = None
        uses_also = any(type(s) is ir.Run and s.also for b in p.blocks for s in b)
        if uses_also != (p.share is not None):
            raise self.fail("`share` is set exactly when some run names several stages",
                            "share")
        for i, g in enumerate(p.gauges):
            self.where = "gauges[%d]" % i
            self.expr(g.expr)
        for i, c in enumerate(p.claims):
            self.where = "claims[%d]" % i
            self.expr(c.expr)
            if c.given is not None:
                self.expr(c.given)
            if c.kind != "AtEnd":
                self.index(c.stage, len(p.stages), "claim stage")
                if type(p.stages[c.stage].kind) is not ir.Step:
                    raise self.fail("claim `%s` checks iterations of a stage that is not a "
                                    "step stage" % c.name)


def validate(program: ir.Program) -> ir.Program:
    """Check ``program`` (see the module's docstring); returns it unchanged,
    or raises ``IRError``."""
    _Checker(program).check()
    return program


__all__ = ["validate", "IRError"]
