"""`serq calibrate`: the fits recover parameters (or metrics) the test put
into its own synthetic measurements, bad files get located errors, and the
library it writes is the `serq cost` library with the fitted values (pyserq
compiles a program using it)."""
import json
import random
import re
import subprocess
import sys

import pytest

from serq.cli import main
from serq.costmodel.calibrate import Case, fit_simulated, fit_steps
from serq.costmodel.catalogue import lookup
from serq.costmodel.loadsim import Load, Request, Simulator, fixed_load, percentile
from serq.costmodel.measure import read_bench, read_steps
from serq.costmodel.roofline import DEFAULT_KNOBS, Knobs, deploy
from serq.errors import SerqError

pytest.importorskip("scipy")

ENGINE = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"]


def engine():
    return deploy(lookup("model", "llama-3.1-8b"), lookup("gpu", "h100-sxm"))


def step_csv(path, knobs, n=150, noise=0.0, seed=1, header=None, unit_ms=True):
    """Steps of a vLLM-like mix (decode batches of 1 to 256 at contexts of
    100 to 3000 tokens, some with a prefill chunk), timed by the roofline
    with ``knobs`` and optional relative noise."""
    d = engine()
    rng = random.Random(seed)
    cols = header or ["tokens", "prefilled", "decoders", "kv_decode", "kv_prefill", "attention",
                      "duration_ms" if unit_ms else "duration"]
    lines = [",".join(cols)]
    for _ in range(n):
        b = rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256])
        ctx = rng.randint(100, 3000)
        pre = rng.choice([0, 0, 0, 512, 2048, 8000])
        tokens, kvd, kvp, att = b + pre, b * ctx, pre, pre * pre / 2
        t = d.step_time(tokens, b, kvd, kvp, att, *knobs.as_tuple())
        t *= 1 + rng.gauss(0, noise)
        vals = {"tokens": tokens, "prefilled": pre, "decoders": b, "kv_decode": kvd,
                "kv_prefill": kvp, "attention": att, "duration_ms": t * 1e3, "duration": t}
        lines.append(",".join("%r" % vals[c] for c in cols))
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- the per-step fit -------------------------------------------------------

@pytest.mark.parametrize("true", [Knobs(0.45, 0.7, 0.0022), Knobs(0.8, 0.55, 0.0006)])
def test_step_fit_recovers_the_coefficients(tmp_path, true):
    steps = read_steps(str(step_csv(tmp_path / "steps.csv", true, noise=0.01)))
    fit = fit_steps(engine(), steps)
    assert fit.knobs.compute_eff == pytest.approx(true.compute_eff, rel=0.03)
    assert fit.knobs.memory_eff == pytest.approx(true.memory_eff, rel=0.03)
    assert fit.knobs.step_overhead == pytest.approx(true.step_overhead, rel=0.1, abs=1e-4)
    errors = [abs(a / s.duration - 1) for a, s in zip(fit.after, steps.rows)]
    assert percentile(errors, 50) < 0.012          # the noise, not a misfit
    assert fit.notes == []


def test_step_fit_without_compute_bound_steps_keeps_compute_eff_and_says_so(tmp_path):
    p = tmp_path / "decode.csv"
    d = engine()
    rows = ["decoders,kv_decode,duration_us"]
    for b in (1, 4, 16, 64, 256):
        for ctx in (200, 1000, 3000):
            t = d.step_time(b, b, b * ctx, 0, 0, 0.6, 0.75, 0.001)
            rows.append("%d,%d,%r" % (b, b * ctx, t * 1e6))
    # no `tokens` column: the error says so
    p.write_text("\n".join(rows) + "\n")
    with pytest.raises(SerqError, match="no `tokens` column"):
        read_steps(str(p))
    rows[0] = "tokens,kv_decode,duration_us"
    p.write_text("\n".join(rows) + "\n")
    steps = read_steps(str(p))
    assert [s.decoders for s in steps.rows[:3]] == [1, 1, 1]     # every token a decode
    fit = fit_steps(d, steps)
    assert fit.knobs.memory_eff == pytest.approx(0.75, rel=1e-3)
    assert fit.knobs.step_overhead == pytest.approx(0.001, rel=1e-2)
    assert fit.knobs.compute_eff == DEFAULT_KNOBS.compute_eff
    assert any("no step is compute bound" in n for n in fit.notes)


def test_calibrate_steps_command_writes_the_fitted_library(tmp_path, capsys):
    csv_path = step_csv(tmp_path / "steps.csv", Knobs(0.5, 0.65, 0.002), noise=0.0)
    out = tmp_path / "fitted.sq"
    assert main(["calibrate"] + ENGINE + ["--steps", str(csv_path), "-o", str(out)]) == 0
    report = capsys.readouterr().out
    assert "wrote %s" % out in report
    assert "compute_eff    0.6 -> 0.5" in report and "memory_eff     0.8 -> 0.65" in report
    lines = [l for l in report.splitlines() if l.startswith("all steps")]
    assert len(lines) == 1 and lines[0].split()[5] == "0.0"      # median |error| after
    text = out.read_text()
    assert "def cost_compute_eff() = 0.5;" in text
    assert "def cost_memory_eff() = 0.65;" in text
    assert "def cost_step_overhead() = 0.002;" in text
    assert "Written by `serq calibrate --model llama-3.1-8b --gpu h100-sxm --steps" in text
    # the same library as `serq cost`, but for the three values and the comments
    from serq.costmodel.library import render
    plain = render(engine(), "cost", "fitted.sq").splitlines()
    fitted = text.splitlines()
    assert len([l for l in fitted if l.startswith("def ")]) == \
        len([l for l in plain if l.startswith("def ")])
    assert [l for l in fitted if l.startswith("def cost_flops")] == \
        [l for l in plain if l.startswith("def cost_flops")]


def test_pyserq_runs_a_program_using_the_fitted_library(tmp_path):
    pyserq = pytest.importorskip("pyserq")
    csv_path = step_csv(tmp_path / "steps.csv", Knobs(0.5, 0.65, 0.002))
    lib = tmp_path / "lib.sq"
    assert main(["calibrate"] + ENGINE + ["--steps", str(csv_path), "-o", str(lib)]) == 0
    prog = tmp_path / "p.sq"
    prog.write_text('use "lib.sq";\n'
                    "pool kv { cap cost_kv_blocks() * cost_block_size(); "
                    "block cost_block_size(); preempt lifo; }\n"
                    "stage gpu : step { budget 2048; cost cost_step(cost_compute_eff(), "
                    "cost_memory_eff(), cost_step_overhead()); memory kv; }\n"
                    "workload { arrive poisson(4); }\n"
                    "session { hold kv (300) { run gpu prefill (300) growing kv; "
                    "run gpu decode (50) growing kv; } }\n"
                    "run { horizon 20; seed 2; }\n")
    import serq
    ours = serq.run(serq.compile(str(prog))).json()
    theirs = pyserq.run(pyserq.compile(str(prog))).json()
    assert json.loads(ours) == json.loads(theirs)


# ---- the vllm bench fit -----------------------------------------------------

def bench_fixture(path, true, n=40, rate=4.0, seed=3, drop=()):
    """A `vllm bench serve --save-detailed` result, made by replaying a
    load through serq with known parameters (the per-request ITL lists are
    left out: serq has no per-token gaps to put in them)."""
    rng = random.Random(seed)
    reqs, t = [], 0.0
    for _ in range(n):
        reqs.append(Request(t, rng.randint(200, 1500), rng.randint(20, 160)))
        t += rng.expovariate(rate)
    sim = Simulator(engine(), Load(reqs))
    try:
        per = sim.per_request(true)
    finally:
        sim.close()
    end = max(r.sent + p["e2el"] for r, p in zip(reqs, per))
    data = {"date": "20250101-000000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B",
            "num_prompts": n, "request_rate": rate, "burstiness": 1.0, "max_concurrency": None,
            "duration": end, "completed": n,
            "output_throughput": sum(r.output for r in reqs) / end,
            "start_times": [1700000000.0 + r.sent for r in reqs],
            "input_lens": [r.prompt for r in reqs], "output_lens": [r.output for r in reqs],
            "ttfts": [p["ttft"] for p in per], "latencies": [p["e2el"] for p in per],
            "errors": [""] * n, "generated_texts": ["..."] * n}
    for key in drop:
        data.pop(key)
    path.write_text(json.dumps(data))
    return path


def test_bench_fit_matches_the_medians_and_p99s(tmp_path, capsys):
    true = Knobs(0.5, 0.65, 0.0025)
    path = bench_fixture(tmp_path / "bench.json", true)
    out = tmp_path / "fitted.sq"
    assert main(["calibrate"] + ENGINE + ["--bench", str(path), "--max-evals", "40",
                                          "-o", str(out)]) == 0
    report = capsys.readouterr().out
    rows = {}
    for line in report.splitlines():
        for key in ("ttft median", "ttft p99", "tpot median", "e2el median", "e2el p99"):
            if line.startswith(key + " "):
                rows[key] = line
    assert len(rows) == 5
    # the defaults are off by more than 10 %; the fit within 3 %
    for key, line in rows.items():
        before, after = [float(x) for x in re.findall(r"\(([+-][0-9.]+) %\)", line)]
        assert abs(before) > 10 and abs(after) < 3, line
    fitted = read_fitted(out.read_text())
    # a decode step at the load's batch sizes costs what it cost under `true`
    d = engine()
    for b in (1, 2, 4):
        assert d.step_time(b, b, b * 900, 0, 0, *fitted.as_tuple()) == pytest.approx(
            d.step_time(b, b, b * 900, 0, 0, *true.as_tuple()), rel=0.03)


def read_fitted(text):
    vals = {}
    for line in text.splitlines():
        for name in ("compute_eff", "memory_eff", "step_overhead"):
            if line.startswith("def cost_%s() = " % name):
                vals[name] = float(line.split("=")[1].split(";")[0])
    return Knobs(vals["compute_eff"], vals["memory_eff"], vals["step_overhead"])


def test_bench_without_start_times_draws_the_arrivals_from_the_rate(tmp_path):
    path = bench_fixture(tmp_path / "b.json", DEFAULT_KNOBS, n=20, drop=("start_times",))
    b0 = read_bench(str(path), seed=0)
    b1 = read_bench(str(path), seed=1)
    assert "Poisson arrivals at 4 a second, seed 0" in b0.arrivals
    sent0 = [r.sent for r in b0.load.requests]
    assert sent0 == [r.sent for r in read_bench(str(path), seed=0).load.requests]
    assert sent0 != [r.sent for r in b1.load.requests]
    assert sent0[0] == 0 and sorted(sent0) == sent0
    assert 20 / 4 * 0.3 < sent0[-1] < 20 / 4 * 2.5
    data = json.loads(path.read_text())
    data["request_rate"] = "inf"
    data["max_concurrency"] = 4
    path.write_text(json.dumps(data))
    b = read_bench(str(path))
    assert [r.sent for r in b.load.requests] == [0.0] * 20 and b.load.concurrency == 4


def test_summary_fields_are_targets_when_the_lists_are_missing(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"request_rate": "inf", "input_lens": [100, 200, 300],
                             "output_lens": [10, 0, 30], "errors": ["", "timeout", ""],
                             "median_ttft_ms": 20.0, "p99_ttft_ms": 31.0,
                             "median_tpot_ms": 7.5, "p99_itl_ms": None}))
    b = read_bench(str(p))
    assert b.failed == 1 and [r.prompt for r in b.load.requests] == [100, 300]
    assert b.targets == {"ttft_median": 0.02, "ttft_p99": 0.031, "tpot_median": 0.0075}


def test_fit_simulated_stops_at_the_evaluation_budget():
    d = engine()
    target_sim = Simulator(d, fixed_load(8, 300, 40))
    try:
        target = target_sim.run(Knobs(0.5, 0.6, 0.003)).values
        k, tried = fit_simulated([Case(target_sim, target)], max_evals=6)
    finally:
        target_sim.close()
    assert tried <= 7 and target_sim.runs == tried + 1


def test_concurrency_cap_holds_requests_back():
    d = engine()
    free = Simulator(d, fixed_load(16, 512, 32))
    capped = Simulator(d, fixed_load(16, 512, 32, concurrency=4))
    try:
        a, b = free.run(DEFAULT_KNOBS), capped.run(DEFAULT_KNOBS)
    finally:
        free.close()
        capped.close()
    # four at a time: the first token comes sooner, the last request later
    assert b["ttft_median"] < a["ttft_median"]
    assert b["e2el_p99"] < a["e2el_p99"] * 4
    assert b["output_throughput"] < a["output_throughput"]


def test_reserving_the_whole_request_never_preempts():
    # An L4 holds 24k tokens of Llama-3.1-8B's cache: 16 requests of 1500 + 1500
    # tokens fit as prompts (vLLM admits them and preempts as they grow) but
    # only 8 whole (TensorRT-LLM's GUARANTEED_NO_EVICT admits 8 at a time).
    d = deploy(lookup("model", "llama-3.1-8b"), lookup("gpu", "l4"))
    assert 8 * 3000 <= d.kv_tokens() < 9 * 3000 and d.kv_tokens() >= 16 * 1500
    grow = Simulator(d, fixed_load(16, 1500, 1500))
    whole = Simulator(d, fixed_load(16, 1500, 1500, reserve=True))
    try:
        a, b = grow.run(DEFAULT_KNOBS), whole.run(DEFAULT_KNOBS)
        firsts = sorted(r["ttft"] for r in whole.per_request(DEFAULT_KNOBS))
    finally:
        grow.close()
        whole.close()
    assert a.preemptions > 0 and b.preemptions == 0
    # the second eight wait for the first eight to finish
    assert firsts[8] > firsts[7] + 1000 * d.decode_step(8, 1500) * 0.9
    assert b["ttft_median"] > a["ttft_median"]


# ---- errors -----------------------------------------------------------------

CSV_ERRORS = [
    ("", "is empty", None),
    ("tokens,foo\n1,2\n", "no step-time column", ":1:1:"),
    ("tokens,duration_ms\n4,9.1\n8,abc\n9,3\n", "column `duration_ms` is `abc`, not a number",
     ":3:3:"),
    ("tokens,duration\n4,0.1\n8,-1\n9,0.3\n", "must be positive", ":3:3:"),
    ("tokens,duration\n4,0.1\n8\n9,0.3\n", "1 cells, the header has 2", ":3:1:"),
    ("tokens,prefilled,duration\n4,9,0.1\n8,1,0.2\n9,3,0.2\n",
     "9 prefilled tokens are more than the step's 4 tokens", ":2:3:"),
    ("tokens,duration\n4,0.1\n", "has 1 step row", None),
    ("tokens,kv_tokens,kv_decode,duration\n1,2,3,4\n", "both given", ":1:8:"),
]


@pytest.mark.parametrize("text,message,where", CSV_ERRORS)
def test_bad_step_csv_gets_a_located_error(tmp_path, capsys, text, message, where):
    p = tmp_path / "steps.csv"
    p.write_text(text)
    assert main(["calibrate"] + ENGINE + ["--steps", str(p)]) == 1
    err = capsys.readouterr().err
    assert message in err and "help:" in err and "Traceback" not in err
    assert str(p) in err
    if where:
        assert err.startswith(str(p) + where)


BENCH_ERRORS = [
    ("", "is empty"),
    ('{"input_lens": [1,2', "not JSON"),
    ("[1]", "the JSON is a list"),
    ('{"output_lens": [1]}', "no field `input_lens`"),
    ('{"input_lens": [10, 20], "output_lens": [5]}', "`output_lens` has 1 entries"),
    ('{"input_lens": [10, 20], "output_lens": [5, 6], "request_rate": "inf", '
     '"ttfts": [0.1, "x"]}', "`ttfts[1]` is \"x\""),
    ('{"input_lens": [10, 20], "output_lens": [5, 6], "ttfts": [0.1, 0.2]}',
     "no field `request_rate`"),
    ('{"input_lens": [10, 20], "output_lens": [5, 6], "request_rate": "inf"}',
     "no measured latencies"),
    ('{"input_lens": [10, -2], "output_lens": [5, 6], "request_rate": "inf"}',
     "`input_lens[1]` is -2"),
    ('{"input_lens": [10], "output_lens": [0], "request_rate": 2, "ttfts": [0]}',
     "every request failed"),
]


@pytest.mark.parametrize("text,message", BENCH_ERRORS)
def test_bad_bench_json_gets_a_located_error(tmp_path, capsys, text, message):
    p = tmp_path / "bench.json"
    p.write_text(text)
    assert main(["calibrate"] + ENGINE + ["--bench", str(p)]) == 1
    err = capsys.readouterr().err
    assert message in err and "help:" in err and "Traceback" not in err
    assert str(p) in err


def test_usage_errors(tmp_path, capsys):
    p = step_csv(tmp_path / "s.csv", DEFAULT_KNOBS, n=5)
    assert main(["calibrate", "--steps", str(p)]) == 2
    assert "needs --model and --gpu" in capsys.readouterr().err
    assert main(["calibrate"] + ENGINE) == 2
    assert "give --steps CSV or --bench JSON" in capsys.readouterr().err
    assert main(["calibrate"] + ENGINE + ["--steps", str(p), "--bench", str(p)]) == 2
    assert main(["calibrate", "--model", "llama-9", "--gpu", "h100-sxm", "--steps", str(p)]) == 1
    assert "unknown model" in capsys.readouterr().err
    assert main(["calibrate"] + ENGINE + ["--steps", str(tmp_path / "missing.csv")]) == 1
    assert "cannot read the step CSV" in capsys.readouterr().err


def test_calibrate_imports_scipy_only_when_it_runs(tmp_path):
    code = ("import sys; from serq.cli import _parser; _parser(['calibrate']).parse_args("
            "['calibrate', '--model', 'm', '--gpu', 'g', '--steps', 'x']); "
            "print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         check=True).stdout.strip()
    assert out == "False"
