"""The search side of EmbeddingField: exact cosine over each partition's vectors, cached in-process.

Each process keeps a partition's vectors as a float32 numpy matrix
(:class:`~redmem.embeddings._matrix.VectorMatrix`) and ranks by exact cosine over the stored
vectors, keeping cosine > 0. A search sends one request, ``vector_changes.lua`` (the changes
since the cached version); the changes are applied and the ranking brought up to date with
them. A reader more than the change log's length behind reloads the set; a long catch-up or
reload reads :data:`CHANGES_PER_CALL` vectors per further round trip. Sent with other searches
(:func:`~redmem.fields.search_protocol.run_searches`) the search embeds a query text and scores
the matrix while the server answers; ``semantic_search`` scores it first, so that its one
pipeline also reads the hashes of the cached top-k, and a second round trip loads the records
that the changes brought into the top-k, if any.

The cached matrix assumes the server's history only grows. A server that rolled back (restarted
from an older snapshot, or failed over to a lagging replica) breaks that, so the matrix reloads
the partition when the server's n is below the cached version (the rollback is seen before any
new write), or when the epoch changed (the first write after a restart or failover starts a new
one: the rollback may have been followed by more writes than it undid). Both checks ride in the
search's existing round trip; the write pays one ``INFO server`` inside its script.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast
from weakref import WeakKeyDictionary

import numpy as np

from ..embeddings._matrix import MatrixCache, Ranking, VectorMatrix
from ..model._dbkey import DbKey
from ..model._hits import Hit, HitList, hit_list
from ..model._loading import instance_from_stored
from ..model._model_class import ModelClass
from ..model._query import Query
from ..store._connection import server_errors
from ..store._keys import KeySpace
from ..store._scripts import ScriptCall, run_script
from .search_protocol import Hits

__all__ = ["VectorSearch", "search_records", "matrices", "CHANGES_PER_CALL"]

#: Changes (vectors) read per ``vector_changes.lua`` call while a matrix catches up.
CHANGES_PER_CALL = 5000
#: The process-wide matrices, per client and partition.
matrices = MatrixCache()
#: Rows read back after a caller's own writes that are applied at once rather than kept (:meth:`VectorSearch.defer`).
DEFERRED_MOST = 32
#: Per matrix, the changes a caller read back after its own writes and not applied yet:
#: (epoch, version they follow, the changes reply).
_deferred: WeakKeyDictionary[VectorMatrix, tuple[Any, Any, list[Any]]] = WeakKeyDictionary()


class VectorSearch:
    """One semantic search of a partition, a :class:`~redmem.fields.search_protocol.LocalSearch`
    of (record id, cosine) pairs, best first.

    ``keys`` are the partition's vectors hash, version hash and change log; ``vector`` the
    query (None: nothing to search for); ``dimensions`` those of the stored vectors when known.
    ``embed`` instead of a vector: the query's embedding, computed at the first use of
    :attr:`vector` (by :meth:`work`, so on the worker thread while the server answers the shared
    round trip, the embedding provider's time overlapping it); the stored vectors' dimensions are
    then the vector's length. :meth:`calls` locks the partition's matrix and reads its version;
    :meth:`work` ranks the matrix as of that version while the server answers; :meth:`finish`
    catches up with the changes made elsewhere (one more round trip per further :data:`CHANGES_PER_CALL` changed or
    reloaded vectors) and releases the matrix, as :meth:`abandon` does when the replies never come.
    With ``limit`` 0 the search only brings the matrix up to date, for a caller that then scores
    chosen rows (:meth:`~redmem.embeddings._matrix.VectorMatrix.cosines_at`).

    ``prescan``: the pre-scan of a large matrix (see :data:`~redmem.embeddings._matrix.PRESCANS`).

    ``among``: a ``filter_ids.lua`` call listing the ids of the records a filter lets through
    (:meth:`~redmem.model._filters.Where.ids_call`), sent with the changes in the same request;
    the hits are then the exact top ``limit`` of those records' rows, scored in :meth:`finish`
    once the ids are known (:meth:`work` has nothing to do). When fewer records fail the filter
    than pass it (the current records of a lifecycle model: all but the superseded), the call
    lists those that fail instead, and the matrix is ranked leaving them out.
    """

    def __init__(
        self,
        client: Any,
        keys: list[str],
        vector: np.ndarray | None,
        dimensions: int | None,
        limit: int,
        among: ScriptCall | None = None,
        prescan: str = "exact",
        embed: Callable[[], np.ndarray] | None = None,
    ) -> None:
        self.client, self.limit, self.among, self.prescan = client, limit, among, prescan
        self._vector, self._dimensions, self._embed = vector, dimensions, embed
        self._from_text = embed is not None
        self._embedding = threading.Lock()
        self.change_keys = [keys[1], keys[2], keys[0]]
        self.matrix = matrices.get(client, keys[0])
        self.ranking: Ranking | None = None
        self._locked = False

    @property
    def empty(self) -> bool:
        """True when there is nothing to search for (blank text or limit 0)."""
        return self._vector is None and self._embed is None

    @property
    def vector(self) -> np.ndarray | None:
        """The query vector, embedded now if the search was given ``embed`` and this is its first use."""
        if self._embed is not None:
            with self._embedding:
                if self._embed is not None:
                    self._vector, self._embed = self._embed(), None
        return self._vector

    @property
    def dimensions(self) -> int | None:
        """The stored vectors' dimensions when known: an embedded query's length, else as given."""
        if self._from_text:
            return len(cast(np.ndarray, self.vector))
        return self._dimensions

    def calls(self) -> list[ScriptCall]:
        """Lock the matrix; the one call reads the changes since its version."""
        self.matrix.lock.acquire()
        self._locked = True
        changes = ScriptCall("vector_changes", self.change_keys, _changes_args(self.matrix))
        return [changes] if self.among is None else [changes, self.among]

    def work(self) -> Ranking:
        """Rank the locked matrix as it was when :meth:`calls` read its version (once); with
        ``among`` nothing is ranked (an empty ranking) before the filter's ids are known."""
        if self.ranking is None:
            limit = 0 if self.among is not None else self.limit
            self.ranking = self.matrix.rank(cast(np.ndarray, self.vector), limit, self.prescan)  # not empty: a vector
        return self.ranking

    def finish(self, replies: list[Any]) -> Hits:
        """The hits once the matrix has caught up with the changes in ``replies``; the matrix is released."""
        try:
            self.work()
            with server_errors(self.client):
                if self.among is None:
                    return self._catch_up(replies[0])
                self._up_to_date(replies[0])
            mode, ids = replies[1]
            if mode == b"except":
                return self.matrix.search_except(cast(np.ndarray, self.vector), ids, self.limit)
            return self.matrix.search_among(cast(np.ndarray, self.vector), ids, self.limit)
        finally:
            self._release()

    def finish_current(self, replies: list[Any]) -> Hits:
        """:meth:`finish` for a search not ranked yet (no ``among``), on the caller's thread: the
        matrix catches up with the changes in ``replies`` first, then is ranked once (rather than
        ranked as it was, then brought up to date: a second ranking when the first was a pre-scan's)."""
        assert self.among is None and self.ranking is None
        try:
            with server_errors(self.client):
                self._up_to_date(replies[0])
            return self.work().hits
        finally:
            self._release()

    def hold(self) -> None:
        """Lock the matrix for a caller that sends the changes call inside a script of its own (on
        :attr:`change_keys`, with :meth:`changes_args`)."""
        self.matrix.lock.acquire()
        self._locked = True

    def changes_args(self) -> list[Any]:
        """The changes call's arguments for the matrix as it stands: epoch, version, most changes, cursor."""
        return _changes_args(self.matrix)

    def rank_held(self) -> Hits:
        """The hits of the held matrix as it stands (ranked anew at each call)."""
        return self.matrix.rank(cast(np.ndarray, self.vector), self.limit, self.prescan).hits

    def catch_up(self, reply: list[Any]) -> None:
        """Bring the held matrix up to date from a changes reply (more calls while it is behind)."""
        with server_errors(self.client):
            self._up_to_date(reply)

    def deferred_end(self) -> int:
        """The version the held matrix will be at once the kept changes are applied (its own
        version when none are kept): where the next read-back starts."""
        kept = _deferred.get(self.matrix)
        if kept is None or kept[0] != (self.matrix.epoch or "") or kept[1] != self.matrix.version:
            return self.matrix.version
        return int(kept[2][3])

    def defer(self, sent: list[Any], reply: list[Any]) -> None:
        """Keep a changes reply read back after the caller's own writes (``sent``: the epoch, the
        matrix's version and the version read from, :meth:`deferred_end`) to apply with the next
        ones: applying one row copies the matrix's id list and codes (milliseconds at 100,000
        rows), so rows are applied in batches, by :meth:`apply_deferred`, or at once when
        :data:`DEFERRED_MOST` are waiting."""
        if reply[2] != b"log":
            return
        kept = _deferred.get(self.matrix)
        pairs = list(reply[4:])
        if kept is not None and kept[:2] == (sent[0], sent[1]) and int(kept[2][3]) == int(sent[3]):
            pairs = [*kept[2][4:], *pairs]
        elif int(sent[3]) != int(sent[1]):
            _deferred.pop(self.matrix, None)
            return
        _deferred[self.matrix] = (sent[0], sent[1], [*reply[:4], *pairs])
        if len(pairs) // 2 >= DEFERRED_MOST:
            self.apply_deferred()

    def apply_deferred(self) -> None:
        """Apply the changes :meth:`defer` kept, in one batch, if the held matrix is still at the
        version they follow (else they are dropped: the matrix caught up otherwise)."""
        epoch, version, reply = _deferred.pop(self.matrix, (None, None, None))
        if reply is not None and (self.matrix.epoch or "") == epoch and self.matrix.version == version:
            _apply_changes(self.matrix, reply, set(), self.dimensions)

    def abandon(self) -> None:
        """Release the matrix when the pipeline never ran."""
        self._release()
        self.ranking = None

    def _release(self) -> None:
        if self._locked:
            self._locked = False
            self.matrix.lock.release()

    def _catch_up(self, reply: list[Any]) -> Hits:
        """The hits once the matrix has caught up with the partition's changes."""
        generation = self.matrix.generation
        changed = self._up_to_date(reply)
        return _current_hits(self.matrix, self.work(), generation, changed)

    def _up_to_date(self, reply: list[Any]) -> set[str]:
        """Apply the changes of ``reply`` and of the further calls needed; the ids changed."""
        matrix, changed = self.matrix, set[str]()
        current = _apply_changes(matrix, reply, changed, self.dimensions)
        while not current:
            reply = run_script("vector_changes", self.change_keys, _changes_args(matrix), self.client)
            current = _apply_changes(matrix, reply, changed, self.dimensions)
        return changed


def search_records(query: Query, space: KeySpace, search: VectorSearch) -> HitList[Any]:
    """The records of a (not empty) search's hits, best first, as hits of signal ``vector``, each
    record also carrying its cosine as ``_vector_score``.

    One pipeline sends the search's call with a read of the cached top-k's hashes; the hits that
    changes elsewhere brought in are read in one more. Read effects follow unless the query was
    made with ``no_track()``.
    """
    client = search.client
    try:
        calls = search.calls()
        cached = [record_id for record_id, _ in search.work().hits]
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for call in calls:
                call.queue(pipe)
            for record_id in cached:
                pipe.hgetall(space.record(record_id))
            replies = pipe.execute()
    except BaseException:
        search.abandon()
        raise
    hits = search.finish(replies[: len(calls)])
    fetched = dict(zip(cached, replies[len(calls) :]))
    missing = [record_id for record_id, _ in hits if record_id not in fetched]
    if missing:
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for record_id in missing:
                pipe.hgetall(space.record(record_id))
            fetched.update(zip(missing, pipe.execute()))
    records = _hydrate(query.model, space, hits, fetched)
    if query.tracking and records:
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            query.model.queue_read_effects(pipe, [record._saved_key for record in records])
            pipe.execute()
    return records


def _apply_changes(matrix: VectorMatrix, reply: list[Any], changed: set[str], dimensions: int | None) -> bool:
    """Apply one ``vector_changes.lua`` reply, adding the ids it changed to ``changed``; True
    when the matrix is now at the partition's version.

    A reload starts the matrix afresh; once its last page is in, the matrix is at the version
    of its first page, and the changes logged since then are read next.
    """
    epoch, version, mode, position = reply[0], int(reply[1]), reply[2], reply[3]
    pairs = reply[4:]
    ids = [pairs[i].decode() for i in range(0, len(pairs), 2)]
    if mode == b"reload":
        matrix.reset(epoch)
        matrix.loading = (version, b"0")
    matrix.apply(zip(ids, pairs[1::2]), dimensions)
    changed.update(ids)
    if mode == b"log":
        matrix.version = int(position)
    elif position != b"0":
        matrix.loading = (cast(tuple[int, bytes], matrix.loading)[0], position)  # a load is under way
        return False
    else:
        matrix.version, matrix.loading = cast(tuple[int, bytes], matrix.loading)[0], None
    return matrix.version == version


def _changes_args(matrix: VectorMatrix) -> list[Any]:
    cursor = matrix.loading[1] if matrix.loading is not None else ""
    return [matrix.epoch or "", matrix.version, CHANGES_PER_CALL, cursor]


def _current_hits(matrix: VectorMatrix, ranking: Ranking, generation: int, changed: set[str]) -> Hits:
    """The ranking's hits, brought up to date with the changes just applied."""
    if matrix.generation != generation:
        return matrix.search(ranking.query, ranking.limit, ranking.prescan)
    return matrix.rerank(ranking, changed) if changed else ranking.hits


def _hydrate(model: ModelClass, space: KeySpace, hits: Hits, fetched: dict[str, Any]) -> HitList[Any]:
    found = [
        Hit(instance_from_stored(model, DbKey(space, record_id), fetched[record_id]), score, {"vector": score})
        for record_id, score in hits
        if fetched.get(record_id)
    ]
    return hit_list(found, "_vector_score")
