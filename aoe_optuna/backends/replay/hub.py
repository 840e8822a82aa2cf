"""Recorded spaces from AutoTuningAssociation's benchmark_hub, fetched the way a user can.

``benchmark_hub:NAME`` (a bench ``--space`` or a replay spec's ``path``) names one
of :data:`HUB_FILES`: an unchanged Kernel Tuner cache file of the benchmark_hub
repository (MIT License, Copyright (c) 2025 AutoTuningAssociation; DOI
10.5281/zenodo.15364124) at a pinned commit. It is downloaded once into the spaces
folder (``$AOE_SPACES_DIR``, else ``$XDG_CACHE_HOME/aoe_optuna/spaces``, else
``~/.cache/aoe_optuna/spaces``) and checked against its pinned SHA-256 on every
use, so a file placed there by hand (no network) is used as is when it is the same
file. ``$AOE_BENCHMARK_HUB_URL`` points the download at a mirror of
``raw.githubusercontent.com/AutoTuningAssociation/benchmark_hub``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

PREFIX = "benchmark_hub:"
HUB_COMMIT = "8eeb99e7179e6838af95d392ac6c60cebfd8c434"  # 2025-05-24
HUB_URL = "https://raw.githubusercontent.com/AutoTuningAssociation/benchmark_hub"
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class HubFile:
    path: str  # in the repository at HUB_COMMIT
    sha256: str
    size: int


HUB_FILES: dict[str, HubFile] = {
    "gemm_RTX_2080_Ti": HubFile(
        "currently_unused/cachefiles/KernelTuner data/gemm/RTX_2080_Ti.json.gz",
        "8cd18f61f0c237ed5ca08002b6acd2d7ac665d4200f969aa5b42c181cea2e326", 3834534),
    "gemm_RTX_3060_laptop": HubFile(
        "currently_unused/cachefiles/KernelTuner data/gemm/RTX_3060_laptop.json.gz",
        "e56896a5f098a6bc8751497b8b1a29a019a621e0edf342dc1b4cdc37f1cc786c", 2481099),
    "convolution_milo_A4000": HubFile(
        "cachefiles/convolution_milo/A4000.json.gz",
        "fd773e882875902173ed50a7f9db6a28260ea25b87cf26211a7c627b94c0b8e8", 993833),
    "dedispersion_milo_A100": HubFile(
        "cachefiles/dedispersion_milo/A100.json.gz",
        "156253bd3ba2d956496bae6cb57a8601883b9820b50ad5b1b90f02ac4f8ce5fd", 3116539),
}


class HubError(ValueError):
    """A recorded space that cannot be had: one line naming it and what to do."""


def is_hub(text: str) -> bool:
    return text.startswith(PREFIX)


def spaces_dir() -> Path:
    if os.environ.get("AOE_SPACES_DIR"):
        return Path(os.environ["AOE_SPACES_DIR"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "aoe_optuna" / "spaces"


def hub_url(name: str) -> str:
    base = os.environ.get("AOE_BENCHMARK_HUB_URL") or HUB_URL
    return f"{base.rstrip('/')}/{HUB_COMMIT}/{quote(HUB_FILES[name].path)}"


def recorded_space(text: str) -> Path:
    """The local file of ``benchmark_hub:NAME``, downloaded and checked when needed."""
    name = text.removeprefix(PREFIX).removesuffix(".json.gz")
    if name not in HUB_FILES:
        raise HubError(f"{text}: unknown recorded space; expected benchmark_hub: followed by "
                       f"one of {', '.join(HUB_FILES)}")
    pinned = HUB_FILES[name]
    dest = spaces_dir() / f"{name}.json.gz"
    if dest.is_file():
        if _sha256(dest) == pinned.sha256:
            return dest
        if not os.access(dest.parent, os.W_OK):
            raise HubError(f"{text}: {dest} is not the pinned file (sha256 {pinned.sha256})")
    _download(text, hub_url(name), dest, pinned)
    return dest


def _download(text: str, url: str, dest: Path, pinned: HubFile) -> None:
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    except OSError as exc:
        raise HubError(f"{text}: cannot write the spaces folder {dest.parent} ({exc.strerror}); "
                       "set AOE_SPACES_DIR") from None
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=TIMEOUT_S) as got:
            while chunk := got.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != pinned.sha256:
            raise HubError(f"{text}: the download from {url} is not the pinned file (sha256 "
                           f"{digest.hexdigest()}, expected {pinned.sha256}); nothing kept")
        os.replace(tmp, dest)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc.strerror or exc
        raise HubError(f"{text}: cannot download {url} ({reason}); offline? put the file "
                       f"(sha256 {pinned.sha256}) at {dest}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
