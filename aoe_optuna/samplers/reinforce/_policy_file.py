"""Policy files: safetensors weights plus JSON metadata, nothing that can run code.

A policy is shared like a model checkpoint, so reading one must not execute
anything it carries. Pickle (``torch.save``, the format before this one) can:
such files are refused with a one-line message that names the conversion,
which reads them with torch's restricted ``weights_only`` unpickler (tensors,
containers and plain values only) and writes this format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from aoe_optuna.samplers.reinforce._features import FEATURE_NAMES, FEATURE_VERSION
from aoe_optuna.samplers.reinforce._policy import AutoregressivePolicy, PolicyMismatchError
from aoe_optuna.space.search_space import SearchSpace

POLICY_FORMAT = "aoe_optuna.reinforce.policy/2"
PICKLED_FORMAT = "aoe_optuna.reinforce.policy/1"
_PICKLE_MAGIC = (b"PK\x03\x04", b"\x80")  # torch.save's zip container; a bare pickle


def space_signature(space: SearchSpace) -> dict[str, list[Any]]:
    return {p.name: list(p.choices) for p in space.params}


def _plain(value: Any) -> Any:
    """numpy scalars (choices, info) as the Python values JSON can hold."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} cannot be stored in a policy file's metadata")


def save_policy(
    path: str | Path, policy: AutoregressivePolicy, space: SearchSpace, info: dict[str, Any]
) -> None:
    """The weights as safetensors, and what they mean (parameters, choices, features) as JSON."""
    meta = {
        "hidden": policy.hidden,
        "params": space_signature(space),
        "features": list(FEATURE_NAMES),
        "feature_version": FEATURE_VERSION,
        "info": info,
    }
    tensors = {k: v.detach().contiguous() for k, v in policy.state_dict().items()}
    save_file(tensors, str(path),
              metadata={"format": POLICY_FORMAT, "meta": json.dumps(meta, default=_plain)})


def _read(path: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except FileNotFoundError:
        raise PolicyMismatchError(f"{path}: no such policy file") from None
    except IsADirectoryError:
        raise PolicyMismatchError(f"{path}: a folder, not a policy file") from None
    except OSError as exc:
        raise PolicyMismatchError(f"{path}: cannot read the policy ({exc.strerror})") from None
    if head.startswith(_PICKLE_MAGIC):
        raise PolicyMismatchError(
            f"{path}: a pickled (torch.save) policy, refused because loading pickle can run "
            f"code; if you trust it, convert it with `aoe-tune pretrain-policy --convert {path} "
            "--output NEW.safetensors`, or pretrain again"
        )
    try:
        with safe_open(path, framework="pt", device="cpu") as f:
            header = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - not a dict
    except (SafetensorError, OSError, ValueError) as exc:
        raise PolicyMismatchError(f"{path}: not a policy file ({type(exc).__name__})") from None
    if header.get("format") != POLICY_FORMAT:
        raise PolicyMismatchError(f"{path}: not a ReinforceSampler policy ({POLICY_FORMAT})")
    try:
        meta = json.loads(header["meta"])
    except (KeyError, json.JSONDecodeError):
        raise PolicyMismatchError(f"{path}: key 'meta': missing or not JSON") from None
    return tensors, meta


def load_policy(path: str | Path, space: SearchSpace) -> tuple[AutoregressivePolicy, dict]:
    """The saved policy, checked against ``space``; PolicyMismatchError (one line) otherwise."""
    path = str(path)
    tensors, meta = _read(path)
    version = meta.get("feature_version")
    if meta.get("features") != list(FEATURE_NAMES) or version != FEATURE_VERSION:
        raise PolicyMismatchError(
            f"{path}: key 'features': trained with feature spec v{version}, "
            f"this version reads v{FEATURE_VERSION}; pretrain the policy again"
        )
    want = space_signature(space)
    have = meta.get("params", {})
    if list(have) != list(want):
        raise PolicyMismatchError(
            f"{path}: key 'params': trained on parameters {list(have)}, "
            f"this study's space has {list(want)}"
        )
    for name, choices in want.items():
        if list(have[name]) != choices:
            raise PolicyMismatchError(
                f"{path}: key 'params.{name}': trained on choices {list(have[name])}, "
                f"this study's space has {choices}"
            )
    policy = AutoregressivePolicy(len(FEATURE_NAMES), space.shape, hidden=int(meta["hidden"]))
    try:
        policy.load_state_dict(tensors)
    except RuntimeError:
        raise PolicyMismatchError(f"{path}: weights do not fit the network they describe") from None
    return policy, dict(meta.get("info", {}))


def convert_pickled_policy(source: str | Path, output: str | Path) -> dict[str, Any]:
    """Rewrite a torch.save policy as safetensors + JSON; the new file's metadata.

    Read with ``weights_only=True``: torch's restricted unpickler rebuilds
    tensors, containers and plain values and refuses every other global, so a
    file crafted to run code fails here instead of running.
    """
    source = str(source)
    try:
        blob = torch.load(source, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise PolicyMismatchError(f"{source}: no such policy file") from None
    except Exception as exc:  # noqa: BLE001 - the unpickler's refusals have many types
        raise PolicyMismatchError(
            f"{source}: not a plain pickled policy, not converted ({type(exc).__name__})"
        ) from None
    if not isinstance(blob, dict) or blob.get("format") != PICKLED_FORMAT:
        raise PolicyMismatchError(f"{source}: not a ReinforceSampler policy ({PICKLED_FORMAT})")
    meta = {k: blob[k] for k in ("hidden", "params", "features", "feature_version")}
    meta["info"] = blob.get("info", {})
    tensors = {k: v.contiguous() for k, v in blob["state_dict"].items()}
    save_file(tensors, str(output),
              metadata={"format": POLICY_FORMAT, "meta": json.dumps(meta, default=_plain)})
    return meta
