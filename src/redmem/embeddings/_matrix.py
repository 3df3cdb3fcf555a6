"""VectorMatrix: one partition's vectors as an in-process numpy matrix, for exact cosine top-k.

The matrix mirrors a Redis hash of vectors and is brought up to date from the partition's change
log (see ``redmem/fields/lua/vector_changes.lua``): ``epoch`` names one life of the partition's
vector set (a new one starts whenever the set is emptied and refilled), ``version`` is the
last change applied. Rows are the stored vectors (decoded to float32, see
:mod:`~redmem.embeddings._codec`) divided by their L2 norm, so a query's cosine with every row
is one matrix-vector product:

    cos(q, d) = (q / |q|) . (d / |d|)

The product reads the whole matrix (memory bound: ~10 ms per 100,000 x 384 floats on one core),
so a large matrix is first pre-scanned in int8 (:mod:`~redmem.embeddings._prescan`: a quarter of
the bytes, with error bounds that keep the top-k exact) and only its shortlist is scored in
float32; either scan runs in row slices on a few threads (:mod:`~redmem.embeddings._slices`). Opt-in
(``prescan="binary"``), the shortlist comes instead from one sign bit per dimension
(:mod:`~redmem.embeddings._binary_prescan`: an eighth of the int8 bytes, approximate: a true
neighbour can be missed, every returned cosine is exact), or (``prescan="hnsw"``) from an HNSW
graph over the rows (:mod:`~redmem.embeddings._hnsw_prescan`: visits a few hundred rows,
approximate in the same way; built in the background, the exact pre-scan serves until it is
ready). No I/O here: callers feed changes in
and read top-k lists out.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..store._aio import CooperativeLock
from ..store._client_cache import ClientCache
from . import _binary_prescan as binary_prescan
from . import _hnsw_prescan as hnsw_prescan
from . import _prescan
from ._base import unit_rows
from ._codec import decode_rows, stored_dimensions
from ._slices import in_slices

__all__ = ["VectorMatrix", "Ranking", "MatrixCache", "top_k", "cosines", "PRESCANS"]

logger = logging.getLogger(__name__)
#: Above this many changed ids, :meth:`VectorMatrix.rerank` scores every row again.
RERANK_MOST = 1000
#: How a large matrix is pre-scanned: "exact" (int8 codes with error bounds, the default),
#: "binary" (sign bits, approximate; :mod:`~redmem.embeddings._binary_prescan`) or "hnsw" (a
#: graph, approximate; :mod:`~redmem.embeddings._hnsw_prescan`).
PRESCANS = ("exact", "binary", "hnsw")


def cosines(rows: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """``rows @ unit`` (float32), in row slices on a few threads (:func:`~.slices.in_slices`)."""
    out = np.empty(rows.shape[0], dtype=np.float32)
    in_slices(rows.shape[0], rows.shape[1], lambda a, b: np.einsum("ij,j->i", rows[a:b], unit, out=out[a:b]))
    return out


def top_k(scores: np.ndarray, ids: list[str], limit: int) -> list[tuple[str, float]]:
    """The ``limit`` best (id, score) pairs with score > 0, best first; equal scores by id."""
    if limit <= 0 or scores.size == 0:
        return []
    if scores.size <= limit:
        chosen = np.flatnonzero(scores > 0)
    else:
        kth = np.partition(scores, scores.size - limit)[scores.size - limit]
        chosen = np.flatnonzero(scores >= kth) if kth > 0 else np.flatnonzero(scores > 0)
    ranked = sorted(((ids[i], float(scores[i])) for i in chosen), key=lambda pair: (-pair[1], pair[0]))
    return ranked[:limit]


@dataclass(frozen=True)
class Ranking:
    """One search's result with what :meth:`VectorMatrix.rerank` needs to update it.

    ``scores`` and ``ids`` cover every row, or (``complete`` False) only a pre-scan's shortlist;
    ``prescan`` is the one it was ranked with (see :data:`PRESCANS`).
    """

    query: np.ndarray
    unit: np.ndarray | None
    scores: np.ndarray
    ids: list[str]
    limit: int
    hits: list[tuple[str, float]]
    complete: bool = True
    prescan: str = "exact"


class VectorMatrix:
    """The unit-normalised vectors of one partition, by record id, with the version they reflect.

    ``generation`` counts :meth:`reset` calls, so a caller can tell a reloaded matrix from an
    updated one; ``layout`` changes whenever a row is removed or moved (rows found earlier are
    stale); ``loading`` is ``(version its first page was read at, next cursor)`` while a
    reload is in progress, else None.
    """

    def __init__(self) -> None:
        self.epoch: bytes | None = None
        self.version = 0
        self.generation = 0
        self.layout = 0
        self.loading: tuple[int, bytes] | None = None
        self.ids: list[str] = []
        self._position: dict[str, int] = {}
        self._rows = np.zeros((0, 0), dtype=np.float32)
        self._codes = np.zeros((0, 0), dtype=np.int8)
        self._scale = np.zeros(0, dtype=np.float32)
        self._error = np.zeros(0, dtype=np.float32)
        self._coded = 0  # rows 0.._coded-1 have current int8 codes
        self._signs = np.zeros((0, 0), dtype=np.uint64)  # sign bits, word-major (binary pre-scan)
        self._signed = 0  # rows 0.._signed-1 have current sign bits
        self._graph: hnsw_prescan.HnswGraph | None = None  # told of every row change once made
        self.lock = CooperativeLock()

    @property
    def dimensions(self) -> int | None:
        return self._rows.shape[1] if self._rows.shape[1] else None

    def reset(self, epoch: bytes | None) -> None:
        """Forget every row: the vector set started a new life (``epoch``), or is being reloaded."""
        self.epoch, self.version, self.loading = epoch, 0, None
        self.generation += 1
        self.layout += 1
        self.ids, self._position = [], {}
        self._rows = np.zeros((0, 0), dtype=np.float32)
        self._coded = self._signed = 0
        self._drop_graph()

    def apply(self, changes: Iterable[tuple[str, bytes | None]], dimensions: int | None = None) -> None:
        """Set each id's vector (a stored value, see :mod:`~redmem.embeddings._codec`) or remove it (None or empty).

        ``dimensions`` (when the field knows them) lets values of the earlier bare float32 format
        be read into an empty matrix; values of other dimensions are left out, with a warning.
        """
        latest = dict(changes)
        if not latest:
            return
        self.ids = list(self.ids)  # a Ranking made earlier keeps the list it was made from
        for record_id in latest:
            self._remove(record_id)
        added = [(i, raw) for i, raw in latest.items() if raw]
        if not added:
            return
        width = self.dimensions or dimensions or next(filter(None, (stored_dimensions(r) for _, r in added)), None)
        rows, kept = decode_rows([raw for _, raw in added], width) if width else (None, [])
        if len(kept) < len(added):
            decoded = set(kept)
            left_out = [i for n, (i, _) in enumerate(added) if n not in decoded]
            logger.warning("%d vector(s) are not of %s dimensions: left out of search (e.g. %s)",
                           len(left_out), width, left_out[0])
        if kept and rows is not None:
            self._append([added[n][0] for n in kept], unit_rows(rows))

    def unit_vectors(self, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The unit vector of each id that has a row (a copy, read under the lock)."""
        with self.lock:
            return {i: self._rows[self._position[i]].copy() for i in ids if i in self._position}

    def search(self, query: np.ndarray, limit: int, prescan: str = "exact") -> list[tuple[str, float]]:
        """Ids of the ``limit`` rows of highest cosine with ``query`` (cosine > 0), best first;
        ``prescan`` "binary" or "hnsw": of the rows that pre-scan shortlists (approximate, see
        :data:`PRESCANS`)."""
        return self.rank(query, limit, prescan).hits

    def rank(self, query: np.ndarray, limit: int, prescan: str = "exact") -> Ranking:
        """:meth:`search`, keeping every row's score so :meth:`rerank` can follow later changes
        (nothing is scored for ``limit`` 0)."""
        if limit <= 0 or not self.ids or query.shape[-1] != self.dimensions:
            return Ranking(query, None, np.zeros(0, dtype=np.float32), [], limit, [], prescan=prescan)
        unit = unit_rows(query.reshape(1, -1).astype(np.float32))[0]
        count = len(self.ids)
        chosen = None
        if count >= _prescan.PRESCAN_MIN_ROWS and prescan == "binary":
            chosen = self._binary_shortlist(unit, limit)
        elif count >= _prescan.PRESCAN_MIN_ROWS:
            if prescan == "hnsw":  # None until the graph is built: the exact pre-scan serves
                chosen = self._current_graph().candidates(count, unit, limit)
            if chosen is None and self._coded >= count:
                chosen = _prescan.shortlist(self._codes[:count], self._scale[:count], self._error[:count], unit, limit)
        if chosen is not None:
            scores = np.einsum("ij,j->i", self._rows[chosen], unit)
            ids = [self.ids[i] for i in chosen.tolist()]
            return Ranking(query, unit, scores, ids, limit, top_k(scores, ids, limit), complete=False, prescan=prescan)
        scores = cosines(self._rows[:count], unit)
        return Ranking(query, unit, scores, self.ids, limit, top_k(scores, self.ids, limit), prescan=prescan)

    def _binary_shortlist(self, unit: np.ndarray, limit: int) -> np.ndarray | None:
        """The rows of the sign-bit pre-scan's :data:`~.binary_prescan.CANDIDATES_PER_HIT` ``* limit``
        candidates (their sign bits brought up to date first); None when that is every row."""
        count, wanted = len(self.ids), binary_prescan.CANDIDATES_PER_HIT * limit
        if wanted >= count:
            return None
        words = (self._rows.shape[1] + 63) // 64
        if self._signs.shape[0] != words:  # first use, or rows of other dimensions since
            self._signs, self._signed = np.zeros((words, 0), dtype=np.uint64), 0
        if self._signs.shape[1] < count:
            grown = np.zeros((words, self._rows.shape[0]), dtype=np.uint64)
            grown[:, : self._signed] = self._signs[:, : self._signed]
            self._signs = grown
        if self._signed < count:
            self._signs[:, self._signed:count] = binary_prescan.sign_words(self._rows[self._signed:count])
            self._signed = count
        query = binary_prescan.sign_words(unit[None, :])[:, 0]
        return binary_prescan.nearest(self._signs[:, :count], query, wanted)

    def _current_graph(self) -> hnsw_prescan.HnswGraph:
        """This matrix's HNSW graph, started now (built in the background) when it has none that
        can serve; call under :attr:`lock`."""
        if self._graph is None or self._graph.stale:
            self._drop_graph()
            self._graph = hnsw_prescan.HnswGraph(self.lock, lambda: (self._rows, len(self.ids)))
        return self._graph

    def wait_for_graph(self, timeout: float | None = None) -> bool:
        """Start this matrix's HNSW graph if it has none and wait up to ``timeout`` seconds for its
        build and its catch-up with the writes since (not under :attr:`lock`: both read the rows
        under it); whether they are done.

        A process that serves ``prescan="hnsw"`` searches can call it once the matrix is loaded,
        so its first searches do not fall back to the exact pre-scan."""
        with self.lock:
            graph = self._current_graph()
            graph.follow(len(self.ids))
        return graph.wait(timeout)

    @property
    def graph_build_seconds(self) -> float | None:
        """How long this matrix's HNSW graph took to build; None while it has none built."""
        return self._graph.build_seconds if self._graph is not None else None

    def _drop_graph(self) -> None:
        if self._graph is not None:
            self._graph.close()
            self._graph = None

    def rows_of(self, ids: list[str]) -> np.ndarray:
        """The rows of the leading ``ids`` that have one (up to the first that has none); call
        under :attr:`lock`, and read :attr:`layout` with them: rows move when it changes."""
        rows = []
        for record_id in ids:
            row = self._position.get(record_id)
            if row is None:
                break
            rows.append(row)
        return np.array(rows, dtype=np.intp)

    def cosines_at(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The cosines of ``query`` with the given rows (float32), under :attr:`lock`: those rows
        alone, or every row scored when they are an eighth of the matrix or more (copying many
        scattered rows costs more than a scan)."""
        if rows.size == 0 or query.shape[-1] != self.dimensions:
            return np.zeros(rows.size, dtype=np.float32)
        unit = unit_rows(query.reshape(1, -1).astype(np.float32))[0]
        if rows.size * 8 >= len(self.ids):
            scores: np.ndarray = cosines(self._rows[: len(self.ids)], unit)[rows]
        else:
            scores = np.einsum("ij,j->i", self._rows[rows], unit)
        return scores

    def search_among(self, query: np.ndarray, allowed: list[bytes], limit: int) -> list[tuple[str, float]]:
        """:meth:`search` over the rows of the ids ``allowed`` (as the server sends them) alone,
        under :attr:`lock`: the exact top ``limit`` of those rows (a filter's matching records;
        ids without a row are left out).

        Few ids (an eighth of the rows or fewer): only their rows are scored. Many: every row is
        scored (one scan, as :meth:`search` does) and the best rows are walked in order, each
        looked up among the ids, until ``limit`` of them are found; a window of about
        ``limit * rows / len(allowed)`` best rows is sorted at a time, doubled when it falls short.
        """
        count = len(self.ids)
        if limit <= 0 or not count or not allowed or query.shape[-1] != self.dimensions:
            return []
        if len(allowed) * 8 <= count:
            position = self._position
            named = (position.get(raw.decode(), -1) for raw in allowed)
            rows = np.fromiter(named, dtype=np.intp, count=len(allowed))
            rows = rows[rows >= 0]
            return top_k(self.cosines_at(query, rows), [self.ids[row] for row in rows.tolist()], limit)
        scores = cosines(self._rows[:count], unit_rows(query.reshape(1, -1).astype(np.float32))[0])
        members, ids = set(allowed), self.ids
        window = min(count, 2 * limit * count // len(allowed) + limit)
        while True:
            best = np.argpartition(-scores, window - 1)[:window] if window < count else np.arange(count)
            best = best[np.argsort(-scores[best], kind="stable")]
            chosen = [row for row in best.tolist() if scores[row] > 0 and ids[row].encode() in members]
            if len(chosen) >= limit or window == count or scores[best[-1]] <= 0:
                break
            window = min(count, window * 2)
        if len(chosen) >= limit:  # rows tied with the last one kept may lie outside the window
            tied = np.flatnonzero(scores == scores[chosen[limit - 1]]).tolist()
            chosen = list(dict.fromkeys(chosen[:limit] + [r for r in tied if ids[r].encode() in members]))
        return top_k(scores[chosen], [ids[row] for row in chosen], limit)

    def search_except(self, query: np.ndarray, excluded: list[bytes], limit: int) -> list[tuple[str, float]]:
        """:meth:`search` leaving out the rows of the ids ``excluded`` (as the server sends them),
        under :attr:`lock`: the exact top ``limit`` of the other rows, the same hits
        :meth:`search_among` gives when allowed every other id.

        The exact top ``limit + len(excluded rows)`` holds them (at most that many of its rows
        are left out), so a search of a few superseded records' worth more serves.
        """
        skipped = {raw.decode() for raw in excluded} & self._position.keys()
        if limit <= 0:
            return []
        hits = self.rank(query, limit + len(skipped)).hits
        return [hit for hit in hits if hit[0] not in skipped][:limit]

    def rerank(self, ranking: Ranking, changed: set[str]) -> list[tuple[str, float]]:
        """The top ``ranking.limit`` now that the ``changed`` ids were set or removed since ``ranking``.

        Exact without rescoring every row: the best unchanged rows are among the previous top
        ``limit + len(changed)``; only the changed rows still present are scored again.
        """
        if (not ranking.complete or ranking.unit is None or ranking.unit.size != self.dimensions
                or len(changed) > RERANK_MOST):
            return self.search(ranking.query, ranking.limit, ranking.prescan)
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
            self._drop_graph()
        if needed > self._rows.shape[0]:
            capacity = max(needed, 2 * self._rows.shape[0], 16)
            self._rows = _grown(self._rows, capacity, count)
        self._rows[count:needed] = block
        if _prescan.available() and needed >= _prescan.PRESCAN_MIN_ROWS:
            self._code_rows(needed)
        self._position.update((record_id, count + n) for n, record_id in enumerate(ids))
        self.ids.extend(ids)

    def _remove(self, record_id: str) -> None:
        row = self._position.pop(record_id, None)
        if row is None:
            return
        self.layout += 1
        last = len(self.ids) - 1
        if self._graph is not None:
            self._graph.changed(row)
            self._graph.changed(last)
        if row != last:  # move the last row into the hole
            moved = self.ids[last]
            self._rows[row] = self._rows[last]
            if last < self._coded:
                self._codes[row], self._scale[row], self._error[row] = \
                    self._codes[last], self._scale[last], self._error[last]
            else:
                self._coded = min(self._coded, row)
            if last < self._signed:
                self._signs[:, row] = self._signs[:, last]
            else:
                self._signed = min(self._signed, row)
            self.ids[row] = moved
            self._position[moved] = row
        self.ids.pop()
        self._coded = min(self._coded, len(self.ids))
        self._signed = min(self._signed, len(self.ids))


    def _code_rows(self, stop: int) -> None:
        """Int8 codes (:mod:`~redmem.embeddings._prescan`) of every row below ``stop`` that lacks current ones."""
        start = self._coded if self._codes.shape[1:] == self._rows.shape[1:] else 0
        if self._codes.shape[0] < self._rows.shape[0] or start == 0:
            self._codes = _grown(self._codes, self._rows.shape[0], start, self._rows.shape[1])
            self._scale = _grown(self._scale, self._rows.shape[0], start)
            self._error = _grown(self._error, self._rows.shape[0], start)
        self._codes[start:stop], self._scale[start:stop], self._error[start:stop] = _prescan.quantize(self._rows[start:stop])
        self._coded = stop


def _grown(array: np.ndarray, capacity: int, keep: int, width: int | None = None) -> np.ndarray:
    """A zeroed ``array`` of ``capacity`` rows (of ``width`` columns when given) holding its first ``keep`` rows."""
    shape = (capacity,) + ((width,) if width is not None else array.shape[1:])
    grown = np.zeros(shape, dtype=array.dtype)
    if keep:
        grown[:keep] = array[:keep]
    return grown


class MatrixCache(ClientCache[VectorMatrix]):
    """Matrices by (client, vector hash key), the least recently used dropped past ``capacity``.

    Each client has its own matrices, so two clients in one process behave like two processes.
    """

    def __init__(self, capacity: int = 128) -> None:
        super().__init__(VectorMatrix, capacity)
