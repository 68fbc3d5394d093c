"""Print the key-number table of docs/examples.md.

    python docs/examples_table.py

runs every example of the table with `serq run --json` (from the example's
directory, at the seed its `run` block gives) and prints one markdown row
each. Variants are the same program with a `--set`.
"""
import json
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

RUNS = [
    ("vllm_single_turn.sq", []),
    ("chat_prefix_reuse.sq", []),
    ("chat_prefix_reuse.sq", ["keep_cache=0"]),
    ("agent_subagents.sq", []),
    ("pd_disaggregation.sq", []),
    ("replica_routing.sq", []),
    ("replica_routing.sq", ["route_by=1"]),
    ("replica_routing.sq", ["route_by=2"]),
    ("policies/fastertransformer.sq", []),
    ("policies/orca.sq", []),
    ("policies/sarathi.sq", []),
]


def run(rel, sets):
    path = EXAMPLES / rel
    opts = [a for s in sets for a in ("--set", s)]
    out = subprocess.run([sys.executable, "-m", "serq", "run", "--json", "--quiet",
                          *opts, path.name], cwd=path.parent, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def mean(rep, name):
    o = rep["observes"].get(name)
    return "%.3f" % o["mean"] if o and o["mean"] is not None else "–"


def main():
    print("| example | arrivals | ended | ttft mean (s) | request/turn/task mean (s) "
          "| hit share | ITL p99 (s) | decode batch | preemptions |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rel, sets in RUNS:
        rep = run(rel, sets)
        steps = [s for s in rep["stages"] if s["iterations"] and s["itl_p99"] is not None]
        itl = max(s["itl_p99"] for s in steps)
        batch = sum(s["mean_decode_batch"] for s in steps) / len(steps)
        whole = next(mean(rep, n) for n in ("e2e", "turn_time", "task_time")
                     if n in rep["observes"])
        preempt = sum(p["preemptions"] for p in rep["pools"])
        name = rel + "".join(" `--set %s`" % s for s in sets)
        print("| %s | %d | %d | %s | %s | %s | %.3f | %.1f | %d |" % (
            name, rep["arrivals"], rep["ended"], mean(rep, "ttft"), whole,
            mean(rep, "hit_share"), itl, batch, preempt))


if __name__ == "__main__":
    main()
