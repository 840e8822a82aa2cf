"""What a run checks the knowledge base for before it measures is what it writes after:
the same keys with the same figures, for a step study, a one-GEMM study and an
operator run."""

from __future__ import annotations

from pathlib import Path

import optuna

from aoe_optuna.export.from_study import kb_entries, planned_entries
from aoe_optuna.export.kb_entry import entry_key
from aoe_optuna.operators import outcome
from aoe_optuna.spec.loader import load_spec
from tests.operators.test_report_bands import _result

ROOT = Path(__file__).resolve().parents[2]


def _figures(entries: list[dict]) -> dict:
    return {entry_key(e): (e["objective"], e.get("workload")) for e in entries}


def _best(spec) -> optuna.trial.FrozenTrial:
    config = spec.baseline
    return optuna.trial.create_trial(params=config, distributions={
        n: d for n, d in spec.space.distributions().items() if n in config}, value=80.0)


def test_a_step_study_writes_what_it_planned() -> None:
    spec = load_spec(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
    written = _figures(kb_entries(spec, _best(spec), 0.1, "s", "sqlite:///a.db"))
    assert len(written) == 5
    assert set(written.values()) == {("tokens/s", spec.workload.name)}
    assert written.items() <= _figures(planned_entries(spec, "s")).items()


def test_a_one_gemm_study_writes_its_shapes_tflops_as_planned() -> None:
    spec = load_spec(ROOT / "studies" / "gemm_4096_910b2.toml")
    entries = kb_entries(spec, _best(spec), 0.1, "s", "sqlite:///a.db")
    (entry,) = entries
    assert entry["objective"] == "TFLOPS" and "workload" not in entry
    # 80 rows/s of a 4096-row GEMM: 51.2 s a call; its 2 * 4096^3 FLOPs in that time
    assert entry["latency_us"] == 51.2e6
    assert entry["value"] == round(2 * 4096**3 / 51.2 / 1e12, 4)
    assert _figures(entries).items() <= _figures(planned_entries(spec, "s")).items()


def test_an_operator_run_writes_what_it_planned() -> None:
    result, spec = _result(simulated=True)
    written = _figures(outcome.kb_entries(result, spec, "sqlite:///a.db"))
    planned = _figures(outcome.planned_kb_entries(spec, "p"))
    assert {f for f, _ in written.values()} == {"TFLOPS", "calls/s"}
    assert written.items() <= planned.items()
