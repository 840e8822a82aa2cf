"""A storage this Optuna version sets or set up opens without alembic; any other takes
Optuna's own path, with its checks and messages."""

from __future__ import annotations

import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from aoe_optuna.study.storage.opening import StorageError, open_storage
from aoe_optuna.study.storage.version_stamp import newest_revision
from tests.support.pg_server import postgres_server, server_bin

# what a second process loads to open the storage a first one set up
_OPEN_AGAIN = """
import sys
from aoe_optuna.study.storage.opening import open_storage
import optuna
storage = open_storage(sys.argv[1])
print(len(optuna.get_all_study_names(storage)), "alembic" in sys.modules)
"""


# what a process loads to set up a new storage and a study in it
_SET_UP = """
import sys
from aoe_optuna.study.storage.opening import open_storage
import optuna
storage = open_storage(sys.argv[1])
optuna.create_study(study_name="s", storage=storage)
print(storage._version_manager.stamped_here, "alembic" in sys.modules)
"""


def _open_in_a_new_process(url: str, script: str = _OPEN_AGAIN) -> str:
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", script, url],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _set_up(url: str) -> None:
    optuna.create_study(study_name="s", storage=open_storage(url))


def test_a_storage_this_optuna_set_up_opens_without_loading_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    optuna.create_study(study_name="s", storage=optuna.storages.RDBStorage(url))  # alembic's
    assert _open_in_a_new_process(url) == "1 False"
    storage = open_storage(url)
    assert storage._version_manager.read_from_stamp
    again = pickle.loads(pickle.dumps(storage))  # how a storage reaches a worker process
    assert again._version_manager.read_from_stamp
    assert optuna.get_all_study_names(again) == ["s"]
    # the swap lasts for the open only: a plain Optuna storage is Optuna's
    plain = optuna.storages.RDBStorage(url)
    assert type(plain._version_manager) is optuna.storages._rdb.storage._VersionManager


def test_a_storage_another_optuna_version_set_up_takes_optunas_path(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    _set_up(f"sqlite:///{db}")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE version_info SET library_version = '4.0.0'")
    assert _open_in_a_new_process(f"sqlite:///{db}") == "1 True"
    assert not open_storage(f"sqlite:///{db}")._version_manager.read_from_stamp


def test_an_older_schema_is_refused_with_optunas_upgrade_advice(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    _set_up(f"sqlite:///{db}")
    with sqlite3.connect(db) as conn:  # as Optuna 3.0 left it, before a newer revision
        conn.execute("UPDATE version_info SET library_version = '3.0.0'")
        conn.execute("UPDATE alembic_version SET version_num = 'v3.0.0.d'")
    with pytest.raises(StorageError, match="optuna storage upgrade"):
        open_storage(f"sqlite:///{db}")


def _stamp_table(db: Path) -> tuple[str, list[tuple[str, ...]]]:
    with sqlite3.connect(db) as conn:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'alembic_version'"
                              ).fetchone()
        return sql, conn.execute("SELECT * FROM alembic_version").fetchall()


def test_a_new_storage_is_stamped_as_alembic_stamps_it_without_loading_it(
        tmp_path: Path) -> None:
    assert newest_revision() == optuna.storages.RDBStorage(
        f"sqlite:///{tmp_path / 'head.db'}").get_head_version()
    ours, alembics = tmp_path / "ours.db", tmp_path / "alembic.db"
    assert _open_in_a_new_process(f"sqlite:///{ours}", _SET_UP) == "True False"
    optuna.storages.RDBStorage(f"sqlite:///{alembics}")
    assert _stamp_table(ours) == _stamp_table(alembics)
    plain = optuna.storages.RDBStorage(f"sqlite:///{ours}")  # Optuna's own check passes
    assert plain.get_current_version() == plain.get_head_version()
    assert optuna.get_all_study_names(plain) == ["s"]
    again = open_storage(f"sqlite:///{ours}")._version_manager
    assert again.read_from_stamp and not again.stamped_here


def test_an_unstamped_storage_of_another_version_is_stamped_by_optuna(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    _set_up(f"sqlite:///{db}")
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE alembic_version")
        conn.execute("UPDATE version_info SET library_version = '4.0.0'")
    assert not open_storage(f"sqlite:///{db}")._version_manager.read_from_stamp
    with sqlite3.connect(db) as conn:
        (revision,) = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    assert revision == optuna.storages.RDBStorage(f"sqlite:///{db}").get_head_version()


@pytest.mark.slow  # a PostgreSQL server of its own
def test_a_postgresql_storage_this_optuna_set_up_opens_without_alembic() -> None:
    if server_bin() is None:
        pytest.skip("no PostgreSQL server installed (postgres, initdb)")
    with postgres_server() as url:
        assert _open_in_a_new_process(url, _SET_UP) == "True False"
        assert _open_in_a_new_process(url) == "1 False"
        plain = optuna.storages.RDBStorage(url)
        assert plain.get_current_version() == plain.get_head_version()
        plain.engine.dispose()


def test_where_the_newest_revision_cannot_be_read_a_new_storage_takes_optunas_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aoe_optuna.study.storage import version_stamp

    scripts = tmp_path / "versions"
    scripts.mkdir()
    for name, down in (("a", None), ("b", '"a"'), ("c", '"a"')):  # two heads: no one line
        (scripts / f"{name}.py").write_text(f'revision = "{name}"\ndown_revision = {down}\n')
    monkeypatch.setattr(version_stamp, "_MIGRATIONS", scripts)
    version_stamp.newest_revision.cache_clear()
    try:
        assert version_stamp.newest_revision() is None
        manager = open_storage(f"sqlite:///{tmp_path / 'a.db'}")._version_manager
        assert not manager.stamped_here and not manager.read_from_stamp
    finally:
        version_stamp.newest_revision.cache_clear()
    head = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'b.db'}").get_head_version()
    assert _stamp_table(tmp_path / "a.db")[1] == [(head,)]  # alembic's stamp
