"""A study's files as Optuna artifacts, so the dashboard shows them beside the trials.

The store is a file-system ``optuna.artifacts.FileSystemArtifactStore`` next to
a SQLite storage (``aoe.db`` -> ``aoe.db.artifacts/``); the dashboard finds the
files with ``optuna-dashboard sqlite:///aoe.db --artifact-dir aoe.db.artifacts``.
A storage that is not a local file (PostgreSQL, journal over the network) gets
no store: there is no one directory every host would agree on.

Study artifacts: the spec, and after an export the kernel and the knowledge
base. Trial artifacts: the full log of a failed measurement (a compiler's
whole output), written by the objective (:func:`upload_trial_text`), which
finds the store from the trial's own storage so every worker process writes
beside the same SQLite file.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import optuna
from optuna.artifacts import FileSystemArtifactStore, get_all_artifact_meta, upload_artifact
from optuna.artifacts.exceptions import ArtifactNotFound

SQLITE_PREFIX = "sqlite:///"


def artifact_dir(storage_url: str) -> Path | None:
    """The store beside a SQLite file storage, or None for any other storage."""
    if not storage_url.startswith(SQLITE_PREFIX):
        return None
    db = storage_url[len(SQLITE_PREFIX):]
    if not db or db == ":memory:":
        return None
    return Path(db + ".artifacts")


def storage_url_of(storage: optuna.storages.BaseStorage) -> str | None:
    """The URL of an RDB storage (Optuna's cache wrapper looked through), else None."""
    backend = getattr(storage, "_backend", storage)
    url = getattr(backend, "url", None)
    return url if isinstance(url, str) else None


def upload_trial_text(trial: optuna.Trial, filename: str, text: str) -> str | None:
    """``text`` as the trial's artifact ``filename``; its id, or None without a store."""
    url = storage_url_of(trial.storage)
    where = None if url is None else artifact_dir(url)
    if where is None:
        return None
    where.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / filename
        path.write_text(text)
        return upload_artifact(artifact_store=FileSystemArtifactStore(str(where)),
                               file_path=str(path), study_or_trial=trial)


def upload_files(
    study: optuna.Study, storage_url: str, files: Iterable[Path]
) -> list[str]:
    """Upload each existing file as a study artifact, unless the study already holds the
    same file under the same name (every run of a study uploads its spec: the dashboard
    listed one spec.json per run); the names uploaded."""
    where = artifact_dir(storage_url)
    if where is None:
        return []
    where.mkdir(parents=True, exist_ok=True)
    store = FileSystemArtifactStore(str(where))
    names = []
    for path in files:
        if path.is_file() and not _already_held(study, store, path):
            upload_artifact(artifact_store=store, file_path=str(path), study_or_trial=study)
            names.append(path.name)
    return names


def _already_held(study: optuna.Study, store: FileSystemArtifactStore, path: Path) -> bool:
    """Whether an artifact of the study has ``path``'s name and content."""
    content = path.read_bytes()
    for meta in get_all_artifact_meta(study):
        if meta.filename != path.name:
            continue
        try:
            with store.open_reader(meta.artifact_id) as reader:
                if reader.read() == content:
                    return True
        except ArtifactNotFound:  # its file was removed by hand: upload it again
            continue
    return False


def upload_spec(study: optuna.Study, storage_url: str, canonical: dict[str, Any]) -> list[str]:
    """The study's spec, canonical form, as ``spec.json``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.json"
        path.write_text(json.dumps(canonical, indent=2, sort_keys=True) + "\n")
        return upload_files(study, storage_url, [path])
