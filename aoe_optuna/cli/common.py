"""What every ``aoe-tune`` command shares: which errors are the user's, storage files."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class NumDevicesError(ValueError):
    """``--num-devices`` that cannot apply to the spec's workload."""


def user_errors() -> tuple[type[BaseException], ...]:
    from aoe_optuna.export.destinations import DestinationError
    from aoe_optuna.export.kb import KBError
    from aoe_optuna.export.kernel_source import ExportError
    from aoe_optuna.hardware.profile import ProfileError
    from aoe_optuna.samplers.registry import UnknownSamplerError
    from aoe_optuna.space.params import ParamError
    from aoe_optuna.spec.loader import SpecError
    from aoe_optuna.study.create import StudyError
    from aoe_optuna.study.storage import StorageError

    return (SpecError, ProfileError, ParamError, StorageError, StudyError,
            UnknownSamplerError, ExportError, NumDevicesError, DestinationError, KBError)


def sqlite_file(url: str) -> Path | None:
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return Path(url[len("sqlite:///"):])
    if url.endswith(".log") and "://" not in url:
        return Path(url)
    return None


def load_spec_for(path: str, num_devices: int | None) -> Any:
    """The spec of ``path``, with the workload's ``tp`` set to ``num_devices`` if given."""
    from aoe_optuna.spec.format import read_document
    from aoe_optuna.spec.loader import load_spec, spec_from_dict

    if num_devices is None:
        return load_spec(path)
    if num_devices < 1:
        raise NumDevicesError("--num-devices: expected a positive number of devices")
    doc = read_document(path)
    workload = doc.get("workload") or {}
    per_card = [k for k in ("gemm", "shapes", "msprof") if isinstance(workload, dict)
                and k in workload]
    if not isinstance(workload, dict) or per_card:
        what = per_card[0] if per_card else "workload"
        raise NumDevicesError(
            f"--num-devices: {path}: a '{what}' workload gives per-card shapes already; "
            "--num-devices splits a model (model or hf_config) over devices")
    doc["workload"] = {**workload, "tp": num_devices}
    return spec_from_dict(doc, source=str(path))
