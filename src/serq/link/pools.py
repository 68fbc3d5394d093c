"""Pool declarations: a pool family's constants (``cap``, ``block``, ``first
fit``, ``watermark``) and the stage that admits its queue (``admit via``),
then its keys and spill (``evict``, ``preempt``, ``queue``, ``spill``),
which ``Linker.link`` links after the session blocks.

The mixin below is part of ``Linker`` (program.py); it uses the linker's
scope, expression linker and family joins.
"""
import math
from typing import List

from ..errors import LinkError
from ..ir import nodes as ir
from ..syntax import ast
from .consts import fmt, fold_at
from .scope import moment


class PoolsMixin:
    """The pool declarations of ``Linker``."""

    def pool(self, d: ast.PoolDecl, caps: List[tuple]) -> List[ir.Pool]:
        fam = self.scope.pools[d.name]
        ctx = "pool `%s`: " % d.name
        cap = math.inf if d.cap is None else fold_at(d.cap, self.scope, "pool `%s`: cap" % d.name)
        if cap < 0:
            self.scope.defer(LinkError(ctx + "the cap is %s; a capacity is not negative" % fmt(cap),
                            d.cap.span, help="write a cap of 0 or more units (or leave it out "
                            "for an unbounded pool)"))
        block = None
        if d.block is not None:
            block = fold_at(d.block, self.scope, "pool `%s`: block" % d.name)
            if not block > 0:
                self.scope.defer(LinkError(ctx + "block must be positive", d.block.span))
            elif math.isinf(block):
                # 0.1.3 accepts it, and rounds every demand to NaN blocks
                self.scope.defer(LinkError(ctx + "`block inf`: a block is a finite number of "
                                           "units, as no demand fills a whole infinite block",
                                           d.block.span,
                                           help="give the block's size in units, or drop `block`"))
        self.scope.blocks[d.name] = block
        admit = [None] * fam.count
        if d.admit_via is not None:
            sref = self.ex.ref(d.admit_via, "s", moment("Const", "`admit via`"), family_ok=True)
            sfam = self._family_of(self.scope.stages, sref.base)
            if d.admit_via.index is not None:
                admit = [sref.base + int(sref.index.value)] * fam.count
            else:
                admit = self.join(fam, sfam, ctx + "`admit via %s`" % d.admit_via.name,
                                  d.admit_via.span)
            for a in set(admit):
                if self.scope.stage_kinds[a] != "step":
                    self.scope.defer(LinkError(ctx + "`admit via %s`: `%s` is a %s stage; only a step stage "
                                    "admits a pool's queue" % (d.admit_via.name, d.admit_via.name,
                                                               self.scope.stage_kinds[a]),
                                    d.admit_via.span,
                                    help="admit via a `step` stage, or drop `admit via` to admit "
                                    "at every settle"))
            for i, a in enumerate(admit):
                self.scope.admitted_by.setdefault(a, []).append(fam.base + i)
        self.scope.admit_stage[d.name] = admit[0] if d.admit_via is not None else None
        first_fit = None if d.first_fit is None else self.first_fit(d)
        watermark = 0.0 if d.watermark is None else self.watermark(d, cap)
        out = []
        for i in range(fam.count):
            caps.append((cap, block, watermark))
            p = ir.Pool(d.name, i if fam.array else None, cap, block)
            p.reserve_held = d.reserve_held
            p.admit_via = admit[i]
            p.first_fit = first_fit
            p.watermark = watermark
            out.append(p)
        return out

    def first_fit(self, d: ast.PoolDecl) -> ir.FirstFit:
        """``first fit [within (N)] [until waited (T)]``: constants."""
        ff = d.first_fit
        ctx = "pool `%s`: first fit " % d.name
        within = None
        if ff.within is not None:
            n = fold_at(ff.within, self.scope, ctx + "within")
            if math.isinf(n) and n > 0:
                within = None
            elif not (n >= 1 and float(n).is_integer()):
                self.scope.defer(LinkError(ctx + "within (%s): it counts the waiting holds tried "
                                           "past the selected one, a whole number of 1 or more"
                                           % fmt(n), ff.within.span,
                                           help="write `within (8)`, or leave `within` out to "
                                           "try every waiting hold"))
            else:
                within = int(n)
        age = math.inf
        if ff.age is not None:
            age = fold_at(ff.age, self.scope, ctx + "until waited")
            if age < 0:
                self.scope.defer(LinkError(ctx + "until waited (%s): an age is not negative"
                                           % fmt(age), ff.age.span,
                                           help="the selected hold blocks the queue again once "
                                           "it has waited this many seconds; write 0 or more"))
        return ir.FirstFit(within, age)

    def watermark(self, d: ast.PoolDecl, cap: float) -> float:
        w = fold_at(d.watermark, self.scope, "pool `%s`: watermark" % d.name)
        if w < 0 or math.isinf(w):
            self.scope.defer(LinkError("pool `%s`: the watermark is %s; it is a number of units "
                                       "of 0 or more" % (d.name, fmt(w)), d.watermark.span,
                                       help="an admission leaves this many units free: write a "
                                       "number below the cap"))
            return 0.0  # (refused: the holds are checked as if it were not there)
        elif w >= cap and w > 0:
            self.scope.defer(LinkError("pool `%s`: the watermark %s is not below the cap %s, so "
                                       "no hold would ever be admitted" % (d.name, fmt(w), fmt(cap)),
                                       d.watermark.span,
                                       help="write a watermark below the cap"))
            return 0.0
        return w

    def pool_exprs(self, d: ast.PoolDecl, pools: List[ir.Pool]) -> None:
        ctx = "pool `%s`: " % d.name
        stage = self.scope.admit_stage.get(d.name)
        ev = moment("Evict", "an eviction key", context=ctx)
        for p in pools:
            if d.evict is not None:
                p.evict = [self.ex.expr(k, ev) for k in d.evict]
            if d.preempt is not None:
                vm = moment("Victim", "a preempt key", context=ctx)
                p.preempt = [self.ex.expr(k, vm) for k in d.preempt]
                p.preempt_tail = d.preempt_tail
            if d.queue is not None:
                sm = moment("Select", "a queue key", context=ctx, stage=stage)
                p.queue = [self.ex.expr(k, sm) for k in d.queue]
            if d.spill is not None:
                sp = d.spill
                for name, table, word in ((sp.to, self.scope.pools, "pool"),
                                          (sp.via, self.scope.stages, "stage")):
                    f = table.get(name.name)
                    if name.index is None and f is not None and f.array and f.count > 1:
                        # 0.1.3 takes the first member, as serq does
                        self.scope.warn(ctx + "`spill %s via %s`: `%s` is an array of %d %ss, and "
                                        "the spill uses its first member, `%s[0]`, alone"
                                        % (sp.to.name, sp.via.name, name.name, f.count, word,
                                           name.name), name.span,
                                        help="spill through a %s declared alone (a spill cannot "
                                        "name a member `%s[i]`)" % (word, name.name))
                to = self.ex.ref(sp.to, "p", moment("Const", "a spill tier"), family_ok=True)
                via = self.ex.ref(sp.via, "s", moment("Const", "a spill link"), family_ok=True)
                em = moment("Evict", "a spill clause", context=ctx)
                if to.base == self.scope.pools[d.name].base and to.count == \
                        self.scope.pools[d.name].count:
                    self.scope.defer(LinkError(ctx + "`spill %s`: a pool spills into another tier, "
                                               "not into itself" % sp.to.name, sp.to.span))
                if self.scope.stage_kinds[via.base] == "step":
                    self.scope.defer(LinkError(ctx + "`spill … via %s`: `%s` is a step stage, which "
                                               "runs prefill and decode tokens, not a spill's write"
                                               % (sp.via.name, sp.via.name), sp.via.span,
                                               help="name a fifo, ps or delay stage for the write"))
                p.spill = ir.Spill(to.base + (int(to.index.value) if to.index else 0),
                                   via.base + (int(via.index.value) if via.index else 0),
                                   self.ex.expr(sp.work, em), self.ex.expr(sp.when, em))
