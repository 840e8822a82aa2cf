"""``workload.vector_kernels`` and ``workload.attention``: a model's norms, SwiGLU, rope and
decode (GQA/MQA, MLA) and prefill attention charged at the roofline (the default, canonical
form unchanged) or with the simulator's models; a bad value is one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aoe_optuna.aicore.cann.library_vector import library_vector_seconds
from aoe_optuna.aicore.vector.vector_ops import best_vector_config
from aoe_optuna.spec.loader import SpecError, load_spec, spec_from_dict
from aoe_optuna.workload.models import builtin_architecture
from aoe_optuna.workload.vector_ops import step_vector_ops


def rebuilt(spec: Any) -> Any:
    return spec_from_dict(json.loads(json.dumps(spec.canonical())))


def test_roofline_is_the_default_and_leaves_the_canonical_form_alone() -> None:
    plain = spec_from_dict({"workload": {"batch": 64, "seq_len": 4096}})
    roof = spec_from_dict({"workload": {"batch": 64, "seq_len": 4096,
                                        "vector_kernels": "roofline"}})
    assert roof.canonical() == plain.canonical()
    assert "vector_kernels" not in plain.canonical()["workload"]
    assert roof.workload == plain.workload


@pytest.mark.parametrize("charge", ["default", "best"])
def test_the_model_charges_more_than_the_roofline_and_is_stored(charge: str) -> None:
    plain = spec_from_dict({"workload": {"batch": 64, "seq_len": 4096}})
    modelled = spec_from_dict({"workload": {"batch": [1, 64], "seq_len": 4096,
                                            "vector_kernels": charge}})
    assert modelled.canonical()["workload"]["vector_kernels"] == charge
    assert modelled.default_study_name().endswith(f"-decode-b1_64-vk{charge}")
    assert plain.default_study_name() == "GemmKernel-Ascend910B2-qwen2.5-7b-decode-b64"
    b64 = spec_from_dict({"workload": {"batch": 64, "seq_len": 4096, "vector_kernels": charge}})
    assert b64.workload.gemms == plain.workload.gemms
    assert b64.workload.fixed_s > plain.workload.fixed_s
    assert rebuilt(modelled).workload == modelled.workload


def test_default_charges_the_library_kernels_and_best_the_spaces_best() -> None:
    """``default``: CANN's kernels where modelled (a deployment's calls); ``best``: the
    vector-core model's exhaustive best, which need not beat the library."""
    wl = {"batch": 64, "seq_len": 4096}
    default = spec_from_dict({"workload": {**wl, "vector_kernels": "default"}})
    best = spec_from_dict({"workload": {**wl, "vector_kernels": "best"}}).workload
    profile = default.profile
    ops = step_vector_ops(builtin_architecture("qwen2.5-7b"), "decode", 64, 4096, 1, "fp16")
    assert default.workload.details["elementwise_s"] == pytest.approx(
        sum(n * library_vector_seconds(profile, op) for op, n in ops))
    assert best.details["elementwise_s"] == pytest.approx(
        sum(n * best_vector_config(profile, op)[1].total_s for op, n in ops))


def test_an_unknown_charge_is_one_line_naming_the_choices(tmp_path: Path) -> None:
    path = tmp_path / "study.json"
    path.write_text(json.dumps({"workload": {"vector_kernels": "fastest"}}))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: ") and "\n" not in msg
    assert "vector_kernels" in msg and "roofline" in msg and "tuned" in msg, msg


@pytest.mark.parametrize("charge", ["default", "best"])
def test_decode_attention_charged_by_its_model_and_named(charge: str) -> None:
    plain = spec_from_dict({"workload": {"batch": 1, "seq_len": 32768}})
    modelled = spec_from_dict({"workload": {"batch": 1, "seq_len": 32768, "attention": charge,
                                            "vector_kernels": "default"}})
    assert modelled.canonical()["workload"]["attention"] == charge
    assert modelled.default_study_name().endswith(f"-b1-attn{charge}-vkdefault")
    d = modelled.workload.details
    assert d["attention_roofline_s"] == plain.workload.details["attention_s"]
    assert d["attention_s"] > d["attention_roofline_s"]
    assert rebuilt(modelled).workload == modelled.workload


def test_prefill_attention_charged_by_its_model() -> None:
    plain = spec_from_dict({"workload": {"phase": "prefill", "seq_len": 4096}})
    modelled = spec_from_dict({"workload": {"phase": "prefill", "seq_len": 4096,
                                            "attention": "default"}})
    assert modelled.canonical()["workload"]["attention"] == "default"
    d = modelled.workload.details
    assert d["attention_roofline_s"] == plain.workload.details["attention_s"]
    assert d["attention_s"] > d["attention_roofline_s"]
    assert rebuilt(modelled).workload == modelled.workload


# DeepSeek-V2-Lite (MLA), the shipped config file.
DEEPSEEK_V2_LITE = Path(__file__).parents[2] / "studies/models/deepseek-v2-lite.json"


@pytest.mark.parametrize("phase,op", [("decode", "MlaDecodeAttention"),
                                      ("prefill", "PrefillAttention")])
@pytest.mark.parametrize("charge", ["default", "best", "tuned"])
def test_mla_attention_is_charged_by_its_model(tmp_path: Path, phase: str, op: str,
                                               charge: str) -> None:
    path = tmp_path / "study.json"
    doc = {"workload": {"hf_config": str(DEEPSEEK_V2_LITE), "phase": phase, "seq_len": 2048}}
    plain = load_spec(write(path, doc))
    spec = load_spec(write(path, {"workload": {**doc["workload"], "attention": charge}}))
    assert spec.canonical()["workload"]["attention"] == charge
    d = spec.workload.details
    assert d["attention_roofline_s"] == plain.workload.details["attention_s"]
    assert d["attention_s"] > d["attention_roofline_s"]
    calls = spec.workload.layer_ops
    assert [type(c.problem).__name__ for c in calls] == ([op] if charge == "tuned" else [])
    assert rebuilt(spec).workload == spec.workload


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    return path
