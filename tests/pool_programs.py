"""Random pool programs for differential tests of the simulator's pools and
holds against the reference.

``program(seed)`` returns the text of a small program drawn from a fixed
grammar over fifo, ps, delay and shared ps stages (no step stages) and one to
three pools (sometimes a pool array) with every option of 0.1.3: ``cap``,
``block``, ``evict lru | by (…)`` (keys on size, age, last, waiting,
attributes, draws), ``preempt none | lifo | by (…) [requeue tail|head]``,
``queue fifo | by (…)`` (with ``waited``), ``spill``, ``reserve held``.
Sessions hold pools (several at once, with ``reserve``, ``reuse``,
``at admission``, ``cache``, ``lease``), ``grow``, ``load``, ``release``,
``drop``, nest holds on the same pool, fork legs that hold and lease, and
read the pool queries and the ``cached``/``computed`` attributes; gauges read
pool queries.  Deterministic amounts (constants, ``~det``, renewal with a
constant gap, batch and closed workloads) are frequent on purpose: they make
admissions, releases, evictions and lease expiries coincide.

The grammar avoids what the reference cannot run: every hold body lets time
pass before it grows (so a self-preempting hold is a livelock over time, not
an instant that never settles), a closed session starts with a run of
positive work (a closed session that takes no time restarts for ever), loads
stay within the allocation (``reuse (0)`` or no ``cache`` on loading holds),
and horizons and rates keep one run well under 0.2 s in pyserq.  Eviction
keys never draw: with several cache entries the reference evaluates drawing
keys in an order that changes from one of its runs to the next, so such a
program has no stable expected report (draws stay in spill clauses, which
are evaluated per evicted piece in eviction order).
"""
import random

from kernel_programs import ending


class Gen(object):
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.stages = []  # (name, kind)
        self.pools = []   # dicts: name, count, cap, block, preempt, tier
        self.attrs = ["serial", "turn_no"]
        self.has_fork = False
        self.multi = False
        self.depth = 0
        self.obs = 0
        self.allow_fork = self.r.random() < 0.5
        self.leased = []  # references some hold leases (release outside a hold)

    # ----------------------------------------------------------- helpers
    def pick(self, xs):
        return self.r.choice(xs)

    def chance(self, p):
        return self.r.random() < p

    def num(self):
        return self.pick(["0.5", "1", "2", "0.25", "1.5"])

    def work(self, positive=False):
        r = self.r.random()
        if r < 0.3:
            return self.pick(["1", "0.5", "2", "1.5"] + ([] if positive else ["0"]))
        if r < 0.55:
            return "~det(%s)" % self.num()
        if r < 0.75:
            return "~exp(%s)" % self.num()
        if r < 0.85:
            return "~uniform(0.25, %s)" % self.pick(["1", "2", "3"])
        if r < 0.93:
            return "~erlang(%d, %s)" % (self.r.randint(1, 3), self.num())
        return "n / 4 + 0.25"

    def run(self, positive=True):
        names = [n for n, k in self.stages if k != "shared"]
        shared = [n for n, k in self.stages if k == "shared"]
        if shared and self.chance(0.3):
            if len(shared) >= 2 and self.chance(0.6):
                a, b = self.r.sample(shared, 2)
                self.multi = True
                return "run %s, %s (%s);" % (a, b, self.work(positive))
            return "run %s (%s);" % (self.pick(shared), self.work(positive))
        return "run %s (%s);" % (self.pick(names or shared), self.work(positive))

    def ref(self, pool, fixed=None):
        """A reference to a pool member: name, or name[index]."""
        if pool["count"] == 1:
            return pool["name"]
        if fixed is not None:
            return "%s[%s]" % (pool["name"], fixed)
        return "%s[%d]" % (pool["name"], self.r.randrange(pool["count"]))

    def any_ref(self):
        return self.ref(self.pick(self.pools))

    def query(self):
        p = self.pick(self.pools)
        qs = ["used", "free", "holders", "queued", "cachedin"] + (["blocksize"] if p["block"] else [])
        return "%s(%s)" % (self.pick(qs), self.ref(p))

    def units(self, pool, allow_state):
        r = self.r.random()
        cap = pool["cap"]
        if r < 0.35:
            return str(self.r.randint(1, max(1, cap // 3)))
        if r < 0.7:
            return "n"
        if r < 0.8:
            # above the cap for a few sessions: rejected
            return "n + %d" % self.r.randint(0, cap // 2)
        if r < 0.9 and allow_state:
            return "h"  # bound at admission
        return "min(n, %d)" % max(1, cap // 2)

    # -------------------------------------------------------- statements
    def hold(self, in_leg, nested_on=None):
        """A hold statement on one or two pools."""
        r = self.r
        first = self.pick(self.pools) if nested_on is None else nested_on
        pools = [first]
        others = [p for p in self.pools if p is not first and p["tier"] is None]
        if nested_on is None and others and self.chance(0.3):
            pools.append(self.pick(others))
        preempting = any(p["preempt"] != "none" for p in pools)
        refs = []
        for p in pools:
            if p["count"] > 1 and "j" in self.attrs and self.chance(0.6):
                refs.append(self.ref(p, "j"))
            else:
                refs.append(self.ref(p))
        state = nested_on is None and self.chance(0.15)
        parts = []
        for p, ref in zip(pools, refs):
            u = self.units(p, state)
            res = ""
            if self.chance(0.2):
                res = " reserve (%s)" % self.pick(["n + 2", "%d" % max(1, p["cap"] // 2), "o", "0"])
            parts.append("%s (%s)%s" % (ref, u, res))
        header = ", ".join(parts)
        uses_h = "(h)" in header
        cache = None
        if self.chance(0.65):
            cache = self.pick(["n", "n + 2", "0", "%d" % r.randint(1, 12), "kept"
                               if uses_h else "n", "inf"])
        loads = cache is None or self.chance(0.5)
        reuse = ""
        if cache is not None:
            if loads:
                reuse = " reuse (0)"
            elif self.chance(0.25):
                reuse = " reuse (%s)" % self.pick(["2", "n", "4"])
        adm = ""
        if uses_h or cache == "kept":
            p = pools[0]
            # mostly half or a third of the free units; rarely a demand that
            # grows with the clock past the cap (over_cap at the end)
            h = self.pick(["max(1, floor(free(%s) / %d))" % (refs[0], r.randint(2, 4))] * 4
                          + ["1 + floor(now / 2)"])
            adm = " at admission (h = %s%s)" % (h, ", kept = h - 1" if cache == "kept" else "")
        # body: time passes first, then pool actions
        body = [self.run(positive=True)]
        if cache is not None and self.chance(0.4):
            body.insert(0, "observe hit = cached;")
        released = set()
        for _ in range(r.randint(0, 3)):
            k = r.random()
            i = r.randrange(len(pools))
            ref = refs[i]
            if i in released and k < 0.6:
                body.append(self.run(positive=False))
            elif k < 0.25:
                body.append("grow %s (%s);" % (ref, self.pick(["1", "2", "n", "3"])))
                body.append(self.run(positive=True))
            elif k < 0.4 and loads:
                body.append("load %s (%s);" % (ref, self.pick(["1", "0"])))
            elif k < 0.5:
                body.append("observe q%d = %s;" % (r.randint(0, 2), self.query()))
            elif k < 0.6:
                body.append("release %s;" % ref)
                body.append(self.run(positive=True))
                released.add(i)
            elif k < 0.7 and nested_on is None and self.depth < 2 and not in_leg:
                self.depth += 1
                inner, _ = self.hold(in_leg, nested_on=pools[i] if self.chance(0.6) else None)
                body.append(inner)
                self.depth -= 1
            elif k < 0.8:
                body.append("observe comp = computed;")
            else:
                body.append(self.run(positive=False))
        text = "hold %s%s%s { %s }" % (header, reuse, adm, " ".join(body))
        if cache is not None:
            text += " cache (%s)" % cache
        if self.chance(0.25):
            ref = refs[r.randrange(len(refs))]
            # with fork legs, an endless lease could make a leg wait for ever
            # while its session waits at `join` (an error at the end)
            text += " lease %s (%s)" % (ref, self.pick(
                ["1", "0.5", "2"] + ([] if self.allow_fork else ["inf", "inf"])))
            self.leased.append(ref)
        return text, preempting

    def hold_stmt(self, in_leg):
        text, _ = self.hold(in_leg)
        return text + ";" if self.chance(0.3) else text

    def stmt(self, in_leg):
        r = self.r.random()
        if r < 0.45:
            return self.hold_stmt(in_leg)
        if r < 0.6:
            return self.run(positive=False)
        if r < 0.67:
            return "observe o%d = %s;" % (self.r.randint(0, 2), self.query())
        if r < 0.72:
            return "drop %s;" % self.any_ref()
        if r < 0.77 and self.leased:
            return "release %s;" % self.pick(self.leased)
        if r < 0.85:
            return "branch with (%s) { %s } else { %s }" % (
                self.pick(["0.3", "0.5"]), self.hold_stmt(in_leg), self.run(positive=False))
        if r < 0.92 and not in_leg and self.allow_fork:
            self.has_fork = True
            legs = " ".join("fork { %s }" % self.hold_stmt(True)
                            for _ in range(self.r.randint(1, 2)))
            return "%s %s join;" % (legs, self.run(positive=False))
        return "set n = %s;" % self.pick(["n + 1", "max(1, n - 1)", "n"])

    # ------------------------------------------------------------ program
    def pool_decl(self, i):
        r = self.r
        name = "p%d" % i
        count = 2 if self.chance(0.2) else 1
        cap = r.choice([4, 6, 8, 10, 12, 16, 20, 24, 32])
        block = r.choice([None, None, 2, 4]) if cap >= 8 else None
        opts = ["cap %d;" % cap]
        if block:
            opts.append("block %d;" % block)
        ev = r.random()
        if ev < 0.4:
            opts.append("evict lru;")
        elif ev < 0.85:
            keys = r.sample(["size", "-size", "age", "-age", "last", "waiting", "-waiting",
                             "n", "-serial", "used(%s)" % (name if count == 1
                                                                   else name + "[0]")],
                            r.randint(1, 2))
            opts.append("evict by (%s);" % ", ".join(keys))
        pr = r.random()
        preempt = "none"
        if pr < 0.2:
            opts.append("preempt none;")
        elif pr < 0.45:
            opts.append("preempt lifo;")
            preempt = "lifo"
        elif pr < 0.65:
            keys = r.sample(["admission", "-admission", "position", "-position", "n", "-n",
                             "serial"], r.randint(1, 2))
            opts.append("preempt by (%s)%s;" % (", ".join(keys), r.choice(
                ["", " requeue tail", " requeue head"])))
            preempt = "by"
        q = r.random()
        if q < 0.25:
            opts.append("queue fifo;")
        elif q < 0.6:
            opts.append("queue by (%s);" % r.choice([
                "n, serial", "-waited", "waited >= 2 ? 0 : 1, serial", "-n",
                "immediate ? 0 : n > 4 && waited >= 3 ? 1 : n <= 4 ? 2 : 3, serial",
                "cached, -serial", "queued(%s)" % (name if count == 1 else name + "[0]")]))
        if self.chance(0.2):
            opts.append("reserve held;")
        self.pools.append({"name": name, "count": count, "cap": cap, "block": block,
                           "preempt": preempt, "tier": None, "opts": opts})

    def program(self):
        r = self.r
        lines = []
        for i in range(r.randint(1, 3)):
            kind = r.choice(["fifo", "fifo", "ps", "delay", "delay", "shared"])
            name = "s%d" % i
            if kind == "fifo":
                lines.append("stage %s : fifo(%d);" % (name, r.randint(1, 3)))
            elif kind == "ps":
                lines.append("stage %s : ps(%s);" % (name, r.choice(
                    ["1", "2", "1 + present / 2", "2 / present"])))
            elif kind == "delay":
                lines.append("stage %s : delay;" % name)
            else:
                lines.append("stage %s : ps(%s);" % (name, r.choice(["1", "2"])))
            self.stages.append((name, kind))
        for i in range(r.randint(1, 3)):
            self.pool_decl(i)
        # a spill tier: the last pool, written to through a delay/fifo link
        if len(self.pools) >= 2 and self.chance(0.5):
            tier = self.pools[-1]
            src = self.pools[0]
            if tier["count"] == 1 and src["count"] == 1:
                lines.append("stage link : %s;" % r.choice(["delay", "fifo(1)"]))
                src["opts"].append("spill %s via link (%s) when (%s);" % (
                    tier["name"], r.choice(["size / 4", "1", "~exp(0.5)"]),
                    r.choice(["size >= 2", "1", "size >= 4", "waiting == 0"])))
                tier["tier"] = src["name"]
        decls = []
        for p in self.pools:
            head = p["name"] if p["count"] == 1 else "%s[%d]" % (p["name"], p["count"])
            decls.append("pool %s { %s }" % (head, " ".join(p["opts"])))
        lines = decls + lines
        self.attrs += ["n", "o", "immediate"]
        arrive = r.choice(["poisson(%s)" % r.choice(["0.3", "0.5", "1"]),
                           "renewal(%s)" % r.choice(["1", "2", "~exp(1)", "~det(0.5)",
                                                     "~uniform(0.5, 1.5)"]),
                           "batch(%d)" % r.randint(1, 6), "closed(%d)" % r.randint(1, 4)])
        body = []
        arrays = [p for p in self.pools if p["count"] > 1]
        if arrays and self.chance(0.7):
            a = self.pick(arrays)
            self.attrs.append("j")
            body.append("choose j in %d by (%s, j);" % (a["count"], self.pick([
                "used(%s[j]) + queued(%s[j])" % (a["name"], a["name"]),
                "-cachedin(%s[j])" % a["name"], "~exp(1)", "queued(%s[j])" % a["name"]])))
        others = [self.stmt(False) for _ in range(r.randint(0, 2))]
        others.insert(r.randint(0, len(others)), self.hold_stmt(False))  # at least one hold
        body += others
        body_text = " ".join(body)
        turn = ""
        if self.chance(0.25) and not arrive.startswith("closed"):
            turn = "turn { set n = n + %d; }" % r.randint(1, 3)
            body_text = "loop { turn; %s %s branch (turn_no >= %d) { end; } }" % (
                self.run(positive=True), body_text, r.randint(1, 3))
        if arrive.startswith("closed"):
            body_text = "run %s (1); %s" % (self.stages[0][0], body_text)
        lines.append("workload { arrive %s; init { set n = %s; set o = %s; set immediate = %s; } %s }"
                     % (arrive, r.choice(["floor(~uniform(1, 8))", "3", "1 + serial - 2 * floor(serial / 2)",
                                          "floor(~uniform(1, 14))"]),
                        r.choice(["2", "floor(~uniform(0, 6))"]),
                        r.choice(["0", "~bernoulli(0.2)"]), turn))
        lines.append("session { set t0 = now; %s observe resp = now - t0; }" % body_text)
        for k in range(r.randint(0, 2)):
            p = self.pick(self.pools)
            ref = p["name"] if p["count"] == 1 else "%s[%d]" % (p["name"], r.randrange(p["count"]))
            lines.append("gauge g%d = %s;" % (k, r.choice([
                "used(%s)" % ref, "free(%s) + queued(%s)" % (ref, ref), "holders(%s)" % ref,
                "used(%s) / %s" % (ref, "blocksize(%s)" % ref if p["block"] else "2")])))
        lines.extend(ending(r, self.multi, [10, 20, 40]))
        return "\n".join(lines) + "\n"


def program(seed: int) -> str:
    return Gen(seed).program()


if __name__ == "__main__":
    import sys
    print(program(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
