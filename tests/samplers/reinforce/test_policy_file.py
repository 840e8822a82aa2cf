"""Policy files read without running code; pickled ones refused, converted on request."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
import torch

from aoe_optuna.samplers.reinforce import PolicyMismatchError
from aoe_optuna.samplers.reinforce._features import FEATURE_NAMES, FEATURE_VERSION
from aoe_optuna.samplers.reinforce._policy_file import (
    PICKLED_FORMAT,
    convert_pickled_policy,
    load_policy,
    save_policy,
    space_signature,
)
from aoe_optuna.samplers.reinforce.pretrain import main as pretrain_main
from aoe_optuna.samplers.reinforce.sampler import new_policy
from tests.samplers.reinforce.test_reinforce_masking import small_space


class _RunsCode:
    """A pickle payload that, if unpickled with the full unpickler, writes a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _old_format(path: Path, extra: object = None) -> dict:
    """A policy as torch.save wrote it before the safetensors format."""
    space = small_space()
    policy = new_policy(space.shape, 16, 3)
    blob = {"format": PICKLED_FORMAT, "state_dict": policy.state_dict(), "hidden": 16,
            "params": space_signature(space), "features": list(FEATURE_NAMES),
            "feature_version": FEATURE_VERSION, "info": {"steps": 7}}
    if extra is not None:
        blob["info"] = {"payload": extra}
    torch.save(blob, str(path))
    return blob


def test_saved_file_is_safetensors_with_json_metadata(tmp_path: Path) -> None:
    from safetensors import safe_open

    space = small_space()
    path = tmp_path / "p.safetensors"
    save_policy(path, new_policy(space.shape, 16, 0), space, {"steps": 3})
    with safe_open(str(path), framework="pt") as f:
        assert f.metadata()["format"] == "aoe_optuna.reinforce.policy/2"
    assert load_policy(path, space)[1] == {"steps": 3}


def test_pickled_policy_is_refused_in_one_line_without_unpickling(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "old.pt"
    _old_format(path, extra=_RunsCode(marker))
    with pytest.raises(PolicyMismatchError) as err:
        load_policy(path, small_space())
    msg = str(err.value)
    assert "\n" not in msg and "can run code" in msg and "--convert" in msg and str(path) in msg
    assert not marker.exists()
    # a bare pickle (no zip container) is refused the same way
    bare = tmp_path / "bare.pkl"
    bare.write_bytes(pickle.dumps({"format": PICKLED_FORMAT}))
    with pytest.raises(PolicyMismatchError, match="can run code"):
        load_policy(bare, small_space())


def test_conversion_keeps_every_tensor_and_refuses_code(tmp_path: Path) -> None:
    old, new = tmp_path / "old.pt", tmp_path / "new.safetensors"
    blob = _old_format(old)
    assert pretrain_main(["--convert", str(old), "--output", str(new)]) == 0
    policy, info = load_policy(new, small_space())
    assert info == {"steps": 7}
    state = policy.state_dict()
    assert set(state) == set(blob["state_dict"])
    assert all(torch.equal(state[k], v) for k, v in blob["state_dict"].items())

    marker = tmp_path / "ran"
    evil = tmp_path / "evil.pt"
    _old_format(evil, extra=_RunsCode(marker))
    with pytest.raises(PolicyMismatchError, match="not converted"):
        convert_pickled_policy(evil, tmp_path / "x.safetensors")
    assert not marker.exists() and not (tmp_path / "x.safetensors").exists()


def test_garbage_and_foreign_files_get_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}......")
    with pytest.raises(PolicyMismatchError, match="not a policy file"):
        load_policy(junk, small_space())
    from safetensors.torch import save_file

    foreign = tmp_path / "model.safetensors"
    save_file({"w": torch.zeros(2)}, str(foreign))
    with pytest.raises(PolicyMismatchError, match="not a ReinforceSampler policy"):
        load_policy(foreign, small_space())
