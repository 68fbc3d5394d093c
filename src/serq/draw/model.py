"""The picture's content, read from a compiled program's IR.

``build(program)`` gives a ``Picture``: the resources (pool and stage
families, each one node however many members), the relations between them
(`spill` tiers, `admit via`, a step engine's `memory`), and the request path:
the session's statements that touch a resource or shape the path (hold, run,
grow, drop, release, a transfer's landing, choose, branch, loop, fork, join,
turn, end), nested as ``Seq``/``Split``/``Repeat``.  Statements that only set
attributes or observe are left out of the path; the observations are listed
in the picture's notes.
"""
import math
from dataclasses import dataclass, field
from typing import Dict, List, Tuple, Union

from ..ir import nodes as ir
from ..link.scope import AGGREGATES, CTX_NAMES, DISTRIBUTIONS, FUNCTIONS

WRAP = 40        # a label's line longer than this wraps onto the next lines
FOLD_LINES = 4   # and is cut (the whole text in the tooltip) past this many lines
LABEL_MAX = 60   # characters of a branch's test written above its diamond


@dataclass
class Resource:
    key: str            # "pool:3" / "stage:0" (first member's index)
    kind: str           # "pool" | "stage"
    name: str           # the family's name
    count: int          # members
    detail: List[str]   # lines under the name
    tip: str = ""       # the whole text of lines cut short (an SVG tooltip)


@dataclass
class Relation:
    src: str
    dst: str
    label: str          # "spill", "admit via", "memory", "via"


@dataclass
class Use:
    resource: str       # a Resource key
    how: str            # "hold" | "release" | "run" | "grow" | "transfer" | "query"


@dataclass
class Step:
    id: int
    kind: str           # start hold release run grow drop load choose turn end join done
    lines: List[str]
    uses: List[Use] = field(default_factory=list)
    tip: str = ""       # the whole text of lines cut short (an SVG tooltip)


@dataclass
class Seq:
    items: List["Node"]


@dataclass
class Split:
    """A branch (two lanes, `then` first) or a fork (the forked body, then
    the path that goes on)."""
    kind: str           # "branch" | "fork"
    label: str
    lanes: List[Seq]


@dataclass
class Repeat:
    label: str
    body: Seq


Node = Union[Step, Split, Repeat]


@dataclass
class Picture:
    title: str
    resources: List[Resource]
    relations: List[Relation]
    path: Seq
    notes: List[str]


# ------------------------------------------------------------ expressions

_CTX_TEXT = {v: k for k, v in CTX_NAMES.items()}
_FUN_TEXT = {v[0]: k for k, v in FUNCTIONS.items() if v[0]}
_AGG_TEXT = {v: k for k, v in AGGREGATES.items()}
_DIST_TEXT = {v[0]: k for k, v in DISTRIBUTIONS.items()}
_BIN = {"Or": ("||", 1), "And": ("&&", 2), "Eq": ("==", 3), "Ne": ("!=", 3),
        "Lt": ("<", 4), "Le": ("<=", 4), "Gt": (">", 4), "Ge": (">=", 4),
        "Add": ("+", 5), "Sub": ("-", 5), "Mul": ("*", 6), "Div": ("/", 6), "Pow": ("^", 8)}


def num_text(v: float) -> str:
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return "%.6g" % v


class Namer(object):
    """Expression and reference text for labels."""

    def __init__(self, prog: ir.Program):
        self.prog = prog

    def ref(self, ref: ir.Ref, pools: bool) -> str:
        items = self.prog.pools if pools else self.prog.stages
        name = items[ref.base].name if 0 <= ref.base < len(items) else "?"
        if ref.count > 1 and ref.index is not None:
            return "%s[%s]" % (name, self.expr(ref.index))
        return name

    def expr(self, e, prec: int = 0) -> str:
        t = type(e)
        if t is ir.Num:
            return num_text(e.value)
        if t is ir.Attr:
            a = self.prog.attrs
            return a[e.slot] if 0 <= e.slot < len(a) else "attr%d" % e.slot
        if t is ir.Ctx:
            return _CTX_TEXT.get(e.var, e.var.lower())
        if t is ir.Reg:
            r = self.prog.registers
            return r[e.register].name if 0 <= e.register < len(r) else "reg%d" % e.register
        if t is ir.Sample:
            return "~%s(%s)" % (_DIST_TEXT.get(e.dist, e.dist.lower()),
                                ", ".join(self.expr(a) for a in e.args))
        if t is ir.ExtSample:
            if e.dist == "Empirical":
                shown = [e.source or "…"] + ([e.column] if e.column is not None else [])
                return "~empirical(%s)" % ", ".join('"%s"' % x for x in shown)
            return "~%s(%s)" % (e.dist.lower(), ", ".join(self.expr(a) for a in e.args))
        if t is ir.Call:
            args = []
            for a in e.args:
                if type(a) is ir.ArgExpr:
                    args.append(self.expr(a.expr))
                else:
                    args.append(self.ref(a.ref, type(a) is ir.ArgPool))
            return "%s(%s)" % (_FUN_TEXT.get(e.fun, e.fun.lower()), ", ".join(args))
        if t is ir.Unary:
            s = ("-" if e.op == "Neg" else "!") + self.expr(e.operand, 7)
            return "(%s)" % s if prec > 7 else s
        if t is ir.Binary:
            op, p = _BIN.get(e.op, (e.op, 5))
            right = p + 1 if e.op != "Pow" else p
            s = "%s %s %s" % (self.expr(e.left, p if e.op != "Pow" else p + 1), op,
                              self.expr(e.right, right))
            return "(%s)" % s if prec > p else s
        if t is ir.Cond:
            s = "%s ? %s : %s" % (self.expr(e.test, 1), self.expr(e.then), self.expr(e.other))
            return "(%s)" % s if prec > 0 else s
        if t is ir.AggRef:
            o = self.prog.observes
            return "%s(%s)" % (_AGG_TEXT.get(e.kind, e.kind.lower()),
                               o[e.obs] if 0 <= e.obs < len(o) else "?")
        return "?"

    def short(self, e) -> str:
        return self.expr(e)


def shorten(s: str, n: int = 0) -> str:
    """``s`` whole, unless ``n`` (a branch's test above its diamond) and
    longer than it; labels are wrapped by ``fold``, not cut here."""
    return s if not n or len(s) <= n else s[:n - 1] + "…"


def _split_at(s: str, width: int) -> int:
    """Where to break ``s`` (at most ``width`` characters on the line): after
    the last ", " or before the last " " that fits, else at ``width``."""
    cut = s.rfind(", ", 0, width)
    if cut > width // 3:
        return cut + 2
    cut = s.rfind(" ", 0, width + 1)
    if cut > width // 3:
        return cut + 1
    return width


def fold(lines: List[str], width: int = WRAP, most: int = FOLD_LINES) -> Tuple[List[str], str]:
    """Each line longer than ``width`` wrapped onto the next lines (indented
    two spaces); one that needs more than ``most`` lines is cut with an
    ellipsis.  Returns the lines and the text of the cut lines in whole
    (empty when nothing was cut)."""
    out: List[str] = []
    cut: List[str] = []
    for line in lines:
        rest = line
        parts: List[str] = []
        while len(rest) > width and len(parts) < most:
            k = _split_at(rest, width)
            parts.append(rest[:k].rstrip())
            rest = "  " + rest[k:].lstrip()
        if len(rest) > 2 or not parts:
            parts.append(rest)
        if len(parts) > most:
            parts = parts[:most]
            parts[-1] = parts[-1][:width - 1] + "…"
            cut.append(line)
        out.extend(parts)
    return out, "\n".join(cut)


# -------------------------------------------------------------- resources

def _families(items) -> List[Tuple[int, int]]:
    """(first member, count) of each family, in declaration order."""
    out = []
    i = 0
    while i < len(items):
        j = i + 1
        if items[i].index is not None:
            while j < len(items) and items[j].name == items[i].name and items[j].index is not None:
                j += 1
        out.append((i, j - i))
        i = j
    return out


def _pool_detail(p: ir.Pool, nm: Namer, surface: Dict[str, str]) -> List[str]:
    d = ["cap %s" % num_text(p.cap)]
    if p.block is not None:
        d[0] += ", block %s" % num_text(p.block)
    if p.queue is not None:
        d.append("queue by " + shorten(", ".join(nm.expr(k) for k in p.queue)))
    if p.preempt is not None:
        if _is_lifo(p.preempt):
            d.append("preempt lifo")
        else:
            d.append("preempt by " + ", ".join(nm.expr(k) for k in p.preempt)
                     + (" requeue tail" if p.preempt_tail else ""))
    if p.evict is not None:
        d.append("evict by " + shorten(", ".join(nm.expr(k) for k in p.evict)))
    if p.reserve_held:
        d.append("reserve held")
    return d


def _is_lifo(keys) -> bool:
    """``preempt lifo`` (the parser's ``preempt by -admission``)."""
    if len(keys) != 1 or type(keys[0]) is not ir.Unary or keys[0].op != "Neg":
        return False
    e = keys[0].operand
    return type(e) is ir.Ctx and _CTX_TEXT.get(e.var) == "admission"


def _stage_detail(s: ir.Stage, nm: Namer, surface: Dict[str, str]) -> List[str]:
    k = s.kind
    if type(k) is ir.Fifo:
        return ["fifo, %d server%s" % (k.servers, "" if k.servers == 1 else "s")]
    if type(k) is ir.Ps:
        return ["ps, capacity " + nm.short(k.capacity)]
    if type(k) is ir.Delay:
        return ["delay"]
    # the budget and cost as the program writes them (a `def` use, not its
    # expansion), else from the IR
    written = "stage %s " % s.name
    d = ["step, budget " + surface.get(written + "budget", nm.expr(k.budget))]
    d.append("cost " + surface.get(written + "cost", nm.expr(k.cost)))
    if not (type(k.chunk) is ir.Num and k.chunk.value == 0):
        d.append("chunk " + nm.short(k.chunk))
    if k.serve == "ExclusivePrefill":
        d.append("serve exclusive prefill")
    if k.iteration is not None:
        d.append("iteration body (%d statement%s)" % (len(k.iteration),
                                                    "" if len(k.iteration) == 1 else "s"))
    return d


def _resources(prog: ir.Program, nm: Namer):
    res: List[Resource] = []
    pool_key: Dict[int, str] = {}
    stage_key: Dict[int, str] = {}
    for kind, decls, keys, detail in (("pool", prog.pools, pool_key, _pool_detail),
                                      ("stage", prog.stages, stage_key, _stage_detail)):
        for base, count in _families(decls):
            key = "%s:%d" % (kind, base)
            for i in range(base, base + count):
                keys[i] = key
            lines, tip = fold(detail(decls[base], nm, getattr(prog, "surface", None) or {}))
            res.append(Resource(key, kind, decls[base].name, count, lines, tip))
    rel: List[Relation] = []
    seen = set()

    def add(a, b, label):
        if a is not None and b is not None and (a, b, label) not in seen:
            seen.add((a, b, label))
            rel.append(Relation(a, b, label))

    for i, p in enumerate(prog.pools):
        if p.spill is not None:
            add(pool_key.get(i), pool_key.get(p.spill.to), "spill")
            add(pool_key.get(i), stage_key.get(p.spill.via), "spill via")
        if p.admit_via is not None:
            add(pool_key.get(i), stage_key.get(p.admit_via), "admit via")
    for i, s in enumerate(prog.stages):
        if type(s.kind) is ir.Step and s.kind.memory is not None:
            add(stage_key.get(i), pool_key.get(s.kind.memory), "memory")
    return res, rel, pool_key, stage_key


# ------------------------------------------------------------------- path

class _PathBuilder(object):
    def __init__(self, prog: ir.Program, nm: Namer, pool_key, stage_key):
        self.prog = prog
        self.nm = nm
        self.pool_key = pool_key
        self.stage_key = stage_key
        self.next_id = 0
        self.observed: List[str] = []

    def step(self, kind: str, lines: List[str], uses=()) -> Step:
        lines, tip = fold(lines)
        s = Step(self.next_id, kind, lines, list(uses), tip)
        self.next_id += 1
        return s

    def pool(self, ref: ir.Ref, how: str) -> Use:
        return Use(self.pool_key.get(ref.base, "pool:%d" % ref.base), how)

    def stage(self, ref: ir.Ref, how: str) -> Use:
        return Use(self.stage_key.get(ref.base, "stage:%d" % ref.base), how)

    def block(self, index: int, depth: int = 0) -> Seq:
        out: List[Node] = []
        if depth > 40 or not 0 <= index < len(self.prog.blocks):
            return Seq(out)
        nm = self.nm
        for s in self.prog.blocks[index]:
            t = type(s)
            if t is ir.Hold:
                parts = ["%s (%s)" % (nm.ref(hp.ref, True), shorten(nm.expr(hp.units)))
                         for hp in s.pools]
                lines = ["hold " + parts[0]] + ["     " + p for p in parts[1:]]
                if s.reuse is not None:
                    lines.append("reuse (%s)" % shorten(nm.expr(s.reuse)))
                out.append(self.step("hold", lines, [self.pool(hp.ref, "hold") for hp in s.pools]))
                out.extend(self.block(s.body, depth + 1).items)
                names = ", ".join(nm.ref(hp.ref, True) for hp in s.pools)
                lines = ["release " + shorten(names)]
                if s.cache is not None:
                    lines.append("cache (%s)" % shorten(nm.expr(s.cache)))
                if s.lease is not None:
                    lines.append("lease %s (%s)" % (nm.ref(s.lease[0], True),
                                                    shorten(nm.expr(s.lease[1]))))
                out.append(self.step("release", lines,
                                     [self.pool(hp.ref, "release") for hp in s.pools]))
            elif t is ir.Run:
                mode = "" if s.mode == "Plain" else " " + s.mode.lower()
                lines = ["run %s%s" % (nm.ref(s.stage, False), mode),
                         "(%s)" % shorten(nm.expr(s.work))]
                uses = [self.stage(s.stage, "run")] + [self.stage(a, "run") for a in s.also]
                if s.also:
                    lines.append("also " + ", ".join(nm.ref(a, False) for a in s.also))
                if s.growing is not None:
                    lines.append("growing " + nm.ref(s.growing, True))
                    uses.append(self.pool(s.growing, "grow"))
                out.append(self.step("run", lines, uses))
            elif t is ir.Grow:
                out.append(self.step("grow", ["grow %s (%s)" % (nm.ref(s.ref, True),
                                                                nm.short(s.amount))],
                                     [self.pool(s.ref, "grow")]))
            elif t is ir.Load:
                out.append(self.step("load", ["transfer into %s" % nm.ref(s.ref, True),
                                              "(%s)" % nm.short(s.amount)],
                                     [self.pool(s.ref, "transfer")]))
            elif t is ir.Drop:
                out.append(self.step("drop", ["drop " + nm.ref(s.ref, True)],
                                     [self.pool(s.ref, "release")]))
            elif t is ir.Release:
                out.append(self.step("release", ["release " + nm.ref(s.ref, True)],
                                     [self.pool(s.ref, "release")]))
            elif t is ir.Choose:
                var = self.prog.attrs[s.var] if 0 <= s.var < len(self.prog.attrs) else "?"
                out.append(self.step("choose", [
                    "choose %s in %s" % (var, nm.short(s.count)),
                    "by " + shorten(", ".join(nm.expr(k) for k in s.key))]))
            elif t is ir.Branch:
                a = self.block(s.then, depth + 1)
                b = self.block(s.other, depth + 1)
                if a.items or b.items:
                    out.append(Split("branch", shorten(nm.expr(s.test), LABEL_MAX), [a, b]))
            elif t is ir.Loop:
                out.append(Repeat("loop", self.block(s.body, depth + 1)))
            elif t is ir.Fork:
                out.append(Split("fork", "fork", [self.block(s.body, depth + 1), Seq([])]))
            elif t is ir.Join:
                out.append(self.step("join", ["join"]))
            elif t is ir.Turn:
                sets = [self.prog.attrs[i] for i in _set_slots(self.prog, self.prog.turn)]
                out.append(self.step("turn", ["turn"] + (
                    ["sets " + shorten(", ".join(sets))] if sets else [])))
            elif t is ir.End:
                out.append(self.step("end", ["end"]))
            elif t is ir.Observe:
                if 0 <= s.obs < len(self.prog.observes):
                    name = self.prog.observes[s.obs]
                    if name not in self.observed:
                        self.observed.append(name)
        return Seq(out)


def arrival_text(prog: ir.Program, nm: Namer) -> List[str]:
    a = prog.arrival
    if a.kind == "Poisson":
        first = "poisson, rate %s" % num_text(float(a.value))
    elif a.kind == "Renewal":
        first = "renewal, gap " + nm.short(a.value)
    elif a.kind == "Closed":
        first = "closed, %s sessions" % a.value
    elif a.kind == "Batch":
        first = "batch of %s at t = 0" % a.value
    elif a.kind == "Sessions":
        first = "trace, %d sessions" % len(a.value or [])
    else:
        first = "no arrivals" if prog.trace is None else "trace"
    if prog.trace is not None:
        first = "trace %s" % shorten(prog.trace)
    lines = ["workload", first]
    visible = [prog.attrs[i] for i in _set_slots(prog, prog.init)]
    if visible:
        lines.append("sets " + shorten(", ".join(visible)))
    return lines


def _set_slots(prog: ir.Program, block: int) -> List[int]:
    out: List[int] = []
    if 0 <= block < len(prog.blocks):
        for s in prog.blocks[block]:
            if type(s) is ir.Set and s.slot not in out and 0 <= s.slot < len(prog.attrs):
                out.append(s.slot)
    return out


def build(prog: ir.Program, title: str = "") -> Picture:
    nm = Namer(prog)
    resources, relations, pool_key, stage_key = _resources(prog, nm)
    pb = _PathBuilder(prog, nm, pool_key, stage_key)
    items: List[Node] = [pb.step("start", arrival_text(prog, nm))]
    # the init block (run once) and the turn block (run at each `turn`) only
    # set attributes: they are listed on the start and turn steps
    items.extend(pb.block(prog.session).items)
    items.append(pb.step("done", ["done"]))
    notes = []
    if pb.observed:
        notes.append("observes " + ", ".join(pb.observed))
    if prog.gauges:
        notes.append("gauges " + ", ".join(g.name for g in prog.gauges))
    run = "horizon %s" % num_text(prog.horizon)
    if prog.warmup:
        run += ", warm-up %s" % num_text(prog.warmup)
    run += ", seed %d" % prog.seed
    notes.append(run)
    return Picture(title, resources, relations, Seq(items), notes)


def steps(node) -> List[Step]:
    """Every step of a path, in order."""
    out: List[Step] = []
    todo = [node]
    while todo:
        x = todo.pop()
        if type(x) is Step:
            out.append(x)
        elif type(x) is Seq:
            todo.extend(reversed(x.items))
        elif type(x) is Split:
            todo.extend(reversed(x.lanes))
        elif type(x) is Repeat:
            todo.append(x.body)
    return out
