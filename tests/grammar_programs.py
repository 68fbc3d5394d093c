"""Programs drawn from serQ's grammar, valid and nearly valid, for fuzzing.

``program(c)`` writes one program across the language: `let`s and `def`s
(expression and statement definitions), pools with every option (`cap`,
`block`, `evict`, `preempt`, `queue`, `admit via`, `spill`, `reserve
held`, arrays), fifo, ps, delay and step stages (budget, cost, chunk,
granule, every `serve` form, `memory`, registers and `iteration` bodies),
paths through queue stations (a gateway routing to prefill and decode
queues joined by a `pull` or `push` relation, or to a link), a workload
(every arrival form, a trace, `init`, `turn`, `hidden`, a top-level session
or a client session against a `server`), statements of every kind (holds
with `reserve`, `reuse`, `at admission`, `cache`, `lease`; `grow`, `load`,
`release`, `drop`, runs in every mode, `branch`, `loop`, `choose`,
`fork`/`join`, `turn`, `end`), gauges, claims and the `run` block.

``c`` makes every choice: ``c.pick(xs)``, ``c.integer(lo, hi)`` and
``c.chance(p)``.  ``RandomChoices(seed)`` drives it from ``random.Random``
(the fuzz script); ``hypothesis_programs()`` is the same grammar as a
hypothesis strategy (its draws shrink toward the first option, fewer
items and no mutation).  A *nearly valid* program is a valid one with
edge values (0, negative, ``inf``, huge) in some places, wrong names, or
one to three token edits (delete, duplicate, swap, replace): what a user
gets wrong.

Every program is small and bounded: horizons are short and the caller
caps the events (``--max-events``).
"""
import random
import re

TOKEN = re.compile(r"\s+|[A-Za-z_][A-Za-z0-9_.]*|\d[\d_.eE]*|\"[^\"\n]*\"|//[^\n]*|.", re.S)


class RandomChoices(object):
    def __init__(self, seed):
        self.r = random.Random(seed)

    def pick(self, xs):
        return xs[self.r.randrange(len(xs))]

    def integer(self, lo, hi):
        return self.r.randint(lo, hi)

    def chance(self, p):
        return self.r.random() < p


class HypothesisChoices(object):
    """Choices from a hypothesis ``draw``; each shrinks toward its first
    option, the lower bound and ``False``."""

    def __init__(self, draw):
        from hypothesis import strategies as st
        self.draw = draw
        self.st = st

    def pick(self, xs):
        return xs[self.draw(self.st.integers(0, len(xs) - 1))]

    def integer(self, lo, hi):
        return self.draw(self.st.integers(lo, hi))

    def chance(self, p):
        return self.draw(self.st.integers(0, 999)) >= 1000 - int(p * 1000)


def hypothesis_programs(trace=None):
    from hypothesis import strategies as st

    @st.composite
    def programs(draw):
        return program(HypothesisChoices(draw), trace)
    return programs()


def program(c, trace=None) -> str:
    """One program; ``trace`` is a trace file the workload may replay."""
    g = Gen(c, trace)
    text = g.write()
    if g.nearly and c.chance(0.6):
        text = mutate(c, text)
    return text


def mutate(c, text):
    toks = TOKEN.findall(text)
    for _ in range(c.integer(1, 3)):
        if not toks:
            break
        i = c.integer(0, len(toks) - 1)
        op = c.pick(["delete", "replace", "duplicate", "swap", "number"])
        if op == "delete":
            del toks[i]
        elif op == "duplicate":
            toks.insert(i, toks[i])
        elif op == "swap":
            j = c.integer(0, len(toks) - 1)
            toks[i], toks[j] = toks[j], toks[i]
        elif op == "number":
            toks.insert(i, c.pick(["0", "-1", "inf", "1e308", "0.5", "-0", "1e-320"]))
        else:
            toks[i] = c.pick(["{", "}", "(", ")", ";", ",", "[", "]", "~", "?", ":", "=",
                              "hold", "run", "loop", "fork", "join", "end", "turn",
                              "request", "set", "grow", "release", "serve", "admit", "cap",
                              "nope", "kv", "prefill", "decode", "inf", "0", "2"])
    return "".join(toks)


NUMS = ["1", "2", "0.5", "3", "0.25", "4"]
EDGE = ["0", "-1", "inf", "1e308", "0.000001", "-0.5", "(0/0)", "1e9"]


class Gen(object):
    def __init__(self, c, trace=None):
        self.c = c
        self.trace = trace
        self.nearly = c.chance(0.35)
        self.lets = []
        self.defs = []       # expression defs of one parameter
        self.sdefs = []      # statement defs (stage, work)
        self.pools = []      # (name, size)
        self.stages = []     # (name, kind, size)
        self.attrs = ["serial", "turn_no", "new", "out"]
        self.observes = 0
        self.has_fork = False
        self.has_join = False
        self.shared = []
        self.link = None     # the session of a link path
        self.out = []

    # ----------------------------------------------------------- helpers
    def pick(self, xs):
        return self.c.pick(xs)

    def chance(self, p):
        return self.c.chance(p)

    def num(self):
        if self.nearly and self.chance(0.08):
            return self.pick(EDGE)
        if self.lets and self.chance(0.15):
            return self.pick(self.lets)
        return self.pick(NUMS)

    def name(self, xs):
        """A name of ``xs``, or (nearly valid) one the program lacks."""
        if self.nearly and self.chance(0.03):
            return self.pick(["nope", "kv9", "s9", "serial2"])
        return self.pick(xs)

    def ref(self, name, size):
        if size == 1:
            return name
        if self.chance(0.7):
            return "%s[%s]" % (name, self.pick(["0", "1"]))
        return "%s[%s]" % (name, self.pick(["floor(~uniform(0, 2))", "turn_no", "min(1, serial)"]))

    def expr(self, depth=0):
        r = self.c.integer(0, 11)
        if depth > 1 or r < 3:
            return self.num()
        if r < 5:
            return self.pick(self.attrs)
        if r < 6:
            return "~%s" % self.pick(["exp(%s)" % self.num(), "det(%s)" % self.num(),
                                      "uniform(0, %s)" % self.num(),
                                      "erlang(2, %s)" % self.num(),
                                      "h2(1, %s)" % self.num(),
                                      "bernoulli(0.5)"])
        if r < 7 and self.defs:
            return "%s(%s)" % (self.pick(self.defs), self.expr(depth + 1))
        if r < 8 and self.stages:
            n, k, size = self.pick(self.stages)
            return "%s(%s)" % (self.pick(["queue", "busy", "est_wait"]), self.ref(n, size))
        if r < 9 and self.pools:
            n, size = self.pick(self.pools)
            return "%s(%s)" % (self.pick(["used", "free", "holders", "queued"]),
                               self.ref(n, size))
        op = self.pick([" + ", " * ", " - ", " / ", " > ", " == ", " && "])
        e = "(%s%s%s)" % (self.expr(depth + 1), op, self.expr(depth + 1))
        if self.chance(0.3):
            e = "max(0, %s)" % e
        if self.chance(0.15):
            e = "(%s) ? %s : %s" % (e, self.expr(depth + 1), self.expr(depth + 1))
        return e

    def work(self):
        r = self.c.integer(0, 5)
        if r == 0:
            return self.num()
        if r == 1:
            return "~exp(%s)" % self.num()
        if r == 2:
            return "~det(%s)" % self.num()
        if r == 3 and self.defs:
            return "%s(%s)" % (self.pick(self.defs), self.num())
        if r == 4:
            return "%s / 4 + 0.25" % self.pick(self.attrs)
        return self.expr()

    def prob(self):
        if self.nearly and self.chance(0.2):
            return self.pick(EDGE)
        return self.pick(["0.5", "0.1", "0.9", "1", "0"])

    def guard(self):
        a = self.pick(self.attrs)
        return self.pick(["%s > %s" % (a, self.num()), "%s == 0" % a, "now < 5",
                          "serial %s 2" % self.pick(["<", ">=", "=="]),
                          "%s > 1 || turn_no < 3" % a])

    # ------------------------------------------------------------- items
    def write(self):
        c = self.c
        for i in range(c.integer(0, 2)):
            self.lets.append("L%d" % i)
            self.out.append("let L%d = %s;" % (i, self.pick(NUMS)))
        if self.chance(0.4):
            self.out.append("def svc(x) = %s;" % self.pick(
                ["x * 0.5 + ~exp(0.5)", "max(0.1, x)", "x", "~erlang(2, x + 0.5)", "x / 2"]))
            self.defs.append("svc")
        path = self.chance(0.15)
        if path:
            self.path()
        else:
            self.decl_stages()
            self.decl_pools()
        if self.chance(0.3) and not path:
            st = [n for n, k, size in self.stages if k in ("fifo", "delay", "ps") and size == 1]
            if st:
                self.out.append("def visit(s, w) { run s (w); observe visit_t = w; }")
                self.sdefs.append("visit")
        self.workload(path)
        self.gauges_claims()
        self.run_block()
        return "\n".join(self.out) + "\n"

    def decl_stages(self):
        c = self.c
        for i in range(c.integer(1, 3)):
            name = "s%d" % i
            size = 2 if self.chance(0.15) else 1
            arr = "[2]" if size == 2 else ""
            kind = self.pick(["fifo", "ps", "delay", "step", "fifo", "step"])
            if kind == "fifo":
                self.out.append("stage %s%s : fifo%s;" % (name, arr, self.pick(
                    ["", "(2)", "(3)", "(%s)" % (self.num() if self.nearly else "1")])))
            elif kind == "ps":
                self.out.append("stage %s%s : ps(%s);" % (name, arr, self.pick(
                    ["1", "2", self.num(), "min(2, present)"])))
            elif kind == "delay":
                self.out.append("stage %s%s : delay;" % (name, arr))
            else:
                self.out.append("stage %s%s : step { %s };" % (name, arr,
                                                               " ".join(self.step(size))))
            self.stages.append((name, kind, size))
        ps = [n for n, k, size in self.stages if k == "ps" and size == 1]
        if len(ps) >= 2 and self.chance(0.4):
            self.shared = ps[:2]
            self.out.append("share %s;" % self.pick(["maxmin", "bottleneck"]))

    def step(self, size):
        opts = ["budget %s;" % self.pick(["8", "16", "4", "inf", "32 - decoders", self.num()])]
        opts.append("cost %s;" % self.pick(
            ["0.5", "0.1 + tokens / 16", "0.2 + 0.01 * prefilled + 0.03 * residents",
             "0.1 + 0.001 * attention + 0.01 * decoders", "0.2 + (kv_decode + kv_prefill) / 200",
             "0.2 + ~exp(0.05)", self.num()]))
        if self.chance(0.3):
            opts.append("chunk %s;" % self.pick(["4", "8", "max(2, 8 - decoders)", self.num()]))
        r = self.c.integer(0, 7)
        if r == 5 and size > 1:
            r = 0
        if r == 0:
            opts.append("serve admission;")
        elif r == 1:
            opts.append("serve by (%s);" % self.pick(["remaining", "decoding ? 0 : 1, remaining",
                                                      "-admission"]))
        elif r == 2:
            opts.append("serve decode first;")
        elif r == 3:
            opts.append("serve exclusive prefill;")
        elif r == 4:
            opts.append("serve only (%s)%s;" % (self.pick(["decoding || residents <= 2", "1"]),
                                                self.pick(["", " admission", " decode first"])))
        elif r == 5:
            opts.append("state mode = 0;")
            opts.append("iteration { branch (mode == 0) { serve; } else { serve only "
                        "(decoding); } admit while (!preempted); set mode = 1 - mode; }")
        if r != 3 and self.chance(0.2) and not any(o.startswith("chunk") for o in opts):
            opts.append("granule %s;" % self.pick(["2", "4", "inf"]))
        if self.chance(0.5):
            opts.append("memory kv;")
        return opts

    def decl_pools(self):
        c = self.c
        need_kv = any("memory kv" in line for line in self.out)
        n = c.integer(1 if need_kv else 0, 2)
        steps = [nm for nm, k, size in self.stages if k == "step" and size == 1]
        for i in range(n):
            name = "kv" if i == 0 else "p%d" % i
            size = 2 if (self.chance(0.15) and not need_kv) else 1
            opts = []
            if self.chance(0.85):
                opts.append("cap %s;" % self.pick(["16", "32", "64", "8", "inf",
                                                   self.num() if self.nearly else "24"]))
            if self.chance(0.3):
                opts.append("block %s;" % self.pick(["2", "4", self.num()]))
            if self.chance(0.3):
                opts.append(self.pick(["evict lru;", "evict by (size);", "evict by (-age, serial);"]))
            if self.chance(0.5):
                opts.append(self.pick(["preempt none;", "preempt lifo;",
                                       "preempt by (-admission);",
                                       "preempt by (decoding, -position) requeue tail;"]))
            if self.chance(0.2):
                opts.append(self.pick(["queue fifo;", "queue by (serial);",
                                       "queue by (-waited, serial);"]))
            if self.chance(0.15):
                opts.append("reserve held;")
            if steps and size == 1 and self.chance(0.25):
                opts.append("admit via %s;" % self.name(steps))
            if i == 1 and self.chance(0.2) and self.stages:
                opts.append("spill kv via %s (%s) when (%s);" % (
                    self.stages[0][0] + ("[0]" if self.stages[0][2] == 2 else ""),
                    self.pick(["0.1", "size / 10"]), self.pick(["1", "size > 2"])))
            self.out.append("pool %s%s { %s }" % (name, "[2]" if size == 2 else "",
                                                  " ".join(opts)))
            self.pools.append((name, size))

    def path(self):
        """Queue stations: a gateway routes to a prefill queue and a decode
        queue joined by a relation, or a prefill and a decode engine are
        joined by a link queue (with a latency, or a `transfer` entry)."""
        c = self.c
        if self.chance(0.4):
            return self.link_path()
        cap = self.pick(["64", "128", "32"])
        self.out.append("""queue P[2] : prefill {
  pool kv { cap %s; block 4; }
  serve step { budget %s; cost 0.1 + 0.01 * tokens; memory kv; };
  nic ps(%s);
  prefill (prompt) {
    hold kv (prompt) {
      run P prefill (prompt) growing kv;
      mark first_token;
    } lease kv (%s);
  }
}""" % (cap, self.pick(["16", "32", "8"]), self.pick(["10", "25", "1"]),
            self.pick(["inf", "5", self.num()])))
        self.out.append("""queue D[2] : decode {
  pool kv { cap %s; block 4; %s }
  serve step { budget 16; cost 0.1 + 0.01 * tokens + 0.001 * kv_decode; memory kv; };
  nic ps(%s);
  decode (prompt) {
    hold kv (prompt) {
      run D prefill (prompt) growing kv;
      mark first_token;
      run D decode (answer) growing kv;
    }
  }
  decode (prompt) from P {
    hold kv (prompt) {
      transfer (prompt / 100) from P to kv (prompt);
      run D decode (answer) growing kv;
    }
  }
}""" % (cap, self.pick(["preempt lifo;", "", "preempt none;"]), self.pick(["10", "25", "1"])))
        rel = self.pick(["D pull P", "P push D"])
        lat = self.pick(["", " latency 0.002", " latency %s" % self.num()])
        self.out.append("%s%s share %s;" % (rel, lat, self.pick(["maxmin", "bottleneck"])))
        self.out.append("""queue gw : gateway {
  route {
    branch (prompt < %s) {
      choose j in 2 by (-free(D[j].kv), j);
      D[j].decode (prompt);
    } else {
      choose i in 2 by (work(P[i]), i);
      P[i].prefill (prompt);
      choose j in 2 by (%s, j);
      D[j].decode (prompt) from P[i];
    }
    observe ttft = D.first_token - t0;
  }
}""" % (self.pick(["8", "16", self.num()]), self.pick(["-free(D[j].kv)", "queue(D[j])"])))
        self.attrs += ["prompt", "answer"]
        _ = c

    def link_path(self):
        cap = self.pick(["256", "64", "1024"])
        self.out.append("pool kv_p { cap %s; }" % cap)
        self.out.append("pool kv_d { cap %s;%s }" % (cap, self.pick(["", " preempt lifo;"])))
        self.out.append("stage pre : step { budget %s; cost 0.1 + tokens / 100; memory kv_p; }"
                        % self.pick(["64", "256"]))
        self.out.append("stage dec : step { budget %s; cost 0.1 + 0.01 * tokens; memory kv_d; }"
                        % self.pick(["16", "64"]))
        entry = self.chance(0.5)
        if entry:
            self.out.append("queue nv : link { serve ps(%s); transfer (n) { run nv (n / 50); "
                            "mark moved; } }" % self.pick(["50", "10"]))
            move = "nv.transfer (prompt) from kv_p to kv_d (prompt);"
        else:
            self.out.append("queue nv : link { serve ps(%s) latency %s; }"
                            % (self.pick(["25", "5"]), self.pick(["0.002", "0", self.num()])))
            move = "transfer on nv (prompt / 25) from kv_p to kv_d (prompt);"
        self.link = ("hold kv_p (prompt) { prefill on pre prompt; } lease kv_p (%s); "
                     "hold kv_d (prompt + answer) { %s decode on dec (answer); }%s"
                     % (self.pick(["inf", "5"]), move,
                        " observe moved_at = nv.moved;" if entry and self.chance(0.5) else ""))

    # ---------------------------------------------------------- workload
    def arrival(self):
        r = self.c.integer(0, 5)
        if r <= 1:
            return "arrive poisson(%s);" % self.pick(["1", "2", "0.5", self.num()])
        if r == 2:
            return "arrive renewal(%s);" % self.pick(["~exp(1)", "0.5", "~det(1)", self.num()])
        if r == 3:
            return "arrive batch(%s);" % self.pick(["3", "1", "5"])
        if r == 4:
            return "arrive closed(%s);" % self.pick(["2", "3"])
        return "arrive none;"

    def workload(self, path):
        closed = False
        arrive = self.arrival()
        closed = "closed" in arrive
        lines = [arrive]
        if self.trace is not None and self.chance(0.1):
            lines.append('trace "%s"%s;' % (self.trace, self.pick(["", " ordered"])))
        init = ["set prompt = %s;" % self.pick(["8", "4 + floor(~uniform(0, 12))", "12"]),
                "set answer = %s;" % self.pick(["3", "1 + floor(~exp(4))", "0"]),
                "set pr = %s;" % self.pick(["0", "1", "~bernoulli(0.5)"])]
        if not path:
            self.attrs += ["prompt", "answer", "pr"]
        lines.append("init { %s }" % " ".join(init if not path else init[:2]))
        if self.chance(0.3):
            lines.append("turn { set extra = %s; }" % self.pick(["1", "~exp(1)", "turn_no"]))
            self.attrs.append("extra")
        if path and self.link is not None:
            self.out.append("workload { %s }" % " ".join(lines))
            self.out.append("session { turn; set t0 = now; %s observe e2e = now - t0; }"
                            % self.link)
            return
        if path:
            lines.append("hidden answer;" if not self.nearly or self.chance(0.8) else "")
            lines.append("session { turn; set t0 = now; request gw; observe e2e = now - t0; }")
            self.out.append("workload { %s }" % " ".join(lines))
            return
        first = ""
        if closed:
            # a closed session must let time pass (its first statement)
            plain = [n for n, k, size in self.stages if k != "step"]
            if plain:
                n = self.pick(plain)
                first = "run %s (%s); " % ("%s[0]" % n if self.stages[[s[0] for s in
                                           self.stages].index(n)][2] == 2 else n, "1")
        if self.chance(0.3):
            # a client session against a server
            server = self.block(0, {"holds": [], "leg": False, "client": False}, 1, 3)
            lines.append("session { %sturn; set t0 = now; request; observe e2e = now - t0; %s }"
                         % (first, "" if self.chance(0.5) else "branch with (0.3) { end; }"))
            self.out.append("workload { %s }" % " ".join(lines))
            self.out.append("server { %s }" % server)
        else:
            body = self.block(0, {"holds": [], "leg": False, "client": True}, 2, 5)
            self.out.append("workload { %s }" % " ".join(lines))
            self.out.append("session { %sturn; %s }" % (first, body))
        if self.has_fork and not self.has_join:
            self.out[-1] = self.out[-1][:-1] + " join; }"

    # --------------------------------------------------------- statements
    def block(self, depth, ctx, lo=1, hi=3):
        return " ".join(self.stmt(depth, ctx) for _ in range(self.c.integer(lo, hi)))

    def stage_run(self, ctx):
        n, kind, size = self.pick(self.stages)
        n = self.name([n]) if self.nearly else n
        ref = self.ref(n, size)
        if kind == "step":
            mode = self.pick(["prefill", "decode"])
            amount = self.pick(["prompt", "answer", "4", self.num()])
            grow = ""
            if "kv" in [h[0] for h in ctx["holds"]] and self.chance(0.6):
                grow = " growing kv"
            return "run %s %s (%s)%s;" % (ref, mode, amount, grow)
        if n in self.shared and len(self.shared) == 2 and self.chance(0.5):
            return "run %s, %s (%s);" % (self.shared[0], self.shared[1], self.work())
        return "run %s (%s);" % (ref, self.work())

    def stmt(self, depth, ctx):
        c = self.c
        r = c.integer(0, 15 if depth < 2 else 5)
        if r <= 1 and self.stages:
            return self.stage_run(ctx)
        if r == 2:
            a = self.pick(["x", "y", "w"])
            if a not in self.attrs:
                self.attrs.append(a)
            return "set %s = %s;" % (a, self.expr())
        if r == 3:
            self.observes += 1
            return "observe o%d = %s;" % (self.c.integer(0, 3), self.pick(
                ["now", self.expr(), "now - t0" if "t0" in self.attrs else "serial"]))
        if r == 4 and ctx["holds"]:
            pool, ref = self.pick(ctx["holds"])
            return self.pick(["grow %s (%s);" % (ref, self.pick(["1", "2", self.num()])),
                              "release %s;" % ref,
                              "load %s (%s);" % (ref, self.pick(["0", "1"]))])
        if r == 5 and self.sdefs and self.stages:
            st = [n for n, k, size in self.stages if k in ("fifo", "delay", "ps") and size == 1]
            if st:
                return "visit(%s, %s);" % (self.pick(st), self.pick(["1", "0.5", "serial / 10"]))
        if r <= 5:
            return self.stage_run(ctx) if self.stages else "set z = 1;"
        if r == 6 and self.pools:
            return self.hold(depth, ctx)
        if r == 7:
            if self.chance(0.5):
                return "branch (%s) { %s } else { %s }" % (
                    self.guard(), self.block(depth + 1, ctx, 1, 2), self.block(depth + 1, ctx, 0, 2))
            return "branch with (%s) { %s }" % (self.pick(["0.5", "0.2", self.prob()]),
                                                self.block(depth + 1, ctx, 1, 2))
        if r == 8 and ctx["client"] and not ctx["leg"] and self.stages:
            plain = [(n, size) for n, k, size in self.stages if k != "step"]
            if plain:
                n, size = self.pick(plain)
                ref = n if size == 1 else "%s[0]" % n
                return "loop { run %s (%s); %s branch (turn_no >= %s) { end; } turn; }" % (
                    ref, self.pick(["1", "~exp(1)", "0.5"]), self.block(depth + 1, ctx, 0, 1),
                    self.pick(["2", "3"]))
        if r == 9 and self.stages:
            n, kind, size = self.pick(self.stages)
            if size == 2:
                return "choose k in 2 by (%s, k); run %s[k] %s;" % (
                    self.pick(["queue(%s[k])" % n, "-k", "~exp(1)"]), n,
                    "prefill (4)" if kind == "step" else "(1)")
        if r == 10 and ctx["client"] and not ctx["leg"] and depth == 0 and not ctx["holds"]:
            self.has_fork = True
            leg = dict(ctx, leg=True)
            body = self.block(depth + 1, leg, 1, 2)
            if self.chance(0.8):
                self.has_join = True
                return "fork { %s } join;" % body
            return "fork { %s }" % body
        if r == 11 and ctx["client"] and not ctx["leg"]:
            return self.pick(["turn;", "branch (turn_no > 3) { end; }"])
        if r == 12 and ctx["client"] and not ctx["leg"] and self.nearly:
            return self.pick(["end;", "join;", "fork { }"])
        if r == 13 and self.pools:
            pool, size = self.pick(self.pools)
            return "drop %s;" % self.ref(pool, size)
        if r == 14 and self.pools:
            return self.hold(depth, ctx)
        return "set y = %s;" % self.expr()

    def hold(self, depth, ctx):
        pool, size = self.pick(self.pools)
        ref = self.ref(pool, size)
        if self.nearly:
            ref = self.name([ref])
        units = self.pick(["prompt", "2", "1", self.num(), "prompt + answer"])
        head = "hold %s (%s)" % (ref, units)
        if self.chance(0.15):
            head += " reserve (%s)" % self.pick(["prompt + answer", "4"])
        cache = self.chance(0.3)
        if cache and self.chance(0.3):
            head += " reuse (%s)" % self.pick(["prompt", "2"])
        if self.chance(0.1):
            head += " at admission (m = prompt)"
        inner = dict(ctx, holds=ctx["holds"] + [(pool, ref)])
        body = self.block(depth + 1, inner, 1, 3)
        tail = ""
        if cache:
            tail += " cache (%s)" % self.pick(["prompt", "computed", "0", "prompt + answer"])
        if self.chance(0.1):
            tail += " lease %s (%s)" % (ref, self.pick(["2", "inf", self.num()]))
        return "%s { %s }%s" % (head, body, tail)

    # ------------------------------------------------------ gauges, run
    def gauges_claims(self):
        if self.pools and self.chance(0.3):
            n, size = self.pick(self.pools)
            self.out.append("gauge g_used = used(%s);" % (n if size == 1 else n + "[0]"))
        if self.stages and self.chance(0.2):
            n, k, size = self.pick(self.stages)
            self.out.append("gauge g_q = queue(%s);" % (n if size == 1 else n + "[0]"))
        steps = [n for n, k, size in self.stages if k == "step" and size == 1]
        if steps and self.chance(0.2):
            self.out.append("claim small : every iteration of %s (tokens <= %s);"
                            % (self.pick(steps), self.pick(["16", "4"])))
        if self.chance(0.1):
            self.out.append("claim ended : at end (now > 0);")

    def run_block(self):
        fields = ["horizon %s;" % self.pick(["10", "20", "5", "40"])]
        if self.chance(0.3):
            fields.append("warmup %s;" % self.pick(["1", "2"]))
        if self.chance(0.5):
            fields.append("seed %d;" % self.c.integer(0, 50))
        if self.nearly and self.chance(0.2):
            fields.append(self.pick(["arrivals 5;", "horizon 0;", "warmup 100;", "seed -1;",
                                     "horizon inf;"]))
        self.out.append("run { %s }" % " ".join(fields))


if __name__ == "__main__":  # print a few, to read
    import sys
    for s in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        print("// seed %d" % s)
        print(program(RandomChoices(s)))
