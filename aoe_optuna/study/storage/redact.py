"""Storage URLs with their secrets hidden, for everything that prints or stores one.

A PostgreSQL or MySQL URL carries a password in one of two places: the user
part (``user:pw@host``) or the query (libpq's ``?password=`` and
``?sslpassword=``, the MySQL drivers' ``?passwd=``), which SQLAlchemy hands
to the driver as connection arguments. Every place that shows a storage URL
(the run's header, its ``next:`` commands, the dashboard note, knowledge-base
entries, export headers, error lines) goes through :func:`redact_url`, so a
secret form hidden here is hidden everywhere. ``service=`` and ``passfile=``
name where a secret is kept, not the secret, and are shown as they are.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, quote_plus

MASK = "***"
# Query keys whose value is a secret: those holding one of these, in any case: password,
# sslpassword, oauth_client_secret (libpq), passwd (MySQLdb), PWD (ODBC), token.
_SECRET_KEY = re.compile(r"password|passwd|pwd|secret|token", re.IGNORECASE)
# A value that is itself a connection string holding a secret (libpq expands a
# ``dbname`` of ``host=h password=x``; ``odbc_connect`` is one): hidden whole.
_SECRET_INSIDE = re.compile(r"(password|passwd|pwd|secret|token)\s*=", re.IGNORECASE)
_READABLE = "/:@,;*"  # left unescaped in shown query values: paths, hosts, masks read as written
_MAX_NESTING = 3  # a URL inside a query value inside a URL ...: deeper is hidden whole


def redact_url(url: str) -> str:
    """``url`` as SQLAlchemy parses it, every secret shown as ``***``; anything that is
    not a URL (a journal file path) unchanged.

    Parsing, not pattern matching: what SQLAlchemy reads as the password is what the
    driver gets, and ``?x=a@b`` is a query, not a user.
    """
    return _redacted(url, 0)


def redact_text(text: str, url: str) -> str:
    """``text`` (a driver's error message, say) with ``url`` and each secret in it hidden."""
    if url and url in text:
        text = text.replace(url, redact_url(url))
    for secret in sorted(_secrets(url), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def _redacted(url: str, depth: int) -> str:
    parsed = _parse(url)
    if parsed is None:
        return url
    if parsed is False:
        return url.split("://", 1)[0] + "://" + MASK  # unparsable: show nothing that may be secret
    pairs = [(key, one) for key, value in parsed.query.items()
             for one in (value if isinstance(value, tuple) else (value,))]
    shown = [(key, _shown_one(key, one, depth)) for key, one in pairs]
    if shown == pairs and parsed.password is None:
        return url  # nothing to hide: shown exactly as given
    base = parsed.set(query={}).render_as_string(hide_password=True)
    if not shown:
        return base
    return base + "?" + "&".join(
        f"{quote(key, safe='')}={value if value == MASK else quote(value, safe=_READABLE)}"
        for key, value in shown)


def _parse(url: str) -> Any:
    """SQLAlchemy's URL of ``url``; None for what is not a URL, False for a URL it
    cannot parse."""
    if "://" not in url:
        return None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url)
    except (ArgumentError, ValueError, TypeError):
        return False


def _shown_one(key: str, value: str, depth: int) -> str:
    """A query value as shown: a secret masked, a URL in it redacted."""
    if _SECRET_KEY.search(key) or _SECRET_INSIDE.search(value):
        return MASK
    if "://" in value:
        return MASK if depth >= _MAX_NESTING else _redacted(value, depth + 1)
    return value


def _secrets(url: str, depth: int = 0) -> list[str]:
    """Every secret value ``url`` carries, as parsed and as written (percent-encoded)."""
    parsed = _parse(url)
    if not parsed:
        return []
    found = [parsed.password] if parsed.password else []
    for key, value in parsed.query.items():
        for one in value if isinstance(value, tuple) else (value,):
            if _SECRET_KEY.search(key) or _SECRET_INSIDE.search(one):
                found.append(one)
            elif "://" in one:
                found += [one] if depth >= _MAX_NESTING else _secrets(one, depth + 1)
    return [form for secret in found if secret
            for form in {secret, quote(secret, safe=""), quote_plus(secret)}]
