"""How long parsing and linking a large generated program takes, against the
reference's compile of the same text.  A benchmark, not a test:

    python bench/bench_frontend.py [LINES]
"""
import statistics
import sys
import time

from serq.compiler import parse_expression
from serq.link import Overrides, link
from serq.syntax.parser import parse_program


def generate(lines: int) -> str:
    """A program of about ``lines`` lines: pools, stages, expression and
    statement defs, and a long session of holds, branches and runs."""
    out = ["let R = 4;", "let blk = 16;",
           "pool kv[R] { cap 4096; block blk; evict lru; preempt lifo; }",
           "stage gpu[R] : step { budget 512; chunk 256; cost 0.005 + 0.00002 * tokens;"
           " memory kv; }",
           "stage think : delay;",
           "def svc(x) = ~exp(x) + 0.1 * x;",
           "def answer(j, n) { hold kv[j] (n) { run gpu[j] prefill (n) growing kv[j];"
           " run gpu[j] decode (8) growing kv[j]; } cache (n) }",
           "workload { arrive poisson(3); init { set prompt = floor(~uniform(10, 400)); } }",
           "session {"]
    i = 0
    while len(out) < lines - 3:
        # No def is used: the reference refuses any def use (and any `use`)
        # that takes the program past 99 999 tokens, and this one has more.
        out.append("  set a%d = prompt * %d + (~exp(%d)) ^ 2 - min(a%d, %d);"
                   % (i, i, i % 7 + 1, max(i - 1, 0), i))
        out.append("  choose j%d in R by (queue(gpu[j%d]), used(kv[j%d]));" % (i, i, i))
        body = ("hold kv[j%d] (prompt) { run gpu[j%d] prefill (prompt) growing kv[j%d]; }"
                " cache (prompt)" % (i, i, i))
        out.append("  branch (a%d > %d) { %s } else { run think (1); }" % (i, i, body))
        i += 1
    out.append("}")
    out.append("run { horizon 100; }")
    return "\n".join(out) + "\n"


def best_of(fn, n=5):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    text = generate(lines)
    ast_holder = {}

    def parse():
        ast_holder["p"] = parse_program(text, "<bench>", from_text=True)

    def do_link():
        link(ast_holder["p"], Overrides(), parse_expr=parse_expression)

    t_parse = best_of(parse)
    t_link = best_of(do_link)
    print("program: %d lines, %d bytes" % (text.count("\n"), len(text)))
    print("serq parse  %8.1f ms" % (t_parse * 1e3))
    print("serq link   %8.1f ms" % (t_link * 1e3))
    try:
        import pyserq
    except ImportError:
        print("pyserq not installed: no reference figure")
        return
    t_ref = best_of(lambda: pyserq.compile(source=text))
    print("pyserq compile %5.1f ms  (serq/pyserq = %.1fx)"
          % (t_ref * 1e3, (t_parse + t_link) / t_ref))


if __name__ == "__main__":
    main()
