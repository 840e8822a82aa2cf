"""The README and docs name the user attributes a study really writes on its trials."""

from __future__ import annotations

import re
from pathlib import Path

import optuna
from optuna.trial import TrialState

from aoe_optuna import attrs
from aoe_optuna.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
KNOWN = {v for k, v in vars(attrs).items() if k.startswith("ATTR_") and isinstance(v, str)}
# "`name` user attribute" or "user attribute `name`" (the docs' two phrasings)
NEAR_USER_ATTRIBUTE = re.compile(r"`(\w+)`\s+user\s+attribute|user\s+attribute\s+`(\w+)`")


def _docs() -> dict[str, str]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return {str(f.relative_to(ROOT)): " ".join(f.read_text().split()) for f in files}


def test_the_readme_names_the_attribute_a_pruned_trial_carries(tmp_path: Path) -> None:
    readme = _docs()["README.md"]
    said = re.search(r"\(a Pruned trial\) the rules it breaks \(`(\w+)`\)", readme)
    assert said, "the README no longer says where a Pruned trial keeps its broken rules"
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert main(["--config", QWEN, "--storage", url, "--study-name", "q", "--n-trials", "8",
                 "--sampler", "random", "--seed", "0", "--no-progress"]) == 0
    pruned = [t for t in optuna.load_study(study_name="q", storage=url).trials
              if t.state == TrialState.PRUNED]
    assert pruned, "the study made no infeasible proposal to look at"
    assert all(said.group(1) in t.user_attrs for t in pruned), (
        f"README says `{said.group(1)}`; a Pruned trial has {sorted(pruned[0].user_attrs)}")


def test_every_documented_user_attribute_exists() -> None:
    wrong = [(name, doc) for doc, text in _docs().items()
             for m in NEAR_USER_ATTRIBUTE.finditer(text)
             for name in m.groups() if name and name not in KNOWN]
    trial_page = re.search(r"A trial's page shows (.*?every rule's value \(`\w+`\))",
                           _docs()["README.md"])
    assert trial_page, "the README no longer describes a trial's page"
    wrong += [(name, "README.md") for name in re.findall(r"`(\w+)`", trial_page.group(1))
              if name not in KNOWN]
    assert not wrong, f"documented attributes a trial never carries: {wrong}"
