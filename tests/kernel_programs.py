"""Random pool-free serQ programs for differential tests of the simulator
kernel against the reference.

``program(seed)`` returns the text of a small program drawn from a fixed
grammar: fifo, ps, delay and shared ps stages; every arrival form; sessions
of runs, sets, observations, branches (tests and draws), loops that end,
choose, fork/join and turns; gauges and an `at end` claim.  Deterministic
service times (``~det``, constants) are frequent on purpose: they make
events coincide, which is where the order of simultaneous events shows.
"""
import random


class Gen(object):
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.stages = []  # (name, kind)
        self.attrs = ["serial", "turn_no"]
        self.obs = 0
        self.depth = 0
        self.has_fork = False
        self.multi = False

    def pick(self, xs):
        return self.r.choice(xs)

    def num(self):
        return self.pick(["0.5", "1", "2", "0.25", "3", "1.5"])

    def work(self):
        r = self.r.random()
        if r < 0.3:
            return self.pick(["1", "0.5", "2", "0"])
        if r < 0.5:
            return "~det(%s)" % self.num()
        if r < 0.7:
            return "~exp(%s)" % self.num()
        if r < 0.8:
            return "~uniform(0, %s)" % self.num()
        if r < 0.9:
            return "~erlang(%d, %s)" % (self.r.randint(1, 3), self.num())
        return "%s + %s" % (self.pick(self.attrs), self.pick(["0.5", "1"]))

    def expr(self):
        r = self.r.random()
        a = self.pick(self.attrs)
        if r < 0.3:
            return "%s * %s" % (a, self.num())
        if r < 0.5:
            return "now"
        if r < 0.7:
            st = self.pick(self.stages)[0]
            return self.pick(["queue(%s)", "busy(%s)", "est_lambda(%s)", "est_wait(%s)"]) % st
        if r < 0.8:
            return "%s > %s" % (a, self.num())
        return "max(%s, %s) - min(%s, 1)" % (a, self.num(), a)

    def guard(self):
        a = self.pick(self.attrs)
        return self.pick(["%s > %s" % (a, self.num()), "%s == 0" % a,
                          "queue(%s) >= 1" % self.pick(self.stages)[0],
                          "now < %s" % self.pick(["5", "20", "50"])])

    def run(self):
        names = [n for n, k in self.stages if k != "shared"]
        shared = [n for n, k in self.stages if k == "shared"]
        if shared and self.r.random() < 0.3:
            if len(shared) >= 2 and self.r.random() < 0.6:
                a, b = self.r.sample(shared, 2)
                self.multi = True
                return "run %s, %s (%s);" % (a, b, self.work())
            return "run %s (%s);" % (self.pick(shared), self.work())
        return "run %s (%s);" % (self.pick(names or shared), self.work())

    def block(self, n, in_leg=False):
        out = []
        for _ in range(n):
            out.append(self.stmt(in_leg))
        return " ".join(out)

    def stmt(self, in_leg):
        r = self.r.random()
        self.depth += 1
        try:
            if self.depth > 3 or r < 0.35:
                return self.run()
            if r < 0.45:
                name = "a%d" % self.r.randint(0, 3)
                s = "set %s = %s;" % (name, self.expr())
                if name not in self.attrs:
                    self.attrs.append(name)
                return s
            if r < 0.55:
                self.obs += 1
                return "observe o%d = %s;" % (self.r.randint(0, 3), self.expr())
            if r < 0.65:
                return "branch (%s) { %s } else { %s }" % (self.guard(), self.block(2, in_leg),
                                                          self.block(1, in_leg))
            if r < 0.72:
                return "branch with (%s) { %s }" % (self.pick(["0.3", "0.5", "0.9"]),
                                                   self.block(2, in_leg))
            if r < 0.78 and not in_leg:
                return "loop { %s branch with (%s) { end; } }" % (
                    self.run(), self.pick(["0.3", "0.5"]))
            if r < 0.85:
                if "k" not in self.attrs:
                    self.attrs.append("k")
                return "choose k in %d by (%s, k);" % (self.r.randint(0, 3), self.pick(
                    ["~exp(1)", "queue(%s)" % self.pick(self.stages)[0], "-k"]))
            if r < 0.93 and not in_leg:
                self.has_fork = True
                legs = " ".join("fork { %s }" % self.block(self.r.randint(1, 2), True)
                                for _ in range(self.r.randint(1, 2)))
                return "%s %s join;" % (legs, self.block(1))
            return self.run()
        finally:
            self.depth -= 1

    def program(self):
        r = self.r
        lines = []
        n = r.randint(1, 4)
        for i in range(n):
            kind = r.choice(["fifo", "fifo", "ps", "delay", "shared"])
            name = "s%d" % i
            if kind == "fifo":
                lines.append("stage %s : fifo(%d);" % (name, r.randint(1, 3)))
            elif kind == "ps":
                lines.append("stage %s : ps(%s);" % (name, r.choice(
                    ["1", "2", "1 + present / 2", "2 / present", "~uniform(0.5, 1.5)"])))
            elif kind == "delay":
                lines.append("stage %s : delay;" % name)
            else:
                lines.append("stage %s : ps(%s);" % (name, r.choice(["1", "2", "0.5"])))
            self.stages.append((name, kind))
        arrive = r.choice(["poisson(%s)" % r.choice(["0.5", "1", "2"]),
                           "renewal(%s)" % r.choice(["1", "~exp(1)", "~uniform(0.5, 1.5)",
                                                     "~det(0.5)"]),
                           "batch(%d)" % r.randint(1, 6), "closed(%d)" % r.randint(1, 4)])
        turn = ""
        body = self.block(r.randint(1, 4))
        if r.random() < 0.3 and not arrive.startswith("closed"):
            self.attrs.append("x")
            turn = "turn { set x = ~exp(1); observe tx = x; }"
            body = "loop { turn; %s branch (turn_no >= %d) { end; } }" % (self.run(),
                                                                          r.randint(1, 3))
        lines.append("workload { arrive %s; init { set a0 = ~uniform(0, 2); } %s }"
                     % (arrive, turn))
        if "a0" not in self.attrs:
            self.attrs.append("a0")
        if arrive.startswith("closed"):
            # A closed session that takes no time restarts for ever at one
            # instant (the reference hangs; serq stops with an error).
            body = "run %s (1); %s" % (self.stages[0][0], body)
        lines.append("session { set t0 = now; %s observe resp = now - t0; }" % body)
        if r.random() < 0.5:
            lines.append("gauge g = queue(%s) + busy(%s);" % (self.pick(self.stages)[0],
                                                               self.pick(self.stages)[0]))
        if r.random() < 0.3:
            lines.append("claim c : at end (count(resp) >= 1);")
        lines.extend(ending(r, self.multi, [10, 30, 100]))
        return "\n".join(lines) + "\n"


def ending(r, multi, horizons):
    """A random program's last lines: the sharing rule of a multi-stage run,
    then the run block (its horizon one of ``horizons``)."""
    lines = []
    if multi:
        lines.append("share %s;" % r.choice(["maxmin", "bottleneck"]))
    horizon = r.choice(horizons)
    warmup = r.choice([0, 0, 2, 5])
    lines.append("run { horizon %d; warmup %d; seed %d; }" % (horizon, warmup,
                                                               r.randint(1, 10 ** 6)))
    return lines


def program(seed: int) -> str:
    return Gen(seed).program()
