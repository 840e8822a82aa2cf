"""Every password form a storage URL can carry is masked; references to a secret are not."""

from __future__ import annotations

import pytest

from aoe_optuna.study.storage.redact import redact_text, redact_url


@pytest.mark.parametrize("url,shown", [
    # the user part, as SQLAlchemy reads it (a '/' or '?' in the password is the password's)
    ("postgresql+psycopg://u:SECRET@db:5432/aoe", "postgresql+psycopg://u:***@db:5432/aoe"),
    ("postgresql://u:SE/CR?ET@db/aoe", "postgresql://u:***@db/aoe"),
    ("mysql+pymysql://u:SECRET@db/aoe", "mysql+pymysql://u:***@db/aoe"),
    # libpq's query form, first or later, any case of the key, percent-encoded key
    ("postgresql://u@db/aoe?password=SECRET", "postgresql://u@db/aoe?password=***"),
    ("postgresql://u@db/aoe?connect_timeout=5&password=SECRET",
     "postgresql://u@db/aoe?connect_timeout=5&password=***"),
    ("postgresql://u@db/aoe?PassWord=SECRET", "postgresql://u@db/aoe?PassWord=***"),
    ("postgresql://u@db/aoe?%70assword=SECRET", "postgresql://u@db/aoe?password=***"),
    ("postgresql://u@db/aoe?password=SE%26CRET", "postgresql://u@db/aoe?password=***"),
    ("postgresql://u@db/aoe?password=SECRET&password=SECRET2",
     "postgresql://u@db/aoe?password=***&password=***"),
    # the other secret keys libpq and the drivers take
    ("postgresql://u@db/aoe?sslmode=require&sslpassword=SECRET",
     "postgresql://u@db/aoe?sslmode=require&sslpassword=***"),
    ("postgresql://u@db/aoe?oauth_client_secret=SECRET",
     "postgresql://u@db/aoe?oauth_client_secret=***"),
    ("mysql://u@db/aoe?passwd=SECRET", "mysql://u@db/aoe?passwd=***"),
    ("mssql+pyodbc://?odbc_connect=DRIVER%3Dx%3BPWD%3DSECRET", "mssql+pyodbc://?odbc_connect=***"),
    # both forms at once
    ("postgresql://u:SECRET@db/aoe?password=SECRET2", "postgresql://u:***@db/aoe?password=***"),
    # a connection string or a URL inside a value (libpq expands a dbname that is one)
    ("postgresql://u@db/aoe?dbname=host%3Dh%20password%3DSECRET",
     "postgresql://u@db/aoe?dbname=***"),
    ("postgresql://u@db/aoe?dbname=postgresql://v:SECRET@h/d",
     "postgresql://u@db/aoe?dbname=postgresql://v:***@h/d"),
    # where the secret is kept is not the secret: shown as given
    ("postgresql://u@db/aoe?service=aoe&passfile=/home/u/.pgpass",
     "postgresql://u@db/aoe?service=aoe&passfile=/home/u/.pgpass"),
    ("postgresql:///aoe?service=aoe", "postgresql:///aoe?service=aoe"),
    # no secret: exactly as given
    ("postgresql://u@db/aoe?x=a@b", "postgresql://u@db/aoe?x=a@b"),
    ("postgresql://u:SECRET@db/aoe?x=a@b", "postgresql://u:***@db/aoe?x=a@b"),
    ("sqlite:///aoe.db", "sqlite:///aoe.db"),
    ("grpc://localhost:13000", "grpc://localhost:13000"),
    ("runs/aoe.log", "runs/aoe.log"),
    # a URL SQLAlchemy cannot read: nothing after the scheme
    ("postgresql://u:SECRET@db:port/aoe", "postgresql://***"),
])
def test_every_secret_is_masked_and_nothing_else_changes(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "SECRET" not in redact_url(url)


def test_the_masked_url_still_reads_as_the_same_storage() -> None:
    """Host, port, database and the other options survive, so the shown URL says where."""
    from sqlalchemy.engine import make_url

    url = "postgresql+psycopg://u:SECRET@db:6432/aoe?application_name=a%20b&password=SECRET2"
    shown = make_url(redact_url(url))
    assert (shown.host, shown.port, shown.database, shown.username) == ("db", 6432, "aoe", "u")
    assert shown.query["application_name"] == "a b"


@pytest.mark.parametrize("url", [
    "postgresql://u@db/aoe?password=SE%2FCRET",
    "postgresql://u:SE%2FCRET@db/aoe",
    "postgresql://u@db/aoe?sslpassword=SE%2FCRET",
])
def test_a_message_naming_the_url_or_the_secret_in_any_spelling_is_masked(url: str) -> None:
    for text in (f"cannot connect to {url}", "auth failed for 'SE/CRET'",
                 "auth failed for 'SE%2FCRET'"):
        shown = redact_text(text, url)
        assert "SE/CRET" not in shown and "SE%2FCRET" not in shown, shown
    assert redact_text("server closed the connection", url) == "server closed the connection"
