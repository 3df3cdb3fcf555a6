"""Shared by every benchmark, on both sides: statistics, command counting, synthetic text, vectors.

This module imports only the standard library, ``redis`` and ``numpy``, because it is loaded
by path inside popoto's own virtual environment too (``popoto_runner.py``), so both libraries
are measured with the same counters, the same corpus and the same vectors.

- :func:`summary` — p50 / p95 / p99 / mean of a list of timings (linear interpolation).
- :class:`CommandCounter` — counts what a process sends to Redis: one *round trip* per
  ``send_packed_command`` (a pipeline is one), one *command* per packed command (a pipeline of
  12 commands is 12). It patches redis-py's ``AbstractConnection`` class, so every client of
  the process is counted, whatever created it.
- :func:`synthetic_texts` / :func:`synthetic_queries` — a deterministic memory corpus
  (pseudo-words drawn with Zipf-like frequencies, like ``retrieval_bm25.py``'s) and queries
  made of words of random records.
- :func:`hash_vectors` — deterministic 384-d vectors (signed feature hashing of the words):
  the latency runs need vectors for 100k records in both libraries, and the cost of a real
  model is reported separately (LoCoMo uses the real MiniLM model).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import redis
from redis import connection as redis_connection

__all__ = [
    "RESULTS",
    "summary",
    "median_of",
    "CommandCounter",
    "synthetic_texts",
    "synthetic_queries",
    "hash_vectors",
    "HASH_DIMENSIONS",
    "machine",
    "write_json",
    "write_results",
    "read_json",
    "save_rdb",
]

RESULTS = Path(__file__).resolve().parent / "results"
HASH_DIMENSIONS = 384
SEED = 20250607
_SYLLABLES = ["ka", "lo", "mi", "ren", "ta", "su", "vo", "pe", "dri", "an", "el", "or", "qu", "zi", "nu", "ba"]
_VOCABULARY = 20_000
_ZIPF = 1.05


# ----------------------------------------------------------------------------- statistics
def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between order statistics."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: Sequence[float]) -> dict[str, float]:
    """``{"p50", "p95", "p99", "mean", "n"}`` of ``values``."""
    return {
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "mean": statistics.fmean(values) if values else float("nan"),
        "n": len(values),
    }


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    """Key-wise median of several summaries (the figure reported for repeated runs)."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


# ----------------------------------------------------------------------------- counting
@dataclass
class Counts:
    round_trips: int = 0
    commands: int = 0


class CommandCounter:
    """Counts round trips and commands sent by every redis-py connection of this process.

    ``install()`` once; ``snapshot()`` before and after the measured call, subtract with
    :meth:`since`. A round trip is one ``send_packed_command`` (a whole pipeline is one); a
    command is one packed command (a pipeline's MULTI and EXEC count as commands).
    """

    counts = Counts()
    _installed = False

    @classmethod
    def install(cls) -> None:
        if cls._installed:
            return
        base = redis_connection.AbstractConnection
        send_packed, send_command, pack_commands = base.send_packed_command, base.send_command, base.pack_commands
        counts = cls.counts

        def counted_send_packed(self: Any, command: Any, check_health: bool = True) -> Any:
            counts.round_trips += 1
            return send_packed(self, command, check_health)

        def counted_send_command(self: Any, *args: Any, **kwargs: Any) -> Any:
            counts.commands += 1
            return send_command(self, *args, **kwargs)

        def counted_pack_commands(self: Any, commands: Any) -> Any:
            commands = list(commands)
            counts.commands += len(commands)
            return pack_commands(self, commands)

        base.send_packed_command = counted_send_packed
        base.send_command = counted_send_command
        base.pack_commands = counted_pack_commands
        cls._installed = True

    @classmethod
    def snapshot(cls) -> tuple[int, int]:
        return cls.counts.round_trips, cls.counts.commands

    @classmethod
    def since(cls, before: tuple[int, int]) -> tuple[int, int]:
        """(round trips, commands) sent since ``before``."""
        return cls.counts.round_trips - before[0], cls.counts.commands - before[1]


# ----------------------------------------------------------------------------- synthetic text
def _vocabulary(rng: random.Random) -> list[str]:
    words: set[str] = set()
    ordered = []
    while len(ordered) < _VOCABULARY:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in words:
            words.add(word)
            ordered.append(word)
    return ordered


def _weights() -> list[float]:
    return list(np.cumsum([(rank + 1) ** -_ZIPF for rank in range(_VOCABULARY)]))


def synthetic_texts(n: int, seed: int = SEED) -> list[str]:
    """``n`` memory texts, 8-40 words each (median ~20), deterministic for a seed.

    Words are pseudo-words of 2-4 syllables drawn with Zipf-like frequencies
    (rank ** -1.05 over 20,000 words), so common terms occur in many records as in real text.
    """
    rng = random.Random(seed)
    vocabulary, cumulative = _vocabulary(rng), _weights()
    texts = []
    for _ in range(n):
        length = min(40, max(8, int(rng.lognormvariate(math.log(20), 0.4))))
        texts.append(" ".join(rng.choices(vocabulary, cum_weights=cumulative, k=length)))
    return texts


def synthetic_queries(texts: Sequence[str], count: int, seed: int = SEED + 1) -> list[str]:
    """``count`` queries: 3 distinct words of a random text each (deterministic)."""
    rng = random.Random(seed)
    queries = []
    for _ in range(count):
        words = sorted(set(texts[rng.randrange(len(texts))].split()))
        queries.append(" ".join(rng.sample(words, min(3, len(words)))))
    return queries


def hash_vectors(texts: Iterable[str], dimensions: int = HASH_DIMENSIONS) -> np.ndarray:
    """Unit vectors by signed feature hashing of lower-cased words (deterministic, no model).

    Texts sharing words get positive cosine, so a vector search has real neighbours to rank.
    """
    rows = []
    for text in texts:
        row = np.zeros(dimensions, dtype=np.float32)
        for word in text.lower().split():
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            row[value % dimensions] += 1.0 if (value >> 32) & 1 else -1.0
        norm = float(np.linalg.norm(row))
        rows.append(row / norm if norm else row)
    return np.array(rows, dtype=np.float32).reshape(-1, dimensions)


# ----------------------------------------------------------------------------- reporting
def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = None
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory_gb = round(pages / 2**30, 1)
    except (ValueError, OSError):
        pass
    return {
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": memory_gb,
        "python": sys.version.split()[0],
        "load_average": list(os.getloadavg()),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "git": _git_head(),
    }


def _git_head() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).parent, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def write_json(name: str, payload: dict[str, Any], directory: Path | None = None) -> Path:
    """Write ``<directory or RESULTS>/<name>.json``."""
    directory = directory or RESULTS
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    return path


def write_results(name: str, payload: dict[str, Any], markdown: str | None = None) -> Path:
    """Write ``results/<name>.json`` and, when given, the report beside it as ``results/<name>.md``: one
    name per measurement, rewritten by each run (its history is in git)."""
    path = write_json(name, payload)
    if markdown is not None:
        path.with_suffix(".md").write_text(markdown)
    return path


def read_json(name: str, directory: Path | None = None) -> dict[str, Any] | None:
    """The payload of ``<directory or RESULTS>/<name>.json``, or None when absent."""
    path = (directory or RESULTS) / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def save_rdb(client: redis.Redis, poll_seconds: float = 0.5) -> None:
    """Write the server's RDB and wait until it is on disk: BGSAVE and poll, because a SAVE of a
    large partition outlasts the client's socket timeout (a 100k-block frames partition: > 1.2 s)."""
    client.bgsave()
    while int(client.info("persistence")["rdb_bgsave_in_progress"]):
        time.sleep(poll_seconds)
    status = client.info("persistence")["rdb_last_bgsave_status"]
    if status != "ok":
        raise RuntimeError(f"BGSAVE failed: {status}")
