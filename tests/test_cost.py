"""`serq cost`: the catalogue, vLLM's KV capacity, the roofline step cost and
the library it writes (serQ 0.1.3 syntax: pyserq compiles a program that
uses it to serq's IR and runs it to serq's report).

The hand calculations below start from the config.json numbers, not from
serq's parameter counter, so they check it."""
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from serq.cli import main
from serq.costmodel import catalogue
from serq.costmodel.library import num, render
from serq.costmodel.roofline import (COMPUTE_EFF, GIB, MEMORY_EFF, RUNTIME_RESERVE_GIB,
                                     STEP_OVERHEAD, count_params, deploy)
from serq.errors import SerqError

ROOT = Path(__file__).resolve().parent.parent


def dep(model, gpu, **kw):
    return deploy(catalogue.lookup("model", model), catalogue.lookup("gpu", gpu), **kw)


# ---- the catalogue ----------------------------------------------------------

REQUIRED_MODELS = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen3-8b", "qwen3-32b",
                   "qwen2.5-72b", "mistral-7b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-20b",
                   "gpt-oss-120b"]
REQUIRED_GPUS = ["a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "l40s", "l4",
                 "mi300x"]


def test_catalogue_has_the_entries_with_sources():
    models, gpus = catalogue.models(), catalogue.gpus()
    assert set(REQUIRED_MODELS) <= set(models)
    assert set(REQUIRED_GPUS) <= set(gpus)
    for m in models.values():
        assert m.source.startswith("https://huggingface.co/") and m.source.endswith("config.json")
        assert m.published["source"].startswith("https://")
        assert m.checked in ("config", "memory")
    for g in gpus.values():
        assert g.source.startswith("https://")
        assert 0 < g.usable_gib <= g.memory_gb            # the driver keeps some
        assert g.fp8_tflops is None or g.fp8_tflops >= g.bf16_tflops


@pytest.mark.parametrize("key", REQUIRED_MODELS)
def test_parameter_count_matches_the_published_total(key):
    m = catalogue.models()[key]
    assert count_params(m).total(m) / 1e9 == pytest.approx(m.published["params_b"], rel=0.01)


def test_moe_active_parameters():
    # Mixtral: 12.9 B "used a token" counts the embedding too.
    m = catalogue.models()["mixtral-8x7b"]
    p = count_params(m)
    assert (p.active(m) + p.embed) / 1e9 == pytest.approx(12.9, rel=0.01)
    # Hand count: 32 layers x (attention 41.94 M + 2 experts x 3 x 4096 x 14336) + head.
    hand = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 3 * 4096 * 14336 + 2 * 4096
                 + 4096 * 8) + 32000 * 4096 + 4096
    assert p.active(m) == hand
    # DeepSeek-V3: 36.6 B activated without the embedding, 37 B rounded.
    m = catalogue.models()["deepseek-v3"]
    assert count_params(m).active(m) / 1e9 == pytest.approx(36.6, rel=0.01)
    for key in ("gpt-oss-20b", "gpt-oss-120b"):
        m = catalogue.models()[key]
        assert count_params(m).active(m) / 1e9 == pytest.approx(m.published["active_b"], rel=0.02)
    # The roofline's FLOPs a token follow the active parameters, not the total.
    d = dep("mixtral-8x7b", "h100-sxm", tp=2)
    mx = catalogue.models()["mixtral-8x7b"]
    pm = count_params(mx)
    assert d.flops_per_token() == 2 * (pm.active(mx) - pm.head - pm.norms) / 2


def test_lookup_takes_names_and_hugging_face_ids():
    assert catalogue.lookup("model", "meta-llama/Llama-3.1-8B").key == "llama-3.1-8b"
    assert catalogue.lookup("model", "Mixtral-8x7B-v0.1").key == "mixtral-8x7b"
    assert catalogue.lookup("gpu", "H100-SXM").key == "h100-sxm"


# ---- KV capacity ------------------------------------------------------------

def test_kv_capacity_llama_8b_on_h100_by_hand():
    # config.json: 32 layers, hidden 4096, 32 heads, 8 KV heads, head_dim 128,
    # intermediate 14336, vocab 128256, untied.
    embed = 128256 * 4096
    layer = 4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336 + 2 * 4096
    params = 2 * embed + 32 * layer + 4096
    assert params == 8_030_261_248
    weights = 2 * params                                     # bf16
    assert weights / 1e9 == pytest.approx(16.06, abs=0.005)
    per_token = 2 * 32 * 8 * 128 * 2                         # K and V, layers, heads, dim, bytes
    assert per_token == 128 * 1024
    # vLLM: memory x utilization, less weights, the profile step's peak
    # (8192 tokens: residual x 2, q + k + v, gate and up; fp32 logits of 256
    # sequences) and the runtime's own memory.
    activations = 8192 * (2 * 4096 + 4096 + 2 * 1024 + 2 * 14336) * 2 + 256 * 128256 * 4
    free = 79.2 * GIB * 0.9 - weights - activations - RUNTIME_RESERVE_GIB * GIB
    blocks = int(free // (16 * per_token))
    d = dep("llama-3.1-8b", "h100-sxm")
    assert d.weight_bytes() == weights
    assert d.kv_token_bytes() == per_token
    assert d.activation_bytes() == activations
    assert d.kv_blocks() == blocks
    assert 27_000 < blocks < 29_000                          # about 54.5 GiB of 2 MiB blocks
    assert d.kv_tokens() == 16 * blocks
    # A lower utilization leaves fewer blocks; a larger block, fewer of them.
    assert dep("llama-3.1-8b", "h100-sxm", utilization=0.5).kv_blocks() < blocks
    assert dep("llama-3.1-8b", "h100-sxm", block_size=32).kv_blocks() == \
        int(free // (32 * per_token))


def test_tensor_parallel_shards_kv_heads_and_weights():
    one = dep("llama-3.1-70b", "h100-sxm", tp=2)
    four = dep("llama-3.1-70b", "h100-sxm", tp=4)
    # 8 KV heads over 4 ranks: 2 a rank.
    assert four.kv_token_bytes() == 2 * 80 * 2 * 128 * 2
    assert one.kv_token_bytes() == 2 * 80 * 4 * 128 * 2
    assert four.weight_bytes() == pytest.approx(one.weight_bytes() / 2)
    # 16 ranks > 8 KV heads: each rank keeps one head (replicated).
    sixteen = dep("llama-3.1-70b", "b200", tp=16)
    assert sixteen.kv_token_bytes() == 2 * 80 * 1 * 128 * 2
    # The all-reduce: 2 a layer of hidden x 2 bytes, ring factor 2(N-1)/N,
    # over one direction of NVLink 4 (450 GB/s).
    assert four.allreduce_per_token() == pytest.approx(2 * 80 * 8192 * 2 * 1.5 / 450e9)
    assert dep("llama-3.1-70b", "h100-sxm", tp=1, dtype="fp8").allreduce_per_token() == 0


def test_mla_cache_is_the_latent_vector_on_every_rank():
    for tp in (8, 16):
        d = dep("deepseek-v3", "h200" if tp == 8 else "b200", tp=tp)
        assert d.kv_token_bytes() == 61 * (512 + 64) * 2        # 70,272 bytes, not sharded
    d = dep("deepseek-v3", "h200", tp=8)
    assert d.dtype == "fp8" and d.peak_label == "FP8"
    # fp8 weights: about 1 byte a parameter, embedding and head in bf16.
    total = count_params(d.model).total(d.model)
    assert d.weight_bytes() * 8 == pytest.approx(total + 2 * 129280 * 7168, rel=0.01)


def test_moe_reads_the_experts_its_tokens_touch():
    d = dep("mixtral-8x7b", "h100-sxm", tp=2)
    assert d.experts_touched(1) == pytest.approx(2)
    assert d.experts_touched(1000) == pytest.approx(8)
    assert d.experts_touched(0) == 0
    # batch 1 reads 2 of the 8 experts, a large batch all 8.
    small = d.step_parts(1, 1, 0, 0, 0)[1]
    big = d.step_parts(512, 512, 0, 0, 0)[1]
    expert = d.expert_layer_bytes() / (3350e9 * MEMORY_EFF)
    assert big - small == pytest.approx(6 * expert, rel=1e-6)


# ---- the step cost -------------------------------------------------------------

def test_decode_step_grows_with_batch_as_the_roofline_says():
    d = dep("llama-3.1-8b", "h100-sxm")
    t1, t32, t256 = (d.decode_step(b) for b in (1, 32, 256))
    assert t1 < t32 < t256
    # Batch 1 is memory bound: the weights but the embedding, and the 1k
    # tokens of KV, over 80% of 3.35 TB/s, plus the overhead.
    weights_read = 16_060_522_496 - 128256 * 4096 * 2
    assert t1 == pytest.approx((weights_read + 1024 * 131072) / (3350e9 * MEMORY_EFF)
                               + STEP_OVERHEAD, rel=1e-9)
    # Each added decode adds its KV reads (memory bound all the way to 256).
    assert t256 - t32 == pytest.approx(224 * 1024 * 131072 / (3350e9 * MEMORY_EFF), rel=1e-9)
    # A long prefill is compute bound: 2 x 6.98 G parameters a token over 60%
    # of 989.4 TFLOP/s.
    compute, memory, _, _ = d.step_parts(8192, 0, 0, 8192, 8192 * 4096)
    assert compute > memory
    assert compute == pytest.approx((2 * (8_030_261_248 - 2 * 128256 * 4096 - 65 * 4096) * 8192
                                     + 4 * 32 * 32 * 128 * 8192 * 4096)
                                    / (989.4e12 * COMPUTE_EFF), rel=1e-9)


def test_number_format_reads_back_exactly():
    for x in (0.0015, 1 / 3, 2.0 ** 70, 13958643712.0, 1e-9, 0.96875):
        assert float(num(x)) == x


# ---- errors -------------------------------------------------------------------

def run_cli(capsys, *argv):
    rc = main(["cost", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


@pytest.mark.parametrize("argv, words", [
    (["--model", "llama-3.1-9b", "--gpu", "h100-sxm"], ["unknown model", "llama-3.1-8b",
                                                        "did you mean"]),
    (["--model", "llama-3.1-8b", "--gpu", "h100"], ["unknown gpu", "h100-sxm", "mi300x"]),
    (["--model", "llama-3.1-405b", "--gpu", "h100-sxm"], ["weights", "more than", "--tp"]),
    (["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tp", "3"],
     ["does not divide the 32 attention heads"]),
    (["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu-memory-utilization", "0"],
     ["outside (0, 1]"]),
    (["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu-memory-utilization", "1.5"],
     ["outside (0, 1]"]),
    (["--model", "llama-3.1-8b", "--gpu", "l4", "--gpu-memory-utilization", "0.76"],
     ["no room for the KV cache"]),
    (["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--prefix", "9x"], ["not a name"]),
])
def test_errors_are_clear_and_exit_1(capsys, argv, words):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 1 and out == ""
    assert err.startswith("error: ") and "\nhelp: " in err
    for w in words:
        assert w in err


def test_an_fp8_kv_cache_halves_a_token_and_holds_twice_the_tokens(capsys, tmp_path):
    # vLLM's --kv-cache-dtype: auto keeps the model's bf16, even under FP8 weights
    auto = dep("llama-3.1-70b", "h100-sxm", tp=2, dtype="fp8")
    assert auto.kv_dtype == "bf16" and auto.kv_token_bytes() == 2 * 80 * 4 * 128 * 2
    assert dep("llama-3.1-70b", "h100-sxm", tp=2, dtype="fp8", kv_dtype="bf16") == auto
    fp8 = dep("llama-3.1-70b", "h100-sxm", tp=2, dtype="fp8", kv_dtype="fp8")
    assert fp8.kv_token_bytes() == 2 * 80 * 4 * 128 * 1
    assert fp8.kv_bytes() == auto.kv_bytes()            # the same memory, half a token
    assert fp8.kv_blocks() == int(auto.kv_bytes() // (16 * fp8.kv_token_bytes()))
    assert 2 * auto.kv_blocks() <= fp8.kv_blocks() <= 2 * auto.kv_blocks() + 1
    # MLA's latent cache too
    mla = dep("deepseek-v3", "h200", tp=8, kv_dtype="fp8")
    assert mla.kv_token_bytes() == 61 * (512 + 64) * 1
    # a decode reads half the KV bytes: at 4096 tokens of context a request, the
    # memory time of the fp8 cache is less by the bytes saved
    _, m16, _, _ = auto.step_parts(8, 8, 8 * 4096, 0, 0)
    _, m8, _, _ = fp8.step_parts(8, 8, 8 * 4096, 0, 0)
    saved = 8 * 4096 * (auto.kv_token_bytes() - fp8.kv_token_bytes())
    assert m16 - m8 == pytest.approx(saved / (3350e9 * MEMORY_EFF), rel=1e-9)
    # the command: the option, the summary and the library's header say it
    rc, out, err = run_cli(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "2",
                           "--dtype", "fp8", "--kv-dtype", "fp8")
    assert rc == 0
    assert "--kv-dtype fp8" in out.splitlines()[2] and "fp8 KV cache" in out
    assert "def cost_kv_blocks() = %d;" % fp8.kv_blocks() in out
    assert "x 128 x 1 byte" in err and "{:,}".format(fp8.kv_tokens()) in err
    rc, out, _ = run_cli(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "2",
                         "--dtype", "fp8", "--kv-dtype", "auto")
    assert "--kv-dtype" not in out and "def cost_kv_blocks() = %d;" % auto.kv_blocks() in out
    with pytest.raises(SerqError, match="--kv-dtype fp4"):
        dep("llama-3.1-8b", "h100-sxm", kv_dtype="fp4")


def test_allreduce_latency_comes_from_the_catalogue_or_the_link():
    g = catalogue.gpus()
    assert g["mi300x"].allreduce_us == 8 and g["h100-sxm"].allreduce_us == 8
    raw = json.loads((ROOT / "src" / "serq" / "costmodel" / "gpus.json").read_text())
    for key, gpu in g.items():
        if gpu.allreduce_us is not None:        # a figure in the catalogue names its source
            assert "https://" in raw[key]["allreduce_source"], key
    d = dep("llama-3.1-70b", "h100-sxm", tp=4)
    assert d.allreduce_fixed() == pytest.approx(2 * 80 * 8e-6)
    pcie = dep("llama-3.1-70b", "l40s", tp=4, dtype="fp8")
    assert g["l40s"].allreduce_us is None and pcie.allreduce_latency() == 25e-6
    faster = replace(g["h100-sxm"], allreduce_us=2.0)
    d2 = deploy(catalogue.lookup("model", "llama-3.1-70b"), faster, tp=4)
    assert d2.allreduce_fixed() == pytest.approx(2 * 80 * 2e-6)
    assert d.step_time(8, 8, 0, 0, 0) - d2.step_time(8, 8, 0, 0, 0) == pytest.approx(
        2 * 80 * 6e-6)


def test_kv_heads_that_do_not_shard_are_refused():
    m = replace(catalogue.models()["llama-3.1-8b"], heads=24, kv_heads=6)
    with pytest.raises(SerqError, match="KV heads"):
        deploy(m, catalogue.gpus()["h100-sxm"], tp=4)


def test_usage_errors_exit_2(capsys):
    assert run_cli(capsys, "--model", "llama-3.1-8b")[0] == 2
    assert run_cli(capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tp", "0")[0] == 2


def test_summary_and_library_streams(capsys, tmp_path):
    rc, out, err = run_cli(capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm")
    assert rc == 0
    assert out.startswith("// llama-3.1-8b-h100-sxm.sq") and "def cost_step(" in out
    assert "KV cache" in err and "decode step" in err and "batch 1 " in err
    target = tmp_path / "lib.sq"
    rc, out, err = run_cli(capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-o",
                           str(target))
    assert rc == 0 and err == ""
    assert out.startswith("wrote %s\n" % target) and "decode step" in out
    assert "def cost_kv_blocks() = %d;" % dep("llama-3.1-8b", "h100-sxm").kv_blocks() \
        in target.read_text()
    rc, out, _ = run_cli(capsys, "--list")
    assert rc == 0 and all(k in out for k in REQUIRED_MODELS + REQUIRED_GPUS)


# ---- the library against pyserq and against the simulation ------------------------

PROGRAM = """\
use "%(lib)s";
let kv_blocks = %(p)s_kv_blocks();
let compute_eff = %(p)s_compute_eff();
let memory_eff = %(p)s_memory_eff();
let step_overhead = %(p)s_step_overhead();
pool kv { cap kv_blocks * %(p)s_block_size(); block %(p)s_block_size(); preempt lifo; }
stage gpu : step {
  budget 2048;
  cost %(p)s_step(compute_eff, memory_eff, step_overhead);
  memory kv;
}
workload { arrive poisson(6); }
session {
  set t0 = now;
  set prompt = 32 + floor(~exp(600));
  hold kv (prompt) {
    run gpu prefill (prompt) growing kv;
    observe ttft = now - t0;
    run gpu decode (1 + floor(~exp(120))) growing kv;
  }
  observe e2e = now - t0;
}
run { horizon 40; warmup 4; seed 5; }
"""


def serq(*argv, cwd=None):
    return subprocess.run([sys.executable, "-m", "serq", *argv], capture_output=True, text=True,
                          cwd=cwd)


@pytest.mark.parametrize("args", [
    ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"],
    ["--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "2", "--prefix", "mx"],
    ["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8"],
    ["--model", "qwen3-32b", "--gpu", "l40s", "--tp", "2", "--dtype", "fp8",
     "--block-size", "32"],
    ["--model", "llama-3.1-70b", "--gpu", "mi300x", "--tp", "2", "--dtype", "fp8",
     "--kv-dtype", "fp8"],
])
def test_program_using_the_library_matches_pyserq(tmp_path, args):
    pyserq = pytest.importorskip("pyserq")
    r = serq("cost", *args, "-o", str(tmp_path / "lib.sq"))
    assert r.returncode == 0, r.stderr
    prefix = args[args.index("--prefix") + 1] if "--prefix" in args else "cost"
    prog = tmp_path / "prog.sq"
    prog.write_text(PROGRAM % {"lib": "lib.sq", "p": prefix})
    ir = serq("ir", str(prog))
    assert ir.returncode == 0 and ir.stderr == "", ir.stderr      # no warnings either
    assert json.loads(ir.stdout) == json.loads(pyserq.compile(path=str(prog)).to_json())
    rep = serq("run", "--json", "--quiet", str(prog))
    assert rep.returncode == 0, rep.stderr
    expected = pyserq.run(pyserq.compile(path=str(prog))).json()
    assert rep.stdout == expected + "\n"
    assert json.loads(rep.stdout)["observes"]["ttft"]["count"] > 50
    # --set reaches the efficiency through the program's `let`.
    slow = serq("run", "--json", "--quiet", "--set", "memory_eff=0.2", "--set",
                "compute_eff=0.2", str(prog))
    assert json.loads(slow.stdout)["observes"]["e2e"]["mean"] > \
        json.loads(rep.stdout)["observes"]["e2e"]["mean"]


DECODE = """\
use "lib.sq";
pool kv { cap cost_kv_blocks() * cost_block_size(); block cost_block_size(); }
stage gpu : step {
  cost cost_step(cost_compute_eff(), cost_memory_eff(), cost_step_overhead());
  memory kv;
}
workload { arrive batch(%d); }
session { hold kv (1008) { run gpu prefill (1008) growing kv; run gpu decode (3) growing kv; } }
run { horizon 100; }
"""


@pytest.mark.parametrize("model, gpu, tp, batch", [
    ("llama-3.1-8b", "h100-sxm", 1, 1), ("llama-3.1-8b", "h100-sxm", 1, 32),
    ("llama-3.1-8b", "h100-sxm", 1, 256), ("mixtral-8x7b", "h100-sxm", 2, 32),
    ("deepseek-v3", "h200", 8, 32)])
def test_simulated_steps_cost_what_the_roofline_says(tmp_path, model, gpu, tp, batch):
    d = dep(model, gpu, tp=tp)
    (tmp_path / "lib.sq").write_text(render(d, "cost", "lib.sq"))
    (tmp_path / "prog.sq").write_text(DECODE % batch)
    trace = tmp_path / "iterations.txt"
    r = serq("run", "--quiet", "--trace-iterations", str(trace), "prog.sq", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    costs = [float(line.split(" cost=")[1].split()[0]) for line in trace.read_text().splitlines()]
    # One prefill step of every prompt (63 whole blocks each, the attention
    # of 1008 tokens from position 0), then decodes over 64 blocks each.
    assert len(costs) == 4
    assert costs[0] == pytest.approx(d.step_time(1008 * batch, 0, 0, 1008 * batch,
                                                 batch * 1008 * 504), rel=1e-12)
    for c in costs[1:]:
        assert c == pytest.approx(d.step_time(batch, batch, 1024 * batch, 0, 0), rel=1e-12)
        assert c == pytest.approx(d.decode_step(batch), rel=1e-12)


@pytest.mark.parametrize("name,model,gpu,tp", [
    ("llama-3.1-8b-h100-sxm.sq", "llama-3.1-8b", "h100-sxm", 1),
    ("llama-3.1-70b-h100-sxm-tp4.sq", "llama-3.1-70b", "h100-sxm", 4),
])
def test_the_committed_library_is_what_serq_cost_writes(name, model, gpu, tp):
    # the libraries the examples use (the header of each says the command)
    lib = ROOT / "lib" / "costs" / name
    d = dep(model, gpu, tp=tp)
    assert lib.read_text() == render(d, "cost", lib.name)
