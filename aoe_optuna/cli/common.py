"""What every ``aoe-tune`` command shares: which errors are the user's, storage files."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def user_errors() -> tuple[type[BaseException], ...]:
    from aoe_optuna.export.kernel_source import ExportError
    from aoe_optuna.hardware.profile import ProfileError
    from aoe_optuna.samplers.registry import UnknownSamplerError
    from aoe_optuna.space.params import ParamError
    from aoe_optuna.spec.loader import SpecError
    from aoe_optuna.study.create import StudyError
    from aoe_optuna.study.storage import StorageError

    return (SpecError, ProfileError, ParamError, StorageError, StudyError,
            UnknownSamplerError, ExportError)


def sqlite_file(url: str) -> Path | None:
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return Path(url[len("sqlite:///"):])
    if url.endswith(".log") and "://" not in url:
        return Path(url)
    return None


def remove_storage_files(storage: Any, db_file: Path) -> None:
    """Undo a storage file this run created: close its connections, then the file and
    SQLite's companions (``-wal``, ``-shm``, ``-journal``)."""
    engine = getattr(storage, "engine", None)
    if engine is not None:
        engine.dispose()
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db_file}{suffix}").unlink(missing_ok=True)
