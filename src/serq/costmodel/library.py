"""The serQ 0.1.3 library ``serq cost`` writes, and the summary it prints.

A library holds only ``def`` and ``use`` (0.1.3 refuses a ``let`` in one),
so every number is a definition without parameters, and the three the
program may want to vary (the efficiencies and the overhead) are also
parameters of the step cost: a program binds them to its own ``let``s,
which ``--set`` then changes (``--def`` changes the library's defaults
directly).  The cost reads the step variables ``tokens``, ``decoders``,
``kv_decode``, ``kv_prefill`` and ``attention``; the KV pool must count
tokens (``block`` = the block size) for ``kv_decode`` and ``kv_prefill``
to be tokens.
"""
import math
import re
from typing import List, Optional

from .. import __version__
from .roofline import (ACT_BYTES, CONTEXT, GIB, RUNTIME_RESERVE_GIB,
                       DTYPE_BYTES, DEFAULT_KNOBS, Deployment, Knobs)

PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def num(x: float) -> str:
    """A number as serQ reads it back to the same double: integers plainly,
    others in Python's shortest round-trip form."""
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    text = repr(float(x))
    return text.replace("e+", "e")


def _gb(b: float) -> str:
    return "%.2f GB" % (b / 1e9)


def _gib(b: float) -> str:
    return "%.2f GiB" % (b / GIB)


def _sci(x: float) -> str:
    return "%.4g" % x


def command_line(d: Deployment, prefix: str) -> str:
    parts = ["serq cost", "--model", d.model.key, "--gpu", d.gpu.key]
    if d.tp != 1:
        parts += ["--tp", str(d.tp)]
    if d.dtype != d.model.dtype or d.expert_dtype != (d.model.expert_dtype or d.model.dtype):
        parts += ["--dtype", d.dtype]
    if d.kv_dtype != "bf16":
        parts += ["--kv-dtype", d.kv_dtype]
    if d.utilization != 0.9:
        parts += ["--gpu-memory-utilization", "%g" % d.utilization]
    if d.block_size != 16:
        parts += ["--block-size", str(d.block_size)]
    if d.max_batched_tokens != 8192:
        parts += ["--max-num-batched-tokens", str(d.max_batched_tokens)]
    if d.max_seqs != 256:
        parts += ["--max-num-seqs", str(d.max_seqs)]
    if prefix != "cost":
        parts += ["--prefix", prefix]
    return " ".join(parts)


def _dtypes(d: Deployment) -> str:
    if d.model.moe and d.expert_dtype != d.dtype:
        text = "%s weights, %s experts" % (d.dtype, d.expert_dtype)
    else:
        text = "%s weights" % d.dtype
    if d.kv_dtype != "bf16":
        text += ", %s KV cache" % d.kv_dtype
    return text


def _kv_formula(d: Deployment) -> str:
    m = d.model
    if m.mla:
        return "%d layers x (%d latent + %d rope) x %s, the same on every rank" % (
            m.layers, m.kv_lora_rank, m.qk_rope_head_dim, _bytes(d.kv_elem_bytes))
    shard = ""
    if d.tp > 1:
        shard = " (%d of %d a rank%s)" % (d.kv_heads_per_gpu(), m.kv_heads,
                                         ", replicated" if d.tp > m.kv_heads else "")
    return "2 (K, V) x %d layers x %d KV heads%s x %d x %s" % (
        m.layers, d.kv_heads_per_gpu(), shard, m.head_dim, _bytes(d.kv_elem_bytes))


def _bytes(n: int) -> str:
    return "1 byte" if n == 1 else "%d bytes" % n


def title(d: Deployment) -> str:
    return "%s on %s%s, %s" % (d.model.name, "%d x " % d.tp if d.tp > 1 else "", d.gpu.name,
                               _dtypes(d))


def render(d: Deployment, prefix: str = "cost", file_name: str = "costs.sq",
           knobs: Knobs = DEFAULT_KNOBS, written_by: Optional[str] = None,
           fitted: Optional[List[str]] = None) -> str:
    """The library's text.  ``serq calibrate`` passes the fitted ``knobs``,
    its own command line (``written_by``) and comment lines saying what the
    values were fitted to and how well (``fitted``)."""
    m, g, p = d.model, d.gpu, d.params
    P = prefix
    L: List[str] = []
    w = L.append
    w("// %s: the step cost and KV capacity of one engine," % file_name)
    w("// %s." % title(d))
    w("// Written by `%s` (serq %s)." % (written_by or command_line(d, prefix), __version__))
    w("// docs/costs.md explains the model. serQ 0.1.3 syntax: definitions only.")
    w("//")
    w("// Sources: %s" % m.source)
    w("//          %s" % g.source)
    w("//")
    w("// A program uses it so (the pool counts tokens, in blocks of %s_block_size()):" % P)
    w("//")
    w("//   use \"%s\";" % file_name)
    w("//   let kv_blocks = %s_kv_blocks();" % P)
    w("//   let compute_eff = %s_compute_eff();" % P)
    w("//   let memory_eff = %s_memory_eff();" % P)
    w("//   let step_overhead = %s_step_overhead();" % P)
    w("//   pool kv { cap kv_blocks * %s_block_size(); block %s_block_size(); preempt lifo; }"
      % (P, P))
    w("//   stage gpu : step {")
    w("//     budget %d;" % d.max_batched_tokens)
    w("//     cost %s_step(compute_eff, memory_eff, step_overhead);" % P)
    w("//     memory kv;")
    w("//   }")
    w("//")
    w("// and `serq run --set memory_eff=0.7 ...` tries another value.")
    w("")
    w("// ---- the KV cache, as vLLM sizes it (a GPU of the engine) ----")
    w("// %.1f GiB the driver reports x %g utilization = %s" % (
        g.usable_gib, d.utilization, _gib(d.usable_bytes())))
    w("//   - weights %s (%s; %.2f B parameters, %s a GPU)" % (
        _gib(d.weight_bytes()), _dtypes(d), p.total(m) / 1e9, _gb(d.weight_bytes())))
    w("//   - activations %s (a profile step of %d tokens, logits of %d sequences)" % (
        _gib(d.activation_bytes()), d.max_batched_tokens, d.max_seqs))
    w("//   - runtime %s (CUDA context, workspaces, CUDA graphs; an estimate)" % _gib(
        RUNTIME_RESERVE_GIB * GIB))
    w("//   = %s for the KV cache" % _gib(d.kv_bytes()))
    w("// a token: %s = %d bytes" % (_kv_formula(d), d.kv_token_bytes()))
    w("// a block of %d tokens: %d bytes; %d blocks = %d tokens" % (
        d.block_size, d.block_size * d.kv_token_bytes(), d.kv_blocks(), d.kv_tokens()))
    w("def %s_kv_blocks() = %d;" % (P, d.kv_blocks()))
    w("def %s_block_size() = %d;" % (P, d.block_size))
    w("def %s_kv_token_bytes() = %d;" % (P, d.kv_token_bytes()))
    w("")
    if fitted:
        w("// ---- the roofline's parameters, fitted to measurements by serq calibrate ----")
        import textwrap
        for line in fitted:
            for part in textwrap.wrap(line, 92) or [""]:
                w(("// " + part).rstrip())
    else:
        w("// ---- the roofline's parameters: estimates, not measurements (docs/costs.md) ----")
    params = [("def %s_compute_eff() = %s;" % (P, num(knobs.compute_eff)),
               "share of peak FLOP/s the matrix multiplies reach"),
              ("def %s_memory_eff() = %s;" % (P, num(knobs.memory_eff)),
               "share of peak bandwidth the weight and KV reads reach"),
              ("def %s_step_overhead() = %s;" % (P, num(knobs.step_overhead)),
               "seconds a step spends outside GPU work")]
    width = max(len(code) for code, _ in params)
    for code, comment in params:
        w("%s  // %s" % (code.ljust(width), comment))
    w("")
    w("// ---- a step's work on one GPU ----")
    w("// FLOPs: 2 x %.4g matrix parameters a scheduled token (%s active a token, less the" % (
        d.flops_per_token() / 2, _sci(p.active(m))))
    w("// output head), 2 x %.4g for the output head of each decode, %d a prefill" % (
        d.flops_per_decode() / 2, d.flops_per_attention()))
    w("// (query, key) pair (`attention`) and %d a decode's cached token (`kv_decode`)." %
      d.flops_per_kv_decode())
    if d.tp > 1:
        w("// Each of the %d GPUs does 1/%d of them." % (d.tp, d.tp))
    w("def %s_flops() = %s * tokens + %s * decoders + %s * attention + %s * kv_decode;" % (
        P, num(d.flops_per_token()), num(d.flops_per_decode()), num(d.flops_per_attention()),
        num(d.flops_per_kv_decode())))
    if m.moe:
        w("// Bytes: %s of weights every step reads (all but the embedding and the routed" %
          _gb(d.dense_read_bytes()))
        w("// experts), %s for each routed expert the step's tokens touch (of %d in each of" %
          (_gb(d.expert_layer_bytes()), m.experts))
        w("// the %d MoE layers, %d a token: with tokens routed at random the step touches" %
          (p.moe_layers, m.active_experts))
        w("// %d x (1 - (1 - %d/%d)^tokens) of them), and the KV of the scheduled requests." %
          (m.experts, m.active_experts, m.experts))
        w("def %s_bytes() = %s + %s * %d * (1 - %s ^ tokens) + %d * (kv_decode + kv_prefill);" % (
            P, num(d.dense_read_bytes()), num(d.expert_layer_bytes()), m.experts,
            num(1 - m.active_experts / m.experts), d.kv_token_bytes()))
    else:
        w("// Bytes: the weights but the embedding (%s) and the KV the scheduled requests" %
          _gb(d.dense_read_bytes()))
        w("// hold (`kv_decode` + `kv_prefill` tokens).")
        w("def %s_bytes() = %s + %d * (kv_decode + kv_prefill);" % (
            P, num(d.dense_read_bytes()), d.kv_token_bytes()))
    w("// Peaks: %g TFLOP/s dense %s, %g GB/s." % (d.peak_flops / 1e12, d.peak_label,
                                                   g.bandwidth_gbs))
    w("def %s_compute_s(c_eff) = %s_flops() / (%s * c_eff);" % (P, P, num(d.peak_flops)))
    w("def %s_memory_s(m_eff) = %s_bytes() / (%s * m_eff);" % (P, P, num(g.bandwidth_gbs * 1e9)))
    if d.tp > 1:
        lat = d.allreduce_latency()
        w("// Tensor parallel: 2 all-reduces a layer of tokens x %d x %d bytes, a ring over %d" %
          (m.hidden, ACT_BYTES, d.tp))
        w("// GPUs sending 2(%d-1)/%d of it over %g GB/s (one direction of %s), and %g us" %
          (d.tp, d.tp, g.link_gbs / 2, g.link, lat * 1e6))
        w("// of latency each (%s)." % ("gpus.json gives its source" if g.allreduce_us is not None
                                       else "an estimate for the link"))
        w("def %s_comm_s() = %s * tokens + %s;" % (
            P, num(d.allreduce_per_token()), num(d.allreduce_fixed())))
    else:
        w("// One GPU: no all-reduce.")
        w("def %s_comm_s() = 0;" % P)
    w("")
    w("// ---- the step cost ----")
    w("// The larger of compute and memory time (they overlap), then the all-reduces and")
    w("// the step's fixed overhead. Arguments: the efficiencies and the overhead, e.g.")
    w("// %s_compute_eff(), %s_memory_eff(), %s_step_overhead()." % (P, P, P))
    w("def %s_step(c_eff, m_eff, overhead_s) =" % P)
    w("    max(%s_compute_s(c_eff), %s_memory_s(m_eff)) + %s_comm_s() + overhead_s;" % (P, P, P))
    return "\n".join(L) + "\n"


def summary(d: Deployment, knobs: Knobs = DEFAULT_KNOBS) -> str:
    m, p = d.model, d.params
    L: List[str] = []
    w = L.append
    w("%s" % title(d))
    active = ""
    if m.moe:
        active = ", %.2f B active a token" % (p.active(m) / 1e9)
    w("  weights        %s a GPU (%.2f B parameters%s; %s in all)" % (
        _gb(d.weight_bytes()), p.total(m) / 1e9, active, _gb(d.weight_bytes() * d.tp)))
    w("  KV a token     %s (%d bytes a GPU: %s)" % (_kib(d.kv_token_bytes()),
                                                    d.kv_token_bytes(), _kv_formula(d)))
    w("  KV cache       %s a GPU at utilization %g: %s tokens = %s blocks of %d" % (
        _gib(d.kv_bytes()), d.utilization, _thousands(d.kv_tokens()),
        _thousands(d.kv_blocks()), d.block_size))
    n = max(1, d.max_batched_tokens // CONTEXT)
    w("  prefill        %s tokens/s (steps of %d prompts of %d tokens)" % (
        _thousands(round(d.prefill_rate(CONTEXT, knobs))), n, CONTEXT))
    parts, bounds = [], []
    for b in (1, 32, 256):
        compute, memory, _, _ = d.step_parts(b, b, b * CONTEXT, 0, 0, *knobs.as_tuple())
        bounds.append("memory" if memory >= compute else "compute")
        over = "*" if b * CONTEXT > d.kv_tokens() else ""
        step = d.step_time(b, b, b * CONTEXT, 0, 0, *knobs.as_tuple())
        parts.append("batch %d %.2f ms%s" % (b, step * 1e3, over))
    if len(set(bounds)) == 1:
        tail = " (%s bound)" % bounds[0]
    else:
        parts = ["%s (%s)" % (t, b) for t, b in zip(parts, bounds)]
        tail = ""
    w("  decode step    %s%s," % (", ".join(parts), tail))
    w("                 each decode with %d tokens of context%s" % (
        CONTEXT, "; * more than the cache holds" if 256 * CONTEXT > d.kv_tokens() else ""))
    w("  %s    %.4g of peak FLOP/s (%s %g TFLOP/s), %.4g of peak bandwidth (%g GB/s)," % (
        "assumptions" if knobs == DEFAULT_KNOBS else "fitted     ", knobs.compute_eff,
        d.peak_label, d.peak_flops / 1e12, knobs.memory_eff, d.gpu.bandwidth_gbs))
    w("                 %.4g ms a step outside the GPU's work" % (knobs.step_overhead * 1e3))
    return "\n".join(L) + "\n"


def _kib(b: float) -> str:
    return ("%.1f KiB" % (b / 1024)).replace(".0 KiB", " KiB")


def _thousands(n: int) -> str:
    return "{:,}".format(int(n))


def check_prefix(prefix: str) -> None:
    from ..errors import SerqError
    if not PREFIX.match(prefix):
        raise SerqError("--prefix `%s` is not a name: the definitions are named PREFIX_kv_blocks "
                        "and so on" % prefix, help="use letters, digits and `_`, starting with "
                        "a letter")


__all__ = ["render", "summary", "num", "check_prefix", "DTYPE_BYTES", "math"]
