"""Hugging Face configs: dense and MoE models give the GEMMs their model cards add up to,
the router's expected rows per expert, tensor parallelism, and one line per bad file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from aoe_optuna.workload.files import WorkloadFileError
from aoe_optuna.workload.forward import routed_rows
from aoe_optuna.workload.hf_config import architecture_from_hf, read_hf_config, used_keys
from aoe_optuna.workload.models import model_workload
from aoe_optuna.workload.vector_ops import step_vector_ops

from .conftest import MODELS_DIR

# DeepSeek-V2-Lite (config.json of deepseek-ai/DeepSeek-V2-Lite on Hugging Face; the card
# gives 15.7B parameters in all, 2.4B activated per token).
DEEPSEEK_V2_LITE = {
    "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
    "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
    "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
    "first_k_dense_replace": 1, "moe_layer_freq": 1, "q_lora_rank": None,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "vocab_size": 102400,
}


def weights(wl) -> int:
    return sum(g.count * g.K * g.N for g in wl.gemms)


def test_llama_31_8b_gemms_and_parameter_count(profile):
    arch, used = read_hf_config(MODELS_DIR / "llama-3.1-8b.json")
    assert arch.name == "llama-3.1-8b" and "torch_dtype" not in used
    wl = model_workload(profile, arch, "decode", batch=8)
    shapes = {g.name: (g.M, g.K, g.N, g.count) for g in wl.gemms}
    assert shapes == {"qkv_proj": (8, 4096, 6144, 32), "o_proj": (8, 4096, 4096, 32),
                      "gate_up_proj": (8, 4096, 28672, 32), "down_proj": (8, 14336, 4096, 32),
                      "lm_head": (8, 4096, 128256, 1)}
    # 8.03B parameters less the 0.53B embedding table (norms are a rounding error).
    assert 7.45e9 < weights(wl) < 7.55e9


def test_qwen3_moe_experts_are_grouped_gemms_of_the_routed_rows(profile):
    arch, _ = read_hf_config(MODELS_DIR / "qwen3-30b-a3b.json")
    assert arch.moe_layers == 48 and arch.dense_layers == 0
    one = model_workload(profile, arch, "decode", batch=1)
    g = {x.name: x for x in one.gemms}
    assert "gate_up_proj" not in g  # no dense MLP layer
    assert (g["router"].M, g["router"].K, g["router"].N, g["router"].count) == (1, 2048, 128, 48)
    # One token picks 8 experts: 8 active, one row each, in each of 48 layers.
    assert (g["experts_gate_up_proj"].M, g["experts_gate_up_proj"].N) == (1, 2 * 768)
    assert g["experts_gate_up_proj"].count == 8 * 48
    assert (g["experts_down_proj"].K, g["experts_down_proj"].N) == (768, 2048)
    # "A3B": about 3.3B parameters are active per token, 0.3B of them the embedding.
    assert 2.9e9 < weights(one) < 3.1e9
    prefill = model_workload(profile, arch, "prefill", batch=1, seq_len=1024)
    p = {x.name: x for x in prefill.gemms}
    assert p["experts_gate_up_proj"].count == 128 * 48  # every expert is busy
    assert p["experts_gate_up_proj"].M == 1024 * 8 // 128
    assert prefill.details["active_experts"] == 128.0
    # All 128 experts once: the full 30.5B less the embedding table.
    assert 30.0e9 < weights(prefill) < 30.4e9


@pytest.mark.parametrize(("tokens", "k", "experts"), [(1, 8, 128), (16, 8, 128), (64, 2, 8),
                                                      (4096, 8, 128), (3, 6, 64)])
def test_routed_rows_cover_every_routed_token(tokens, k, experts):
    active, rows = routed_rows(tokens, k, experts)
    expected = experts * (1 - (1 - k / experts) ** tokens)
    assert active == max(1, round(expected))
    assert rows * expected >= tokens * k  # rounded up: no routed row is lost
    assert (rows - 1) * expected < tokens * k
    assert 1 <= active <= min(experts, tokens * k)


def test_routed_rows_one_token_is_k_experts_of_one_row():
    assert routed_rows(1, 8, 128) == (8, 1)
    assert routed_rows(100_000, 8, 128) == (128, 6250)


def test_tensor_parallel_splits_experts_and_keeps_the_router(profile):
    arch, _ = read_hf_config(MODELS_DIR / "qwen3-30b-a3b.json")
    one = {g.name: g for g in model_workload(profile, arch, "decode", batch=4).gemms}
    four = {g.name: g for g in model_workload(profile, arch, "decode", batch=4, tp=4).gemms}
    assert four["router"] == one["router"]
    assert four["experts_gate_up_proj"].N * 4 == one["experts_gate_up_proj"].N
    assert four["experts_down_proj"].K * 4 == one["experts_down_proj"].K
    wl = model_workload(profile, arch, "decode", batch=4, tp=4)
    per_allreduce = 2 * 3 / 4 * 4 * 2048 * 2 / (profile.interconnect_gbs * 1e9)
    assert wl.details["comm_s"] == pytest.approx(
        2 * 48 * (per_allreduce + profile.interconnect_latency_us * 1e-6))
    with pytest.raises(ValueError, match="^tp: 3 does not divide"):
        model_workload(profile, arch, tp=3)


def test_deepseek_layout_latent_attention_and_shared_experts(profile):
    arch = architecture_from_hf(DEEPSEEK_V2_LITE, "deepseek-v2-lite", "<test>")
    assert arch.dense_layers == 1 and arch.moe_layers == 26
    assert arch.experts is not None and arch.experts.shared_intermediate == 2 * 1408
    prefill = model_workload(profile, arch, "prefill", batch=1, seq_len=4096)
    names = [g.name for g in prefill.gemms]
    assert names == ["q_proj", "kv_a_proj", "kv_b_proj", "o_proj", "gate_up_proj", "down_proj",
                     "router", "experts_gate_up_proj", "experts_down_proj",
                     "shared_gate_up_proj", "shared_down_proj", "lm_head"]
    # 15.7B in all less the 0.21B embedding table.
    assert 15.3e9 < weights(prefill) < 15.6e9
    decode = {g.name: g for g in model_workload(profile, arch, "decode", batch=2).gemms}
    assert "kv_b_proj" not in decode  # absorbed: per-head GEMMs against the latent cache
    assert (decode["q_absorb"].M, decode["q_absorb"].K, decode["q_absorb"].N) == (2, 128, 512)
    assert decode["o_absorb"].N == 128
    # one batched launch per layer over the 16 heads, not 16 launches
    for name in ("q_absorb", "o_absorb"):
        assert (decode[name].count, decode[name].batch) == (27, 16)
    assert decode["q_absorb"].flops == 2.0 * 2 * 128 * 512 * 16
    split = {g.name: g for g in model_workload(profile, arch, "decode", batch=2, tp=2).gemms}
    assert (split["q_absorb"].count, split["q_absorb"].batch) == (27, 8)  # 8 local heads


def test_qwen2_moe_shared_expert_and_sparse_step(profile):
    cfg = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 8,
           "num_attention_heads": 8, "vocab_size": 32000, "num_experts": 16,
           "num_experts_per_tok": 2, "moe_intermediate_size": 512,
           "shared_expert_intermediate_size": 2048, "decoder_sparse_step": 2,
           "mlp_only_layers": [3]}
    arch = architecture_from_hf(cfg, "toy", "<test>")
    assert arch.experts is not None and arch.experts.layers == (1, 5, 7)
    g = {x.name: x for x in model_workload(profile, arch, batch=4).gemms}
    assert g["gate_up_proj"].count == 5 and g["router"].count == 3
    assert (g["shared_expert_gate"].N, g["shared_down_proj"].K) == (1, 2048)


def test_text_config_of_a_multimodal_file_is_read(tmp_path: Path):
    text = json.loads((MODELS_DIR / "llama-3.1-8b.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mllama",
                                                      "text_config": text}))
    arch, used = read_hf_config(tmp_path / "config.json")
    assert arch.hidden == 4096 and arch.name == tmp_path.name
    assert used["vocab_size"] == 128256


@pytest.mark.parametrize(("edit", "phrase"), [
    ({"hidden_size": None}, "key 'hidden_size': expected an integer from 1"),
    ({"vocab_size": "big"}, "key 'vocab_size': expected an integer from 1 to 16,777,216, "
                            "got 'big'"),
    ({"num_hidden_layers": 0}, "key 'num_hidden_layers': expected an integer from 1"),
    ({"num_key_value_heads": 5}, "key 'num_key_value_heads': expected a divisor of "
                                 "num_attention_heads (32), got 5"),
    ({"head_dim": 2.5}, "key 'head_dim': expected an integer"),
    ({"num_experts": 8, "num_experts_per_tok": 9, "moe_intermediate_size": 64},
     "key 'num_experts_per_tok': expected at most num_experts (8), got 9"),
    ({"num_experts": 8, "num_experts_per_tok": 2},
     "key 'moe_intermediate_size': expected an integer from 1"),
    ({"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
      "mlp_only_layers": [40]}, "key 'mlp_only_layers': expected a list of layer indices"),
])
def test_bad_config_names_the_file_and_key(tmp_path: Path, edit, phrase):
    cfg = json.loads((MODELS_DIR / "llama-3.1-8b.json").read_text())
    for key, value in edit.items():
        if value is None:
            del cfg[key]
        else:
            cfg[key] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(ValueError) as info:
        read_hf_config(path)
    assert str(info.value).startswith(f"{path}: ") and phrase in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("text", "phrase"), [
    ("{\"hidden_size\": 10,", "line 1: expected valid JSON"),
    ("[1, 2]", "document: expected a Hugging Face config.json (a JSON object), got [1, 2]"),
    ("{}", "key 'hidden_size'"),
])
def test_unreadable_config_is_one_line(tmp_path: Path, text, phrase):
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=phrase.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        read_hf_config(path)
    with pytest.raises(ValueError, match="no such file"):
        read_hf_config(tmp_path / "missing.json")


GLM4_9B = {  # THUDM/glm-4-9b config.json, the keys the reader needs (ChatGLM names)
    "model_type": "chatglm", "architectures": ["ChatGLMModel"], "hidden_size": 4096,
    "num_layers": 40, "ffn_hidden_size": 13696, "num_attention_heads": 32,
    "kv_channels": 128, "multi_query_attention": True, "multi_query_group_num": 2,
    "padded_vocab_size": 151552, "seq_length": 131072,
}


def test_chatglm_keys_are_read_with_their_kv_grouping(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(GLM4_9B))
    arch, used = read_hf_config(tmp_path / "config.json")
    assert (arch.layers, arch.intermediate, arch.kv_heads, arch.head_dim, arch.vocab) == (
        40, 13696, 2, 128, 151552)
    assert used["num_key_value_heads"] == 2  # the canonical spec keeps the Llama names


@pytest.mark.parametrize("config,family", [
    ({"model_type": "bert", "architectures": ["BertForMaskedLM"], "hidden_size": 768,
      "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
      "vocab_size": 30522}, "'bert'"),
    ({"model_type": "phi", "architectures": ["PhiForCausalLM"], "hidden_size": 2560,
      "intermediate_size": 10240, "num_hidden_layers": 32, "num_attention_heads": 32,
      "vocab_size": 51200}, "'phi'"),
    ({"architectures": ["GPT2LMHeadModel"], "hidden_size": 768}, "'gpt2'"),
])
def test_unsupported_architectures_are_refused_naming_the_supported(
        tmp_path: Path, config: dict, family: str) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(WorkloadFileError) as err:
        read_hf_config(tmp_path / "config.json")
    text = str(err.value)
    assert "key 'model_type'" in text and family in text and "llama" in text
    assert len(text.splitlines()) == 1


@pytest.mark.parametrize("config", [
    {"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
     "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
     "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2},
    {"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880,
     "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8,
     "head_dim": 64, "vocab_size": 201088, "num_local_experts": 32,
     "num_experts_per_tok": 4},
    {"architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 2048,
     "intermediate_size": 5632, "num_hidden_layers": 24, "num_attention_heads": 16,
     "vocab_size": 151936, "num_experts": 60, "num_experts_per_tok": 4,
     "moe_intermediate_size": 1408},
])
def test_supported_families_are_read(tmp_path: Path, config: dict) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config))
    arch, _ = read_hf_config(tmp_path / "config.json")
    assert arch.experts is not None


def test_shipped_deepseek_and_mixtral_configs(profile):
    deepseek, _ = read_hf_config(MODELS_DIR / "deepseek-v2-lite.json")
    assert deepseek == architecture_from_hf(DEEPSEEK_V2_LITE, "deepseek-v2-lite", "<test>")
    mixtral, _ = read_hf_config(MODELS_DIR / "mixtral-8x7b.json")
    g = {x.name: x for x in model_workload(profile, mixtral, "decode", batch=1).gemms}
    assert (g["router"].M, g["router"].K, g["router"].N, g["router"].count) == (1, 4096, 8, 32)
    assert g["experts_gate_up_proj"].count == 2 * 32  # two experts of one row per layer
    # 46.7B parameters less the 0.13B embedding table
    assert 46.4e9 < weights(model_workload(profile, mixtral, "prefill", batch=1, seq_len=512)) \
        < 46.7e9


# --- sliding-window attention --------------------------------------------------------------
DENSE = {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 24,
         "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000}
ALTERNATING = ["sliding_attention", "full_attention"] * 12


@pytest.mark.parametrize(("keys", "window", "sliding"), [
    # Gemma 2 and gpt-oss: layers 0, 2, 4... (the modelling code's (i + 1) % 2).
    ({"model_type": "gemma2", "sliding_window": 4096}, 4096, 12),
    ({"model_type": "gpt_oss", "sliding_window": 128}, 128, 12),
    # Gemma 3: all but every 6th layer.
    ({"model_type": "gemma3_text", "sliding_window": 1024}, 1024, 20),
    ({"model_type": "gemma3_text", "sliding_window": 512, "sliding_window_pattern": 4}, 512, 18),
    # The config's own list wins over the family's rule.
    ({"model_type": "gpt_oss", "sliding_window": 128, "layer_types": ALTERNATING}, 128, 12),
    ({"model_type": "gemma2", "sliding_window": 4096,
      "layer_types": ["full_attention"] * 24}, None, 0),
    # Mistral v0.1 and Phi-3: every layer when set; null (Mistral v0.2+) none.
    ({"model_type": "mistral", "sliding_window": 4096}, 4096, 24),
    ({"model_type": "phi3", "sliding_window": 2047}, 2047, 24),
    ({"model_type": "mistral", "sliding_window": None}, None, 0),
    # Qwen2/Qwen3: only with use_sliding_window, from max_window_layers on.
    ({"model_type": "qwen2", "sliding_window": 131072, "use_sliding_window": False,
      "max_window_layers": 28}, None, 0),
    ({"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": True,
      "max_window_layers": 20}, 4096, 4),
    # Families without sliding windows ignore the key.
    ({"model_type": "llama", "sliding_window": 4096}, None, 0),
])
def test_sliding_window_layers_follow_the_family(keys: dict, window, sliding: int) -> None:
    config = {**DENSE, **keys}
    used = used_keys(config, "config.json")
    arch = architecture_from_hf(used, "m", "config.json")
    assert (arch.sliding_window, arch.sliding_layers) == (window, sliding)
    # The canonical copy holds the result only, and reads back the same.
    assert ("sliding_layers" in used) == bool(sliding)
    again = architecture_from_hf(used_keys(used, "spec"), "m", "spec")
    assert (again.sliding_window, again.sliding_layers) == (window, sliding)


def test_a_model_without_windows_keeps_its_canonical_form() -> None:
    """Qwen2.5's config carries sliding_window with use_sliding_window false: nothing of it
    reaches the canonical form, so its studies resume unchanged."""
    _, used = read_hf_config(MODELS_DIR / "qwen2.5-7b-instruct.json")
    assert not {"sliding_window", "sliding_layers"} & set(used)


@pytest.mark.parametrize("types", [["full_attention"] * 23, ["chunked_attention"] * 24, "full"])
def test_bad_layer_types_are_one_line(types) -> None:
    config = {**DENSE, "model_type": "gpt_oss", "sliding_window": 128, "layer_types": types}
    with pytest.raises(WorkloadFileError) as err:
        used_keys(config, "config.json")
    assert "key 'layer_types': expected a list of 24 entries" in str(err.value)
    assert "\n" not in str(err.value)


def test_gemma2_splits_attention_into_full_and_window_layers(profile) -> None:
    arch, _ = read_hf_config(MODELS_DIR / "gemma-2-9b.json")
    assert arch.attention_spans(32768) == ((None, 21), (4096, 21))
    assert arch.attention_spans(4096) == ((None, 42),)  # the window holds every key
    long = model_workload(profile, arch, "decode", batch=1, seq_len=32768)
    full = model_workload(profile, dataclasses.replace(arch, sliding_window=None,
                                                       sliding_layers=0),
                          "decode", batch=1, seq_len=32768)
    # Half the layers read 4096 of 32768 keys: 21 x (1 + 1/8) of 42 layers' cache reads.
    ratio = long.details["attention_s"] / full.details["attention_s"]
    assert ratio == pytest.approx((21 + 21 / 8) / 42, rel=1e-9)


@pytest.mark.parametrize(("family", "post_norms", "qk_norm"), [
    ("gemma2", True, False), ("gemma3_text", True, True), ("qwen3", False, True),
    ("qwen3_moe", False, True), ("qwen2", False, False), ("llama", False, False)])
def test_a_familys_extra_norms_are_charged(profile, family: str, post_norms: bool,
                                           qk_norm: bool) -> None:
    """Gemma 2/3 norm the attention and MLP outputs too (two more RMSNorms a layer);
    Qwen3 and Gemma 3 norm every Q and K head over head_dim before rotary."""
    used = used_keys({**DENSE, "model_type": family}, "config.json")
    arch = architecture_from_hf(used, "m", "config.json")
    assert (arch.post_norms, arch.qk_norm) == (post_norms, qk_norm)
    assert architecture_from_hf(used_keys(used, "spec"), "m", "spec") == arch
    ops = [(op.kind, op.rows, op.width, n)
           for op, n in step_vector_ops(arch, "decode", 4, 1024, 1, "fp16")]
    assert ("rmsnorm", 4, 2048, 2 + 48 if post_norms else 2) in ops
    assert (("rmsnorm", 4 * 20, 128, 24) in ops) == qk_norm  # 16 Q + 4 K heads of 128
    plain = architecture_from_hf(used_keys({**DENSE, "model_type": "llama"}, "c"), "m", "c")
    more = model_workload(profile, arch, "decode", batch=4).details["elementwise_s"]
    less = model_workload(profile, plain, "decode", batch=4).details["elementwise_s"]
    assert (more > less) == (post_norms or qk_norm)
