"""Random step-engine programs for differential tests of the simulator's
continuous-batching stages against the reference.

``program(seed)`` returns the text of a small program drawn from a fixed
grammar: one step engine (sometimes a family ``e[2]`` joined member for
member with a memory pool family ``kv[2]``), sometimes a second engine (a
decode engine behind a prefill engine), a ``tool`` delay stage, and a memory
pool with ``block``, ``evict``, ``preempt none | lifo | by (…) [requeue
tail]``, ``queue by (…)`` (sometimes reading ``budget_left``) and ``admit
via``.  Engines draw from every step option of 0.1.3: ``budget`` and
``chunk`` (constants or Budget-moment expressions, sometimes drawing),
``cost`` over the Step-moment variables (``tokens decoders prefilled
residents kv_decode kv_prefill attention``), ``granule`` (including ``inf``),
every ``serve`` form (``admission``, ``by (…)``, ``decode first``,
``exclusive prefill``, ``only (p) [order]``), ``memory``, registers and
``iteration { … }`` bodies (``serve``, ``admit only … while …``, ``branch``,
``set``).  Sessions hold the memory pool (``cache``, ``reuse``, ``cached`` in
the prefill amount, ``budget_left`` in the header), run ``prefill`` and
``decode`` (``growing`` or not, zero amounts too), call tools, run several
turns, and fork agent subcalls onto the engine.  Iteration claims, gauges
over ``busy queue`` and warm-up appear at random.

Deterministic amounts (constants, ``~det``, renewal with a constant gap,
batch and closed workloads) are frequent: they make iterations, arrivals
and preemptions coincide.  The grammar avoids what the reference cannot
run: every loop pass and every closed session starts with a tool call of
positive time (a closed session or loop that takes no time never settles),
costs have a positive constant part, a constant chunk is never below the
granule, ``granule`` never meets ``serve exclusive prefill``, serve keys
never draw, and horizons keep one run well under a second in pyserq.
"""
import random


class Gen(object):
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.det = self.r.random() < 0.55     # mostly deterministic amounts
        self.family = False                    # stage e[2] + pool kv[2]
        self.regs = []
        self.has_pool = False
        self.admit_via = False
        self.preempt = "none"
        self.block = None
        self.cap = 0
        self.exclusive = False
        self.obs = 0

    def pick(self, xs):
        return self.r.choice(xs)

    def chance(self, p):
        return self.r.random() < p

    # ------------------------------------------------------------ amounts
    def tokens(self, lo, hi):
        if self.det or self.chance(0.4):
            return str(self.r.randint(lo, hi))
        return self.pick(["floor(~uniform(%d, %d))" % (lo, hi + 1),
                          "%d + floor(~exp(%d))" % (lo, max(1, (hi - lo) // 2))])

    def time(self):
        if self.det or self.chance(0.3):
            return self.pick(["0.5", "1", "1.5", "2", "~det(0.75)"])
        return self.pick(["~exp(1)", "~uniform(0.25, 2)", "~erlang(2, 1)"])

    # ------------------------------------------------------------ engines
    def eng(self, j="j"):
        return "e[%s]" % j if self.family else "eng"

    def pool(self, j="j"):
        return "kv[%s]" % j if self.family else "kv"

    def engine_decl(self):
        r = self.r
        opts = []
        budget = self.pick(["4", "6", "8", "10", "12", "16", "24", "32", "inf"])
        if budget != "inf" and self.chance(0.3):
            budget = self.pick(["%s - decoders" % budget, "max(4, %s - residents)" % budget,
                                "%s + floor(~uniform(0, 4))" % budget,
                                "%s - kv_decode / 8" % budget])
        opts.append("budget %s;" % budget)
        cost = self.pick(["1", "0.5", "0.25 + tokens / 16",
                          "0.1 + 0.02 * tokens + 0.05 * decoders",
                          "0.2 + 0.01 * prefilled + 0.03 * residents",
                          "0.1 + 0.001 * attention + 0.01 * decoders",
                          "0.2 + (kv_decode + kv_prefill) / 200",
                          "0.3 + 0.01 * tokens + 0.1 * (decoders == 0)",
                          "0.2 + ~exp(0.05)"])
        opts.append("cost %s;" % cost)
        chunk = None
        if self.chance(0.4):
            chunk = self.pick(["2", "3", "4", "6", "8", "12 / max(1, residents)",
                               "max(2, 8 - decoders)"])
            opts.append("chunk %s;" % chunk)
        serve = r.random()
        body = self.has_pool and not self.family and self.chance(0.3)
        if body:
            pass
        elif serve < 0.2:
            opts.append("serve admission;")
        elif serve < 0.35:
            opts.append("serve by (%s);" % self.pick(
                ["remaining", "decoding ? 0 : 1, remaining", "-admission", "prio, admission",
                 "decoding, -remaining", "remaining > 4 ? 1 : 0, -admission"]))
        elif serve < 0.5:
            opts.append("serve decode first;")
        elif serve < 0.62:
            opts.append("serve exclusive prefill;")
            self.exclusive = True
        elif serve < 0.72:
            opts.append("serve only (%s)%s;" % (self.pick(
                ["decoding || residents <= 2", "remaining <= 6 || decoding", "prio == 0 || residents == 1",
                 "1", "decoding || admission == 0"]),
                self.pick(["", " admission", " by (remaining)", " decode first"])))
        if not self.exclusive and self.chance(0.3):
            g = self.pick(["2", "3", "4", "inf"])
            if chunk is not None and chunk.isdigit() and int(chunk) < (99 if g == "inf" else int(g)):
                chunk = None
                opts = [o for o in opts if not o.startswith("chunk")]
            opts.append("granule %s;" % g)
        if self.has_pool:
            opts.append("memory %s;" % ("kv" if not self.family else "kv"))
        if body:
            opts += self.body()
        return opts

    def body(self):
        lines = []
        if self.chance(0.6):
            self.regs.append("mode")
            lines.append("state mode = 0;")
        stmts = []
        serve = self.pick(["serve;", "serve decode first;", "serve by (remaining);",
                           "serve only (decoding) by (remaining); serve;",
                           "serve only (!decoding); serve only (decoding);",
                           "serve only (remaining <= 8);"])
        admit = self.pick(["admit;", "admit while (!preempted);",
                           "admit while (!preempted && admitted < 2);",
                           "admit only (remaining <= 6) while (tokens < 8);",
                           "admit only (decoding);"])
        if "mode" in self.regs:
            stmts.append("branch (mode == 0) { %s } else { serve only (decoding); }" % serve)
            stmts.append(admit)
            stmts.append(self.pick([
                "branch (prefilled > 0) { set mode = 1; } else { set mode = 0; }",
                "set mode = 1 - mode;",
                "branch (decoders >= 2) { set mode = 1; } else { set mode = 0; }"]))
        else:
            stmts = [serve, admit] if self.chance(0.7) else [admit, serve]
        lines.append("iteration { %s }" % " ".join(stmts))
        return lines

    # ------------------------------------------------------------ pool
    def pool_decl(self):
        r = self.r
        self.cap = self.pick([12, 16, 24, 32, 48, 64, 128])
        self.block = self.pick([None, None, 2, 4, 8]) if self.cap >= 16 else None
        opts = ["cap %d;" % self.cap]
        if self.block:
            opts.append("block %d;" % self.block)
        if self.chance(0.4):
            opts.append(self.pick(["evict lru;", "evict by (size);", "evict by (-age);"]))
        p = r.random()
        if p < 0.25:
            opts.append("preempt none;")
        elif p < 0.6:
            opts.append("preempt lifo;")
            self.preempt = "lifo"
        elif p < 0.8:
            opts.append("preempt by (%s)%s;" % (self.pick(
                ["decoding, -admission", "-position", "admission", "decoding ? 0 : 1, -position",
                 "prio, -admission", "-admission"]), self.pick(["", "", " requeue tail"])))
            self.preempt = "by"
        if self.chance(0.55):
            opts.append("admit via %s;" % ("e" if self.family else "eng"))
            self.admit_via = True
            if self.chance(0.3):
                opts.append("queue by (%s);" % self.pick(
                    ["p, serial", "p > budget_left(%s) ? 1 : 0, serial" % ("e[0]" if self.family else "eng"),
                     "-prio, serial", "cached, serial"]))
        return opts

    # ------------------------------------------------------------ sessions
    def request(self, j, in_leg=False):
        """One request on the engine: a hold of the memory pool around a
        prefill and a decode, or bare runs."""
        r = self.r
        e = self.eng(j)
        grow = self.has_pool and self.preempt != "x" and self.chance(0.55)
        p = self.pick(["p", self.tokens(1, 12), "p + 2"])
        o = self.pick(["o", self.tokens(1, 5), "o", "0" if self.chance(0.1) else "1"])
        if not self.has_pool:
            return "run %s prefill (%s); run %s decode (%s);" % (e, p, e, o)
        pool = self.pool(j)
        cache = self.chance(0.35)
        amount = "max(0, %s - cached)" % p if cache and self.chance(0.7) else p
        if not cache:
            amount = p
        g = " growing %s" % pool if grow else ""
        parts = ["run %s prefill (%s)%s;" % (e, amount, g), "run %s decode (%s)%s;" % (e, o, g)]
        if cache and self.chance(0.3):
            parts.insert(0, "observe hit%d = cached;" % r.randint(0, 1))
        if self.chance(0.15):
            parts.insert(0, "observe comp = computed;")
        if self.chance(0.15) and self.admit_via:
            parts.insert(0, "observe bl = budget_left(%s);" % e)
        if self.chance(0.2):
            # a tool result prefilled inside the same hold (decode first differs)
            parts += ["run tool (%s);" % self.time(), "run %s prefill (%s)%s;" % (e, self.tokens(1, 6), g),
                      "run %s decode (%s)%s;" % (e, self.tokens(1, 3), g)]
        if grow:
            units = self.pick(["1", "2", str(self.block or 1)])
        else:
            units = self.pick(["p + o", "p + 4", "p + o + 6"])
        if self.admit_via and not grow and self.chance(0.2):
            units = "max(1, budget_left(%s))" % e
        reuse = " reuse (%s)" % self.pick(["2", "p", "4"]) if cache and self.chance(0.3) else ""
        text = "hold %s (%s)%s { %s }" % (pool, units, reuse, " ".join(parts))
        if cache:
            text += " cache (%s)" % self.pick(["p", "p + o", "inf", "4"])
        return text

    def session(self):
        r = self.r
        j = "j"
        body = []
        if self.family:
            body.append("choose j in 2 by (%s, j);" % self.pick(
                ["queued(kv[j]) + holders(kv[j])", "queue(e[j])", "used(kv[j])"]))
        kind = r.random()
        if kind < 0.5:
            body.append(self.request(j))
        elif kind < 0.75:
            # several turns with a tool call of positive time first
            n = r.randint(2, 3)
            body.append("loop { turn; run tool (%s); %s branch (turn_no >= %d) { end; } }"
                        % (self.pick(["0.5", "1", "~det(0.25)", "~exp(1)"]), self.request(j), n))
        else:
            legs = " ".join("fork { %s }" % self.request(j, True) for _ in range(r.randint(1, 3)))
            body.append("%s %s join; %s" % (self.request(j), legs,
                                             self.request(j) if self.chance(0.5) else ""))
        if self.chance(0.2):
            body.append("observe w = work(%s);" % self.eng("0" if self.family else "j"))
        return body

    def program(self):
        r = self.r
        self.family = self.chance(0.15)
        self.has_pool = self.family or self.chance(0.75)
        lines = []
        if self.has_pool:
            popts = self.pool_decl()
            lines.append("pool %s { %s }" % ("kv[2]" if self.family else "kv", " ".join(popts)))
        eopts = self.engine_decl()
        lines.append("stage %s : step { %s }" % ("e[2]" if self.family else "eng", " ".join(eopts)))
        lines.append("stage tool : delay;")
        arrive = self.pick(
            (["renewal(~det(%s))" % self.pick(["0.5", "1", "0.3", "2"]), "batch(%d)" % r.randint(1, 5),
              "renewal(%s)" % self.pick(["1", "1.5"])] * (2 if self.det else 1))
            + ["poisson(%s)" % self.pick(["1", "2", "4"]), "closed(%d)" % r.randint(1, 4)])
        init = "set p = %s; set o = %s; set prio = %s;" % (
            self.tokens(2, 16), self.tokens(1, 6),
            self.pick(["0", "serial - 2 * floor(serial / 2)"] + ([] if self.det else ["~bernoulli(0.3)"])))
        turn = ""
        if self.chance(0.4):
            turn = " turn { set p = %s; }" % self.pick(["p + 3", self.tokens(2, 12)])
        lines.append("workload { arrive %s; init { %s }%s }" % (arrive, init, turn))
        body = self.session()
        if arrive.startswith("closed"):
            body.insert(0, "run tool (%s);" % self.pick(["1", "0.5", "~exp(1)"]))
        lines.append("session { set t0 = now; %s observe lat = now - t0; }" % " ".join(body))
        e0 = "e[0]" if self.family else "eng"
        for k in range(r.randint(0, 2)):
            lines.append("claim c%d : %s;" % (k, self.pick([
                "every iteration of %s (tokens <= 64)" % e0,
                "some iteration of %s (decoders >= 2)" % e0,
                "every iteration of %s (residents <= 3)" % e0,
                "some iteration of %s (prefilled > 0 && decoders > 0)" % e0])
                + ("" if not self.regs else "")))
        if self.regs and self.chance(0.5) and not self.family:
            lines.append("claim reg : every iteration of eng (mode <= 1);")
        for k in range(r.randint(0, 2)):
            lines.append("gauge g%d = %s;" % (k, self.pick(
                ["busy(%s)" % e0, "queue(%s)" % e0] + (["used(%s)" % self.pool("0"),
                                                       "queued(%s)" % self.pool("0")]
                                                      if self.has_pool else []))))
        horizon = self.pick([8, 12, 16, 20])
        warmup = self.pick([0, 0, 0, 2, 3.5])
        extra = ""
        if False:
            extra = " arrivals %d;" % r.randint(2, 8)
        lines.append("run { horizon %d; warmup %s; seed %d;%s }" % (horizon, warmup, r.randint(1, 10 ** 6), extra))
        return "\n".join(lines) + "\n"


def program(seed: int) -> str:
    return Gen(seed).program()


if __name__ == "__main__":
    import sys
    print(program(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
