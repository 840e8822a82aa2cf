"""The spec's ``prior`` section and ``aoe-tune --prior``: read, checked, stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_optuna.backends.registry import backend_class
from aoe_optuna.spec.format import read_document
from aoe_optuna.spec.loader import SpecError, spec_from_dict
from aoe_optuna.spec.prior import PriorSource, prior_option

ROOT = Path(__file__).resolve().parents[2]


def _spec(name: str, **changes):
    doc = read_document(ROOT / "studies" / name)
    doc.update(changes)
    return spec_from_dict(doc, source=str(ROOT / "studies" / name))


def test_the_npu_backend_takes_the_simulator_the_cpu_its_model_and_the_others_none() -> None:
    assert _spec("gemm_npu_910b2.toml").prior == PriorSource("simulator")
    assert _spec("cpu_gemm.json").prior == PriorSource("model")
    assert _spec("qwen25_7b_decode_910b2.json").prior is None
    assert _spec("gemm_npu_910b2.toml", prior="none").prior is None
    assert _spec("cpu_gemm.json", prior="none").prior is None
    assert "prior" not in _spec("cpu_gemm.json").canonical()  # the default is not stored
    given = _spec("cpu_gemm.json", prior="model")
    assert given.canonical()["prior"] == "model"
    assert spec_from_dict(given.canonical()).prior == PriorSource("model")


def test_only_a_backend_with_a_model_of_its_kernel_takes_the_model() -> None:
    with pytest.raises(SpecError, match="has no model of its kernel") as err:
        _spec("qwen25_7b_decode_910b2.json", prior="model")
    assert "\n" not in str(err.value)


def test_each_form_reads_back_and_a_given_one_is_stored_with_the_spec() -> None:
    study = {"study": "other-soc", "storage": "sqlite:///o.db"}
    spec = _spec("qwen25_7b_decode_910b2.json", prior=study)
    assert spec.prior == PriorSource("study", name="other-soc", storage="sqlite:///o.db")
    assert spec.canonical()["prior"] == study
    assert spec_from_dict(spec.canonical()).prior == spec.prior
    assert "prior" not in _spec("gemm_npu_910b2.toml").canonical()  # the default: as before
    recording = _spec("replay_gemm_2080ti.json", prior={"recording": "x.json.gz"})
    assert recording.prior == PriorSource("recording", path="x.json.gz")
    kb = _spec("qwen25_7b_decode_910b2.json", prior={"kb": "aoe_kb.json"})
    assert kb.prior == PriorSource("kb", path="aoe_kb.json")
    assert spec_from_dict(kb.canonical()).prior == kb.prior


@pytest.mark.parametrize(("prior", "needle"), [
    ("sometimes", "expected 'none', 'simulator', 'model'"),
    ({"study": "x"}, "key 'prior.storage'"),
    ({"recording": "a", "study": "b"}, "key 'prior"),
    ({"kb": "aoe_kb.json", "recording": "r"}, "key 'prior"),
    ({"knowledge": "aoe_kb.json"}, "key 'prior'"),
])
def test_a_bad_prior_section_names_its_key(prior, needle) -> None:
    with pytest.raises(SpecError, match=needle.replace("(", r"\(")) as err:
        _spec("qwen25_7b_decode_910b2.json", prior=prior)
    assert "\n" not in str(err.value)


def test_the_simulator_predicts_ascend_kernels_only() -> None:
    with pytest.raises(SpecError, match="the simulator predicts Ascend kernels only"):
        _spec("cpu_gemm.json", prior="simulator")


def test_the_command_line_forms() -> None:
    assert prior_option("none", backend_class("npu")) is None
    assert prior_option("simulator", backend_class("npu")) == PriorSource("simulator")
    assert prior_option("model", backend_class("cpu")) == PriorSource("model")
    assert prior_option("study:s1@sqlite:///a.db", backend_class("npu")) == PriorSource(
        "study", name="s1", storage="sqlite:///a.db")
    assert prior_option("recording:r.json.gz", backend_class("replay")) == PriorSource(
        "recording", path="r.json.gz")
    assert prior_option("kb:aoe_kb.json", backend_class("cpu")) == PriorSource(
        "kb", path="aoe_kb.json")
    with pytest.raises(ValueError,
                       match="--prior: expected none, simulator, model, study:NAME@URL"):
        prior_option("study:nameonly", backend_class("npu"))


def test_a_cpu_specs_sampler_starts_from_the_kernel_model() -> None:
    """The default reaches the sampler: GP-UCB holds the model, and its first proposal
    is the model's best config (decision 0039), a native-FMA packed -O2 kernel."""
    import optuna

    from aoe_optuna.samplers.priors.simulator import SimulatorPrior
    from aoe_optuna.study.run.sampler_choice import SamplerChoice
    from aoe_optuna.study.session import build_sampler

    spec = _spec("cpu_gemm.json")
    sampler = build_sampler(SamplerChoice("gp-ucb", {}, seed=0), spec)
    assert isinstance(sampler.prior, SimulatorPrior)
    assert sampler.prior.name.startswith("model of the cpu kernel (")
    study = optuna.create_study(direction="maximize", sampler=sampler)
    first = study.ask(spec.space.distributions()).params
    assert (first["schedule"], first["opt_level"], first["quantization"]) == (
        "throughput", "O2", False)
    assert first["pipeline"] in (1, 2)
    none = build_sampler(SamplerChoice("gp-ucb", {}, seed=0), _spec("cpu_gemm.json",
                                                                    prior="none"))
    assert none.prior is None
