"""The linker's front door: a parsed program (kernel AST) -> the IR.

``Linker.link`` works in this order: constants and overrides, the pool and
stage families and the stages' registers, session attributes and
observations, the pool and stage declarations, the workload and the session
blocks, the pools' keys, gauges and claims, then the run settings.  An
error is raised where it is found, or deferred: after the run settings the
first deferred one is raised, by phase (``Scope.phase``: the workload's and
the session blocks', then the pools', the stages', the gauges' and claims').

The pool declarations are linked by ``PoolsMixin`` (pools.py) and the stage
declarations by ``StagesMixin`` (stages.py), both part of ``Linker``; the
expressions by ``ExprLinker`` (exprs.py) and the session blocks by
``BlockLinker`` (stmts.py).
"""
import math
from typing import Dict, List, Optional

from ..errors import LinkError, Span
from ..ir import nodes as ir
from ..syntax import ast
from . import consts
from .consts import fmt, fold_at
from .exprs import ExprLinker
from .pools import PoolsMixin
from .scope import SUPPLIED, Family, Scope, moment
from .stages import StagesMixin
from .stmts import BlockLinker, Where, reads_state

MAX_COUNT = 1000000


class Overrides:
    """What a caller replaces: ``sets`` (let name -> number or expression
    text), ``seed``, ``horizon``, ``warmup``, ``arrivals``, ``trace``."""

    def __init__(self, sets=None, seed=None, horizon=None, warmup=None, arrivals=None,
                 trace=None):
        self.sets = dict(sets or {})
        self.seed = seed
        self.horizon = horizon
        self.warmup = warmup
        self.arrivals = arrivals
        self.trace = trace


def _end_of(prog: ast.Program) -> Span:
    """Just past the last line of the program with text (1:1 when empty)."""
    lines = (prog.source or "").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return Span(prog.file, 1, 1)
    return Span(prog.file, len(lines), len(lines[-1]) + 1)


class Linker(PoolsMixin, StagesMixin):
    """One program's link: its constants, run settings, families, session
    attributes, workload and whole-program checks; the pool and stage
    declarations live in the mixins."""

    def __init__(self, prog: ast.Program, ov: Overrides, parse_expr=None):
        self.prog = prog
        self.ov = ov
        self.parse_expr = parse_expr
        self.scope = Scope()
        self.ex = ExprLinker(self.scope)

    # ------------------------------------------------------------- constants

    def lets(self) -> None:
        declared = [it.name for it in self.prog.items if type(it) is ast.Let]
        for name in self.ov.sets:
            if name not in declared:
                # named as the command line gives it, as its parse errors are
                raise LinkError("`--set %s`: unknown constant `%s` in an override" % (name, name),
                                help="the program's constants are: %s"
                                % (", ".join(dict.fromkeys(declared)) or "(none)"))
        for it in self.prog.items:
            if type(it) is not ast.Let:
                continue
            expr = it.value
            if it.name in self.ov.sets:
                expr = self._override_expr(it.name, self.ov.sets[it.name], it.span)
            # a number given for it is placed at the `let`: say where it came from
            v = fold_at(expr, self.scope, "`let %s`" % it.name + (
                " (set by `--set %s`)" % it.name
                if it.name in self.ov.sets and type(expr) is ast.Num else ""))
            self.scope.lets[it.name] = v

    def _override_expr(self, name, value, span) -> ast.Expr:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            v = float(value)
            if v != v:
                raise LinkError("the override of `%s` is NaN" % name,
                                help="a constant is a number or `inf`")
            return ast.Num(v, span)
        if not isinstance(value, str):
            raise LinkError("the override of `%s` is %r, not a number or an expression"
                            % (name, value))
        if _is_number(value):
            return ast.Num(float(value.replace("_", "")), span)
        return self.parse_expr(value, "--set %s" % name)

    # --------------------------------------------------------------- settings

    def _horizon_help(self, warmup: float, horizon: float) -> Optional[str]:
        """How to mend a warm-up not below the horizon, when an override
        (``--horizon``, ``--warmup``) made it so."""
        if math.isinf(horizon) or warmup < 0:
            return None
        if self.ov.horizon is not None and self.ov.warmup is None:
            return ("the horizon %s (`--horizon`) is not past the program's warm-up %s: add "
                    "`--warmup T` with T below %s, such as `--warmup %s`"
                    % (fmt(horizon), fmt(warmup), fmt(horizon), fmt(horizon / 10)))
        if self.ov.warmup is not None:
            return ("the warm-up %s (`--warmup`) is not below the horizon %s: lower "
                    "`--warmup` or raise `--horizon`" % (fmt(warmup), fmt(horizon)))
        return None

    def run_settings(self) -> dict:
        s = {}
        for it in self.prog.items:
            if type(it) is ast.RunSetting:
                s[it.key] = (fold_at(it.value, self.scope, "run: `%s`" % it.key), it.value)
        out = {}
        if self.ov.horizon is not None:
            out["horizon"] = float(self.ov.horizon)
        elif "horizon" in s:
            out["horizon"] = s["horizon"][0]
        else:
            # placed at the run block's first setting, or where one would go
            at = next((it.span for it in self.prog.items if type(it) is ast.RunSetting), None)
            raise LinkError("no horizon (run { horizon T; })", at or _end_of(self.prog),
                            help="add `run { horizon T; }` or pass `--horizon T`")
        out["warmup"] = float(self.ov.warmup) if self.ov.warmup is not None else \
            s.get("warmup", (0.0,))[0]
        if not (0 <= out["warmup"] < out["horizon"]) or math.isinf(out["horizon"]):
            # at the program's setting that is out of place (none: both overridden)
            at = None
            if self.ov.warmup is None and "warmup" in s and not math.isinf(out["horizon"]):
                at = s["warmup"][1].span
            elif self.ov.horizon is None:
                at = s["horizon"][1].span
            raise LinkError("run: need 0 <= warmup < horizon, with a finite horizon "
                            "(warmup %s, horizon %s)" % (fmt(out["warmup"]), fmt(out["horizon"])),
                            at, help=self._horizon_help(out["warmup"], out["horizon"]))
        if self.ov.seed is not None:
            out["seed"] = int(self.ov.seed)
        elif "seed" in s:
            v, node = s["seed"]
            if not (float(v).is_integer() and 0 <= v <= 2 ** 53):
                raise LinkError("the seed is %s: a count is a whole number from 0 to "
                                "9007199254740992" % fmt(v), node.span)
            out["seed"] = int(v)
        else:
            out["seed"] = 1
        arrivals = self.ov.arrivals
        if arrivals is None and "arrivals" in s:
            v, node = s["arrivals"]
            if not (float(v).is_integer() and 1 <= v <= 2 ** 53):
                raise LinkError("run: arrivals is %s: a count is a whole number from 1"
                                % fmt(v), node.span)
            arrivals = int(v)
        out["arrivals"] = arrivals
        # where `arrivals` is written, for an error about it (None: overridden)
        self.arrivals_at = s["arrivals"][1].span if self.ov.arrivals is None and \
            "arrivals" in s else None
        return out

    # ------------------------------------------------ pool and stage families

    def families(self) -> None:
        npool = nstage = 0
        for it in self.prog.items:
            t = type(it)
            if t is ast.PoolDecl or t is ast.StageDecl:
                table = self.scope.pools if t is ast.PoolDecl else self.scope.stages
                word = "pool" if t is ast.PoolDecl else "stage"
                # Pools and stages are two namespaces (a queue `S` may own a pool
                # `S` next to its stage `S`, as the reference allows).
                if it.name in table:
                    first = table[it.name].span
                    raise LinkError("duplicate %s `%s`" % (word, it.name), it.span,
                                    notes=["first declared at %d:%d" % (first.line, first.col)],
                                    help="rename or remove one of the declarations")
                if it.name in self.scope.lets:
                    raise LinkError("`%s` is both a `let` constant and a %s" % (it.name, word),
                                    it.span, help="give one of them another name")
                count = it.size if it.size is not None else 1
                if t is ast.PoolDecl:
                    table[it.name] = Family(it.name, npool, count, it.size is not None, it.span, it)
                    npool += count
                else:
                    table[it.name] = Family(it.name, nstage, count, it.size is not None, it.span,
                                            it)
                    nstage += count
                    self.scope.stage_kinds.extend([it.kind] * count)

    def join(self, fam_a: Family, fam_b: Family, what: str, span) -> List[int]:
        """Member-for-member or one-for-all: for each member of ``fam_a`` the
        member of ``fam_b`` it names."""
        return [self.join_one(fam_a, fam_b, m, what, span)
                for m in range(fam_a.base, fam_a.base + fam_a.count)]

    def join_one(self, fam_a: Family, fam_b: Family, member: int, what: str, span) -> int:
        """``join(fam_a, fam_b, what, span)[member - fam_a.base]``, without the
        list (a step family's members each join their memory: 256 lists of
        256 for 256 replicas)."""
        if fam_b.count == fam_a.count:
            return fam_b.base + (member - fam_a.base)
        if fam_b.count == 1:
            return fam_b.base
        raise LinkError("%s: a family of %d names a family of %d; families join one for one, or "
                        "one for all" % (what, fam_a.count, fam_b.count), span)

    def _family_of(self, table, base: int) -> Family:
        for fam in table.values():
            if fam.base == base:
                return fam
        raise AssertionError(base)

    # ------------------------------------------------------------- attributes

    def attributes(self) -> None:
        for name in ir.BUILTIN_ATTRS:
            self.scope.attr(name)
        wl = self.prog.workload
        blocks = []
        if wl is not None:
            blocks += [wl.init, wl.turn]
        blocks.append(self.prog.session)
        for b in blocks:
            self._collect(b)
        for name in self.scope.attrs[len(ir.BUILTIN_ATTRS):]:
            if name in SUPPLIED:
                raise LinkError("`%s` is a name the language supplies, read in every expression; "
                                "a session attribute named `%s` would be read there instead"
                                % (name, name),
                                help="give the session attribute a name of its own")
            if name in self.scope.lets:
                raise LinkError("`%s` is both a `let` constant and a session attribute" % name,
                                help="rename one of them")
            if name in self.scope.pools or name in self.scope.stages:
                raise LinkError("`%s` is both a %s and a session attribute" % (
                    name, "pool" if name in self.scope.pools else "stage"),
                    help="rename one of them")
            if name in self.scope.registers:
                raise LinkError("`%s` is both a register and a session attribute" % name,
                                help="rename one of them")

    def _collect(self, stmts) -> None:
        for s in ast.walk(stmts):
            t = type(s)
            if t is ast.Set:
                self.scope.attr(s.name)
            elif t is ast.Choose:
                self.scope.attr(s.var)
            elif t is ast.Observe:
                self.scope.observe(s.name)

    # ---------------------------------------------------------------- workload

    def arrival(self) -> ir.Arrival:
        wl = self.prog.workload
        if wl is None or wl.arrive is None or wl.arrive.kind == "none":
            return ir.Arrival("None")
        a = wl.arrive
        if a.kind == "poisson":
            v = fold_at(a.arg, self.scope, "`arrive poisson`")
            if not (v > 0 and not math.isinf(v)):
                raise LinkError("the rate is %s; a rate must be positive and finite" % fmt(v),
                                a.arg.span)
            return ir.Arrival("Poisson", v)
        if a.kind == "renewal":
            e = self.ex.expr(a.arg, moment("Renewal", "a renewal arrival's gap"))
            arg = a.arg
            det = type(arg) is ast.Draw and arg.dist == "det" and len(arg.args) == 1
            if det:
                arg = arg.args[0]
            try:
                v = consts.fold(arg, self.scope.lets)
            except (consts.NotConstant, LinkError):
                v = None
            # a constant gap must be positive and finite, and is folded in
            # the IR as 0.1.3 folds it (`renewal(0.5 * 2)` is `Num 1`); a
            # `~det(x)` keeps its draw
            if v is not None and not (v > 0 and (det or not math.isinf(v))):
                self.scope.defer(LinkError("`arrive renewal(%s)`: an interarrival time must be positive"
                                % fmt(v), a.arg.span))
            elif v is not None and not det:
                e = ir.Num(v)
            return ir.Arrival("Renewal", e)
        v = fold_at(a.arg, self.scope, "`arrive %s`" % a.kind)
        if not (float(v).is_integer() and 1 <= v <= MAX_COUNT):
            raise LinkError("the %s population is %s: a count is a whole number from 1 to %d"
                            % ("closed" if a.kind == "closed" else "batch", fmt(v), MAX_COUNT),
                            a.arg.span)
        return ir.Arrival("Closed" if a.kind == "closed" else "Batch", int(v))

    # ---------------------------------------------------------------- the whole

    def link(self) -> ir.Program:
        sc = self.scope
        self.lets()
        self.families()
        sc.phase = 2
        registers = self.registers()
        self.attributes()
        pools: List[ir.Pool] = []
        caps: List[tuple] = []
        stages: List[ir.Stage] = []
        decls = []
        sc.phase = 1
        for it in self.prog.items:
            if type(it) is ast.PoolDecl:
                decls.append((it, self.pool(it, caps)))
                pools.extend(decls[-1][1])
        sc.phase = 2
        for it in self.prog.items:
            if type(it) is ast.StageDecl:
                stages.extend(self.stage(it))
        sc.phase = 0
        self.hidden()
        arrival = self.arrival()
        blocks: List[List[ir.Stmt]] = []
        bl = BlockLinker(self.ex, blocks, caps)
        wl = self.prog.workload
        for stmts in ((wl.init, wl.turn) if wl else ([], [])):
            bl.block(stmts, Where())  # the parser allows only `set` and `observe` here
        self._lint_stale_sets()
        self._fresh_bindings()
        bl.block(self.prog.session, Where())
        bl.finish()
        if bl.forks and not bl.joins:
            sc.defer(LinkError("the program forks but never joins", bl.forks[0].span,
                               help="write `join;` where the session waits for its legs"))
        if bl.joins and not bl.forks:
            sc.defer(LinkError("the program joins but never forks", bl.joins[0].span,
                               help="remove the `join`, or `fork { … }` before it"))
        share = self.share(bl, stages)
        sc.phase = 1
        for d, ps in decls:
            self.pool_exprs(d, ps)
        sc.phase = 3
        gauges = self.gauges()
        claims = self.claims()
        # Names have resolved; the run settings come next, then validation.
        settings = self.run_settings()
        if settings["arrivals"] is not None and arrival.kind not in ("Poisson", "Renewal"):
            raise LinkError("run: arrivals applies only to poisson or renewal workloads",
                            self.arrivals_at)
        err = sc.first_deferred()
        if err is not None:
            raise err
        trace = self.ov.trace if self.ov.trace is not None else (wl.trace if wl else None)
        hidden = sorted(sc.attr_slots[n] for n in sc.hidden)
        program = ir.Program(
            attrs=list(sc.attrs), observes=list(sc.observes), pools=pools,
            stages=stages, arrival=arrival, blocks=blocks, horizon=settings["horizon"],
            warmup=settings["warmup"], seed=settings["seed"], arrivals=settings["arrivals"],
            trace=trace, trace_ordered=bool(wl and wl.trace_ordered), hidden=hidden,
            share=share, gauges=gauges, claims=claims, registers=registers)
        program.spans = bl.spans
        program.source = self.prog.source
        self.prog.warnings.extend(sc.warnings)
        return program

    def hidden(self) -> None:
        wl = self.prog.workload
        if wl is None:
            return
        for name, span in wl.hidden:
            if name in ("cached", "computed"):
                self.scope.defer(LinkError("`%s` cannot be hidden: the scheduler sets it" % name, span))
            if name not in self.scope.attr_slots:
                self.scope.defer(LinkError("hidden `%s`: no `set` or `choose` makes it a session attribute"
                                % name, span))
            self.scope.hidden[name] = span

    def _fresh_bindings(self) -> None:
        """An `at admission` name the body does not read must be fresh: not a
        built-in attribute and not an attribute some statement other than a
        binding sets (the reference lets the binding shadow it in the header;
        serq refuses). Several holds binding the same name is no clash: a
        binding the body reads is an attribute `set` at the top of the body,
        the same attribute in every hold that binds it (the parser has
        checked those bindings)."""
        wl = self.prog.workload
        blocks = ([wl.init, wl.turn] if wl else []) + [self.prog.session]
        sets, holds = ast.sets_and_holds(blocks)
        for h in holds:
            read = {n for n, _, _ in getattr(h, "read_bindings", None) or []}
            for name in getattr(h, "bound_names", None) or []:
                if name not in read and (name in ir.BUILTIN_ATTRS or name in sets):
                    # 0.1.3 substitutes the binding in the hold's header, so
                    # there it shadows the attribute
                    self.scope.warn(
                        "`at admission (%s = …)`: `%s` is also a session attribute; in this "
                        "hold's header `%s` is the binding, not the attribute" % (name, name, name),
                        h.pools[0].ref.span, help="rename the binding")

    def _lint_stale_sets(self) -> None:
        stale: Dict[str, tuple] = {}

        def scan(stmts):
            for s in stmts:
                t = type(s)
                if t is ast.Set:
                    r = reads_state(s.value)
                    if r:
                        stale[s.name] = (r, s)
                    else:
                        stale.pop(s.name, None)
                elif t is ast.Hold:
                    for hp in s.pools:
                        for e in (hp.units, hp.reserve, s.reuse):
                            for n in _names(e):
                                if n in stale:
                                    r, st = stale[n]
                                    self.scope.defer(LinkError(
                                        "`%s` reads %s when the session reaches the `set`, and a "
                                        "hold's header reads `%s` at every admission attempt, "
                                        "when that value is stale" % (n, r, n), st.span,
                                        help="bind it where it is read: `at admission (%s = …)`"
                                        % n))
                    scan(s.body)
                elif t is ast.Branch:
                    scan(s.then)
                    scan(s.other)
                elif t in (ast.Loop, ast.Fork):
                    scan(s.body)
        scan(self.prog.session)

    def share(self, bl: BlockLinker, stages: List[ir.Stage]) -> Optional[str]:
        shared = set()
        for s, r in bl.shared_runs:
            if r.also:
                for n, ref in zip(s.stages, [r.stage] + r.also):
                    for k in range(ref.base, ref.base + ref.count):
                        kind = stages[k].kind
                        if type(kind) is not ir.Ps or type(kind.capacity) is not ir.Num or \
                                not kind.capacity.value > 0:
                            self.scope.defer(LinkError("stage `%s` is held with another stage by one run, "
                                            "so its capacity is shared: it must be `ps(φ)` with a "
                                            "constant φ above 0" % n.name, n.span))
                        shared.add(k)
        for s, r in bl.shared_runs:
            if r.stage.base in shared and (r.mode != "Plain" or r.growing is not None):
                self.scope.defer(LinkError("a run on a shared stage is plain: no modes, no `growing`", s.span))
        decls = [it for it in self.prog.items if type(it) is ast.ShareDecl]
        if len(decls) > 1:
            self.scope.defer(LinkError("`share` twice: a program shares its stages one way", decls[1].span))
        if shared and not decls:
            self.scope.defer(LinkError("a run over several stages needs the program's `share` policy",
                            help="add `share maxmin;` or `share bottleneck;`"))
        if decls and not shared:
            self.scope.defer(LinkError("`share` without a run over several stages", decls[0].span,
                            help="remove the `share` line"))
        if not decls:
            return None
        return "MaxMin" if decls[0].policy == "maxmin" else "Bottleneck"

    def gauges(self) -> List[ir.Gauge]:
        out = []
        seen = set()
        for it in self.prog.items:
            if type(it) is not ast.GaugeDecl:
                continue
            if it.name in seen:
                raise LinkError("gauge `%s`: declared twice" % it.name, it.span)
            if it.name in self.scope.obs_index:
                raise LinkError("gauge `%s`: an `observe` has the same name; one name would be "
                                "two statistics" % it.name, it.span)
            seen.add(it.name)
            m = moment("Gauge", "a gauge", context="gauge `%s`: " % it.name)
            out.append(ir.Gauge(it.name, self.ex.expr(it.expr, m)))
            try:
                v = consts.fold(it.expr, self.scope.lets)
            except (consts.NotConstant, LinkError):
                v = 0.0
            if v != v:
                self.scope.defer(LinkError("gauge `%s` is NaN at every instant" % it.name,
                                           it.expr.span, help="a gauge is a number"))
        return out

    def claims(self) -> List[ir.Claim]:
        out = []
        seen = set()
        for it in self.prog.items:
            if type(it) is not ast.ClaimDecl:
                continue
            ctx = "claim `%s`: " % it.name
            if it.name in seen:
                raise LinkError(ctx + "declared twice", it.span)
            seen.add(it.name)
            given = None
            if it.given is not None:
                given = self.ex.expr(it.given, moment("Given", "a claim's `given`", context=ctx))
            if it.kind == "at_end":
                e = self.ex.expr(it.expr, moment("End", "a claim `at end`", context=ctx))
                out.append(ir.Claim(it.name, "AtEnd", e, None, given))
                continue
            ref = self.ex.ref(it.stage, "s", moment("Const", "a claim's stage", context=ctx))
            member = ref.base + (int(ref.index.value) if ref.index is not None else 0)
            if self.scope.stage_kinds[member] != "step":
                self.scope.defer(LinkError(ctx + "stage `%s` is not a `step` stage" % it.stage.name,
                                it.stage.span))
            e = self.ex.expr(it.expr, moment("Iteration", "an iteration claim", context=ctx,
                                              stage=member))
            out.append(ir.Claim(it.name, "EveryIteration" if it.kind == "every"
                                else "SomeIteration", e, member, given))
        return out


def _names(e) -> List[str]:
    if e is None:
        return []
    t = type(e)
    if t is ast.Name:
        return [e.name] + _names(e.index)
    out = []
    for child in ("left", "right", "operand", "test", "then", "other", "body", "count"):
        c = getattr(e, child, None)
        if c is not None and not isinstance(c, list):
            out += _names(c)
    for a in getattr(e, "args", []) or []:
        out += _names(a)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text.replace("_", ""))
        return text.strip() == text and text != ""
    except ValueError:
        return False


def link(prog: ast.Program, overrides: Optional[Overrides] = None, parse_expr=None) -> ir.Program:
    """Link a parsed program into IR.  Raises ``LinkError`` (with the program's
    source attached for the caret excerpt)."""
    try:
        consts.reset_terms()
        return Linker(prog, overrides or Overrides(), parse_expr).link()
    except LinkError as e:
        if e.span is not None and e.span.file.startswith("--set ") and overrides is not None:
            # the excerpt is the override's text, not the program's line
            value = (overrides.sets or {}).get(e.span.file[len("--set "):])
            if isinstance(value, str):
                e.with_source(value)
        e.with_source(prog.source)
        if e.span is not None and e.span.file == prog.file:
            e.source = prog.source
        raise
