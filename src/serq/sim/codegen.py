"""Session blocks -> Python source, compiled once per program.

Each block of the program becomes one generator function ``_b<k>(s)``
(the same protocol as the interpreter in session.py: it yields ``WAIT`` or
``AGAIN``).  Statements run without a dispatch on their kind; the nested
blocks of ``branch`` and ``loop`` are written inline (to a small depth);
simple expressions are written as Python expressions -- attribute slots,
constants (folded when an operation has only constants), arithmetic,
comparisons, ``now``, the math functions, draws from the session's
stream -- with exactly the float operations and the evaluation order of
the closures in exprs.py; anything else calls its compiled closure.

Before each statement the local ``op`` is set to the statement's compiled
tuple, so that run-time errors (``sim.error(s, op[-1], ...)``) and the
post-mortem (postmortem.py, which reads the frames' ``s`` and ``op``) name
the statement as the interpreter does.
"""
import functools
import math

from ..ir import nodes as ir
from . import dist, xdist
from .arith import CTX_FIELD, MATH1, MATH2, fdiv, fmt
from . import stages
from .stages import Fifo, Job
from .samples import FLUSH

#: Where the core is compiled (mypyc), a call into it costs less than the
#: attribute reads of the same steps written inline in the generated
#: (interpreted) source: a fifo stage's ``submit`` and an observation's
#: ``take`` are called; interpreted, they are written out.
NATIVE_CORE = not stages.__file__.endswith(".py")

#: Nested blocks deeper than this get their own function (Python limits
#: the nesting of statically nested blocks and of indentation).
INLINE_DEPTH = 6

#: Statements written as one call of the interpreter's (or simulator's)
#: code; a run written out neither as a plain run nor as a step stage's
#: (a shared stage, several stages held together) goes through ``run_op``.
_CALLS = {
    ir.Turn: "_sim.turn(s)",
    ir.Choose: "_interp.choose(s, op)",
    ir.Load: "_interp.run_load(s, op)",
    ir.Release: "_interp.run_release(s, op)",
    ir.Drop: "_interp.run_drop(s, op)",
    ir.Hold: "yield from _interp.run_hold(s, op)",
    ir.Grow: "yield from _interp.run_grow(s, op)",
}

_CMP = {"Lt": "<", "Le": "<=", "Gt": ">", "Ge": ">=", "Eq": "==", "Ne": "!="}
_ARITH = {"Add": "+", "Sub": "-", "Mul": "*"}


def _has_loop(prog):
    return any(type(st) is ir.Loop for block in prog.blocks for st in block)


def _pure(e):
    """Whether ``e`` is made of constants only (no state, no draw)."""
    t = type(e)
    if t is ir.Num:
        return True
    if t is ir.Binary:
        return _pure(e.left) and _pure(e.right)
    if t is ir.Unary:
        return _pure(e.operand)
    if t is ir.Cond:
        return _pure(e.test) and _pure(e.then) and _pure(e.other)
    if t is ir.Call and (e.fun in MATH1 or e.fun in MATH2):
        return all(a.expr is not None and _pure(a.expr) for a in e.args)
    return False


#: Pool queries written as source (as poolsim.pool_query reads them); the
#: pools are looked up when read, as there.
_POOL_READS = {
    "Used": "_sim.pools[%s].used",
    "Holders": "float(len(_sim.pools[%s].holders))",
    "Queued": "float(len(_sim.pools[%s].queue))",
}


@functools.lru_cache(maxsize=1024)
def _expression_code(src):
    """The code of an expression's source: the members of an array (the
    replicas) write the same source, compiled once; each ``exec`` of it
    makes a new function over its own globals."""
    return compile(src, "<serq expression>", "exec")


class ExprWriter(object):
    """Writes expressions as Python source over a context ``s`` (a session,
    or a stage's context object) whose attributes are ``a``."""

    def __init__(self, sim, compiler):
        self.sim = sim
        self.c = compiler
        self.env = {"_fmt": fmt, "_log": math.log, "_fdiv": fdiv, "_INF": math.inf,
                    "_NAN": math.nan, "_sim": sim}
        self.names = {}  # id(object) -> name in env

    def function(self, e):
        """Expression ``e`` as one Python function of its context: the
        closure ``Compiler.expr`` would build, without a call per node."""
        body = self.expr(e)
        src = "def _e(s):\n    a = s.a\n    return %s\n" % body
        exec(_expression_code(src), self.env)
        return self.env["_e"]

    # ------------------------------------------------------------ helpers

    def bind(self, obj, prefix):
        """A name in the generated module's globals for ``obj``."""
        key = id(obj)
        name = self.names.get(key)
        if name is None:
            name = "_%s%d" % (prefix, len(self.names))
            self.names[key] = name
            self.env[name] = obj
        return name

    def const(self, v):
        if v != v:
            return "_NAN"
        if v == math.inf:
            return "_INF"
        if v == -math.inf:
            return "(-_INF)"
        r = repr(float(v))
        return "(%s)" % r if r.startswith("-") else r

    # -------------------------------------------------------- expressions

    def member(self, r):
        """Python source of the member index reference ``r`` names (the
        index read, then checked as ``Compiler.member`` checks it)."""
        if r.index is None:
            return "%d" % r.base
        return "%s(%s)" % (self.bind(self.c.index_of(r), "pk"), self.expr(r.index))

    def expr(self, e):
        """Python source of expression ``e`` (context ``s``, attributes ``a``)."""
        t = type(e)
        if t is ir.Num:
            return self.const(e.value)
        if _pure(e):
            return self.const(self.c.expr(e)(None))
        if t is ir.Attr:
            return "a[%d]" % e.slot
        if t is ir.Ctx:
            if e.var == "Now":
                return "_sim.now"
            return "s.%s" % CTX_FIELD[e.var]  # (the closure's getattr)
        if t is ir.Binary:
            a, b = self.expr(e.left), self.expr(e.right)
            op = e.op
            if op in _ARITH:
                return "(%s %s %s)" % (a, _ARITH[op], b)
            if op in _CMP:
                return "(1.0 if %s %s %s else 0.0)" % (a, _CMP[op], b)
            if op == "Div":
                return "_fdiv(%s, %s)" % (a, b)
            if op == "And":
                return "(1.0 if %s != 0.0 and %s != 0.0 else 0.0)" % (a, b)
            if op == "Or":
                return "(1.0 if %s != 0.0 or %s != 0.0 else 0.0)" % (a, b)
        elif t is ir.Unary:
            f = self.expr(e.operand)
            if e.op == "Neg":
                return "(-%s)" % f
            return "(1.0 if %s == 0.0 else 0.0)" % f
        elif t is ir.Cond:
            return "(%s if %s != 0.0 else %s)" % (self.expr(e.then), self.expr(e.test),
                                                 self.expr(e.other))
        elif t is ir.Sample:
            law = e.dist.lower()
            args = [self.expr(x) for x in e.args]
            if law == "exp":
                # the mean read first, then -mean * log(1 - U): dist.exp, one
                # native call where the core is compiled, inlined where not
                if NATIVE_CORE:
                    return "%s(s.rng, %s)" % (self.bind(dist.exp, "law"), args[0])
                return "(-%s * _log(1.0 - s.rng.random_f64()))" % args[0]
            if law == "det":
                return args[0]
            return "%s(s.rng, %s)" % (self.bind(dist.LAWS[law], "law"), ", ".join(args))
        elif t is ir.ExtSample:
            # (the sampler from the closure's compiler: one table per draw)
            law = xdist.sampler(e.dist.lower(), e.values, e.counts)
            args = [self.expr(x) for x in e.args]
            return "%s(%s)" % (self.bind(law, "xlaw"), ", ".join(["s.rng"] + args))
        elif t is ir.Call and e.fun in MATH1:
            return "%s(%s)" % (self.bind(MATH1[e.fun], "m"), self.expr(e.args[0].expr))
        elif t is ir.Call and e.fun in MATH2:
            return "%s(%s, %s)" % (self.bind(MATH2[e.fun], "m"), self.expr(e.args[0].expr),
                                   self.expr(e.args[1].expr))
        elif t is ir.Call and len(e.args) == 1 and type(e.args[0]) is not ir.ArgExpr:
            # a query of a member (``holders(slots[r])``): the index read
            # first, then the query, as the closure does
            m = self.member(e.args[0].ref)
            inline = _POOL_READS.get(e.fun) if type(e.args[0]) is ir.ArgPool else None
            if inline is not None:
                # (poolsim.pool_query's reading, written out)
                return inline % m
            return "%s(%s, s)" % (self.bind(self.sim.query(e.fun), "q"), m)
        # anything else: its closure
        return "%s(s)" % self.bind(self.c.expr(e), "f")



class BlockWriter(ExprWriter):
    """Writes the source of every block of one program."""

    def __init__(self, interp, prog, compiler):
        ExprWriter.__init__(self, interp.sim, compiler)
        self.interp = interp
        self.prog = prog
        self.env.update({"_err": self.sim.error, "_interp": interp,
                         "_stages": self.sim.stages, "_EndSession": None, "_Job": Job})
        self.count_steps = _has_loop(prog) or sum(map(len, prog.blocks)) > 100000

    # --------------------------------------------------------- statements

    def block(self, b, depth, out, ind):
        """Lines of block ``b`` into ``out`` at indentation ``ind``."""
        code = self.interp.code[b]
        if not code:
            out.append(ind + "pass")
        for i, st in enumerate(self.prog.blocks[b]):
            self.statement(st, code[i], depth, out, ind)

    def sub(self, b, depth, out, ind):
        """A nested block: inline, or ``yield from`` its own function."""
        if depth < INLINE_DEPTH:
            self.block(b, depth + 1, out, ind)
        else:
            out.append(ind + "yield from _b%d(s)" % b)

    def statement(self, st, op, depth, out, ind):
        w = out.append
        w(ind + "op = %s" % self.bind(op, "op"))
        if self.count_steps:
            w(ind + "s.steps += 1")
            w(ind + "if s.steps > %d:" % self.interp.MAX_STEPS)
            w(ind + "    raise _err(s, op[-1], 'ran %d statements without blocking')"
              % self.interp.MAX_STEPS)
        t = type(st)
        if t is ir.Set:
            w(ind + "a[%d] = %s" % (st.slot, self.expr(st.value)))
        elif t is ir.Observe:
            self.observe(st, w, ind)
        elif t is ir.Run and st.mode == "Plain" and not st.also and st.stage.index is None \
                and self.sim.stages[st.stage.base].kind != "shared":
            stage = self.bind(self.sim.stages[st.stage.base], "st")
            self.work_check(st, w, ind)
            w(ind + "if w <= 0.0:")
            w(ind + "    yield 1")
            w(ind + "else:")
            st_obj = self.sim.stages[st.stage.base]
            if type(st_obj) is Fifo and not self.sim.pools and not NATIVE_CORE:
                # Fifo.submit inlined (no pool can withdraw the job)
                w(ind + "    now = _sim.now")
                w(ind + "    job = _Job(s, w, now)")
                w(ind + "    _sim.touched.add(%s)" % stage)
                w(ind + "    if %s.serving < %s.servers:" % (stage, stage))
                w(ind + "        %s._start(job, now)" % stage)
                w(ind + "    else:")
                w(ind + "        %s.waiting.append(job)" % stage)
            else:
                w(ind + "    %s.submit(s, w)" % stage)
            w(ind + "    yield 0")
        elif t is ir.Run and st.mode == "Plain" and not st.also and not any(
                x.kind == "shared" for x in
                self.sim.stages[st.stage.base:st.stage.base + st.stage.count]):
            # a member chosen at run time (``run_op``'s reading, written out):
            # the member first, then the work
            w(ind + "stage = _stages[%s]" % self.member(st.stage))
            self.work_check(st, w, ind)
            w(ind + "if w <= 0.0:")
            w(ind + "    yield 1")
            w(ind + "else:")
            w(ind + "    stage.submit(s, w)")
            w(ind + "    yield 0")
        elif t is ir.Run and st.mode != "Plain":
            self.step_run(st, w, ind)
        elif t is ir.Branch:
            w(ind + "g = %s" % self.expr(st.test))
            w(ind + "if g == 1.0:")
            self.sub(st.then, depth, out, ind + "    ")
            w(ind + "elif g == 0.0:")
            self.sub(st.other, depth, out, ind + "    ")
            w(ind + "else:")
            w(ind + "    raise _err(s, op[-1], 'the guard is %s, not 0 or 1; a draw is written "
              "`branch with (p)`' % _fmt(g))")
        elif t is ir.Loop:
            w(ind + "while True:")
            self.sub(st.body, depth, out, ind + "    ")
        elif t is ir.End:
            w(ind + "if s.leg_of is None and s.legs_live:")
            w(ind + "    raise _err(s, op[-1], 'the session ends while %d forked leg(s) run; "
              "write `join;` before the end' % s.legs_live)")
            w(ind + "raise _EndSession()")
        elif t is ir.Fork:
            w(ind + "_sim.fork(s, %d)" % st.body)
        elif t is ir.Join:
            w(ind + "if s.legs_live:")
            w(ind + "    s.joining = True")
            w(ind + "    yield 0")
        else:  # a call of the simulator's or interpreter's own code
            w(ind + _CALLS.get(t, "yield from _interp.run_op(s, op)"))

    def step_run(self, st, w, ind):
        """A step stage's prefill or decode (``Interpreter.run_op``'s
        reading, written out): the member first, then the work, then the
        hold the growth goes to."""
        w(ind + "stage = _stages[%s]" % self.member(st.stage))
        self.work_check(st, w, ind)
        w(ind + "if w <= 0.0:")
        w(ind + "    yield 1")
        w(ind + "else:")
        if st.growing is None:
            grow = "None"
        else:
            grow = "_interp.innermost(s, %s, op, 'growing')" % self.member(st.growing)
        w(ind + "    stage.submit_step(s, %s, w, %s)" % (st.mode == "Decode", grow))
        w(ind + "    yield 0")

    def work_check(self, st, w, ind):
        """``w``: the run's amount, checked as ``Interpreter.run_op`` checks it."""
        w(ind + "w = %s" % self.expr(st.work))
        w(ind + "if w != w or w < -1e-9:")
        w(ind + "    raise _err(s, op[-1], 'the amount is %s, not a number of units, "
          "tokens or seconds' % _fmt(w))")

    def observe(self, st, w, ind):
        o = self.sim.observations[st.obs]
        name = self.bind(o, "obs")
        w(ind + "v = %s" % self.expr(st.value))
        if o.running:
            w(ind + "%s.add(v, _sim.warm)" % name)
            return
        if NATIVE_CORE:
            w(ind + "%s.take(v, s, _sim)" % name)
            return
        # (Observation.take, written out)
        if o.keep_all:
            w(ind + "%s.p_all.append(v)" % name)
        w(ind + "if _sim.warm:")
        w(ind + "    %s.p_values.append(v)" % name)
        w(ind + "    %s.p_times.append(_sim.now)" % name)
        w(ind + "    %s.p_sessions.append(s.serial)" % name)
        w(ind + "    %s.p_turns.append(int(a[%d]))" % (name, self.prog.slots[2]))
        w(ind + "    if len(%s.p_values) >= %d:" % (name, FLUSH))
        w(ind + "        %s.flush()" % name)
        if o.keep_all:
            w(ind + "elif len(%s.p_all) >= %d:" % (name, FLUSH))
            w(ind + "    %s.flush()" % name)

    # ------------------------------------------------------------- module

    def function(self, b):
        out = ["def _b%d(s):" % b, "    a = s.a"]
        self.block(b, 0, out, "    ")
        out.append("    return")
        out.append("    yield")
        return out

    def build(self, end_session):
        """``{block: generator function}`` for every block."""
        self.env["_EndSession"] = end_session
        lines = []
        for b in range(len(self.prog.blocks)):
            lines.extend(self.function(b))
        src = "\n".join(lines) + "\n"
        self.source = src
        exec(compile(src, "<serq blocks>", "exec"), self.env)
        return [self.env["_b%d" % b] for b in range(len(self.prog.blocks))]
