"""What one engine of a model on tensor-parallel GPUs holds and does: the
parameter counts, the weights and KV bytes on each GPU, the KV capacity as
vLLM sizes it, and the coefficients of a roofline step cost.  docs/costs.md
gives every formula with its reasons; the names here follow it.

Everything is per GPU of the tensor-parallel group (each rank does 1/tp of
the matrix work and holds 1/tp of the weights), except where said.
"""
import math
from dataclasses import dataclass
from typing import Optional

from ..errors import SerqError
from .catalogue import Gpu, Model

GIB = 1024 ** 3

# Bytes a weight takes in each format.  MXFP4: 4-bit values with one 8-bit
# scale per 32 of them (OCP Microscaling spec), 4.25 bits.
DTYPE_BYTES = {"bf16": 2.0, "fp8": 1.0, "mxfp4": 4.25 / 8}
ACT_BYTES = 2            # activations: bf16, whatever format the weights are in
# The KV cache's formats.  vLLM's `--kv-cache-dtype auto` (its default) stores
# the cache in the model's dtype, the activations' (bf16 for every model of the
# catalogue, FP8 checkpoints included: their activations are bf16 between the
# FP8 GEMMs); `fp8` stores one byte an element (E4M3 or E5M2, with per-tensor
# scales held apart from the blocks).
KV_DTYPE_BYTES = {"bf16": 2, "fp8": 1}
KV_DTYPES = ("auto",) + tuple(KV_DTYPE_BYTES)

# The roofline's parameters, estimates until measurements calibrate them
# (issue 16 part 3).  docs/costs.md says where each comes from.
COMPUTE_EFF = 0.6        # share of dense peak FLOP/s that serving GEMMs reach
MEMORY_EFF = 0.8         # share of peak memory bandwidth that weight and KV reads reach
STEP_OVERHEAD = 0.0015   # seconds a step spends outside GPU work (scheduling, launch, sampling)
# Seconds a small all-reduce costs, for a GPU whose catalogue entry gives no
# `allreduce_us` of its own (gpus.json says where each one comes from).
ALLREDUCE_LATENCY = {"nvlink": 8e-6, "pcie": 25e-6}



@dataclass(frozen=True)
class Knobs:
    """The roofline's three parameters: the ones `serq calibrate` fits."""
    compute_eff: float = COMPUTE_EFF
    memory_eff: float = MEMORY_EFF
    step_overhead: float = STEP_OVERHEAD

    def as_tuple(self):
        return (self.compute_eff, self.memory_eff, self.step_overhead)


DEFAULT_KNOBS = Knobs()

# vLLM's memory profile: what it keeps besides weights and the KV cache.
RUNTIME_RESERVE_GIB = 1.0   # CUDA context, cuBLAS/NCCL workspaces, CUDA graphs (estimate)
CONTEXT = 1024              # the context of each decode in the summary


@dataclass(frozen=True)
class Params:
    """Parameter counts of the whole model (all ranks)."""
    embed: int          # input embedding (a lookup: not read whole, no FLOPs)
    head: int           # output head (the embedding again when tied)
    attn: int           # attention projections and their biases, all layers
    mlp: int            # dense MLPs, shared experts and routers, all layers
    expert: int         # one routed expert of one layer
    moe_layers: int     # layers with routed experts
    norms: int

    @property
    def experts_total(self) -> int:
        return self.expert * self.moe_layers

    def total(self, m: Model) -> int:
        tied_head = 0 if m.tied else self.head
        return self.embed + tied_head + self.attn + self.mlp + self.norms \
            + self.experts_total * m.experts

    def active(self, m: Model) -> int:
        """Parameters one token's forward pass multiplies with: all but the
        input embedding and the routed experts it is not sent to."""
        return self.head + self.attn + self.mlp + self.norms \
            + self.experts_total * m.active_experts


def count_params(m: Model) -> Params:
    h, L = m.hidden, m.layers
    if m.mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        attn = (h * m.q_lora_rank + m.q_lora_rank                  # q down-projection, its norm
                + m.q_lora_rank * m.heads * qk                      # q up-projection
                + h * (m.kv_lora_rank + m.qk_rope_head_dim)         # kv down-projection (+ rope key)
                + m.kv_lora_rank                                    # its norm
                + m.kv_lora_rank * m.heads * (m.qk_nope_head_dim + m.v_head_dim)
                + m.heads * m.v_head_dim * h)                       # output projection
    else:
        q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
        attn = h * q + 2 * h * kv + q * h
        if m.qkv_bias:
            attn += q + 2 * kv
        if m.o_bias:
            attn += h
    gated = 3 * h                                   # gate, up and down projections
    if m.moe:
        expert = gated * m.moe_intermediate
        if m.expert_bias:
            expert += 2 * m.moe_intermediate + h
        moe_layers = L - m.dense_layers
        mlp = (m.dense_layers * gated * m.intermediate
               + moe_layers * (m.shared_experts * gated * m.moe_intermediate
                               + h * m.experts + (m.experts if m.expert_bias else 0)))
    else:
        expert, moe_layers = 0, 0
        mlp = L * gated * m.intermediate
    return Params(embed=m.vocab * h, head=m.vocab * h, attn=L * attn, mlp=mlp, expert=expert,
                  moe_layers=moe_layers, norms=(2 * L + 1) * h)


@dataclass(frozen=True)
class Deployment:
    """A model on `tp` GPUs in one weight format, as vLLM would run it."""
    model: Model
    gpu: Gpu
    tp: int
    dtype: str                  # linear weights: bf16 or fp8 (or the checkpoint's own)
    expert_dtype: str           # routed experts
    utilization: float
    block_size: int
    max_batched_tokens: int
    max_seqs: int
    params: Params
    peak_flops: float           # FLOP/s of one GPU in the format the GEMMs run in
    peak_label: str
    kv_dtype: str = "bf16"      # the KV cache's format ("auto" resolved)

    @property
    def kv_elem_bytes(self) -> int:
        return KV_DTYPE_BYTES[self.kv_dtype]

    # -- bytes ------------------------------------------------------------
    def weight_bytes(self) -> float:
        """Every weight, on one GPU (embedding, head and norms stay bf16)."""
        p, m = self.params, self.model
        lin = DTYPE_BYTES[self.dtype]
        b = (p.embed + (0 if m.tied else p.head) + p.norms) * 2.0
        b += (p.attn + p.mlp) * lin
        b += p.experts_total * m.experts * DTYPE_BYTES[self.expert_dtype]
        return b / self.tp

    def dense_read_bytes(self) -> float:
        """Weights every step reads on one GPU whatever it batches: all but
        the input embedding (looked up, row by row) and the routed experts."""
        p = self.params
        return (p.head * 2.0 + p.norms * 2.0
                + (p.attn + p.mlp) * DTYPE_BYTES[self.dtype]) / self.tp

    def expert_layer_bytes(self) -> float:
        """One routed expert in every MoE layer, on one GPU."""
        return self.params.experts_total * DTYPE_BYTES[self.expert_dtype] / self.tp

    def kv_heads_per_gpu(self) -> int:
        return max(1, self.model.kv_heads // self.tp)

    def kv_token_bytes(self) -> int:
        """KV cache bytes a token takes on one GPU.  GQA: K and V for each
        layer and each KV head of this rank (a head is replicated when tp >
        the KV heads).  MLA: the latent vector and the rope key, one per layer,
        the same on every rank.  Elements of ``kv_dtype``'s size."""
        m = self.model
        if m.mla:
            return m.layers * (m.kv_lora_rank + m.qk_rope_head_dim) * self.kv_elem_bytes
        return 2 * m.layers * self.kv_heads_per_gpu() * m.head_dim * self.kv_elem_bytes

    # -- capacity ---------------------------------------------------------
    def usable_bytes(self) -> float:
        return self.gpu.usable_gib * GIB * self.utilization

    def activation_bytes(self) -> float:
        """The peak of vLLM's profile step (max_batched_tokens tokens, then
        the sampler over max_seqs sequences): a rough count of the largest
        live tensors, the residual stream, the attention projections and the
        gated MLP's intermediate, and the fp32 logits."""
        m, t = self.model, self.max_batched_tokens
        if m.mla:
            qkv = m.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim) // self.tp \
                + m.kv_lora_rank + m.qk_rope_head_dim
        else:
            qkv = (m.heads * m.head_dim) // self.tp + 2 * self.kv_heads_per_gpu() * m.head_dim
        inter = max(m.intermediate if (not m.moe or m.dense_layers) else 0,
                    m.moe_intermediate * m.active_experts if m.moe else 0)
        per_token = (2 * m.hidden + qkv + 2 * inter // self.tp) * ACT_BYTES
        return t * per_token + self.max_seqs * m.vocab * 4

    def reserve_bytes(self) -> float:
        return self.activation_bytes() + RUNTIME_RESERVE_GIB * GIB

    def kv_bytes(self) -> float:
        return self.usable_bytes() - self.weight_bytes() - self.reserve_bytes()

    def kv_blocks(self) -> int:
        return int(self.kv_bytes() // (self.block_size * self.kv_token_bytes()))

    def kv_tokens(self) -> int:
        return self.kv_blocks() * self.block_size

    # -- the step cost's coefficients (per GPU) -----------------------------
    def flops_per_token(self) -> float:
        """Matrix FLOPs a scheduled token costs, output head aside."""
        p = self.params
        linear = p.attn + p.mlp + p.experts_total * self.model.active_experts
        return 2.0 * linear / self.tp

    def flops_per_decode(self) -> float:
        """The output head, computed for the sampled token of each decode."""
        return 2.0 * self.params.head / self.tp

    def flops_per_attention(self) -> float:
        """FLOPs of one (query, key) pair of a prefill, all layers: Q.K and
        the weighted V, 2 FLOPs a multiply-add, for this rank's heads."""
        m = self.model
        if m.mla:
            per_head = m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim
        else:
            per_head = 2 * m.head_dim
        return 2.0 * m.layers * (m.heads // self.tp) * per_head

    def flops_per_kv_decode(self) -> float:
        """FLOPs of one decode query against one cached token, all layers.
        MLA decodes in the latent space (the up-projections absorbed): Q.K
        over kv_lora_rank + rope, V over kv_lora_rank."""
        m = self.model
        if m.mla:
            per_head = 2 * m.kv_lora_rank + m.qk_rope_head_dim
        else:
            per_head = 2 * m.head_dim
        return 2.0 * m.layers * (m.heads // self.tp) * per_head

    def allreduce_per_token(self) -> float:
        """Seconds of ring all-reduce a scheduled token adds: two a layer
        (after attention and after the MLP) of hidden x 2 bytes, each GPU
        sending 2(tp-1)/tp of it over one direction of its links."""
        if self.tp == 1:
            return 0.0
        ring = 2.0 * (self.tp - 1) / self.tp
        one_way = self.gpu.link_gbs / 2 * 1e9
        return 2 * self.model.layers * self.model.hidden * ACT_BYTES * ring / one_way

    def allreduce_latency(self) -> float:
        """Seconds of latency one small all-reduce costs on this GPU's links:
        the catalogue's figure, else the link type's default."""
        if self.gpu.allreduce_us is not None:
            return self.gpu.allreduce_us * 1e-6
        return ALLREDUCE_LATENCY["pcie" if self.gpu.pcie else "nvlink"]

    def allreduce_fixed(self) -> float:
        if self.tp == 1:
            return 0.0
        return 2 * self.model.layers * self.allreduce_latency()

    # -- the step cost itself, as the library computes it ----------------------
    def experts_touched(self, tokens: float) -> float:
        m = self.model
        if not m.moe or tokens <= 0:
            return 0.0
        return m.experts * (1 - (1 - m.active_experts / m.experts) ** tokens)

    def step_parts(self, tokens, decoders, kv_decode, kv_prefill, attention,
                   compute_eff=COMPUTE_EFF, memory_eff=MEMORY_EFF, overhead=STEP_OVERHEAD):
        flops = (self.flops_per_token() * tokens + self.flops_per_decode() * decoders
                 + self.flops_per_attention() * attention
                 + self.flops_per_kv_decode() * kv_decode)
        nbytes = (self.dense_read_bytes() + self.expert_layer_bytes() * self.experts_touched(tokens)
                  + self.kv_token_bytes() * (kv_decode + kv_prefill))
        compute = flops / (self.peak_flops * compute_eff)
        memory = nbytes / (self.gpu.bandwidth_gbs * 1e9 * memory_eff)
        comm = self.allreduce_per_token() * tokens + self.allreduce_fixed()
        return compute, memory, comm, overhead

    def step_time(self, *args, **kw) -> float:
        compute, memory, comm, overhead = self.step_parts(*args, **kw)
        return max(compute, memory) + comm + overhead

    def decode_step(self, batch: int, context: int = CONTEXT) -> float:
        return self.step_time(batch, batch, batch * context, 0, 0)

    def prefill_rate(self, prompt: int = CONTEXT, knobs: Optional["Knobs"] = None) -> float:
        """Prompt tokens a second in steps of max_batched_tokens made of
        whole prompts of `prompt` tokens."""
        n = max(1, self.max_batched_tokens // prompt)
        tokens = n * prompt
        k = (knobs or DEFAULT_KNOBS).as_tuple()
        return tokens / self.step_time(tokens, 0, 0, tokens, n * prompt * prompt / 2, *k)


def deploy(model: Model, gpu: Gpu, tp: int = 1, dtype: Optional[str] = None,
           utilization: float = 0.9, block_size: int = 16, max_batched_tokens: int = 8192,
           max_seqs: int = 256, kv_dtype: str = "auto") -> Deployment:
    """The deployment, or an error that says why it cannot run."""
    if not (utilization > 0 and utilization <= 1):
        raise SerqError("--gpu-memory-utilization %s is outside (0, 1]" % _num(utilization),
                        help="it is the share of each GPU's memory vLLM may use, e.g. 0.9")
    if tp < 1:
        raise SerqError("--tp %d: the tensor-parallel degree is at least 1" % tp)
    if block_size < 1:
        raise SerqError("--block-size %d: a KV block holds at least one token" % block_size)
    if model.heads % tp:
        raise SerqError("--tp %d does not divide the %d attention heads of %s"
                        % (tp, model.heads, model.name),
                        help="use a degree that divides %d: %s" % (
                            model.heads, ", ".join(str(d) for d in _divisors(model.heads)[:8])))
    if not model.mla and model.kv_heads % tp and tp % model.kv_heads:
        raise SerqError("--tp %d and the %d KV heads of %s: each rank needs a whole number "
                        "of KV heads, or the same head replicated" % (tp, model.kv_heads, model.name),
                        help="use a degree that divides %d or that %d divides"
                        % (model.kv_heads, model.kv_heads))
    if kv_dtype not in KV_DTYPES:
        raise SerqError("--kv-dtype %s: the KV cache is stored as %s" % (
            kv_dtype, ", ".join(KV_DTYPES)),
            help="`auto` (vLLM's default) keeps it in the activations' bf16; `fp8` halves it")
    if kv_dtype == "auto":
        kv_dtype = "bf16"
    if dtype is None:
        dtype, expert_dtype = model.dtype, model.expert_dtype or model.dtype
    else:
        expert_dtype = dtype
    if dtype == "fp8" and gpu.fp8_tflops:
        peak, label = gpu.fp8_tflops * 1e12, "FP8"
    else:
        # No FP8 tensor cores (A100): vLLM runs FP8 weights with BF16 math
        # (weight-only FP8); MXFP4 experts run with BF16 activations too.
        peak, label = gpu.bf16_tflops * 1e12, "BF16"
    d = Deployment(model, gpu, tp, dtype, expert_dtype, utilization, block_size,
                   max_batched_tokens, max_seqs, count_params(model), peak, label, kv_dtype)
    usable = d.usable_bytes()
    if d.weight_bytes() >= usable:
        raise SerqError(
            "the weights of %s take %.1f GiB a GPU (%s, tp %d), more than the %.1f GiB vLLM may "
            "use on one %s (%.1f GiB x %s)" % (
                model.name, d.weight_bytes() / GIB, _dtype_label(d), tp, usable / GIB, gpu.name,
                gpu.usable_gib, _num(utilization)),
            help="spread them over more GPUs (--tp), use FP8 weights (--dtype fp8), or a GPU "
                 "with more memory")
    if d.kv_blocks() < 1:
        raise SerqError(
            "no room for the KV cache of %s on one %s: %.1f GiB usable, less %.1f GiB of weights "
            "and %.1f GiB of activations and runtime, leaves %.2f GiB, less than a block of %d "
            "tokens (%d bytes)" % (model.name, gpu.name, usable / GIB, d.weight_bytes() / GIB,
                                   d.reserve_bytes() / GIB, d.kv_bytes() / GIB, block_size,
                                   block_size * d.kv_token_bytes()),
            help="raise --gpu-memory-utilization, use more GPUs (--tp), FP8 weights or an FP8 "
                 "KV cache (--kv-dtype fp8)")
    return d


def _dtype_label(d: Deployment) -> str:
    if d.expert_dtype != d.dtype and d.model.moe:
        return "%s, experts %s" % (d.dtype, d.expert_dtype)
    return d.dtype


def _divisors(n: int):
    return [k for k in range(1, n + 1) if n % k == 0]


def _num(x: float) -> str:
    return ("%g" % x) if not math.isnan(x) else "nan"
