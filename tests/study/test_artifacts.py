"""Study files land in a file-system artifact store next to a SQLite storage."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
from optuna.artifacts import FileSystemArtifactStore, download_artifact, get_all_artifact_meta

from aoe_optuna.study.storage.artifacts import artifact_dir, upload_files, upload_spec


def test_store_sits_next_to_a_sqlite_file_and_nowhere_else(tmp_path: Path) -> None:
    assert artifact_dir(f"sqlite:///{tmp_path}/aoe.db") == Path(f"{tmp_path}/aoe.db.artifacts")
    assert artifact_dir("sqlite:///aoe.db") == Path("aoe.db.artifacts")
    assert artifact_dir("sqlite:///:memory:") is None
    assert artifact_dir("postgresql+psycopg://u@host/aoe") is None


def test_spec_and_files_are_uploaded_and_read_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    study = optuna.create_study(storage=url, study_name="s")
    kernel = tmp_path / "optimized_kernel.cpp"
    kernel.write_text("// tuned\n")
    assert upload_spec(study, url, {"op_name": "GemmKernel"}) == ["spec.json"]
    assert upload_files(study, url, [kernel, tmp_path / "absent.json"]) == [
        "optimized_kernel.cpp"]
    metas = {m.filename: m for m in get_all_artifact_meta(study)}
    assert set(metas) == {"spec.json", "optimized_kernel.cpp"}
    store = FileSystemArtifactStore(str(tmp_path / "aoe.db.artifacts"))
    out = tmp_path / "back.json"
    download_artifact(artifact_store=store, artifact_id=metas["spec.json"].artifact_id,
                      file_path=str(out))
    assert json.loads(out.read_text()) == {"op_name": "GemmKernel"}


def test_no_store_for_a_storage_without_a_directory() -> None:
    study = optuna.create_study()
    assert upload_spec(study, "postgresql+psycopg://u@host/aoe", {"a": 1}) == []


def test_three_runs_of_a_study_list_its_spec_once(tmp_path: Path, monkeypatch) -> None:
    """Each run uploads the spec; the dashboard lists the study's files once each, and a
    kernel exported again with other content as a new version."""
    from aoe_optuna.cli.main import main

    monkeypatch.chdir(tmp_path)
    spec = Path(__file__).resolve().parents[2] / "studies" / "aoe_config.json"
    for n in (2, 3, 4):
        assert main(["--config", str(spec), "--study-name", "s", "--n-trials", str(n),
                     "--sampler", "random", "--seed", "0", "--no-progress"]) == 0
    study = optuna.load_study(study_name="s", storage="sqlite:///aoe.db")
    assert [m.filename for m in get_all_artifact_meta(study)] == ["spec.json"]
    kernel = tmp_path / "k.cpp"
    for text in ("// a\n", "// a\n", "// b\n"):
        kernel.write_text(text)
        upload_files(study, "sqlite:///aoe.db", [kernel])
    assert sorted(m.filename for m in get_all_artifact_meta(study)) == [
        "k.cpp", "k.cpp", "spec.json"]
