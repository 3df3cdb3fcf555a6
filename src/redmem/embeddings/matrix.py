"""VectorMatrix: one partition's vectors as an in-process numpy matrix, for exact cosine top-k.

The matrix mirrors a Redis hash of vectors and is brought up to date from the partition's change
log (see ``redmem/lua/vector_changes.lua``): ``epoch`` names one life of the partition's
vector set (a new one starts whenever the set is emptied and refilled), ``version`` is the
last change applied. Rows are stored divided by their L2 norm, so a query's cosine with every
row is one matrix-vector product:

    cos(q, d) = (q / |q|) . (d / |d|)

No I/O here: callers feed changes in and read top-k lists out.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np

from .base import unit_rows

__all__ = ["VectorMatrix", "Ranking", "MatrixCache", "decode_vector", "encode_vector", "top_k"]

logger = logging.getLogger(__name__)
_FLOAT32_LE = np.dtype("<f4")
#: Above this many changed ids, :meth:`VectorMatrix.rerank` scores every row again.
RERANK_MOST = 1000


def encode_vector(vector: np.ndarray) -> bytes:
    """A vector as little-endian float32 bytes (4 bytes per dimension)."""
    return np.ascontiguousarray(vector, dtype=_FLOAT32_LE).tobytes()


def decode_vector(raw: bytes) -> np.ndarray:
    """Inverse of :func:`encode_vector` (a float32 array in native byte order)."""
    return np.frombuffer(raw, dtype=_FLOAT32_LE).astype(np.float32)


def top_k(scores: np.ndarray, ids: list[str], limit: int) -> list[tuple[str, float]]:
    """The ``limit`` best (id, score) pairs with score > 0, best first; equal scores by id."""
    positive = np.flatnonzero(scores > 0)
    if limit <= 0 or positive.size == 0:
        return []
    if positive.size > limit:
        kth = np.partition(scores[positive], positive.size - limit)[positive.size - limit]
        positive = positive[scores[positive] >= kth]
    ranked = sorted(((ids[i], float(scores[i])) for i in positive), key=lambda pair: (-pair[1], pair[0]))
    return ranked[:limit]


@dataclass(frozen=True)
class Ranking:
    """One search's result with what :meth:`VectorMatrix.rerank` needs to update it."""

    query: np.ndarray
    unit: np.ndarray | None
    scores: np.ndarray
    ids: list[str]
    limit: int
    hits: list[tuple[str, float]]


class VectorMatrix:
    """The unit-normalised vectors of one partition, by record id, with the version they reflect."""

    def __init__(self) -> None:
        self.epoch: bytes | None = None
        self.version = 0
        self.ids: list[str] = []
        self._position: dict[str, int] = {}
        self._rows = np.zeros((0, 0), dtype=np.float32)
        self.lock = threading.Lock()

    @property
    def dimensions(self) -> int | None:
        return self._rows.shape[1] if self._rows.shape[1] else None

    def reset(self, epoch: bytes | None) -> None:
        """Forget every row: the partition's vector set started a new life (``epoch``)."""
        self.epoch, self.version = epoch, 0
        self.ids, self._position = [], {}
        self._rows = np.zeros((0, 0), dtype=np.float32)

    def apply(self, changes: Iterable[tuple[str, bytes | None]]) -> None:
        """Set each id's vector (raw little-endian float32 bytes) or remove it (None or empty)."""
        latest = dict(changes)
        self.ids = list(self.ids)  # a Ranking made earlier keeps the list it was made from
        for record_id in latest:
            self._remove(record_id)
        added = [(i, raw) for i, raw in latest.items() if raw]
        if not added:
            return
        width = self.dimensions or len(added[0][1]) // _FLOAT32_LE.itemsize
        fitting = [(i, raw) for i, raw in added if len(raw) == width * _FLOAT32_LE.itemsize]
        for record_id, raw in added:
            if len(raw) != width * _FLOAT32_LE.itemsize:
                logger.warning("vector of %s has %d bytes, not %d: left out of search",
                               record_id, len(raw), width * _FLOAT32_LE.itemsize)
        if fitting:
            block = decode_vector(b"".join(raw for _, raw in fitting)).reshape(len(fitting), width)
            self._append([i for i, _ in fitting], unit_rows(block))

    def search(self, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """Ids of the ``limit`` rows of highest cosine with ``query`` (cosine > 0), best first."""
        return self.rank(query, limit).hits

    def rank(self, query: np.ndarray, limit: int) -> "Ranking":
        """:meth:`search`, keeping every row's score so :meth:`rerank` can follow later changes."""
        if not self.ids or query.shape[-1] != self.dimensions:
            return Ranking(query, None, np.zeros(0, dtype=np.float32), [], limit, [])
        unit = unit_rows(query.reshape(1, -1).astype(np.float32))[0]
        # einsum's own SIMD loop, not BLAS: BLAS threads waking from idle cost ~10 ms per call
        scores = np.einsum("ij,j->i", self._rows[: len(self.ids)], unit)
        return Ranking(query, unit, scores, self.ids, limit, top_k(scores, self.ids, limit))

    def rerank(self, ranking: "Ranking", changed: set[str]) -> list[tuple[str, float]]:
        """The top ``ranking.limit`` now that the ``changed`` ids were set or removed since ``ranking``.

        Exact without rescoring every row: the best unchanged rows are among the previous top
        ``limit + len(changed)``; only the changed rows still present are scored again.
        """
        if ranking.unit is None or ranking.unit.size != self.dimensions or len(changed) > RERANK_MOST:
            return self.search(ranking.query, ranking.limit)
        kept = top_k(ranking.scores, ranking.ids, ranking.limit + len(changed))
        candidates = [(i, s) for i, s in kept if i not in changed]
        present = [i for i in changed if i in self._position]
        if present:
            rows = self._rows[[self._position[i] for i in present]]
            scores = np.einsum("ij,j->i", rows, ranking.unit)
            candidates += [(i, float(s)) for i, s in zip(present, scores) if s > 0]
        return sorted(candidates, key=lambda pair: (-pair[1], pair[0]))[: ranking.limit]

    def _append(self, ids: list[str], block: np.ndarray) -> None:
        count, needed = len(self.ids), len(self.ids) + len(ids)
        if self._rows.shape[1] != block.shape[1]:
            self._rows = np.zeros((0, block.shape[1]), dtype=np.float32)
        if needed > self._rows.shape[0]:
            grown = np.zeros((max(needed, 2 * self._rows.shape[0], 16), block.shape[1]), dtype=np.float32)
            grown[:count] = self._rows[:count]
            self._rows = grown
        self._rows[count:needed] = block
        self._position.update((record_id, count + n) for n, record_id in enumerate(ids))
        self.ids.extend(ids)

    def _remove(self, record_id: str) -> None:
        row = self._position.pop(record_id, None)
        if row is None:
            return
        last = len(self.ids) - 1
        if row != last:  # move the last row into the hole
            moved = self.ids[last]
            self._rows[row] = self._rows[last]
            self.ids[row] = moved
            self._position[moved] = row
        self.ids.pop()


class MatrixCache:
    """Matrices by (client, vector hash key), the least recently used dropped past ``capacity``.

    Each client has its own matrices, so two clients in one process behave like two processes.
    """

    def __init__(self, capacity: int = 128) -> None:
        self.capacity = capacity
        self._by_client: WeakKeyDictionary[Any, OrderedDict[str, VectorMatrix]] = WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, client: Any, key: str) -> VectorMatrix:
        """The matrix of ``key`` as seen through ``client`` (empty and unversioned when new)."""
        with self._lock:
            matrices = self._by_client.setdefault(client, OrderedDict())
            matrix = matrices.get(key)
            if matrix is None:
                matrix = matrices[key] = VectorMatrix()
                while len(matrices) > self.capacity:
                    matrices.popitem(last=False)
            matrices.move_to_end(key)
            return matrix

    def clear(self) -> None:
        with self._lock:
            self._by_client.clear()
