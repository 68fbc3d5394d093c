"""``serq cost``: the arguments and the command (imported only when it runs)."""
import argparse
import os
import sys

from ..argtypes import number as _number, pos_int as _positive_int
from ..errors import UsageError

DTYPES = ("bf16", "fp8")
KV_DTYPES = ("auto", "bf16", "fp8")     # roofline.KV_DTYPES, without importing it here


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_deployment_arguments(p)
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the library to FILE and the summary to stdout (default: the "
                   "library to stdout, the summary to stderr)")
    p.add_argument("--list", action="store_true", help="list the catalogue's models and GPUs")


def add_deployment_arguments(p: argparse.ArgumentParser) -> None:
    """The engine's options, shared with `serq calibrate`."""
    p.add_argument("--model", metavar="M", help="a model of the catalogue (`--list` names them)")
    p.add_argument("--gpu", metavar="G", help="an accelerator of the catalogue")
    p.add_argument("--tp", type=_positive_int, default=1, metavar="N",
                   help="tensor-parallel GPUs of one engine (default 1)")
    p.add_argument("--dtype", choices=DTYPES,
                   help="the weights' format (default: the checkpoint's; --kv-dtype sets the "
                   "KV cache's)")
    p.add_argument("--kv-dtype", choices=KV_DTYPES, default="auto",
                   help="the KV cache's format: auto (vLLM's default: the model's dtype, bf16 "
                   "even for FP8 weights), bf16, or fp8 (vLLM's --kv-cache-dtype fp8: half "
                   "the bytes a token)")
    p.add_argument("--gpu-memory-utilization", type=_number, default=0.9, metavar="U",
                   help="the share of each GPU's memory vLLM may use, in (0, 1] (default 0.9)")
    p.add_argument("--block-size", type=_positive_int, default=16, metavar="B",
                   help="tokens a KV block (default 16)")
    p.add_argument("--max-num-batched-tokens", type=_positive_int, default=8192, metavar="T",
                   help="tokens a step at most: sizes vLLM's activation reserve (default 8192)")
    p.add_argument("--max-num-seqs", type=_positive_int, default=256, metavar="S",
                   help="requests a step at most: sizes the reserve for logits (default 256)")
    p.add_argument("--prefix", default="cost", metavar="NAME",
                   help="the definitions' names start with NAME_ (default `cost`); two "
                   "libraries in one program need two prefixes")


def _list(out) -> int:
    from .catalogue import gpus, models
    from .roofline import count_params
    out.write("models:\n")
    for key, m in sorted(models().items()):
        p = count_params(m)
        kind = "MoE %d/%d experts" % (m.active_experts, m.experts) if m.moe else "dense"
        attn = "MLA" if m.mla else ("GQA %d/%d" % (m.kv_heads, m.heads)
                                    if m.kv_heads < m.heads else "MHA")
        out.write("  %-16s %-20s %7.1f B  %s, %s, %s\n" % (key, m.name, p.total(m) / 1e9, kind,
                                                          attn, m.dtype))
    out.write("gpus:\n")
    for key, g in sorted(gpus().items()):
        fp8 = ("%g" % g.fp8_tflops) if g.fp8_tflops else "-"
        out.write("  %-10s %-32s %4g GB %5g GB/s  BF16 %g / FP8 %s TFLOP/s  %s %g GB/s\n" % (
            key, g.name, g.memory_gb, g.bandwidth_gbs, g.bf16_tflops, fp8, g.link, g.link_gbs))
    return 0


def command(args, stdout=None, stderr=None) -> int:
    from .library import render, summary
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if args.list:
        if args.model or args.gpu:
            raise UsageError("`--list` lists the catalogue; it takes no --model or --gpu")
        return _list(stdout)
    if not args.model or not args.gpu:
        raise UsageError("`serq cost` needs --model and --gpu (`serq cost --list` names them)")
    d = deployment(args)
    name = library_name(args, d)
    text = render(d, args.prefix, name)
    if args.output:
        write_file(args.output, text)
        stdout.write("wrote %s\n" % args.output)
        stdout.write(summary(d))
    else:
        stdout.write(text)
        stderr.write(summary(d))
    return 0


def deployment(args):
    """The engine the options describe (the prefix checked too)."""
    from .catalogue import lookup
    from .library import check_prefix
    from .roofline import deploy
    check_prefix(args.prefix)
    model = lookup("model", args.model)
    gpu = lookup("gpu", args.gpu)
    return deploy(model, gpu, tp=args.tp, dtype=args.dtype,
                  utilization=args.gpu_memory_utilization, block_size=args.block_size,
                  max_batched_tokens=args.max_num_batched_tokens, max_seqs=args.max_num_seqs,
                  kv_dtype=args.kv_dtype)


def library_name(args, d) -> str:
    if args.output:
        return os.path.basename(args.output)
    return "%s-%s.sq" % (d.model.key, d.gpu.key)


def write_file(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` (atomic.py: the old file stays if the
    write fails)."""
    from ..atomic import write_text
    write_text(path, text, newline=None)
