"""A Hugging Face ``config.json`` (read from a local path) as an :class:`Architecture`.

Reads the keys of the dense Llama/Qwen family (``hidden_size``,
``intermediate_size``, ``num_attention_heads``, ``num_key_value_heads``,
``head_dim``, ``vocab_size``, ``num_hidden_layers``) and of three
mixture-of-experts layouts:

* Qwen2-MoE / Qwen3-MoE: ``num_experts``, ``num_experts_per_tok``,
  ``moe_intermediate_size``, ``shared_expert_intermediate_size``,
  ``decoder_sparse_step``, ``mlp_only_layers``;
* Mixtral: ``num_local_experts``, ``num_experts_per_tok`` (experts of
  ``intermediate_size``, every layer);
* DeepSeek-V2/V3: ``n_routed_experts``, ``n_shared_experts``,
  ``moe_intermediate_size``, ``first_k_dense_replace``, ``moe_layer_freq``, and
  latent attention (``q_lora_rank``, ``kv_lora_rank``, ``qk_nope_head_dim``,
  ``qk_rope_head_dim``, ``v_head_dim``).

Sliding-window attention is read as the model's code applies it: ``layer_types``
where the config lists it, else the family's rule (Gemma 2 and gpt-oss every
other layer from the first, Gemma 3 all but every ``sliding_window_pattern``-th,
Mistral/Mixtral/Phi-3 every layer when ``sliding_window`` is set, Qwen2/Qwen3
the layers from ``max_window_layers`` on when ``use_sliding_window``). The
canonical form keeps the result only (``sliding_window``, ``sliding_layers``),
and only for a model that has such layers. Likewise the norms a family adds to
the Llama layout: Gemma 2/3's norms of the attention and MLP outputs
(``post_norms``), Qwen3's and Gemma 3's per-head Q/K norms (``qk_norm``).

ChatGLM's own names (``num_layers``, ``ffn_hidden_size``, ``kv_channels``,
``padded_vocab_size``, ``multi_query_group_num``) are read as these. A model
family the workload does not describe (``model_type`` outside
:data:`SUPPORTED_FAMILIES`: an encoder, an ungated MLP) is refused.

A multimodal config whose decoder sits under ``text_config`` is read from
there. Nothing is downloaded and no model code runs: the file is data.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aoe_optuna.workload.architecture import Architecture, Experts, LatentAttention
from aoe_optuna.workload.files import WorkloadFileError, read_json, shown
from aoe_optuna.workload.gemm import MAX_DIM

# Every key the reader looks at; the canonical form of a study keeps these and only these.
HF_KEYS = (
    "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "vocab_size",
    "num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok",
    "moe_intermediate_size", "shared_expert_intermediate_size", "n_shared_experts",
    "decoder_sparse_step", "mlp_only_layers", "first_k_dense_replace", "moe_layer_freq",
    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
)
# Derived keys of the canonical form: the norms a family adds to the Llama layout
# (present only when true).
NORM_KEYS = ("post_norms", "qk_norm")
_POST_NORMS = frozenset({"gemma2", "gemma3_text"})
_QK_NORM = frozenset({"qwen3", "qwen3_moe", "gemma3_text"})
WHAT = "a Hugging Face config.json"


def read_hf_config(path: str | Path, name: str | None = None) -> tuple[Architecture, dict]:
    """(architecture, the keys it was read from) of the config file at ``path``.

    ``name`` defaults to the file's stem, or its folder's name for a file
    called ``config.json``.
    """
    path = Path(path)
    data = read_json(path, WHAT)
    if name is None:
        name = path.parent.resolve().name if path.stem == "config" else path.stem
    used = used_keys(data, str(path))
    return architecture_from_hf(used, name, str(path)), used


def used_keys(config: Any, source: str) -> dict[str, Any]:
    """The keys of ``config`` that the reader uses (from ``text_config`` when it holds them),
    in the Llama family's names (ChatGLM's are renamed), after checking that the model is
    one the reader describes (``model_type`` / ``architectures``; a document that names
    neither, such as a stored spec's copy of these keys, is taken as it is)."""
    if not isinstance(config, Mapping):
        raise WorkloadFileError(source, "document", f"{WHAT} (a JSON object)", shown(config))
    if "hidden_size" not in config and isinstance(config.get("text_config"), Mapping):
        config = config["text_config"]
    family = model_family(config)
    if family is not None and family not in SUPPORTED_FAMILIES:
        raise WorkloadFileError(
            source, "key 'model_type'",
            "a decoder-only transformer with a gated MLP, one of "
            + ", ".join(sorted(SUPPORTED_FAMILIES)), repr(family))
    if family == "chatglm" or "multi_query_group_num" in config:
        config = _chatglm_as_llama(config, source)
    used = {k: config[k] for k in HF_KEYS if k in config}
    return used | _sliding_window(config, family, source) | _norms(config, family)


def _norms(config: Mapping[str, Any], family: str | None) -> dict[str, bool]:
    """The family's extra norms as canonical keys; a canonical copy keeps its own."""
    if family is None:
        return {k: True for k in NORM_KEYS if config.get(k) is True}
    return {k: True for k, families in zip(NORM_KEYS, (_POST_NORMS, _QK_NORM), strict=True)
            if family in families}


# Families whose config.json the reader describes: decoder-only, rotary attention with
# grouped KV heads (or DeepSeek's latent attention), a gated MLP (gate and up projections
# in one GEMM of twice the width), optionally mixture-of-experts. Encoders (BERT) and
# ungated MLPs (Phi-1/2, GPT-2, GPT-NeoX) would be charged GEMMs they do not have.
SUPPORTED_FAMILIES = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
    "deepseek_v2", "deepseek_v3", "gemma", "gemma2", "gemma3_text", "phi3", "gpt_oss",
    "glm", "glm4", "chatglm", "granite",
})
# ``architectures`` class names, for a config without ``model_type``.
_CLASS_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "LMHeadModel", "Model")


def model_family(config: Mapping[str, Any]) -> str | None:
    """The config's ``model_type``, else one derived from ``architectures``; None if neither."""
    family = config.get("model_type")
    if isinstance(family, str) and family:
        return family
    names = config.get("architectures")
    if isinstance(names, list) and names and isinstance(names[0], str):
        name = names[0]
        for suffix in _CLASS_SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                break
        squashed = name.lower()
        for known in SUPPORTED_FAMILIES:  # Qwen2Moe -> qwen2_moe
            if known.replace("_", "") == squashed:
                return known
        return squashed
    return None


# Families whose sliding layers follow from ``sliding_window`` alone (every layer).
_EVERY_LAYER_WINDOW = frozenset({"mistral", "mixtral", "phi3"})
_QWEN_WINDOW = frozenset({"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"})
_LAYER_TYPES = ("full_attention", "sliding_attention")


def _sliding_window(config: Mapping[str, Any], family: str | None,
                    source: str) -> dict[str, int]:
    """``{"sliding_window": w, "sliding_layers": n}`` when ``n`` layers attend to the last
    ``w`` keys only (as the family's modelling code decides); {} when none do."""
    cfg = _Keys(config, source)
    if family is None and "sliding_layers" in config:  # a canonical copy: as it was written
        layers = cfg.integer("sliding_layers", low=0)
        return {"sliding_window": cfg.integer("sliding_window"), "sliding_layers": layers}
    layers = config.get("num_hidden_layers")
    if not isinstance(layers, int) or isinstance(layers, bool) or layers < 1:
        return {}  # architecture_from_hf names the bad key
    types = config.get("layer_types")
    if types is not None:
        if (not isinstance(types, list) or len(types) != layers
                or any(t not in _LAYER_TYPES for t in types)):
            raise cfg.error("layer_types", f"a list of {layers} entries, each "
                            + " or ".join(repr(t) for t in _LAYER_TYPES), types)
        sliding = types.count("sliding_attention")
    elif not cfg.present("sliding_window"):
        sliding = 0
    elif family in ("gemma2", "gpt_oss"):
        sliding = (layers + 1) // 2  # layers 0, 2, 4...
    elif family == "gemma3_text":
        sliding = layers - layers // cfg.integer("sliding_window_pattern", 6)
    elif family in _EVERY_LAYER_WINDOW:
        sliding = layers
    elif family in _QWEN_WINDOW and config.get("use_sliding_window") is True:
        sliding = max(0, layers - cfg.integer("max_window_layers", layers, low=0))
    else:
        sliding = 0
    if not sliding:
        return {}
    return {"sliding_window": cfg.integer("sliding_window"), "sliding_layers": sliding}


# ChatGLM's config.json names (THUDM's modeling code) and the Llama names they mean.
_CHATGLM_KEYS = {"num_layers": "num_hidden_layers", "ffn_hidden_size": "intermediate_size",
                 "kv_channels": "head_dim", "padded_vocab_size": "vocab_size"}


def _chatglm_as_llama(config: Mapping[str, Any], source: str) -> dict[str, Any]:
    """ChatGLM/GLM-4 keys renamed; ``multi_query_group_num`` KV heads when
    ``multi_query_attention`` is on (GLM-4-9B: 2 groups for 32 query heads)."""
    out = dict(config)
    for glm, llama in _CHATGLM_KEYS.items():
        if glm in config and llama not in config:
            out[llama] = config[glm]
    if config.get("multi_query_attention") and "num_key_value_heads" not in config:
        if "multi_query_group_num" not in config:
            raise WorkloadFileError(source, "key 'multi_query_group_num'",
                                    "the KV groups of a multi_query_attention model")
        out["num_key_value_heads"] = config["multi_query_group_num"]
    return out


def architecture_from_hf(config: Mapping[str, Any], name: str, source: str) -> Architecture:
    """The :class:`Architecture` that ``config`` (a parsed config.json) describes."""
    cfg = _Keys(config, source)
    hidden = cfg.integer("hidden_size")
    layers = cfg.integer("num_hidden_layers")
    heads = cfg.integer("num_attention_heads")
    kv_heads = cfg.integer("num_key_value_heads", heads)
    if heads % kv_heads:
        raise cfg.error("num_key_value_heads", f"a divisor of num_attention_heads ({heads})",
                        kv_heads)
    head_dim = cfg.integer("head_dim", hidden // heads if hidden >= heads else None)
    vocab = cfg.integer("vocab_size")
    experts = _experts(cfg, layers)
    mla = _latent_attention(cfg)
    dense = layers - (0 if experts is None else len(experts.layers))
    intermediate = cfg.integer("intermediate_size") if dense else cfg.integer(
        "intermediate_size", 0, low=0)
    sliding = cfg.integer("sliding_layers", 0, low=0)
    if sliding > layers:
        raise cfg.error("sliding_layers", f"at most num_hidden_layers ({layers})", sliding)
    window = cfg.integer("sliding_window") if sliding else None
    return Architecture(name=name, hidden=hidden, intermediate=intermediate, layers=layers,
                        q_heads=heads, kv_heads=kv_heads, head_dim=head_dim, vocab=vocab,
                        experts=experts, mla=mla, sliding_window=window,
                        sliding_layers=sliding, post_norms=config.get("post_norms") is True,
                        qk_norm=config.get("qk_norm") is True)


def _experts(cfg: _Keys, layers: int) -> Experts | None:
    if cfg.present("n_routed_experts"):  # DeepSeek-V2/V3
        routed = cfg.integer("n_routed_experts")
        width = cfg.integer("moe_intermediate_size")
        first = cfg.integer("first_k_dense_replace", 0, low=0)
        freq = cfg.integer("moe_layer_freq", 1)
        moe = tuple(i for i in range(layers) if i >= first and i % freq == 0)
        shared = cfg.integer("n_shared_experts", 0, low=0) * width
        return _checked(cfg, Experts(routed, cfg.integer("num_experts_per_tok"), width, moe,
                                     shared), "n_routed_experts")
    if cfg.present("num_local_experts"):  # Mixtral
        routed = cfg.integer("num_local_experts")
        return _checked(cfg, Experts(routed, cfg.integer("num_experts_per_tok"),
                                     cfg.integer("intermediate_size"), tuple(range(layers))),
                        "num_local_experts")
    if cfg.present("num_experts") and cfg.integer("num_experts", low=0) > 0:  # Qwen-MoE
        routed = cfg.integer("num_experts")
        step = cfg.integer("decoder_sparse_step", 1)
        dense_only = set(cfg.index_list("mlp_only_layers", layers))
        moe = tuple(i for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
        shared = cfg.integer("shared_expert_intermediate_size", 0, low=0)
        return _checked(cfg, Experts(routed, cfg.integer("num_experts_per_tok"),
                                     cfg.integer("moe_intermediate_size"), moe, shared,
                                     shared_gate=shared > 0), "num_experts")
    return None


def _checked(cfg: _Keys, experts: Experts, key: str) -> Experts | None:
    if experts.per_token > experts.routed:
        raise cfg.error("num_experts_per_tok", f"at most {key} ({experts.routed})",
                        experts.per_token)
    return experts if experts.layers else None


def _latent_attention(cfg: _Keys) -> LatentAttention | None:
    if not cfg.present("kv_lora_rank"):
        return None
    return LatentAttention(
        q_lora_rank=cfg.integer("q_lora_rank", 0, low=0),
        kv_lora_rank=cfg.integer("kv_lora_rank"),
        qk_nope_head_dim=cfg.integer("qk_nope_head_dim"),
        qk_rope_head_dim=cfg.integer("qk_rope_head_dim"),
        v_head_dim=cfg.integer("v_head_dim"),
    )


class _Keys:
    """Typed reads of a config's keys; each failure is one line naming the key."""

    def __init__(self, data: Mapping[str, Any], source: str) -> None:
        self.data = data
        self.source = source

    def error(self, key: str, expected: str, value: Any = None) -> WorkloadFileError:
        got = "nothing" if value is None else shown(value)
        return WorkloadFileError(self.source, f"key '{key}'", expected, got)

    def present(self, key: str) -> bool:
        return self.data.get(key) is not None

    def integer(self, key: str, default: int | None = None, low: int = 1) -> int:
        value = self.data.get(key)
        if value is None:  # absent or null: HF's "use the default"
            if default is None:
                raise self.error(key, f"an integer from {low} to {MAX_DIM:,} ({WHAT} key)")
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_DIM:
            raise self.error(key, f"an integer from {low} to {MAX_DIM:,}", value)
        return value

    def index_list(self, key: str, layers: int) -> list[int]:
        value = self.data.get(key)
        if value is None:
            return []
        ok = isinstance(value, list) and all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in value)
        if not ok:
            raise self.error(key, f"a list of layer indices from 0 to {layers - 1}", value)
        return list(value)
