"""A storage this Optuna version set up opens without alembic; any other takes Optuna's
own path, with its checks and messages."""

from __future__ import annotations

import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from aoe_optuna.study.storage.opening import StorageError, open_storage
from tests.support.pg_server import postgres_server, server_bin

# what a second process loads to open the storage a first one set up
_OPEN_AGAIN = """
import sys
from aoe_optuna.study.storage.opening import open_storage
import optuna
storage = open_storage(sys.argv[1])
print(len(optuna.get_all_study_names(storage)), "alembic" in sys.modules)
"""


def _open_in_a_new_process(url: str) -> str:
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", _OPEN_AGAIN, url],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _set_up(url: str) -> None:
    optuna.create_study(study_name="s", storage=open_storage(url))


def test_a_storage_this_optuna_set_up_opens_without_loading_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    _set_up(url)  # a new storage: stamped by Optuna's own path (alembic)
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


def test_an_unstamped_storage_is_stamped_by_optuna(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    _set_up(f"sqlite:///{db}")
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE alembic_version")
    assert not open_storage(f"sqlite:///{db}")._version_manager.read_from_stamp
    with sqlite3.connect(db) as conn:
        (revision,) = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    assert revision == optuna.storages.RDBStorage(f"sqlite:///{db}").get_head_version()
    assert open_storage(f"sqlite:///{db}")._version_manager.read_from_stamp


@pytest.mark.slow  # a PostgreSQL server of its own
def test_a_postgresql_storage_this_optuna_set_up_opens_without_alembic() -> None:
    if server_bin() is None:
        pytest.skip("no PostgreSQL server installed (postgres, initdb)")
    with postgres_server() as url:
        _set_up(url)
        assert _open_in_a_new_process(url) == "1 False"
