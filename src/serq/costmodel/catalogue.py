"""The catalogue of models and accelerators ``serq cost`` knows: two JSON
files shipped with the package (``models.json``, ``gpus.json``), each entry
naming its public source.  JSON rather than TOML: Python 3.9 and 3.10 have
no TOML reader, and serq takes no dependency for one."""
import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from ..errors import SerqError

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Model:
    key: str
    name: str
    source: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool
    dtype: str                      # the checkpoint's linear weights: bf16 or fp8
    expert_dtype: Optional[str] = None  # the experts', where it differs (mxfp4)
    qkv_bias: bool = False
    o_bias: bool = False
    attention: str = "gqa"          # gqa (grouped-query, multi-head as a case) or mla
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    experts: int = 0                # routed experts (0: a dense model)
    active_experts: int = 0
    moe_intermediate: int = 0
    shared_experts: int = 0
    dense_layers: int = 0           # leading layers with a dense MLP in an MoE model
    expert_bias: bool = False
    sliding_window: int = 0
    published: Dict = field(default_factory=dict)
    checked: str = ""

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def mla(self) -> bool:
        return self.attention == "mla"


@dataclass(frozen=True)
class Gpu:
    key: str
    name: str
    source: str
    bf16_tflops: float
    fp8_tflops: Optional[float]
    memory_gb: float
    usable_gib: float
    bandwidth_gbs: float
    link: str
    link_gbs: float
    allreduce_us: Optional[float] = None  # a small all-reduce's latency (None: by link)

    @property
    def pcie(self) -> bool:
        return self.link.startswith("PCIe")


_MODEL_FIELDS = set(Model.__dataclass_fields__) - {"key"}
_GPU_FIELDS = set(Gpu.__dataclass_fields__) - {"key"}


def _load(name: str, cls, fields) -> Dict[str, object]:
    with open(HERE / name, encoding="utf-8") as f:
        raw = json.load(f)
    out = {}
    for key, entry in raw.items():
        if key.startswith("_"):
            continue
        kw = {k: v for k, v in entry.items() if k in fields}
        out[key] = cls(key=key, **kw)
    return out


_CACHE: Dict[str, Dict] = {}


def models() -> Dict[str, Model]:
    if "models" not in _CACHE:
        _CACHE["models"] = _load("models.json", Model, _MODEL_FIELDS)
    return _CACHE["models"]


def gpus() -> Dict[str, Gpu]:
    if "gpus" not in _CACHE:
        _CACHE["gpus"] = _load("gpus.json", Gpu, _GPU_FIELDS)
    return _CACHE["gpus"]


def _normal(text: str) -> str:
    text = text.strip().lower()
    if "/" in text:                 # a Hugging Face id: meta-llama/Llama-3.1-8B
        text = text.rsplit("/", 1)[1]
    return text.replace("_", "-").replace(" ", "-")


def lookup(kind: str, text: str):
    """The catalogue entry named ``text`` (its key, or its display name, in
    any case; a Hugging Face id's last part), or an error listing the known
    names with the closest first."""
    table = models() if kind == "model" else gpus()
    want = _normal(text)
    for key, entry in table.items():
        if want in (key, _normal(entry.name)):
            return entry
    keys = sorted(table)
    close = difflib.get_close_matches(want, keys, n=1, cutoff=0.5)
    help_ = ("did you mean `%s`? " % close[0]) if close else ""
    help_ += "the known %ss: %s" % (kind, ", ".join(keys))
    raise SerqError("unknown %s `%s`" % (kind, text), help=help_)


def names(kind: str) -> List[str]:
    return sorted(models() if kind == "model" else gpus())
