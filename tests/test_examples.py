"""The example programs of examples/ and the library lib/vllm.sq.

Every example compiles; when pyserq is installed, `serq run --json` prints
the reference's report byte for byte; and each example shows the behaviour
it was written to show (one assertion or two per example).

The bounds of the behaviour assertions come from runs, not from guesses:
each example was run at its own seed and at five more seeds 10^7 apart
(seeds 29, 10000001, 20000003, 30000005, 40000007, 50000011 — far apart,
since serQ's per-session streams shift by one per seed step), and each
bound sits well outside the range those runs gave; the comment at each
assertion quotes the range. Where a bound follows from the program itself
(a cost formula, a latency), the comment derives it instead.
"""
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
LIBRARIES = {EXAMPLES / "policies" / "workload.sq"}     # definitions only
PROGRAMS = sorted(p for p in EXAMPLES.rglob("*.sq") if p not in LIBRARIES)

# The examples written on lib/vllm.sq (with the older chat.sq), compared
# with the reference byte for byte. The others (examples/admission) have
# their own tests in test_admission.py.
COMPARED = [
    "vllm_single_turn.sq",
    "chat_prefix_reuse.sq",
    "agent_subagents.sq",
    "pd_disaggregation.sq",
    "replica_routing.sq",
    "policies/fastertransformer.sq",
    "policies/orca.sq",
    "policies/sarathi.sq",
    "chat.sq",
]

# serq and pyserq disagree on this program (see the reason); serq is not
# changed for it here, so the byte comparison is an expected failure.
# Examples whose report serq does not yet reproduce: name -> why.
DISAGREE = {}


@functools.lru_cache(maxsize=None)
def serq_json(rel, *options):
    """`serq run --json` of examples/REL, run from the example's directory."""
    path = EXAMPLES / rel
    r = subprocess.run(
        [sys.executable, "-m", "serq", "run", "--json", "--quiet", *options, path.name],
        capture_output=True, text=True, cwd=path.parent)
    assert r.returncode == 0, r.stderr
    return r.stdout


def report(rel, *options):
    return json.loads(serq_json(rel, *options))


def stage(rep, name, index=None):
    (row,) = [s for s in rep["stages"] if s["name"] == name and s["index"] == index]
    return row


def pool(rep, name, index=None):
    (row,) = [p for p in rep["pools"] if p["name"] == name and p["index"] == index]
    return row


# ---- every example compiles ---------------------------------------------

@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_compiles(path):
    r = subprocess.run([sys.executable, "-m", "serq", "check", path.name],
                       capture_output=True, text=True, cwd=path.parent)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("OK: ")


def test_library_examples_are_compared():
    uses = {str(p.relative_to(EXAMPLES)) for p in PROGRAMS if 'use "' in p.read_text()}
    assert uses <= set(COMPARED)
    assert {"vllm_single_turn.sq", "chat_prefix_reuse.sq", "agent_subagents.sq",
            "replica_routing.sq", "policies/orca.sq"} <= uses


# ---- byte for byte with the reference ------------------------------------

def _compared(rel):
    if rel in DISAGREE:
        return pytest.param(rel, marks=pytest.mark.xfail(strict=True, reason=DISAGREE[rel]))
    return rel


@pytest.mark.parametrize("rel", [_compared(r) for r in COMPARED])
def test_example_report_equals_reference(rel):
    pyserq = pytest.importorskip("pyserq")
    expected = pyserq.run(pyserq.compile(str(EXAMPLES / rel))).json()
    assert serq_json(rel) == expected + "\n"


def test_override_variants_equal_reference():
    """The variants the examples' comments suggest, through --set."""
    pyserq = pytest.importorskip("pyserq")
    for rel, name, value in [("chat_prefix_reuse.sq", "keep_cache", 0),
                             ("replica_routing.sq", "route_by", 2)]:
        expected = pyserq.run(pyserq.compile(str(EXAMPLES / rel), sets={name: value})).json()
        assert serq_json(rel, "--set", "%s=%s" % (name, value)) == expected + "\n", rel


# ---- what each example shows ----------------------------------------------

def test_single_turn_keeps_up_and_batches():
    rep = report("vllm_single_turn.sq")
    rate = 10
    # Finished requests per second against the arrival rate: 0.993-1.012 of
    # it over the six seeds. A Poisson count over 540 s at rate 10 has a
    # relative sd of 1/sqrt(5400) = 1.4 %, so +-6 % is four sd.
    assert abs(rep["ended"] / (rep["end"] - rep["warmup"]) / rate - 1) < 0.06
    # Continuous batching: the mean decode batch was 15.8-16.4; above 10.
    assert stage(rep, "gpu")["mean_decode_batch"] > 10
    # The H100's KV cache (lib/costs/llama-3.1-8b-h100-sxm.sq) never runs
    # out at this load (no preemption at any of the seeds); a cache of 1024
    # blocks does.
    assert pool(rep, "kv")["preemptions"] == 0
    assert pool(report("vllm_single_turn.sq", "--set", "kv_blocks=1024"), "kv")["preemptions"] > 0


def test_chat_prefix_cache_is_hit_and_speeds_up_first_tokens():
    rep = report("chat_prefix_reuse.sq")
    off = report("chat_prefix_reuse.sq", "--set", "keep_cache=0")
    # Turns 2+ take 0.898-0.903 of their prompt from the cache over the six
    # seeds (the conversation so far, less the evicted tail blocks and the
    # partial last block); above 0.6.
    assert rep["observes"]["late_hit"]["mean"] > 0.6
    assert off["observes"]["late_hit"]["mean"] == 0
    # Without the cache the mean TTFT is 3.85-4.03 times as long; above 2.
    assert off["observes"]["ttft"]["mean"] > 2 * rep["observes"]["ttft"]["mean"]


def test_agent_fan_out_runs_in_parallel():
    o = report("agent_subagents.sq")["observes"]
    # A task against its calls in sequence (plan, three sub-agents on
    # average, final): 0.638-0.650 over the six seeds; below 0.8.
    serial = (o["plan_time"]["mean"] + 3 * o["sub_time"]["mean"]
              + o["final_time"]["mean"])
    assert o["task_time"]["mean"] < 0.8 * serial
    # The final call finds the context cached; concurrent sub-agents often
    # do not (one entry per session): the gap was 0.360-0.371; above 0.25.
    assert o["final_hit"]["mean"] - o["sub_hit"]["mean"] > 0.25


def test_pd_tiers_keep_decodes_free_of_long_prefills():
    rep = report("pd_disaggregation.sq")
    for i in (0, 1):
        p = stage(rep, "P", i)                     # prefill engines only prefill
        assert p["iterations"] > 0 and p["decode_only"] == 0 and p["mixed"] == 0
    # Derived bound, from lib/costs/llama-3.1-70b-h100-sxm-tp4.sq: a decode
    # engine's iteration carries at most its budget of 1024 tokens (so at
    # most 1024 decoders, and prefill chunks of prompts under 512 tokens:
    # `attention` <= 1024 * 512) and reads at most its whole KV pool
    # (482,288 tokens). Its FLOPs are then at most 3.624e13, 61.1 ms at 0.6
    # of 989.4 TFLOP/s (above the 27.7 ms of its bytes), plus 10.2 ms of
    # all-reduce and 1.5 ms of overhead: 72.8 ms. No inter-token gap on D
    # is longer (no preemption: checked); the ITL quantile is within 0.5 %
    # of a sample. (Seen: 0.024-0.027.)
    bound = ((34225520640 * 1024 + 525336576 * 1024 + 655360 * (1024 * 512 + 482288))
             / (989400000000000 * 0.6)
             + 8.738133333333334e-06 * 1024 + 0.00128 + 0.0015)
    for j in (0, 1):
        assert pool(rep, "D.kv", j)["preemptions"] == 0
        assert stage(rep, "D", j)["itl_p99"] <= bound * 1.005
    # Every pulled request waits the link latency (0.002 s) and then a
    # transfer of positive duration.
    assert rep["observes"]["kv_wait"]["mean"] > 0.002
    assert stage(rep, "D.nic.latency", 0)["completed"] > 0


def test_replica_router_balances_and_sticky_routing_reuses_prefixes():
    rep = report("replica_routing.sq")
    admitted = [pool(rep, "seqs", k)["admissions"] for k in range(4)]
    # Least-loaded routing: most/fewest admissions per replica was
    # 1.05-1.14 over the six seeds; below 1.5.
    assert max(admitted) < 1.5 * min(admitted)
    sticky = report("replica_routing.sq", "--set", "route_by=2")
    # Sticky routing multiplies the mean hit share by 3.71-4.07; above 2.5.
    assert (sticky["observes"]["hit_share"]["mean"]
            > 2.5 * rep["observes"]["hit_share"]["mean"])


def test_policies_compare():
    ft = report("policies/fastertransformer.sq")
    orca = report("policies/orca.sq")
    sarathi = report("policies/sarathi.sq")
    # Request-level batching never mixes prefill and decode in a step.
    assert stage(ft, "gpu")["mixed"] == 0
    # FasterTransformer falls behind at this load: it finished 0.745-0.769
    # of Orca's requests over the six seeds; below 0.85.
    assert ft["ended"] < 0.85 * orca["ended"]
    # Stall-free batching: Sarathi's ITL p99 was 0.31-0.37 of Orca's; below
    # 0.5. Both keep up (Sarathi finished 1.000-1.0004 of Orca's count).
    assert stage(sarathi, "gpu")["itl_p99"] < 0.5 * stage(orca, "gpu")["itl_p99"]
    assert abs(sarathi["ended"] / orca["ended"] - 1) < 0.02
