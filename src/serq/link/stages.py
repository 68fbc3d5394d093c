"""Stage declarations: a stage family's kind (``fifo`` servers, ``ps``
capacity, ``delay``, ``step``), a step stage's budget, chunk, cost,
granule, serve keys and KV ``memory``, its registers (``state``) and its
``iteration`` body.

The mixin below is part of ``Linker`` (program.py); it uses the linker's
scope, expression linker and family joins.
"""
import math
from typing import List, Optional

from ..errors import LinkError
from ..ir import nodes as ir
from ..syntax import ast
from . import consts
from .consts import fmt, fold_at
from .scope import SUPPLIED, Family, moment


class StagesMixin:
    """The stage declarations of ``Linker``."""

    def registers(self) -> List[ir.Register]:
        out = []
        for it in self.prog.items:
            if type(it) is ast.StageDecl and it.step is not None and it.step.registers:
                fam = self.scope.stages[it.name]
                if it.step.iteration is None:
                    self.scope.defer(LinkError("stage `%s`: a register of a stage without an `iteration` "
                                    "body, which nothing sets" % it.name, it.step.registers[0].span,
                                    help="add an `iteration { … }` body that sets it, or drop "
                                    "the register"))
                if fam.array:
                    self.scope.defer(LinkError("stage `%s`: registers are refused on stage arrays" % it.name,
                                    it.step.registers[0].span))
                for r in it.step.registers:
                    if r.name in self.scope.registers or r.name in self.scope.lets or \
                            r.name in SUPPLIED or r.name in self.scope.pools or \
                            r.name in self.scope.stages:
                        self.scope.defer(LinkError("register `%s`: the name is taken" % r.name, r.span))
                    v = fold_at(r.init, self.scope, "register `%s`" % r.name)
                    if math.isinf(v):
                        self.scope.defer(LinkError("register `%s` starts at %s; a register is finite"
                                        % (r.name, v), r.init.span))
                    self.scope.registers[r.name] = (len(out), fam.base)
                    out.append(ir.Register(r.name, fam.base, v))
        return out

    def stage(self, d: ast.StageDecl) -> List[ir.Stage]:
        fam = self.scope.stages[d.name]
        ctx = "stage `%s`: " % d.name
        out = []
        for i in range(fam.count):
            member = fam.base + i
            if d.kind == "fifo":
                n = 1.0 if d.servers is None else fold_at(d.servers, self.scope, ctx + "servers")
                if not (n >= 1 and float(n).is_integer() and not math.isinf(n)):
                    self.scope.defer(LinkError(ctx + "fifo servers must be a positive integer, found %s"
                                    % fmt(n), d.servers.span))
                    n = 1.0  # (the deferred error is reported; linking goes on)
                # 0.1.3 stores the count as a u64, saturating: fifo(1e308)
                # is 2^64 - 1 servers in its IR
                kind = ir.Fifo(min(int(n), 2 ** 64 - 1))
            elif d.kind == "ps":
                kind = ir.Ps(self.ex.expr(d.capacity, moment(
                    "Ps", "a ps stage's capacity", context=ctx, stage=member)))
                if i == 0:
                    self._positive(d.capacity, ctx + "`ps(%s)`: a negative capacity makes the "
                                   "work left grow, more than was ever given", strict=False,
                                   nan_msg=ctx + "`ps(NaN)`: a NaN capacity finishes no job: every "
                                   "job run on the stage waits for ever")
                    if self._const_is(d.capacity, 0.0):
                        self.scope.warn(ctx + "`ps(0)` serves nothing: every job run on it waits "
                                        "for ever (the stage reads as busy)", d.capacity.span,
                                        help="give the stage a capacity above 0")
            elif d.kind == "delay":
                kind = ir.Delay()
            else:
                kind = self.step(d, fam, member, ctx)
            out.append(ir.Stage(d.name, kind, i if fam.array else None))
        return out

    def step(self, d: ast.StageDecl, fam: Family, member: int, ctx: str) -> ir.Step:
        o = d.step
        bm = moment("Budget", "a step stage's budget", context=ctx, stage=member)
        budget = ir.Num(math.inf) if o.budget is None else self.ex.expr(o.budget, bm)
        chunk = ir.Num(0.0) if o.chunk is None else self.ex.expr(
            o.chunk, bm.replace(name="a step stage's chunk", nan_attrs=True))
        cost = self.ex.expr(o.cost, moment("Step", "a step stage's cost", context=ctx,
                                           stage=member))
        if member == fam.base:
            if o.budget is not None:
                self._positive(o.budget, ctx + "`budget %s`: an iteration with no token "
                               "budget schedules nothing", strict=True)
            self._positive(o.cost, ctx + "`cost %s`: an iteration costs time, above 0",
                           strict=True)
            if o.chunk is not None:
                try:
                    c = consts.fold(o.chunk, self.scope.lets)
                except (consts.NotConstant, LinkError):
                    c = None
                if c is not None and c < 0:
                    # 0.1.3 runs it as `chunk 0`
                    self.scope.warn(ctx + "`chunk %s` is negative, and so no limit, as `chunk 0` "
                                    "is" % fmt(c), o.chunk.span,
                                    help="write `chunk 0` for no limit, or a positive chunk")
                elif c is not None and c != c:
                    # 0.1.3 runs a NaN chunk as no limit
                    self.scope.warn(ctx + "`chunk NaN` is no limit, as `chunk 0` is", o.chunk.span,
                                    help="write `chunk 0` for no limit, or a positive chunk")
        granule = None
        if o.granule is not None:
            g = fold_at(o.granule, self.scope, ctx + "granule")
            if not g > 0:
                self.scope.defer(LinkError(ctx + "granule %s: a granule is above 0" % fmt(g),
                                o.granule.span))
            if o.serve == "exclusive":
                self.scope.defer(LinkError(ctx + "granule with serve exclusive prefill: a prefill the "
                                "granule refuses would still block every decode, and the "
                                "engine would stop", o.granule.span))
            if o.chunk is not None:
                try:
                    c = consts.fold(o.chunk, self.scope.lets)
                except consts.NotConstant:
                    c = None
                if c is not None and 0 < c < g:
                    self.scope.defer(LinkError(ctx + "granule %s with chunk %s: a prompt longer than the "
                                    "chunk would never get a token" % (fmt(g), fmt(c)),
                                    o.granule.span))
            granule = ir.Num(g)
        sm = moment("Serve", "a serve key", context=ctx, stage=member)
        if o.serve == "exclusive":
            serve = "ExclusivePrefill"
            if o.iteration is not None:
                self.scope.defer(LinkError(ctx + "an `iteration` body cannot go with `serve exclusive "
                                "prefill`", d.span))
        else:
            serve = [self.ex.expr(k, sm) for k in o.serve]
        memory = None
        if o.memory is not None:
            pref = self.ex.ref(o.memory, "p", moment("Const", "`memory`"), family_ok=True)
            if o.memory.index is not None:
                memory = pref.base + int(pref.index.value)
            else:
                pfam = self._family_of(self.scope.pools, pref.base)
                memory = self.join_one(fam, pfam, member, ctx + "`memory %s`" % o.memory.name,
                                       o.memory.span)
        iteration = None
        if o.iteration is not None:
            pm = moment("Plan", "an iteration body", context=ctx, stage=member)
            iteration = [self.istmt(s, pm, sm, member) for s in o.iteration]
            if not _serves(o.iteration):
                self.scope.defer(LinkError(ctx + "an `iteration` body with a path that neither serves nor "
                                "admits", d.span, help="end every path with `serve` or `admit`"))
        return ir.Step(budget, cost, chunk, granule, serve, memory, iteration)

    def _const_is(self, e: ast.Expr, value: float) -> bool:
        try:
            return consts.fold(e, self.scope.lets) == value
        except (consts.NotConstant, LinkError):
            return False

    def _positive(self, e: ast.Expr, msg: str, strict: bool, nan_msg: Optional[str] = None) -> None:
        """Refuse a constant that is not above 0 (or, with ``strict`` off, below
        0); ``nan_msg``, if given, says what is wrong with a NaN."""
        try:
            v = consts.fold(e, self.scope.lets)
        except (consts.NotConstant, LinkError):
            return
        if v != v and nan_msg is not None:
            self.scope.defer(LinkError(nan_msg, e.span))
        elif v != v or v < 0 or (strict and v == 0):
            self.scope.defer(LinkError(msg % fmt(v), e.span))

    def istmt(self, s, pm, sm, member):
        t = type(s)
        om = moment("Only", "an `only` predicate", context=pm.context, stage=member)
        if t is ast.IServe:
            return ir.IServe(None if s.only is None else self.ex.expr(s.only, om),
                             None if s.by is None else [self.ex.expr(k, sm) for k in s.by])
        if t is ast.IAdmit:
            return ir.IAdmit(None if s.only is None else self.ex.expr(s.only, om),
                             None if s.gate is None else self.ex.expr(s.gate, pm))
        if t is ast.IBranch:
            return ir.IBranch(self.ex.expr(s.test, pm),
                              [self.istmt(x, pm, sm, member) for x in s.then],
                              [self.istmt(x, pm, sm, member) for x in s.other])
        reg = self.scope.registers.get(s.register)
        if reg is None or reg[1] != member:
            raise LinkError(pm.context + "`set %s` in its iteration: not one of its registers; a "
                            "body sets a register, not a session attribute" % s.register, s.span,
                            help="declare it with `state %s = 0;` in the stage" % s.register)
        return ir.ISet(reg[0], self.ex.expr(s.value, pm))


def _serves(body) -> bool:
    """True when every path through an iteration body serves or admits."""
    for s in body:
        t = type(s)
        if t in (ast.IServe, ast.IAdmit):
            return True
        if t is ast.IBranch and _serves(s.then) and _serves(s.other):
            return True
    return False
