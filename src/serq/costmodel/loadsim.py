"""Simulate a benchmark's load on one engine whose step cost is a ``serq
cost`` library: the requests (when each is sent, its prompt and output
lengths) are replayed as recorded, optionally behind a client that keeps
at most ``concurrency`` of them in flight (``vllm bench serve
--max-concurrency``, a closed-loop benchmark's users), and the run's time
to first token, time per output token, inter-token latency, end-to-end
latency and output throughput come back as plain numbers.

The program it writes and runs is serQ 0.1.3 text: the cost library in a
temporary directory, a trace of the requests, and one session that forks a
request per trace row (the timeline replay of docs/cookbook.md).  A request
goes through the engine as vLLM v1 takes it: a slot of ``max_num_seqs``,
KV blocks allocated as the prefill chunks and the decoded tokens are
written, chunked prefill under the step's token budget, recompute
preemption of the youngest request when the cache runs out (without
prefix caching: benchmark prompts share nothing).  With ``reserve`` the
engine admits as TensorRT-LLM's default capacity policy, GUARANTEED_NO_EVICT,
does: only when the blocks of the whole request (prompt and every output
token) are free, reserved at admission, so that no request is ever
preempted."""
import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ..errors import SerqError
from .library import render
from .roofline import Deployment, Knobs

# The metrics a simulated run gives, the keys of `Metrics.values`.
METRICS = ("ttft_median", "ttft_p99", "ttft_mean", "tpot_median", "tpot_p99", "tpot_mean",
           "itl_median", "itl_p99", "itl_mean", "e2el_median", "e2el_p99", "e2el_mean",
           "output_throughput")


@dataclass
class Request:
    sent: float         # seconds after the benchmark's start
    prompt: int         # prompt tokens
    output: int         # output tokens (at least 1)


@dataclass
class Load:
    """What a benchmark sent: requests, and the client's concurrency cap."""
    requests: List[Request]
    concurrency: Optional[int] = None
    label: str = ""
    reserve: bool = False   # the engine reserves a whole request's KV at admission

    @property
    def output_tokens(self) -> int:
        return sum(r.output for r in self.requests)


@dataclass
class Metrics:
    values: Dict[str, float] = field(default_factory=dict)
    preemptions: int = 0

    def __getitem__(self, key: str) -> float:
        return self.values[key]


def percentile(xs: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between the
    order statistics: numpy's default, which `vllm bench serve` uses."""
    s = sorted(xs)
    if not s:
        return math.nan
    pos = (len(s) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(prefix: str, xs: Sequence[float], out: Dict[str, float]) -> None:
    if xs:
        out[prefix + "_median"] = percentile(xs, 50)
        out[prefix + "_p99"] = percentile(xs, 99)
        out[prefix + "_mean"] = sum(xs) / len(xs)


def program_text(d: Deployment, library: str, trace: str, concurrency: Optional[int],
                 reserve: bool = False) -> str:
    """The program that replays ``trace`` on the engine ``library`` describes;
    ``reserve``: admitted only with the whole request's KV reserved."""
    lines = [
        'use "%s";' % library.replace("\\", "/"),
        "let compute_eff = cost_compute_eff();",
        "let memory_eff = cost_memory_eff();",
        "let step_overhead = cost_step_overhead();",
        "pool seqs { cap %d; admit via gpu; }" % d.max_seqs,
        "pool kv { cap cost_kv_blocks() * cost_block_size(); block cost_block_size(); "
        "preempt lifo; }",
    ]
    if reserve:
        # The reservations: as many tokens as the cache, in its blocks.  A
        # request holds prompt + output of them from admission to its end,
        # so the cache itself never runs out.
        lines.append("pool reserved { cap cost_kv_blocks() * cost_block_size(); "
                     "block cost_block_size(); }")
    if concurrency is not None:
        lines.append("pool clients { cap %d; }" % concurrency)
    lines += [
        "stage gpu : step {",
        "  budget %d;" % d.max_batched_tokens,
        "  cost cost_step(compute_eff, memory_eff, step_overhead);",
        "  memory kv;",
        "}",
        "stage clock : delay;",
        'workload { arrive batch(1); trace "%s" ordered; }' % trace.replace("\\", "/"),
        "session {",
        "  loop {",
        "    turn;",
        "    fork {",
    ]
    body = [
        "set t0 = now;",
        # The tokens the request knows when it is (re)admitted: its prompt,
        # or after a preemption what it had computed and the token sampled.
        "hold seqs (1), %skv (min(known, budget_left(gpu))) at admission (known = max(new, computed + 1)) {"
        % ("reserved (new + out), " if reserve else ""),
        "  set has = max(new, computed + 1);",
        "  run gpu prefill (has) growing kv;",
        "  branch (has == new) { set t1 = now; observe ttft = now - t0; }",
        "  run gpu decode (max(0, out - 1 - (has - new))) growing kv;",
        "}",
        "observe e2el = now - t0;",
        "branch (out > 1) { observe tpot = (now - t1) / (out - 1); }",
        "observe done = now;",
    ]
    if concurrency is not None:
        body = ["hold clients (1) {"] + ["  " + b for b in body] + ["}"]
    lines += ["      " + b for b in body]
    lines += [
        "    }",
        "    branch (more == 0) { join; end; }",
        "    run clock (think);",
        "  }",
        "}",
        "run { horizon 1e9; }",
    ]
    return "\n".join(lines) + "\n"


def trace_text(load: Load) -> str:
    rows = ["session,turn,new,out,think"]
    reqs = sorted(load.requests, key=lambda r: r.sent)
    for i, r in enumerate(reqs):
        gap = reqs[i + 1].sent - r.sent if i + 1 < len(reqs) else 0.0
        rows.append("0,%d,%d,%d,%r" % (i, r.prompt, max(1, r.output), max(0.0, gap)))
    return "\n".join(rows) + "\n"


class Simulator(object):
    """Compiles a load's program once a parameter set and runs it; keeps
    the files in a temporary directory until ``close``."""

    def __init__(self, d: Deployment, load: Load):
        if not load.requests:
            raise SerqError("%s: no requests to simulate" % (load.label or "the load"))
        self.d = d
        self.load = load
        self.dir = tempfile.mkdtemp(prefix="serq-calibrate-")
        self.library = os.path.join(self.dir, "costs.sq")
        with open(self.library, "w", encoding="utf-8") as f:
            f.write(render(d, "cost", "costs.sq"))
        self.trace = os.path.join(self.dir, "load.csv")
        with open(self.trace, "w", encoding="utf-8") as f:
            f.write(trace_text(load))
        self.program = os.path.join(self.dir, "load.sq")
        with open(self.program, "w", encoding="utf-8") as f:
            f.write(program_text(d, "costs.sq", "load.csv", load.concurrency, load.reserve))
        self.runs = 0

    def _simulate(self, knobs: Knobs):
        from ..compiler import compile_program
        from ..runner import simulate
        sets = {"compute_eff": repr(float(knobs.compute_eff)),
                "memory_eff": repr(float(knobs.memory_eff)),
                "step_overhead": repr(float(knobs.step_overhead))}
        prog = compile_program(self.program, sets=sets)
        self.runs += 1
        return simulate(prog)

    def per_request(self, knobs: Knobs) -> List[Dict[str, float]]:
        """Each request's ``ttft`` and ``e2el`` (seconds), in the order they
        were sent: what a benchmark client would have recorded."""
        sim = self._simulate(knobs)
        out: List[Dict[str, float]] = [{} for _ in self.load.requests]
        for o in sim.observations:
            if o.name in ("ttft", "e2el"):
                for turn, v in zip(o.turns, o.values):
                    out[int(turn) - 1][o.name] = v   # turns count from 1
        return out

    def run(self, knobs: Knobs) -> Metrics:
        from ..report.build import build_report
        sim = self._simulate(knobs)
        obs = {o.name: o for o in sim.observations}
        out: Dict[str, float] = {}
        for name in ("ttft", "tpot", "e2el"):
            summarize(name, list(obs[name].values) if name in obs else [], out)
        report = build_report(sim, extras=False)
        gpu = [s for s in report.stages if s.name == "gpu"][0]
        for key, attr in (("itl_median", "itl_p50"), ("itl_p99", "itl_p99"),
                          ("itl_mean", "mean_itl")):
            v = getattr(gpu, attr, None)
            if v is not None and not math.isnan(v):
                out[key] = v
        done = list(obs["done"].values) if "done" in obs else []
        if done:
            start = min(r.sent for r in self.load.requests)
            span = max(done) - start
            if span > 0:
                out["output_throughput"] = self.load.output_tokens / span
        pools = [p for p in report.pools if p.name == "kv"]
        return Metrics(out, int(pools[0].preemptions) if pools else 0)

    def close(self) -> None:
        for name in os.listdir(self.dir):
            try:
                os.remove(os.path.join(self.dir, name))
            except OSError:
                pass
        try:
            os.rmdir(self.dir)
        except OSError:
            pass


def simulate_load(d: Deployment, load: Load, knobs: Knobs) -> Metrics:
    sim = Simulator(d, load)
    try:
        return sim.run(knobs)
    finally:
        sim.close()


def fixed_load(n: int, prompt: int, output: int, concurrency: Optional[int] = None,
               rate: Optional[float] = None, seed: int = 0, label: str = "",
               stagger: float = 0.0, reserve: bool = False) -> Load:
    """``n`` requests of the same lengths, all sent at once (behind the
    concurrency cap, if any) or as a Poisson stream of ``rate`` a second
    drawn with ``seed``.  With a cap and ``stagger`` > 0 the first
    ``concurrency`` requests are sent evenly over ``stagger`` seconds and
    the rest at its end: the clients of a closed-loop benchmark in its
    steady state, not all starting their prefills in the same step (with
    equal lengths they would then stay in lock step to the end)."""
    import random
    rng = random.Random(seed)
    t = 0.0
    reqs: List[Request] = []
    for i in range(n):
        if concurrency is not None and stagger > 0:
            t = stagger * min(i, concurrency) / concurrency
        reqs.append(Request(t, prompt, output))
        if rate is not None and not math.isinf(rate):
            t += rng.expovariate(rate)
    return Load(reqs, concurrency, label, reserve)
